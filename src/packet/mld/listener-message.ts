/**
 * The 24-octet MLDv1 messages that name one address: the Multicast Listener Report (131)
 * and the Multicast Listener Done (132).
 *
 *   type | code | checksum(2) | max resp delay(2, zero) | reserved(2) | address(16)
 *
 * RFC 2710 §3: a message may be longer than 24 octets; receivers ignore what follows the
 * first 24 (the checksum still covers all of it), so `decode` accepts trailing octets.
 */
import { need, outputBuffer } from '../../wire/bytes.js';
import { writeIPv6 } from '../../wire/ipv6-address.js';
import { MLD_ADDRESS_AT, MLD_V1_LENGTH, readGroup, sealChecksum, truncated } from './common.js';
import type { MldAddresses, MldDone, MldV1Report } from './message.js';
import { MldType } from './message.js';

export type ListenerMessage = MldV1Report | MldDone;

export function encodingLength(_message: ListenerMessage): number {
  return MLD_V1_LENGTH;
}

export function typeOf(message: ListenerMessage): MldType {
  return message.kind === 'leave' ? MldType.V1Done : MldType.V1Report;
}

export function encode(message: ListenerMessage, addresses: MldAddresses, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(MLD_V1_LENGTH, buf, offset, 'MLD report');
  out.fill(0, offset, offset + MLD_ADDRESS_AT);
  out[offset] = typeOf(message);
  writeIPv6(out, offset + MLD_ADDRESS_AT, message.group);
  sealChecksum(out, offset, offset + MLD_V1_LENGTH, addresses);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): ListenerMessage {
  need({ at: start, end }, MLD_V1_LENGTH, 'an MLDv1 report or done', truncated);
  const type = bytes[start]!;
  switch (type) {
    case MldType.V1Report:
      return { kind: 'report', version: 1, group: readGroup(bytes, start + MLD_ADDRESS_AT, 'report for') };
    case MldType.V1Done:
      return { kind: 'leave', version: 1, group: readGroup(bytes, start + MLD_ADDRESS_AT, 'done for') };
    default:
      throw new RangeError(`ICMPv6 type ${type} is not an MLDv1 report or done`);
  }
}
