/** Helpers shared by the mroute struct codecs: x86_64 host order for integers, network order for in_addr. */
import { DecodeError, quoteInput } from '../../errors.js';
import type { TruncatedError } from '../../wire/bytes.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';

/** The mroute codecs' error for data that ends too soon (see need() in src/wire/bytes.ts). */
export const truncated: TruncatedError = (message) => new DecodeError('truncated', message);

export function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function checkInt32(value: number, what: string): void {
  if (!Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1) throw new RangeError(`${what} ${value} is not a 32-bit integer`);
}

export function checkIPv4(address: string, what: string): void {
  if (parseIPv4(address) === undefined) throw new RangeError(`${what} ${quoteInput(address)} is not an IPv4 address`);
}
