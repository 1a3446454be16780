/**
 * IPv4 addresses as the codecs carry them: dotted-quad strings in messages (what users,
 * JSON and tshark show), 32-bit unsigned numbers on the wire.
 */

/**
 * Parses a strict dotted quad ("239.1.2.3"); returns undefined for anything else: no
 * signs, no spaces, no leading zeros (they read as octal in inet_aton). One pass over the
 * characters, no regular expression and no split: every record of every report goes
 * through here, and sorting thousands of groups compares them this way.
 */
export function parseIPv4(text: string): number | undefined {
  const length = text.length;
  if (length < 7 || length > 15) return undefined;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x2e) {
      if (digits === 0 || ++dots > 3) return undefined;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (code >= 0x30 && code <= 0x39) {
      if (digits === 1 && octet === 0) return undefined;
      octet = octet * 10 + (code - 0x30);
      digits++;
      if (octet > 255) return undefined;
    } else return undefined;
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : undefined;
}

export function formatIPv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 0xff}.${(value >>> 8) & 0xff}.${value & 0xff}`;
}

/** "0." to "255.": decoding formats millions of addresses a second, and number-to-string is the cost. */
const OCTET_DOT: readonly string[] = Array.from({ length: 256 }, (_, octet) => `${octet}.`);
const OCTET: readonly string[] = Array.from({ length: 256 }, (_, octet) => `${octet}`);

/** Reads four octets at `offset` as a dotted quad. */
export function readIPv4(bytes: Uint8Array, offset: number): string {
  return (
    OCTET_DOT[bytes[offset]!]! +
    OCTET_DOT[bytes[offset + 1]!]! +
    OCTET_DOT[bytes[offset + 2]!]! +
    OCTET[bytes[offset + 3]!]!
  );
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
