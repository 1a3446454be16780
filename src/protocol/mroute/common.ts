/** Helpers shared by the mroute struct codecs: x86_64 host order for integers, network order for in_addr. */
import { DecodeError, quoteInput } from '../../errors.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';

/** Allocates the output buffer when the caller gave none, and checks it has room. */
export function outputBuffer(length: number, buf: Uint8Array | undefined, offset: number, what: string): Uint8Array {
  const out = buf ?? Buffer.alloc(length + offset);
  if (offset < 0 || offset + length > out.length) {
    throw new RangeError(`${what} needs ${length} octets at offset ${offset}; the buffer has ${out.length}`);
  }
  return out;
}

export function ensureAvailable(start: number, end: number, needed: number, what: string): void {
  if (start + needed > end) {
    const left = Math.max(0, end - start);
    throw new DecodeError('truncated', `${what} needs ${needed} octets; only ${left} ${left === 1 ? 'is' : 'are'} left`);
  }
}

export function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Checks an unsigned integer field before it is written. */
export function checkUint(value: number, bits: 8 | 16 | 32, what: string): void {
  if (!Number.isInteger(value) || value < 0 || value > 2 ** bits - 1) throw new RangeError(`${what} ${value} is not an unsigned ${bits}-bit integer`);
}

export function checkInt32(value: number, what: string): void {
  if (!Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1) throw new RangeError(`${what} ${value} is not a 32-bit integer`);
}

export function checkIPv4(address: string, what: string): void {
  if (parseIPv4(address) === undefined) throw new RangeError(`${what} ${quoteInput(address)} is not an IPv4 address`);
}
