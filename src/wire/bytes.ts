/**
 * The one byte kit of every codec: bounds checks, integer fields, output buffers.
 *
 * - Bounds: `need({ at, end }, octets, what, truncated)`. The span is one object, so
 *   its two offsets cannot be swapped silently; `truncated` makes the codec family's own
 *   decode error.
 * - Fields in either byte order (`readU16(bytes, at, little)`): pcap files are written
 *   in the byte order of the host that wrote them. Network order alone: `readU16BE`,
 *   `readU64BE`, and the `write*Field` writers, which check the value's range and name
 *   the field in the error.
 * - Range checks: `checkUint(value, max, name)`, one signature everywhere.
 *
 * Plain index arithmetic on a Uint8Array is as fast as DataView or Buffer#readUInt32LE
 * in V8 and needs neither a DataView per chunk nor a Buffer (callers may hand us any
 * Uint8Array).
 */

/** A part of a buffer being decoded: from `at` up to (not including) `end`. */
export interface Span {
  readonly at: number;
  readonly end: number;
}

/** Makes a codec family's decode error for data that ends too soon. */
export type TruncatedError = (message: string) => Error;

/**
 * Throws `truncated(...)` unless `octets` octets are there at `span.at`. `what` must be
 * cheap: it is built on every call.
 */
export function need(span: Span, octets: number, what: string, truncated: TruncatedError): void {
  if (span.at + octets > span.end) throw truncated(truncationMessage(span, octets, what));
}

/** The message of a `need` that failed, for hot paths that test inline and build it only then. */
export function truncationMessage(span: Span, octets: number, what: string): string {
  const left = Math.max(0, span.end - span.at);
  return `${what} needs ${octets} octets; only ${left} ${left === 1 ? 'is' : 'are'} left`;
}

/** The caller's buffer (checked for room) or a new zeroed one. */
export function outputBuffer(length: number, buf: Uint8Array | undefined, offset: number, what: string): Uint8Array {
  const out = buf ?? Buffer.alloc(length + offset);
  if (offset < 0 || offset + length > out.length) {
    throw new RangeError(`${what} needs ${length} octets at offset ${offset}; the buffer has ${out.length}`);
  }
  return out;
}

export function readU16(bytes: Uint8Array, offset: number, little: boolean): number {
  return little ? bytes[offset]! | (bytes[offset + 1]! << 8) : (bytes[offset]! << 8) | bytes[offset + 1]!;
}

export function readU32(bytes: Uint8Array, offset: number, little: boolean): number {
  return little ? readU32LE(bytes, offset) : readU32BE(bytes, offset);
}

export function readU32LE(bytes: Uint8Array, offset: number): number {
  return (bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16) | (bytes[offset + 3]! << 24)) >>> 0;
}

export function readU32BE(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) >>> 0;
}

export function writeU16(bytes: Uint8Array, offset: number, value: number, little: boolean): void {
  if (little) {
    bytes[offset] = value & 0xff;
    bytes[offset + 1] = (value >>> 8) & 0xff;
  } else {
    bytes[offset] = (value >>> 8) & 0xff;
    bytes[offset + 1] = value & 0xff;
  }
}

/** Writes the low 32 bits of `value` (so a negative int32 is written as two's complement). */
export function writeU32(bytes: Uint8Array, offset: number, value: number, little: boolean): void {
  if (little) {
    bytes[offset] = value & 0xff;
    bytes[offset + 1] = (value >>> 8) & 0xff;
    bytes[offset + 2] = (value >>> 16) & 0xff;
    bytes[offset + 3] = (value >>> 24) & 0xff;
  } else {
    bytes[offset] = (value >>> 24) & 0xff;
    bytes[offset + 1] = (value >>> 16) & 0xff;
    bytes[offset + 2] = (value >>> 8) & 0xff;
    bytes[offset + 3] = value & 0xff;
  }
}

export function readU16BE(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

export function readU64BE(bytes: Uint8Array, at: number): bigint {
  return (BigInt(readU32BE(bytes, at)) << 32n) | BigInt(readU32BE(bytes, at + 4));
}

export function writeU8Field(bytes: Uint8Array, at: number, value: number, name: string): void {
  bytes[at] = checkUint(value, 0xff, name);
}

export function writeU16Field(bytes: Uint8Array, at: number, value: number, name: string): void {
  checkUint(value, 0xffff, name);
  bytes[at] = value >>> 8;
  bytes[at + 1] = value & 0xff;
}

export function writeU32Field(bytes: Uint8Array, at: number, value: number, name: string): void {
  checkUint(value, 0xffffffff, name);
  bytes[at] = value >>> 24;
  bytes[at + 1] = (value >>> 16) & 0xff;
  bytes[at + 2] = (value >>> 8) & 0xff;
  bytes[at + 3] = value & 0xff;
}

const U64_MAX = (1n << 64n) - 1n;

export function writeU64Field(bytes: Uint8Array, at: number, value: bigint, name: string): void {
  if (typeof value !== 'bigint' || value < 0n || value > U64_MAX)
    throw new RangeError(`${name} ${String(value)} is not a 64-bit unsigned bigint`);
  writeU32Field(bytes, at, Number(value >> 32n), name);
  writeU32Field(bytes, at + 4, Number(value & 0xffffffffn), name);
}

/** `length` rounded up to a multiple of 8 (OpenFlow pads matches, actions, instructions and hello elements so). */
export function pad8(length: number): number {
  return (length + 7) & ~7;
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

export function hex32(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}

/** Returns `value` if it is a whole number from 0 to `max`; throws RangeError naming the field otherwise. */
export function checkUint(value: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new RangeError(`${name} ${value} is not an integer 0..${max}`);
  return value;
}
