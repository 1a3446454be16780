/**
 * The 8-octet messages that name one group: the v1 report (0x12), the v2 report (0x16)
 * and the v2 leave (0x17).
 *
 *   type | unused (zero) | checksum(2) | group(4)
 *
 * RFC 2236 §2.5: a message may be longer than 8 octets; receivers use the first 8 (the
 * checksum still covers all of them), so `decode` accepts trailing octets.
 */
import { DecodeError } from '../../errors.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { need, outputBuffer } from '../../wire/bytes.js';
import { IGMP_HEADER_LENGTH, isMulticastAt, sealChecksum, truncated } from './common.js';
import type { IgmpV1Report, IgmpV2Leave, IgmpV2Report } from './message.js';
import { IgmpType } from './message-type.js';

export type GroupMessage = IgmpV1Report | IgmpV2Report | IgmpV2Leave;

export function encodingLength(_message: GroupMessage): number {
  return IGMP_HEADER_LENGTH;
}

export function typeOf(message: GroupMessage): IgmpType {
  if (message.kind === 'leave') return IgmpType.V2LeaveGroup;
  return message.version === 1 ? IgmpType.V1MembershipReport : IgmpType.V2MembershipReport;
}

export function encode(message: GroupMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(IGMP_HEADER_LENGTH, buf, offset, 'IGMP report');
  out[offset] = typeOf(message);
  out[offset + 1] = 0;
  writeIPv4(out, offset + 4, message.group);
  sealChecksum(out, offset, offset + IGMP_HEADER_LENGTH);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): GroupMessage {
  need({ at: start, end }, IGMP_HEADER_LENGTH, 'an IGMP report', truncated);
  const type = bytes[start]!;
  if (!isMulticastAt(bytes, start + 4)) {
    const what = type === IgmpType.V2LeaveGroup ? 'leave' : 'report';
    throw new DecodeError(
      'invalid-group',
      `${what} for ${readIPv4(bytes, start + 4)}, which is not a multicast address`,
    );
  }
  const group = readIPv4(bytes, start + 4);
  switch (type) {
    case IgmpType.V1MembershipReport:
      return { kind: 'report', version: 1, group };
    case IgmpType.V2MembershipReport:
      return { kind: 'report', version: 2, group };
    case IgmpType.V2LeaveGroup:
      return { kind: 'leave', version: 2, group };
    default:
      throw new RangeError(`type 0x${type.toString(16)} is not a v1/v2 report or leave`);
  }
}
