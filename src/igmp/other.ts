/**
 * IGMP types this tool does not interpret (DVMRP, mtrace, MRD, ...): carried whole, so
 * that a capture can show them and a round trip keeps them.
 *
 *   type | code | checksum(2) | body
 */
import { IGMP_HEADER_LENGTH, ensureAvailable, outputBuffer, sealChecksum } from './common.js';
import type { IgmpOther } from './message.js';

/** The four octets after the checksum are part of `body`, so the minimum is 4, not 8. */
const OTHER_MIN_LENGTH = 4;

export function encodingLength(message: IgmpOther): number {
  return OTHER_MIN_LENGTH + message.body.length;
}

export function encode(message: IgmpOther, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'IGMP message');
  out[offset] = message.igmpType;
  out[offset + 1] = message.code;
  out.set(message.body, offset + OTHER_MIN_LENGTH);
  sealChecksum(out, offset, offset + length);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): IgmpOther {
  // Every IGMP type in the IANA registry has at least the common 8-octet header.
  ensureAvailable(end, start, IGMP_HEADER_LENGTH, 'an IGMP message');
  return { kind: 'other', igmpType: bytes[start]!, code: bytes[start + 1]!, body: bytes.slice(start + OTHER_MIN_LENGTH, end) };
}
