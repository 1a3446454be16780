/**
 * IPv4 prefixes (CIDR blocks) and ranges of 32-bit numbers, for the daemon's IPv4
 * settings (the SSM range, tunnelled sources, membership limits). The group policy,
 * which takes both families, has its own range algebra on one number line of both
 * (ip-prefix.ts).
 */
import { formatIPv4, parseIPv4 } from '../../wire/ipv4-address.js';
import { ipPrefixMask } from './ip-prefix.js';

/** A CIDR block: its network address (no host bits set) and its length, 0 to 32. */
export interface Ipv4Prefix {
  readonly address: string;
  readonly length: number;
}

/** An inclusive range of addresses as unsigned 32-bit numbers: start <= end. */
export interface AddressRange {
  readonly start: number;
  readonly end: number;
}

/** 224.0.0.0/4, the multicast groups (RFC 5771). */
export const MULTICAST_RANGE: AddressRange = { start: 0xe0000000, end: 0xefffffff };
/** The unicast addresses, as parseSourceAddress takes them: 0.0.0.1 to 223.255.255.255. */
export const UNICAST_RANGE: AddressRange = { start: 1, end: 0xdfffffff };

/** "239.1.0.0/16". */
export function formatPrefix(prefix: Ipv4Prefix): string {
  return `${prefix.address}/${prefix.length}`;
}

/**
 * The prefix's mask as a dotted quad: "255.255.0.0" for a /16. A prefix of the group
 * policy may be IPv6 (ip-prefix.ts): its mask is IPv6 text, "ffff::" for a /16.
 */
export function prefixMask(prefix: Ipv4Prefix): string {
  if (prefix.address.includes(':')) return ipPrefixMask(prefix);
  return formatIPv4(maskOf(prefix.length));
}

function maskOf(length: number): number {
  return length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0;
}

/** Why a text is not a prefix, as a phrase for a message. */
export type PrefixParse = { ok: true; prefix: Ipv4Prefix } | { ok: false; reason: string };

/**
 * "A.B.C.D/N" or a single address "A.B.C.D" (a /32). The address must be the network
 * address of the block: 239.1.2.3/16 is refused, saying that 239.1.0.0/16 is meant.
 */
export function parsePrefix(text: string): PrefixParse {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const address = parseIPv4(addressText);
  if (address === undefined) return { ok: false, reason: 'not an IPv4 address or CIDR block such as 239.1.0.0/16' };
  if (slash < 0) return { ok: true, prefix: { address: addressText, length: 32 } };
  const lengthText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]?)$/.test(lengthText) || Number(lengthText) > 32) return { ok: false, reason: 'the prefix length after "/" must be 0 to 32' };
  const length = Number(lengthText);
  const network = (address & maskOf(length)) >>> 0;
  if (network !== address) {
    return { ok: false, reason: `host bits are set: the block of ${addressText}/${length} is ${formatIPv4(network)}/${length}` };
  }
  return { ok: true, prefix: { address: addressText, length } };
}

/** The addresses of a prefix as a range. */
export function prefixRange(prefix: Ipv4Prefix): AddressRange {
  const start = parseIPv4(prefix.address)!;
  return { start, end: start + 2 ** (32 - prefix.length) - 1 };
}

/** Whether `value` (an address as a number) is in the prefix. */
export function prefixContains(prefix: Ipv4Prefix, value: number): boolean {
  const { start, end } = prefixRange(prefix);
  return value >= start && value <= end;
}

/** Whether `inner` lies wholly within `outer`. */
export function rangeWithin(inner: AddressRange, outer: AddressRange): boolean {
  return inner.start >= outer.start && inner.end <= outer.end;
}
