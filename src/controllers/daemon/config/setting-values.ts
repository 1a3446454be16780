/**
 * Readers of one setting's value, from the configuration file (any YAML type) or a flag
 * (a string, or the number commander's OVS options parsed already). Each throws a
 * ValueProblem that says what is wrong with the value; the caller adds where it came from.
 */
import type { IgmpVersion } from '../../../packet/igmp/message.js';
import type { MldVersion } from '../../../packet/mld/message.js';
import { hostAddress, isMulticast, parseSourceAddress, type HostAddress } from '../../../wire/ip-address.js';
import { parsePeerList } from '../../../domain/peers/peer-set.js';
import { isIPv4 } from 'node:net';
import { resolve as resolvePath } from 'node:path';
import { quoteInput, UsageError } from '../../../errors.js';
import {
  cookiePrefixProblem,
  GROUP_ID_BLOCK,
  groupIdBaseProblem,
  meterIdBaseProblem,
} from '../../../domain/pipeline/config.js';
import { readDecimal, readDuration, readHex, showMs } from '../../../runtime/values.js';
import { parseIPv4 } from '../../../wire/ipv4-address.js';
import { parseEndpoint } from '../../../wire/endpoint.js';
import {
  formatIpPrefix,
  type IpPrefix,
  type IpRange,
  ipPrefixRange,
  ipRangeWithin,
  MULTICAST_RANGES,
  parseIpPrefix,
  UNICAST_RANGES,
} from '../../../domain/policy/ip-prefix.js';

/** What is wrong with one value; `item` is the index of the list item at fault, for its line. */
export class ValueProblem extends Error {
  constructor(
    message: string,
    readonly item?: number,
  ) {
    super(message);
  }
}

export type QueryVersion = IgmpVersion;

function describe(value: unknown): string {
  return typeof value === 'string'
    ? quoteInput(value)
    : Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'a mapping'
        : String(value);
}

/** `125s`, `2m`, `500ms`, `1h`, or a bare number of seconds (YAML number or string). */
export function parseDuration(value: unknown): number {
  const reading =
    typeof value === 'number' || typeof value === 'string' ? readDuration(value) : { problem: 'malformed' as const };
  if ('ms' in reading) return reading.ms;
  if (reading.problem === 'too-long') throw new ValueProblem(`${describe(value)} is too long: at most 24 days (596h)`);
  throw new ValueProblem(`${describe(value)} is not a duration such as 125s, 500ms or 2m (a bare number is seconds)`);
}

/** A duration from minMs to maxMs; `reason` says why those bounds. */
export function durationFrom(minMs: number, maxMs: number, reason: string): (value: unknown) => number {
  return (value) => {
    const ms = parseDuration(value);
    if (ms < minMs || ms > maxMs)
      throw new ValueProblem(`${showMs(ms)} is not from ${showMs(minMs)} to ${showMs(maxMs)}${reason}`);
    return ms;
  };
}

/** IGMPv2's Max Resp Time is 8 bits of tenths of a second. */
export const V2_MAX_RESP_MS = 25_500;
/** IGMPv3's Max Resp Code in its floating-point form holds at most 31744 tenths (RFC 3376 §4.1.1). */
export const V3_MAX_RESP_MS = 3_174_400;
/** A Max Resp Code of 0 would turn a v2 query into a v1 one: at least one tenth of a second. */
export const MIN_RESP_MS = 100;
/** The v3 QQIC holds at most 31744 s, in whole seconds. */
export const MIN_QUERY_INTERVAL_MS = 1_000;
export const MAX_QUERY_INTERVAL_MS = 31_744_000;
/** sun_path is 108 bytes, NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;

export function parseInteger(value: unknown, min: number, max: number): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' ? readDecimal(value.trim()) : NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    throw new ValueProblem(`${describe(value)} is not a whole number from ${min} to ${max}`);
  return number;
}

/** The highest membership limit: far above any real use, low enough that a count never nears a float's precision. */
export const MAX_MEMBERSHIP_LIMIT = 1_000_000;

/** A membership limit (groups per port, sources per group, groups per node): a whole number from 1. */
export function parseMembershipLimit(value: unknown): number {
  return parseInteger(value, 1, MAX_MEMBERSHIP_LIMIT);
}

