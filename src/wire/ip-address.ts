/**
 * The addresses the domain is keyed by: a multicast group, a host that reports
 * membership, and a source a host filters on. Each is the address's canonical text
 * (what users, JSON, logs and state files show: dotted quad for IPv4, RFC 5952 for IPv6)
 * with a brand, so that a host cannot be passed where a group is wanted, and so that
 * every value of these types has passed one of the checks below: text from a packet, a
 * file, a flag or the switch becomes one only through `parseGroupAddress`,
 * `parseHostAddress` or `parseSourceAddress`. Canonical text makes equal addresses equal
 * strings, so maps keyed by them need no parsing.
 *
 * The types say nothing of the family: `addressFamily` tells it, and the domain's family
 * modules (src/domain/family/) hold what differs.
 */
import { parseIPv4 } from './ipv4-address.js';
import { canonicalIPv6, parseIPv6 } from './ipv6-address.js';

declare const addressKind: unique symbol;
/** A multicast group address, e.g. 239.1.2.3 or ff3e::8000:1. */
export type GroupAddress = string & { readonly [addressKind]: 'group' };
/** A unicast host address, e.g. 10.0.0.5 or fe80::1; 0.0.0.0 or :: for a host that reported without one. */
export type HostAddress = string & { readonly [addressKind]: 'host' };
/** A unicast source address of a source filter or an (S,G) route, e.g. 10.0.0.5 or 2001:db8::5. */
export type SourceAddress = string & { readonly [addressKind]: 'source' };

export type AddressFamily = 'ipv4' | 'ipv6';

/**
 * The family address text is written in, without checking that it is an address: IPv6
 * text always holds a colon, IPv4 text never. For text known to be an address (or where a
 * wrong one fails later anyway); addressFamily checks.
 */
export function textFamily(text: string): AddressFamily {
  return text.includes(':') ? 'ipv6' : 'ipv4';
}

/** The family of address text, or undefined for text that is no address. IPv6 text always holds a colon, IPv4 never. */
export function addressFamily(text: string): AddressFamily | undefined {
  if (text.includes(':')) return parseIPv6(text) === undefined ? undefined : 'ipv6';
  return parseIPv4(text) === undefined ? undefined : 'ipv4';
}

/** 224.0.0.0/4 (RFC 5771) or ff00::/8 (RFC 4291 §2.7). The one multicast test of the project. */
export function isMulticast(text: string): boolean {
  if (text.includes(':')) return parseIPv6(text)?.[0] === 0xff;
  const value = parseIPv4(text);
  return value !== undefined && value >>> 28 === 0xe;
}

/**
 * 224.0.0.0/24, and IPv6 groups of interface-local or link-local scope (ff01::/16,
 * ff02::/16 and their flagged forms: the scope nibble is 0, 1 or 2): control groups
 * (all systems or nodes, all routers, the report groups, IPv6's solicited-node groups of
 * Neighbor Discovery). Their traffic is flooded to every port and never needs
 * membership (RFC 4541 §2.1.2, §3).
 */
export function isLinkScopeGroup(text: string): boolean {
  if (text.includes(':')) {
    const bytes = parseIPv6(text);
    return bytes !== undefined && bytes[0] === 0xff && (bytes[1]! & 0x0f) <= 2;
  }
  const value = parseIPv4(text);
  return value !== undefined && value >>> 8 === 0xe00000;
}

/**
 * A multicast group address (canonical text), or undefined for anything else (link-scope groups included: the caller
 * decides about those).
 */
export function parseGroupAddress(text: string): GroupAddress | undefined {
  if (!isMulticast(text)) return undefined;
  return (text.includes(':') ? canonicalIPv6(text)! : text) as GroupAddress;
}

/** Any address but a multicast one (0.0.0.0 and :: included), canonical, or undefined for anything else. */
export function parseHostAddress(text: string): HostAddress | undefined {
  if (text.includes(':')) {
    const bytes = parseIPv6(text);
    return bytes === undefined || bytes[0] === 0xff ? undefined : (canonicalIPv6(text)! as HostAddress);
  }
  const value = parseIPv4(text);
  return value !== undefined && value >>> 28 !== 0xe ? (text as HostAddress) : undefined;
}

/** A unicast address (not 0.0.0.0 or ::, not multicast, not 255.255.255.255), canonical, or undefined. */
export function parseSourceAddress(text: string): SourceAddress | undefined {
  if (text.includes(':')) {
    const bytes = parseIPv6(text);
    if (bytes === undefined || bytes[0] === 0xff || bytes.every((octet) => octet === 0)) return undefined;
    return canonicalIPv6(text)! as SourceAddress;
  }
  const value = parseIPv4(text);
  return value === undefined || value === 0 || value >>> 28 >= 0xe ? undefined : (text as SourceAddress);
}

/** Like parseGroupAddress, for text a codec has already checked; throws RangeError otherwise (a bug, not input). */
export function groupAddress(text: string): GroupAddress {
  const group = parseGroupAddress(text);
  if (group === undefined) throw new RangeError(`${JSON.stringify(text)} is not a multicast group address`);
  return group;
}

/** Like parseHostAddress, for text a codec has already checked; throws RangeError otherwise. */
export function hostAddress(text: string): HostAddress {
  const host = parseHostAddress(text);
  if (host === undefined) throw new RangeError(`${JSON.stringify(text)} is not a host address`);
  return host;
}

/** Like parseSourceAddress, for text a codec has already checked; throws RangeError otherwise. */
export function sourceAddress(text: string): SourceAddress {
  const source = parseSourceAddress(text);
  if (source === undefined) throw new RangeError(`${JSON.stringify(text)} is not a source address`);
  return source;
}

/**
 * The one order of addresses: numeric (10.0.0.9 before 10.0.0.10), IPv4 before IPv6 (by
 * their 16 octets); text that is no address sorts last. Every listing, file and table
 * sorts by it.
 */
export function compareAddresses(a: string, b: string): number {
  const x = addressOrderKey(a);
  const y = addressOrderKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A key whose string order is compareAddresses's, for sorting many addresses: parse once
 * per element, not once per comparison. IPv4 is "4" and 8 hex digits, IPv6 "6" and 32.
 */
export function addressOrderKey(text: string): string {
  if (text.includes(':')) {
    const bytes = parseIPv6(text);
    if (bytes === undefined) return '~';
    let key = '6';
    for (const octet of bytes) key += octet.toString(16).padStart(2, '0');
    return key;
  }
  const value = parseIPv4(text);
  return value === undefined ? '~' : `4${value.toString(16).padStart(8, '0')}`;
}

/** compareAddresses for keys from addressOrderKey. */
export function compareOrderKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
