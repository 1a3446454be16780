/** Helpers shared by the IGMP message codecs. */
import { DecodeError } from '../../errors.js';
import type { TruncatedError } from '../../wire/bytes.js';
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

/** The IGMP codecs' error for data that ends too soon (see need() in src/wire/bytes.ts). */
export const truncated: TruncatedError = (message) => new DecodeError('truncated', message);

/** True when the four octets at `offset` are a multicast address (224.0.0.0/4). */
export function isMulticastAt(bytes: Uint8Array, offset: number): boolean {
  return bytes[offset]! >> 4 === 0xe;
}

export function isZeroAddressAt(bytes: Uint8Array, offset: number): boolean {
  return (bytes[offset]! | bytes[offset + 1]! | bytes[offset + 2]! | bytes[offset + 3]!) === 0;
}