export function parseBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new ValueProblem(`${describe(value)} is not true or false`);
}

export function parseChoice<T extends string>(value: unknown, choices: readonly T[]): T {
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
  throw new ValueProblem(`${describe(value)} is not one of ${choices.join(', ')}`);
}

/** A cookie prefix or group id base: a hexadecimal string ("4d43", "0x4d43") or a number (YAML 0x4d43). */
function parseHexValue(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  const number = typeof value === 'string' ? readHex(value.trim()) : NaN;
  if (!Number.isNaN(number)) return number;
  throw new ValueProblem(`${describe(value)} is not ${what} in hexadecimal, such as "4d43" (quoted) or 0x4d43`);
}

export function parseCookiePrefix(value: unknown): number {
  const prefix = parseHexValue(value, 'a 16-bit cookie prefix');
  const problem = cookiePrefixProblem(prefix);
  if (problem !== undefined) throw new ValueProblem(problem);
  return prefix;
}

export function parseMeterIdBase(value: unknown): number {
  const base = parseInteger(value, 1, 0xffffffff);
  const problem = meterIdBaseProblem(base);
  if (problem !== undefined) throw new ValueProblem(problem);
  return base;
}

export function parseGroupIdBase(value: unknown): number {
  const base = parseHexValue(value, 'a group id');
  const problem = groupIdBaseProblem(base);
  if (problem !== undefined) {
    // `groupIdBase: 20000000` is decimal to YAML: say so when the digits would have been right in hexadecimal.
    const quoteHint =
      typeof value === 'number' && parseInt(String(value), 16) % GROUP_ID_BLOCK === 0
        ? ` (a bare YAML number is decimal: write "${value}" in quotes, or 0x${value})`
        : '';
    throw new ValueProblem(`${problem}${quoteHint}`);
  }
  return base;
}

export function parseBridge(value: unknown): string {
  if (typeof value === 'string' && /^[A-Za-z0-9_.:-]{1,15}$/.test(value)) return value;
  throw new ValueProblem(`${describe(value)} is not a bridge name (1 to 15 letters, digits, '_', '.', ':', '-')`);
}

/** An empty string means "not set" (OVS_RUNDIR, else /var/run/openvswitch). */
export function parseRundir(value: unknown): string | undefined {
  if (value === '') return undefined;
  if (typeof value === 'string' && value.startsWith('/') && !value.includes('\0')) return value;
  throw new ValueProblem(`${describe(value)} is not an absolute directory path`);
}

/** An empty string means "not set" (derived from ovsRundir and bridge). */
export function parseServiceEndpoint(value: unknown, service: string): string | undefined {
  if (value === '') return undefined;
  if (typeof value !== 'string')
    throw new ValueProblem(
      `${describe(value)} is not an address such as unix:/var/run/openvswitch/db.sock or tcp:127.0.0.1:6640`,
    );
  try {
    return parseEndpoint(value, service).text;
  } catch (error) {
    if (error instanceof UsageError)
      throw new ValueProblem(
        `${quoteInput(value)} is not an ${service} address: ${error.message.replace(/^bad .*? address ".*?": /, '')}`,
      );
    throw error;
  }
}

/** An interface name as Linux takes it: 1 to 15 bytes, no '/', ':' or whitespace. */
function isInterfaceName(name: string): boolean {
  return Buffer.byteLength(name) <= 15 && /^[^/:\s]+$/.test(name) && name !== '.' && name !== '..';
}

function parseInterfaceName(value: unknown, item?: number): string {
  if (typeof value === 'string' && isInterfaceName(value)) return value;
  throw new ValueProblem(
    `${describe(value)} is not an interface name (1 to 15 characters, no '/', ':' or whitespace)`,
    item,
  );
}

/** An interface name, or none for an empty string. */
export function parseOptionalInterfaceName(value: unknown): string | undefined {
  return value === '' ? undefined : parseInterfaceName(value);
}

