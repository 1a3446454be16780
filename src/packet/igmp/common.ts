/** Helpers shared by the IGMP message codecs. */
import { DecodeError } from '../../errors.js';
import { internetChecksum } from '../../wire/checksum.js';

/** Octets of the common IGMP header: type, code, checksum, then 4 type-specific octets. */
export const IGMP_HEADER_LENGTH = 8;

/** Zeroes, computes and stores the checksum of the message in [start, end). */
export function sealChecksum(bytes: Uint8Array, start: number, end: number): void {
  bytes[start + 2] = 0;
  bytes[start + 3] = 0;
  const sum = internetChecksum(bytes, start, end);
  bytes[start + 2] = sum >> 8;
  bytes[start + 3] = sum & 0xff;
}

/** Allocates the output buffer when the caller gave none, and checks it has room. */
export function outputBuffer(length: number, buf: Uint8Array | undefined, offset: number, what: string): Uint8Array {
  const out = buf ?? Buffer.alloc(length + offset);
  if (offset < 0 || offset + length > out.length) {
    throw new RangeError(`${what} needs ${length} octets at offset ${offset}; the buffer has ${out.length}`);
  }
  return out;
}

/** Throws `truncated` unless `needed` octets are there at `at`. `what` must be cheap: it is built on every call. */
export function ensureAvailable(end: number, at: number, needed: number, what: string): void {
  if (at + needed > end) throw truncatedError(what, at, needed, end);
}

/** For hot paths whose description is costly to build: test inline, build the message only when it fails. */
export function truncatedError(what: string, at: number, needed: number, end: number): DecodeError {
  const left = Math.max(0, end - at);
  return new DecodeError('truncated', `${what} needs ${needed} octets; only ${left} ${left === 1 ? 'is' : 'are'} left`);
}

/** True when the four octets at `offset` are a multicast address (224.0.0.0/4). */
export function isMulticastAt(bytes: Uint8Array, offset: number): boolean {
  return bytes[offset]! >> 4 === 0xe;
}

export function isZeroAddressAt(bytes: Uint8Array, offset: number): boolean {
  return (bytes[offset]! | bytes[offset + 1]! | bytes[offset + 2]! | bytes[offset + 3]!) === 0;
}
