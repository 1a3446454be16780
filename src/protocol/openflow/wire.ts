/**
 * Big-endian field access for the OpenFlow codecs (OpenFlow is big-endian throughout),
 * 64-bit fields as bigint, and the output-buffer and padding rules every codec shares.
 */

export function readU16(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

export function readU32(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
}

export function readU64(bytes: Uint8Array, at: number): bigint {
  return (BigInt(readU32(bytes, at)) << 32n) | BigInt(readU32(bytes, at + 4));
}

export function writeU8(bytes: Uint8Array, at: number, value: number, name: string): void {
  bytes[at] = checkUint(value, 0xff, name);
}

export function writeU16(bytes: Uint8Array, at: number, value: number, name: string): void {
  checkUint(value, 0xffff, name);
  bytes[at] = value >>> 8;
  bytes[at + 1] = value & 0xff;
}

export function writeU32(bytes: Uint8Array, at: number, value: number, name: string): void {
  checkUint(value, 0xffffffff, name);
  bytes[at] = value >>> 24;
  bytes[at + 1] = (value >>> 16) & 0xff;
  bytes[at + 2] = (value >>> 8) & 0xff;
  bytes[at + 3] = value & 0xff;
}

const U64_MAX = (1n << 64n) - 1n;

export function writeU64(bytes: Uint8Array, at: number, value: bigint, name: string): void {
  if (typeof value !== 'bigint' || value < 0n || value > U64_MAX) throw new RangeError(`${name} ${String(value)} is not a 64-bit unsigned bigint`);
  writeU32(bytes, at, Number(value >> 32n), name);
  writeU32(bytes, at + 4, Number(value & 0xffffffffn), name);
}

export function checkUint(value: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < 0 || value > max) throw new RangeError(`${name} ${value} is not an integer 0..${max}`);
  return value;
}

/** `length` rounded up to a multiple of 8: OXM matches, actions, instructions and hello elements are padded so. */
export function pad8(length: number): number {
  return (length + 7) & ~7;
}

/** The caller's buffer (checked for room) or a new zeroed one. Padding octets are written as zeros either way. */
export function outputBuffer(length: number, buf: Uint8Array | undefined, offset: number, what: string): Uint8Array {
  const out = buf ?? new Uint8Array(offset + length);
  if (offset < 0 || offset + length > out.length) {
    throw new RangeError(`${what} needs ${length} octets at offset ${offset}; the buffer has ${out.length}`);
  }
  return out;
}

export function hex(value: number | bigint, digits: number): string {
  return `0x${value.toString(16).padStart(digits, '0')}`;
}

/**
 * A copy of [start, end) as a plain Uint8Array. Not `bytes.slice()`: on a Buffer (what
 * sockets deliver) slice() is a view of the same memory, and decoded messages must not
 * share the framer's chunks.
 */
export function copyBytes(bytes: Uint8Array, start: number, end: number): Uint8Array {
  return new Uint8Array(bytes.subarray(start, end));
}
