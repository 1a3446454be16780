/**
 * Fixed-width integer access in either byte order, for the codecs whose fields are not
 * always big-endian: pcap files are written in the byte order of the host that wrote
 * them, so every field read or write takes the order as a flag (`little`). Plain index arithmetic on a Uint8Array is as
 * fast as DataView or Buffer#readUInt32LE in V8 and needs neither a DataView per chunk
 * nor a Buffer (callers may hand us any Uint8Array).
 */

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

export function hex32(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}

/** Returns `value` if it is a whole number from 0 to `max`; throws RangeError naming the field otherwise. */
export function checkUint(value: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < 0 || value > max) throw new RangeError(`${name} ${value} is not an integer 0..${max}`);
  return value;
}