/** A YAML list, or a comma-separated string (a flag, or the file); empty means none. */
function listItems(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'string') return value.trim() === '' ? [] : value.split(',').map((item) => item.trim());
  if (typeof value === 'number') return [value];
  throw new ValueProblem(`${describe(value)} is not a list`);
}

export function parseInterfaceList(value: unknown): string[] {
  const names = listItems(value).map((item, index) =>
    parseInterfaceName(item, Array.isArray(value) ? index : undefined),
  );
  names.forEach((name, index) => {
    if (names.indexOf(name) !== index)
      throw new ValueProblem(`${name} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return names;
}

/**
 * MLD versions of general queries: 1, 2 or both, as a list or comma-separated; an empty
 * list, an empty string or `none`: no MLD queries.
 */
export function parseMldQueryVersions(value: unknown): MldVersion[] {
  if (typeof value === 'string' && value.trim().toLowerCase() === 'none') return [];
  const items = listItems(value);
  const versions = items.map((item, index): MldVersion => {
    const version =
      typeof item === 'number' ? item : typeof item === 'string' && /^[12]$/.test(item) ? Number(item) : NaN;
    if (version !== 1 && version !== 2)
      throw new ValueProblem(
        `${describe(item)} is not an MLD version (1 or 2; none for no MLD queries)`,
        Array.isArray(value) ? index : undefined,
      );
    return version;
  });
  versions.forEach((version, index) => {
    if (versions.indexOf(version) !== index)
      throw new ValueProblem(`version ${version} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return versions.sort((a, b) => a - b);
}

export function parseQueryVersions(value: unknown): QueryVersion[] {
  const items = listItems(value);
  if (items.length === 0) throw new ValueProblem('needs at least one IGMP version (1, 2 or 3)');
  const versions = items.map((item, index): QueryVersion => {
    const version =
      typeof item === 'number' ? item : typeof item === 'string' && /^[123]$/.test(item) ? Number(item) : NaN;
    if (version !== 1 && version !== 2 && version !== 3)
      throw new ValueProblem(
        `${describe(item)} is not an IGMP version (1, 2 or 3)`,
        Array.isArray(value) ? index : undefined,
      );
    return version;
  });
  versions.forEach((version, index) => {
    if (versions.indexOf(version) !== index)
      throw new ValueProblem(`version ${version} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return versions.sort((a, b) => a - b);
}

/** A path; a relative one is taken from the current directory. */
export function parsePath(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.includes('\0'))
    throw new ValueProblem(`${describe(value)} is not a path`);
  return resolvePath(value);
}

/** A socket's path, short enough for sun_path. */
export function parseSocketPath(value: unknown): string {
  const path = parsePath(value);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
    throw new ValueProblem(`${quoteInput(path)} is longer than a socket path can be (${MAX_SOCKET_PATH_BYTES} bytes)`);
  return path;
}

/** A path, or none for an empty string. */
export function parseOptionalPath(value: unknown): string | undefined {
  return value === '' ? undefined : parsePath(value);
}

/** HOST:PORT (an IPv4 address or localhost, a port 0 to 65535), or "off" / false: no metrics. */
export function parseMetricsAddress(value: unknown): string | undefined {
  if (value === 'off' || value === false) return undefined;
  const match = typeof value === 'string' ? /^([^:]+):([0-9]{1,5})$/.exec(value.trim()) : null;
  if (match === null) throw new ValueProblem(`${describe(value)} is not HOST:PORT, such as 127.0.0.1:9815, or "off"`);
  const host = match[1]!;
  const port = Number(match[2]);
  if (!isIPv4(host) && host !== 'localhost')
    throw new ValueProblem(`${quoteInput(host)} is not an IPv4 address or localhost`);
  if (port > 65535) throw new ValueProblem(`port ${port} is not 0 to 65535`);
  // Nothing could reach a listener there, though binding may succeed: refused rather than logged as served.
  const address = host === 'localhost' ? undefined : parseIPv4(host);
  const servable = 'metrics are served on a local address (127.0.0.1), a unicast one, or 0.0.0.0';
  if (address !== undefined && isMulticast(host)) throw new ValueProblem(`${host} is a multicast address: ${servable}`);
  if (address === 0xffffffff) throw new ValueProblem(`${host} is the broadcast address: ${servable}`);
  return `${host}:${port}`;
}

/** An empty string means "not set" (the default is worked out from other settings). */
export function optional<T>(parse: (value: unknown) => T): (value: unknown) => T | undefined {
  return (value) => (value === '' ? undefined : parse(value));
}

/** This node's underlay address: a unicast IPv4 address, not a loopback one; none for an empty string. */
export function parseNodeAddress(value: unknown): HostAddress | undefined {
  if (value === '') return undefined;
  if (typeof value !== 'string' || parseSourceAddress(value) === undefined || value.startsWith('127.'))
    throw new ValueProblem(`${describe(value)} is not a unicast IPv4 address of this node, such as 192.168.60.11`);
  return hostAddress(value);
}

/** The pods' address ranges of the whole cluster, of either family: unicast CIDR blocks, each once. */
export function parseClusterCidrs(value: unknown): IpPrefix[] {
  return parsePrefixList(value, {
    example: '10.244.0.0/16 or fd00:10:244::/56',
    within: [UNICAST_RANGES.ipv4, UNICAST_RANGES.ipv6],
    outside: "is not a block of unicast addresses (pods' addresses are below 224.0.0.0, or outside ff00::/8)",
  });
}

/**
 * The source-specific multicast range of IPv4: blocks of multicast groups, each once; "" or
 * [] turns SSM off (for IPv6 too, whose range is ff3x::/96 by definition).
 */
export function parseSsmRange(value: unknown): IpPrefix[] {
  return parsePrefixList(value, {
    example: '232.0.0.0/8',
    within: [MULTICAST_RANGES.ipv4],
    outside:
      "is not a block of IPv4 multicast groups (inside 224.0.0.0/4, such as 232.0.0.0/8; IPv6's SSM range is always ff3x::/96)",
  });
}

/** CIDR blocks, each inside one of `within` and listed once; `example` is the block the messages show. */
function parsePrefixList(
  value: unknown,
  rule: { example: string; within: readonly IpRange[]; outside: string },
): IpPrefix[] {
  const prefixes = listItems(value).map((item, index) => {
    const at = Array.isArray(value) ? index : undefined;
    const place = at === undefined ? `entry ${index + 1}: ` : '';
    if (typeof item !== 'string')
      throw new ValueProblem(`${place}${describe(item)} is not a CIDR block such as ${rule.example}`, at);
    const parsed = parseIpPrefix(item);
    if (!parsed.ok)
      throw new ValueProblem(
        `${place}${quoteInput(item)}: ${parsed.reason.replace('239.1.0.0/16 or ff3e::/16', rule.example)}`,
        at,
      );
    const range = ipPrefixRange(parsed.prefix);
    if (!rule.within.some((within) => ipRangeWithin(range, within)))
      throw new ValueProblem(`${place}${quoteInput(item)} ${rule.outside}`, at);
    return parsed.prefix;
  });
  const texts = prefixes.map(formatIpPrefix);
  texts.forEach((text, index) => {
    if (texts.indexOf(text) !== index)
      throw new ValueProblem(`${text} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return prefixes;
}

/**
 * The peers as given, each a peer address (peer-set.ts says which), duplicates kept: the
 * list is normalised once this node's address is known (tunnel-config.ts).
 */
export function parsePeerAddresses(value: unknown): HostAddress[] {
  const items = listItems(value);
  return items.map((item, index) => {
    const at = Array.isArray(value) ? index : undefined;
    if (typeof item !== 'string') throw new ValueProblem(`${describe(item)} is not an IPv4 address`, at);
    try {
      const [peer] = parsePeerList(item, 'peers', { localAddresses: new Set() }).peers;
      if (peer === undefined) throw new UsageError('peers: entry 1: an empty entry');
      return peer;
    } catch (error) {
      // A list item is named by its line; an entry of a comma-separated string by its place.
      const reason = error instanceof UsageError ? error.message.replace(/^peers: entry 1: /, '') : undefined;
      if (reason !== undefined) throw new ValueProblem(at === undefined ? `entry ${index + 1}: ${reason}` : reason, at);
      throw error;
    }
  });
}
