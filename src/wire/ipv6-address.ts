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
import { parseMac } from './mac-address.js';

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

/** Lower-case hex of 0 to 0xff, without leading zeros and padded to two digits: a group is one or two of them. */
const HEX_SHORT: readonly string[] = Array.from({ length: 256 }, (_, value) => value.toString(16));
const HEX_PADDED: readonly string[] = Array.from({ length: 256 }, (_, value) => value.toString(16).padStart(2, '0'));

/** Lower-case hex of a 16-bit group without leading zeros. */
function hexGroup(value: number): string {
  const high = value >>> 8;
  return high === 0 ? HEX_SHORT[value]! : HEX_SHORT[high]! + HEX_PADDED[value & 0xff]!;
}

/**
 * Formatted addresses by their 16 octets, checked in full: a snooped link repeats a few
 * groups and sources, and formatting one (a new string) costs several times a hit (an
 * MLDv2 report of 4 records of 2 sources holds 12 addresses). Open addressing with linear
 * probing over 16,384 slots, at most half of them filled: a working set of up to 8,192
 * addresses never evicts itself, where a direct-mapped cache evicts by the birthday bound
 * (two in five of 4,096 addresses in 8,192 direct slots share a slot, and thrash). When
 * half full it starts over empty, which bounds it: 256 KiB of words and 128 KiB of slots,
 * plus the strings of at most 8,192 addresses (some 50 octets each).
 */
const CACHE_SLOTS = 16384;
const CACHE_LIMIT = CACHE_SLOTS / 2;
const cachedWords = new Int32Array(CACHE_SLOTS * 4);
const cachedTexts: Array<string | undefined> = new Array<string | undefined>(CACHE_SLOTS).fill(undefined);
let cachedCount = 0;

/** Reads the 16 octets at `offset` as RFC 5952 canonical text. */
export function readIPv6(bytes: Uint8Array, offset: number): string {
  if (offset < 0 || offset + IPV6_ADDRESS_LENGTH > bytes.length)
    throw new RangeError(`no 16 octets at ${offset} of ${bytes.length}`);
  const o = offset;
  const w0 = (bytes[o]! << 24) | (bytes[o + 1]! << 16) | (bytes[o + 2]! << 8) | bytes[o + 3]!;
  const w1 = (bytes[o + 4]! << 24) | (bytes[o + 5]! << 16) | (bytes[o + 6]! << 8) | bytes[o + 7]!;
  const w2 = (bytes[o + 8]! << 24) | (bytes[o + 9]! << 16) | (bytes[o + 10]! << 8) | bytes[o + 11]!;
  const w3 = (bytes[o + 12]! << 24) | (bytes[o + 13]! << 16) | (bytes[o + 14]! << 8) | bytes[o + 15]!;
  return textOfWords(w0, w1, w2, w3);
}

/**
 * `readIPv6`, adding the address's eight 16-bit words to `sum.value` (a ones' complement
 * sum not yet folded, see checksum.ts): a decoder that verifies a checksum as it reads
 * reads each address's octets once, not twice.
 */
export function readIPv6Summing(bytes: Uint8Array, offset: number, sum: { value: number }): string {
  if (offset < 0 || offset + IPV6_ADDRESS_LENGTH > bytes.length)
    throw new RangeError(`no 16 octets at ${offset} of ${bytes.length}`);
  const o = offset;
  const w0 = (bytes[o]! << 24) | (bytes[o + 1]! << 16) | (bytes[o + 2]! << 8) | bytes[o + 3]!;
  const w1 = (bytes[o + 4]! << 24) | (bytes[o + 5]! << 16) | (bytes[o + 6]! << 8) | bytes[o + 7]!;
  const w2 = (bytes[o + 8]! << 24) | (bytes[o + 9]! << 16) | (bytes[o + 10]! << 8) | bytes[o + 11]!;
  const w3 = (bytes[o + 12]! << 24) | (bytes[o + 13]! << 16) | (bytes[o + 14]! << 8) | bytes[o + 15]!;
  sum.value +=
    (w0 >>> 16) +
    (w0 & 0xffff) +
    (w1 >>> 16) +
    (w1 & 0xffff) +
    (w2 >>> 16) +
    (w2 & 0xffff) +
    (w3 >>> 16) +
    (w3 & 0xffff);
  return textOfWords(w0, w1, w2, w3);
}

