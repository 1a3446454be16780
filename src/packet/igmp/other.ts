/**
 * IGMP types this tool does not interpret (DVMRP, mtrace, MRD, ...): carried whole, so
 * that a capture can show them and a round trip keeps them.
 *
 *   type | code | checksum(2) | body
 */
import { need, outputBuffer } from '../../wire/bytes.js';
import { IGMP_HEADER_LENGTH, sealChecksum, truncated } from './common.js';
import type { IgmpOther } from './message.js';

/** Type, code and checksum; the body holds the rest. */
const OTHER_HEADER_LENGTH = 4;
/** Every IGMP type in the IANA registry has at least the common 8-octet header: a body of 4 or more. */
const OTHER_MIN_BODY_LENGTH = IGMP_HEADER_LENGTH - OTHER_HEADER_LENGTH;

export function encodingLength(message: IgmpOther): number {
  return OTHER_HEADER_LENGTH + message.body.length;
}

export function encode(message: IgmpOther, buf?: Uint8Array, offset = 0): Uint8Array {
  // What encode writes, decode must read back.
  if (message.body.length < OTHER_MIN_BODY_LENGTH)
    throw new RangeError(
      `an IGMP message body has at least ${OTHER_MIN_BODY_LENGTH} octets, not ${message.body.length}`,
    );
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'IGMP message');
  out[offset] = message.igmpType;
  out[offset + 1] = message.code;
  out.set(message.body, offset + OTHER_HEADER_LENGTH);
  sealChecksum(out, offset, offset + length);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): IgmpOther {
  need({ at: start, end }, IGMP_HEADER_LENGTH, 'an IGMP message', truncated);
  return {
    kind: 'other',
    igmpType: bytes[start]!,
    code: bytes[start + 1]!,
    body: bytes.slice(start + OTHER_HEADER_LENGTH, end),
  };
}
