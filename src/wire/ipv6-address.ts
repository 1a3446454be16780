/**
 * IPv6 addresses as the codecs carry them: RFC 5952 canonical text in messages (what
 * users, JSON and tshark show: lower case, no leading zeros, the longest run of two or
 * more zero groups as "::", the first of equal runs; an IPv4-mapped address ends in its
 * dotted quad), 16 octets on the wire.
 *
 * Parsing takes every RFC 4291 §2.2 form (full, "::"-compressed, a trailing dotted quad)
 * and nothing else: no zone index ("%eth0"), no brackets, no prefix length.
 */
import { parseIPv4 } from './ipv4-address.js';

export const IPV6_ADDRESS_LENGTH = 16;

/** The eight 16-bit groups of `text`, or undefined when it is no IPv6 address. */
function parseIPv6Groups(text: string): number[] | undefined {
  const length = text.length;
  if (length < 2 || length > 45) return undefined;
  const head: number[] = [];
  const tail: number[] = [];
  let groups = head;
  let compressed = false;
  let index = 0;
  if (text.startsWith('::')) {
    compressed = true;
    groups = tail;
    index = 2;
    if (length === 2) return [0, 0, 0, 0, 0, 0, 0, 0];
  } else if (text.charCodeAt(0) === 0x3a) return undefined;
  while (index < length) {
    // A trailing dotted quad stands for the last two groups.
    const colon = text.indexOf(':', index);
    const piece = colon < 0 ? text.slice(index) : text.slice(index, colon);
    if (colon < 0 && piece.includes('.')) {
      const value = parseIPv4(piece);
      if (value === undefined) return undefined;
      groups.push(value >>> 16, value & 0xffff);
      index = length;
      break;
    }
    if (piece.length === 0 || piece.length > 4) return undefined;
    let value = 0;
    for (let at = 0; at < piece.length; at++) {
      const digit = hexDigit(piece.charCodeAt(at));
      if (digit < 0) return undefined;
      value = value * 16 + digit;
    }
    groups.push(value);
    if (colon < 0) {
      index = length;
      break;
    }
    index = colon + 1;
    if (text.charCodeAt(index) === 0x3a) {
      if (compressed) return undefined; // a second "::"
      compressed = true;
      groups = tail;
      index++;
      if (index === length) break;
    } else if (index === length) return undefined; // a trailing single ":"
  }
  const count = head.length + tail.length;
  if (compressed ? count > 7 : count !== 8) return undefined;
  return [...head, ...new Array<number>(8 - count).fill(0), ...tail];
}

/** The 16 octets of `text`, or undefined when it is no IPv6 address. */
export function parseIPv6(text: string): Uint8Array | undefined {
  const groups = parseIPv6Groups(text);
  if (groups === undefined) return undefined;
  const out = new Uint8Array(IPV6_ADDRESS_LENGTH);
  for (let group = 0; group < 8; group++) {
    out[2 * group] = groups[group]! >> 8;
    out[2 * group + 1] = groups[group]! & 0xff;
  }
  return out;
}

/** `text` in RFC 5952 canonical form, or undefined when it is no IPv6 address. */
export function canonicalIPv6(text: string): string | undefined {
  const bytes = parseIPv6(text);
  return bytes === undefined ? undefined : readIPv6(bytes, 0);
}

/** Lower-case hex of 0 to 0xffff without leading zeros: decoding formats millions of groups a second. */
const HEX_GROUP: string[] = [];
function hexGroup(value: number): string {
  return (HEX_GROUP[value] ??= value.toString(16));
}

/**
 * Formatted addresses, direct-mapped by a hash of their 16 octets and checked in full: a
 * snooped link repeats a few groups and sources, and formatting one costs some 400 ns
 * where a hit costs some 30 (an MLDv2 report of 4 records of 2 sources holds 12).
 */
const CACHE_SLOTS = 8192;
const cachedWords = new Int32Array(CACHE_SLOTS * 4);
const cachedTexts: Array<string | undefined> = new Array<string | undefined>(CACHE_SLOTS).fill(undefined);

