/**
 * Prefixes (CIDR blocks) of either family and sets of addresses as sorted, disjoint ranges
 * of one number line, for the group policy. IPv4 addresses are the line's first 2^32
 * points and IPv6 addresses the 2^128 after them (bigint), so that one range algebra and
 * one first-match map serve both families, IPv4 sorts before IPv6, and no range of one
 * family can reach into the other. Regions are computed on ranges, where union and
 * difference are exact, and turned back into prefixes only at the end: the fewest prefixes
 * that cover a set exactly, which is what a list of OpenFlow drop flows must be.
 */
import { type AddressFamily, addressFamily, textFamily } from '../../wire/ip-address.js';
import { formatIPv4, parseIPv4 } from '../../wire/ipv4-address.js';
import { canonicalIPv6, parseIPv6 } from '../../wire/ipv6-address.js';

/** A CIDR block: its family, its network address (canonical text, no host bits set) and its length. */
export interface IpPrefix {
  readonly family: AddressFamily;
  readonly address: string;
  readonly length: number;
}

/** An inclusive range of points of the number line: start <= end, both of one family. */
export interface IpRange {
  readonly start: bigint;
  readonly end: bigint;
}

/** What differs between the families on the line: where a family starts, and how its addresses read. */
interface FamilySpace {
  readonly bits: number;
  /** The line's point of the family's address 0. */
  readonly offset: bigint;
  /** The address as a number of the family, or undefined when the text is none. */
  value(text: string): bigint | undefined;
  format(value: bigint): string;
}

const IPV4_SPACE: FamilySpace = {
  bits: 32,
  offset: 0n,
  value: (text) => {
    const value = parseIPv4(text);
    return value === undefined ? undefined : BigInt(value);
  },
  format: (value) => formatIPv4(Number(value)),
};

const IPV6_SPACE: FamilySpace = {
  bits: 128,
  offset: 1n << 32n,
  value: (text) => {
    const bytes = parseIPv6(text);
    return bytes === undefined ? undefined : ipv6Value(bytes);
  },
  format: (value) => {
    const groups: string[] = [];
    for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
    return canonicalIPv6(groups.join(':'))!;
  },
};

const SPACES: Readonly<Record<AddressFamily, FamilySpace>> = { ipv4: IPV4_SPACE, ipv6: IPV6_SPACE };

/** The family of a point of the line. */
function familyAt(point: bigint): AddressFamily {
  return point < IPV6_SPACE.offset ? 'ipv4' : 'ipv6';
}

/** The multicast groups: 224.0.0.0/4 (RFC 5771) and ff00::/8 (RFC 4291 §2.7). */
export const MULTICAST_RANGES: Readonly<Record<AddressFamily, IpRange>> = {
  ipv4: prefixRangeOf('ipv4', 0xe0000000n, 4),
  ipv6: prefixRangeOf('ipv6', 0xffn << 120n, 8),
};

/**
 * The link-scope groups no rule governs (the pipeline floods them, never snoops them):
 * 224.0.0.0/24, and ff00::/16, ff01::/16 and ff02::/16 with every flag nibble (the scope
 * nibble is 0, 1 or 2), as isLinkScopeGroup says.
 */
export const LINK_SCOPE_RANGES: readonly IpRange[] = normalizeIpRanges([
  prefixRangeOf('ipv4', 0xe0000000n, 24),
  ...Array.from({ length: 16 }, (_, flags) =>
    [0, 1, 2].map((scope) => prefixRangeOf('ipv6', BigInt(0xff00 | (flags << 4) | scope) << 112n, 16)),
  ).flat(),
]);

/**
 * The unicast sources, as parseSourceAddress takes them: 0.0.0.1 to 223.255.255.255, and
 * every IPv6 address but :: and ff00::/8.
 */
export const UNICAST_RANGES: Readonly<Record<AddressFamily, IpRange>> = {
  ipv4: { start: 1n, end: 0xdfffffffn },
  ipv6: { start: IPV6_SPACE.offset + 1n, end: MULTICAST_RANGES.ipv6.start - 1n },
};

function prefixRangeOf(family: AddressFamily, network: bigint, length: number): IpRange {
  const space = SPACES[family];
  const start = space.offset + network;
  return { start, end: start + (1n << BigInt(space.bits - length)) - 1n };
}

/**
 * The point of an address of either family on the line, or undefined for text that is no
 * address. On the path of every policy decision: one parse, and IPv6 as two 64-bit halves.
 */
export function addressPoint(text: string): bigint | undefined {
  if (textFamily(text) === 'ipv4') {
    const value = parseIPv4(text);
    return value === undefined ? undefined : BigInt(value);
  }
  const bytes = parseIPv6(text);
  return bytes === undefined ? undefined : IPV6_SPACE.offset + ipv6Value(bytes);
}

function ipv6Value(bytes: Uint8Array): bigint {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (view.getBigUint64(0) << 64n) | view.getBigUint64(8);
}

/** "239.1.0.0/16", "ff3e::/16". */
export function formatIpPrefix(prefix: IpPrefix): string {
  return `${prefix.address}/${prefix.length}`;
}