/** The text of the address whose octets are the big-endian words w0 to w3, from the cache or formatted into it. */
function textOfWords(w0: number, w1: number, w2: number, w3: number): string {
  const hash = Math.imul(
    w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2, 0x85ebca77) ^ Math.imul(w3, 0xc2b2ae3d),
    0x27d4eb2f,
  );
  // The top bits: the multiplications mix every input bit into them.
  let slot = hash >>> 18;
  for (let cached = cachedTexts[slot]; cached !== undefined; cached = cachedTexts[slot]) {
    const at = slot << 2;
    if (
      cachedWords[at] === w0 &&
      cachedWords[at + 1] === w1 &&
      cachedWords[at + 2] === w2 &&
      cachedWords[at + 3] === w3
    )
      return cached;
    slot = (slot + 1) & (CACHE_SLOTS - 1);
  }
  const text = formatIPv6Words(w0, w1, w2, w3);
  if (cachedCount === CACHE_LIMIT) {
    cachedTexts.fill(undefined);
    cachedCount = 0;
    slot = hash >>> 18;
  }
  const at = slot << 2;
  cachedWords[at] = w0;
  cachedWords[at + 1] = w1;
  cachedWords[at + 2] = w2;
  cachedWords[at + 3] = w3;
  cachedTexts[slot] = text;
  cachedCount++;
  return text;
}

/** The eight groups of the address being formatted: formatting is synchronous, so one scratch serves every call. */
const groups = new Int32Array(8);

/** RFC 5952 canonical text of the address whose octets are the big-endian words w0 to w3. */
function formatIPv6Words(w0: number, w1: number, w2: number, w3: number): string {
  // IPv4-mapped (::ffff:0:0/96) ends in its dotted quad (RFC 5952 §5), as tshark shows it.
  if (w0 === 0 && w1 === 0 && w2 === 0xffff)
    return `::ffff:${w3 >>> 24}.${(w3 >>> 16) & 0xff}.${(w3 >>> 8) & 0xff}.${w3 & 0xff}`;
  groups[0] = w0 >>> 16;
  groups[1] = w0 & 0xffff;
  groups[2] = w1 >>> 16;
  groups[3] = w1 & 0xffff;
  groups[4] = w2 >>> 16;
  groups[5] = w2 & 0xffff;
  groups[6] = w3 >>> 16;
  groups[7] = w3 & 0xffff;
  // The longest run of zero groups, [bestStart, bestEnd), two or more, the first of equal runs.
  let bestStart = 8;
  let bestEnd = 8;
  let runStart = -1;
  for (let group = 0; group < 8; group++) {
    if (groups[group] !== 0) runStart = -1;
    else {
      if (runStart < 0) runStart = group;
      if (group > runStart && group + 1 - runStart > bestEnd - bestStart) {
        bestStart = runStart;
        bestEnd = group + 1;
      }
    }
  }
  let text = bestStart === 0 ? '' : hexGroup(groups[0]!);
  for (let group = 1; group < bestStart; group++) text += `:${hexGroup(groups[group]!)}`;
  if (bestStart === 8) return text;
  text += '::';
  if (bestEnd === 8) return text;
  text += hexGroup(groups[bestEnd]!);
  for (let group = bestEnd + 1; group < 8; group++) text += `:${hexGroup(groups[group]!)}`;
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

/**
 * The link-local address a host with `mac` forms by itself: fe80::/64 and the modified
 * EUI-64 interface identifier (RFC 4291 Appendix A: ff:fe in the middle, the
 * universal/local bit flipped). A switch that queries in MLD needs a link-local source
 * (listeners drop queries from any other, RFC 3810 §5.1.14) and has no address of its
 * own: this one is stable, and unique on the link as long as the MAC is. Throws
 * RangeError for text that is no MAC.
 */
export function eui64LinkLocal(mac: string): string {
  const octets = parseMac(mac);
  if (octets === undefined) throw new RangeError(`not a MAC address: ${JSON.stringify(mac)}`);
  const bytes = new Uint8Array(IPV6_ADDRESS_LENGTH);
  bytes.set([0xfe, 0x80]);
  bytes.set([octets[0]! ^ 0x02, octets[1]!, octets[2]!, 0xff, 0xfe, octets[3]!, octets[4]!, octets[5]!], 8);
  return readIPv6(bytes, 0);
}

function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  if (code >= 0x41 && code <= 0x46) return code - 0x37;
  return -1;
}