/** Reads the 16 octets at `offset` as RFC 5952 canonical text. */
export function readIPv6(bytes: Uint8Array, offset: number): string {
  if (offset < 0 || offset + IPV6_ADDRESS_LENGTH > bytes.length) throw new RangeError(`no 16 octets at ${offset} of ${bytes.length}`);
  const o = offset;
  const w0 = (bytes[o]! << 24) | (bytes[o + 1]! << 16) | (bytes[o + 2]! << 8) | bytes[o + 3]!;
  const w1 = (bytes[o + 4]! << 24) | (bytes[o + 5]! << 16) | (bytes[o + 6]! << 8) | bytes[o + 7]!;
  const w2 = (bytes[o + 8]! << 24) | (bytes[o + 9]! << 16) | (bytes[o + 10]! << 8) | bytes[o + 11]!;
  const w3 = (bytes[o + 12]! << 24) | (bytes[o + 13]! << 16) | (bytes[o + 14]! << 8) | bytes[o + 15]!;
  const hash = Math.imul(w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2, 0x85ebca77) ^ Math.imul(w3, 0xc2b2ae3d), 0x27d4eb2f);
  const slot = (hash >>> 19) & (CACHE_SLOTS - 1);
  const at = slot * 4;
  const cached = cachedTexts[slot];
  if (cached !== undefined && cachedWords[at] === w0 && cachedWords[at + 1] === w1 && cachedWords[at + 2] === w2 && cachedWords[at + 3] === w3) {
    return cached;
  }
  const text = formatIPv6At(bytes, offset);
  cachedWords[at] = w0;
  cachedWords[at + 1] = w1;
  cachedWords[at + 2] = w2;
  cachedWords[at + 3] = w3;
  cachedTexts[slot] = text;
  return text;
}

function formatIPv6At(bytes: Uint8Array, offset: number): string {
  // IPv4-mapped (::ffff:0:0/96) ends in its dotted quad (RFC 5952 §5), as tshark shows it.
  let mapped = bytes[offset + 10] === 0xff && bytes[offset + 11] === 0xff;
  for (let at = offset; mapped && at < offset + 10; at++) mapped = bytes[at] === 0;
  if (mapped) return `::ffff:${bytes[offset + 12]}.${bytes[offset + 13]}.${bytes[offset + 14]}.${bytes[offset + 15]}`;
  // The longest run of zero groups (two or more), the first of equal runs.
  let bestStart = -1;
  let bestLength = 1;
  let runStart = -1;
  for (let group = 0; group < 8; group++) {
    const at = offset + 2 * group;
    if ((bytes[at]! | bytes[at + 1]!) === 0) {
      if (runStart < 0) runStart = group;
      if (group - runStart + 1 > bestLength) {
        bestStart = runStart;
        bestLength = group - runStart + 1;
      }
    } else runStart = -1;
  }
  let text = '';
  for (let group = 0; group < 8; group++) {
    if (group === bestStart) {
      text += group === 0 ? '::' : ':';
      group += bestLength - 1;
      continue;
    }
    const at = offset + 2 * group;
    text += hexGroup((bytes[at]! << 8) | bytes[at + 1]!);
    if (group < 7) text += ':';
  }
  return text;
}

/** Writes `address` at `offset`. Throws RangeError for text that is no IPv6 address. */
export function writeIPv6(bytes: Uint8Array, offset: number, address: string): void {
  const value = parseIPv6(address);
  if (value === undefined) throw new RangeError(`not an IPv6 address: ${JSON.stringify(address)}`);
  bytes.set(value, offset);
}

/** ff00::/8 (RFC 4291 §2.7), at `offset`. */
export function isIPv6MulticastAt(bytes: Uint8Array, offset: number): boolean {
  return bytes[offset] === 0xff;
}

/** fe80::/10 (RFC 4291 §2.5.6), at `offset`. */
export function isIPv6LinkLocalAt(bytes: Uint8Array, offset: number): boolean {
  return bytes[offset] === 0xfe && (bytes[offset + 1]! & 0xc0) === 0x80;
}

/** ::, at `offset`. */
export function isIPv6UnspecifiedAt(bytes: Uint8Array, offset: number): boolean {
  for (let at = offset; at < offset + IPV6_ADDRESS_LENGTH; at++) if (bytes[at] !== 0) return false;
  return true;
}

/** The Ethernet address IPv6 multicast to `group` goes to: 33:33 and its last 32 bits (RFC 2464 §7). */
export function multicastMacForIPv6Group(group: string): string {
  const bytes = parseIPv6(group);
  if (bytes === undefined) throw new RangeError(`not an IPv6 address: ${JSON.stringify(group)}`);
  const tail = [...bytes.subarray(12)].map((octet) => octet.toString(16).padStart(2, '0'));
  return `33:33:${tail.join(':')}`;
}

function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  if (code >= 0x41 && code <= 0x46) return code - 0x37;
  return -1;
}
