/**
 * IPv4 addresses as the codecs carry them: dotted-quad strings in messages (what users,
 * JSON and tshark show), 32-bit unsigned numbers on the wire.
 */

/** Parses a strict dotted quad ("239.1.2.3"); returns undefined for anything else. */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    // No signs, no spaces, no leading zeros (they read as octal in inet_aton).
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

export function formatIPv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 0xff}.${(value >>> 8) & 0xff}.${value & 0xff}`;
}

/** "0." to "255.": decoding formats millions of addresses a second, and number-to-string is the cost. */
const OCTET_DOT: readonly string[] = Array.from({ length: 256 }, (_, octet) => `${octet}.`);
const OCTET: readonly string[] = Array.from({ length: 256 }, (_, octet) => `${octet}`);

/** Reads four octets at `offset` as a dotted quad. */
export function readIPv4(bytes: Uint8Array, offset: number): string {
  return OCTET_DOT[bytes[offset]!]! + OCTET_DOT[bytes[offset + 1]!]! + OCTET_DOT[bytes[offset + 2]!]! + OCTET[bytes[offset + 3]!]!;
}

/** Writes a dotted quad at `offset`. Throws RangeError for text that is not one. */
export function writeIPv4(bytes: Uint8Array, offset: number, address: string): void {
  const value = parseIPv4(address);
  if (value === undefined) throw new RangeError(`not an IPv4 address: ${JSON.stringify(address)}`);
  bytes[offset] = value >>> 24;
  bytes[offset + 1] = (value >>> 16) & 0xff;
  bytes[offset + 2] = (value >>> 8) & 0xff;
  bytes[offset + 3] = value & 0xff;
}