/** The prefix's mask as an address of its family: "255.255.0.0" for an IPv4 /16, "ffff::" for an IPv6 /16. */
export function ipPrefixMask(prefix: Pick<IpPrefix, 'address' | 'length'>): string {
  const space = SPACES[addressFamily(prefix.address) ?? 'ipv4'];
  return space.format(maskOf(space.bits, prefix.length));
}

function maskOf(bits: number, length: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return (all >> BigInt(bits - length)) << BigInt(bits - length);
}

export type IpPrefixParse = { ok: true; prefix: IpPrefix } | { ok: false; reason: string };

/**
 * "A.B.C.D/N", "X:X::X/N", or a single address (a /32 or a /128). The address must be
 * the network address of the block: 239.1.2.3/16 is refused, saying that 239.1.0.0/16 is
 * meant (ff3e::1/16, that ff3e::/16 is). The address comes out canonical.
 */
export function parseIpPrefix(text: string): IpPrefixParse {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const family = addressFamily(addressText);
  if (family === undefined)
    return { ok: false, reason: 'not an address or CIDR block such as 239.1.0.0/16 or ff3e::/16' };
  const space = SPACES[family];
  const value = space.value(addressText)!;
  const address = space.format(value);
  if (slash < 0) return { ok: true, prefix: { family, address, length: space.bits } };
  const lengthText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(lengthText) || Number(lengthText) > space.bits) {
    return {
      ok: false,
      reason: `the prefix length after "/" must be 0 to ${space.bits} for an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} block`,
    };
  }
  const length = Number(lengthText);
  const network = value & maskOf(space.bits, length);
  if (network !== value) {
    return {
      ok: false,
      reason: `host bits are set: the block of ${address}/${length} is ${space.format(network)}/${length}`,
    };
  }
  return { ok: true, prefix: { family, address, length } };
}

/** The points of a prefix as a range. */
export function ipPrefixRange(prefix: IpPrefix): IpRange {
  return prefixRangeOf(prefix.family, SPACES[prefix.family].value(prefix.address)!, prefix.length);
}

/**
 * Whether `address` (text of either family) is in `prefix`: false for text that is no address, or one of the other
 * family.
 */
export function ipPrefixContains(prefix: IpPrefix, address: string): boolean {
  const point = addressPoint(address);
  if (point === undefined) return false;
  const range = ipPrefixRange(prefix);
  return point >= range.start && point <= range.end;
}

/** Whether `inner` lies wholly within `outer`. */
export function ipRangeWithin(inner: IpRange, outer: IpRange): boolean {
  return inner.start >= outer.start && inner.end <= outer.end;
}

/** The union of any ranges, as sorted, disjoint, non-adjacent ranges (the one normal form). */
export function normalizeIpRanges(ranges: readonly IpRange[]): IpRange[] {
  const sorted = [...ranges].sort((a, b) => compareBig(a.start, b.start) || compareBig(a.end, b.end));
  const merged: IpRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    // The last IPv4 point and the first IPv6 one are adjacent on the line, but never one block.
    if (last !== undefined && range.start <= last.end + 1n && familyAt(range.start) === familyAt(last.end)) {
      if (range.end > last.end) merged[merged.length - 1] = { start: last.start, end: range.end };
    } else merged.push(range);
  }
  return merged;
}

/** The ranges minus `removed` (both normalized), normalized. */
export function subtractIpRanges(ranges: readonly IpRange[], removed: readonly IpRange[]): IpRange[] {
  const out: IpRange[] = [];
  let cut = 0;
  for (const range of ranges) {
    let start = range.start;
    while (cut < removed.length && removed[cut]!.end < start) cut++;
    for (let at = cut; at < removed.length && removed[at]!.start <= range.end; at++) {
      const hole = removed[at]!;
      if (hole.start > start) out.push({ start, end: hole.start - 1n });
      start = hole.end + 1n;
    }
    if (start <= range.end) out.push({ start, end: range.end });
  }
  return out;
}

/** Whether `point` is in normalized `ranges` (binary search). */
export function ipRangesContain(ranges: readonly IpRange[], point: bigint): boolean {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const range = ranges[middle]!;
    if (point < range.start) high = middle - 1;
    else if (point > range.end) low = middle + 1;
    else return true;
  }
  return false;
}

/**
 * The fewest prefixes whose union is exactly the normalized `ranges`, sorted (IPv4
 * first). Each range is cut greedily into the largest aligned block that starts it; as
 * the ranges are neither overlapping nor adjacent, no two blocks of the result could merge.
 */
export function ipRangesToPrefixes(ranges: readonly IpRange[]): IpPrefix[] {
  const prefixes: IpPrefix[] = [];
  for (const range of ranges) {
    const family = familyAt(range.start);
    const space = SPACES[family];
    let start = range.start - space.offset;
    const end = range.end - space.offset;
    while (start <= end) {
      // The largest block aligned at `start` (start 0 aligns to the whole space) that ends by `end`.
      let bits = start === 0n ? space.bits : trailingZeros(start);
      while (start + (1n << BigInt(bits)) - 1n > end) bits--;
      prefixes.push({ family, address: space.format(start), length: space.bits - bits });
      start += 1n << BigInt(bits);
    }
  }
  return prefixes;
}

function trailingZeros(value: bigint): number {
  let bits = 0;
  while (((value >> BigInt(bits)) & 1n) === 0n) bits++;
  return bits;
}

function compareBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
