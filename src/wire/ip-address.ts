/**
 * The addresses the domain is keyed by: a multicast group, a host that reports
 * membership, and a source a host filters on. Each is the address's canonical text
 * (what users, JSON, logs and state files show) with a brand, so that a host cannot be
 * passed where a group is wanted, and so that every value of these types has passed
 * one of the checks below: text from a packet, a file, a flag or the switch becomes one
 * only through `parseGroupAddress`, `parseHostAddress` or `parseSourceAddress`.
 *
 * The types say nothing of the family. IPv4 is the only one today; a second family adds
 * its parse, its multicast and link-scope ranges and its order here, and nothing that
 * holds these types changes.
 */
import { parseIPv4 } from './ipv4-address.js';

declare const addressKind: unique symbol;
/** A multicast group address, e.g. 239.1.2.3. */
export type GroupAddress = string & { readonly [addressKind]: 'group' };
/** A unicast host address, e.g. 10.0.0.5; 0.0.0.0 for a host that reported without one. */
export type HostAddress = string & { readonly [addressKind]: 'host' };
/** A unicast source address of a source filter or an (S,G) route, e.g. 10.0.0.5. */
export type SourceAddress = string & { readonly [addressKind]: 'source' };

export type AddressFamily = 'ipv4';

/** 224.0.0.0/4 (RFC 5771). The one multicast test of the project. */
export function isMulticast(text: string): boolean {
  const value = parseIPv4(text);
  return value !== undefined && value >>> 28 === 0xe;
}

/**
 * 224.0.0.0/24: link-local control groups (all systems, all routers, IGMPv3 reports).
 * Their traffic is flooded to every port and never needs membership (RFC 4541 §2.1.2).
 */
export function isLinkScopeGroup(text: string): boolean {
  const value = parseIPv4(text);
  return value !== undefined && value >>> 8 === 0xe00000;
}

/** A multicast group address, or undefined for anything else (link-scope groups included: the caller decides about those). */
export function parseGroupAddress(text: string): GroupAddress | undefined {
  return isMulticast(text) ? (text as GroupAddress) : undefined;
}

/** Any address but a multicast one (0.0.0.0 included), or undefined for anything else. */
export function parseHostAddress(text: string): HostAddress | undefined {
  return isUnicastOrUnspecified(text) ? (text as HostAddress) : undefined;
}

/** A unicast address (not 0.0.0.0, not multicast, not 255.255.255.255), or undefined. */
export function parseSourceAddress(text: string): SourceAddress | undefined {
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
 * The one order of addresses: numeric (10.0.0.9 before 10.0.0.10), a family before the
 * next; text that is no address sorts last. Every listing, file and table sorts by it.
 */
export function compareAddresses(a: string, b: string): number {
  return (parseIPv4(a) ?? Infinity) - (parseIPv4(b) ?? Infinity) || 0;
}

/**
 * A number that orders as compareAddresses does, for sorting many addresses: parse once
 * per element, not once per comparison.
 */
export function addressOrderKey(text: string): number {
  return parseIPv4(text) ?? Infinity;
}

function isUnicastOrUnspecified(text: string): boolean {
  const value = parseIPv4(text);
  return value !== undefined && value >>> 28 !== 0xe;
}
