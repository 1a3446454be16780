/**
 * What `mcastctl query --mld` asks the link: the MLD version, general, multicast-address-
 * specific or (MLDv2) multicast-address-and-source-specific, and the Maximum Response
 * Delay, checked once from the user's words and then turned into the exact message to put
 * on the wire. The MLD counterpart of query-spec.ts.
 */
import { quoteInput, UsageError } from '../../errors.js';
import { encodeMaxRespCode, decodeMaxRespCode, MAX_MAX_RESP_CODE_VALUE } from '../../packet/mld/index.js';
import { encodeFloatCode } from '../../packet/igmp/float-code.js';
import type { MldQuery, MldVersion } from '../../packet/mld/message.js';
import { canonicalIPv6, parseIPv6 } from '../../wire/ipv6-address.js';
import type { QueryKind } from './query-spec.js';

/** RFC 3810 §9.3 and RFC 2710 §7.3 Query Response Interval: what a querier uses unless told otherwise. */
const DEFAULT_MAX_RESP_MS = 10_000;
/** RFC 3810 §9.1 Robustness Variable and §9.2 Query Interval, told to v2 listeners in QRV and QQIC. */
const DEFAULT_ROBUSTNESS = 2;
const DEFAULT_QUERY_INTERVAL_S = 125;
/**
 * The largest Maximum Response Delay in ms: a plain 16-bit field in v1, the floating-point code in v2 (RFC 3810
 * §5.1.3).
 */
const MAX_RESP_MS: Readonly<Record<MldVersion, number>> = { 1: 0xffff, 2: MAX_MAX_RESP_CODE_VALUE };
/** A query must fit one unfragmented packet on a 1280-octet IPv6 minimum MTU link: (1280 - 40 - 8 - 28) / 16. */
const MAX_QUERY_SOURCES = 75;

/** The all-nodes address: general queries go there (RFC 3810 §5.1.15, RFC 2710 §5). */
const ALL_NODES = 'ff02::1';

export interface MldQuerySpec {
  protocol: 'mld';
  version: MldVersion;
  /** Absent: a general query. Canonical text. */
  group?: string;
  /** v2 only: the sources of a multicast-address-and-source-specific query. Canonical text. */
  sources: readonly string[];
  /** As it goes on the wire, after the v2 floating-point form rounded it down. */
  maxRespMs: number;
}

/** The flags as the command line gave them (strings not yet checked). */
export interface MldQueryRequest {
  version?: string;
  group?: string;
  sources?: string;
  maxResp?: string;
}

/**
 * Checks everything before anything is sent: a UsageError names the flag and says why.
 * Returns the spec with the Maximum Response Delay the listeners will really see.
 */
export function parseMldQuerySpec(request: MldQueryRequest): MldQuerySpec {
  const version = parseVersion(request.version ?? '2');
  const group = request.group === undefined ? undefined : checkMldGroup(request.group.trim(), '--group');
  const sources = request.sources === undefined ? [] : parseSources(request.sources);
  if (sources.length > 0 && version !== 2) {
    throw new UsageError(`--source needs MLDv2 (--version 2): an MLDv1 query cannot name sources (RFC 2710 §3.6)`);
  }
  if (sources.length > 0 && group === undefined)
    throw new UsageError('--source needs --group: a multicast-address-and-source-specific query is about one group');
  const asked = request.maxResp === undefined ? DEFAULT_MAX_RESP_MS : parseMaxRespMs(request.maxResp, version);
  const maxRespMs = version === 2 ? decodeMaxRespCode(encodeMaxRespCode(asked)) : asked;
  return { protocol: 'mld', version, ...(group === undefined ? {} : { group }), sources, maxRespMs };
}

export function mldQueryKind(spec: Pick<MldQuerySpec, 'group' | 'sources'>): QueryKind {
  if (spec.group === undefined) return 'general';
  return spec.sources.length > 0 ? 'group-and-source' : 'group';
}

/** RFC 3810 §5.1.15, RFC 2710 §5: general queries to all-nodes, specific ones to the group. */
export function mldQueryDestination(spec: Pick<MldQuerySpec, 'group'>): string {
  return spec.group ?? ALL_NODES;
}

/** The MLD message of `spec`. */
export function mldQueryMessage(spec: MldQuerySpec): MldQuery {
  const group = spec.group ?? '::';
  if (spec.version === 1) return { kind: 'query', version: 1, group, maxRespDelayMs: spec.maxRespMs };
  return {
    kind: 'query',
    version: 2,
    group,
    maxRespCode: encodeMaxRespCode(spec.maxRespMs),
    // S, as in IGMPv3 (RFC 3810 §5.1.7, §7.6.1): routers that hear a specific query must
    // not lower their timers. We only ask; we are not the querier that would follow up.
    sFlag: group !== '::',
    qrv: DEFAULT_ROBUSTNESS,
    qqic: encodeFloatCode(DEFAULT_QUERY_INTERVAL_S),
    sources: [...spec.sources],
  };
}

/**
 * A group a listener can report: IPv6 multicast, of a scope that leaves the node (not 0,
 * reserved, nor 1, interface-local), and not all-nodes, which is never reported (RFC 3810
 * §6, RFC 2710 §5). Other link-scope groups (solicited-node ones) are reported, so may be
 * asked about.
 */
function checkMldGroup(text: string, where: string): string {
  const bytes = parseIPv6(text);
  if (bytes === undefined) {
    const hint = /^[0-9.]+$/.test(text) ? ' (an IPv4 group goes without --mld)' : '';
    throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv6 address${hint}`, { code: 'bad-address' });
  }
  const group = canonicalIPv6(text)!;
  if (bytes[0] !== 0xff)
    throw new UsageError(`${where}: ${group} is not an IPv6 multicast address (ff00::/8)`, { code: 'bad-address' });
  const scope = bytes[1]! & 0x0f;
  if (scope <= 1) {
    const name = scope === 0 ? 'reserved' : 'interface-local';
    throw new UsageError(`${where}: ${group} has scope ${scope} (${name}): never reported on a link (RFC 3810 §6)`, {
      code: 'bad-address',
    });
  }
  if (group === ALL_NODES) {
    throw new UsageError(`${where}: ${group} is all-nodes: listeners never report it (RFC 3810 §6, RFC 2710 §5)`, {
      code: 'bad-address',
    });
  }
  return group;
}

/** A unicast IPv6 address a source can send from: not multicast, unspecified or loopback. */
function checkMldSource(text: string, where: string): string {
  const bytes = parseIPv6(text);
  if (bytes === undefined)
    throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv6 address`, { code: 'bad-address' });
  const source = canonicalIPv6(text)!;
  if (bytes[0] === 0xff || source === '::' || source === '::1')
    throw new UsageError(`${where}: ${source} is not a unicast host address`, { code: 'bad-address' });
  return source;
}

/**
 * The queries' source as the user gave it: a link-local unicast address (fe80::/10), since
 * listeners discard queries from any other (RFC 3810 §5.1.14, RFC 2710 §3), or `::`, as a
 * snooping switch without an address sends them (hosts discard those too: the caller warns).
 */
export function checkMldQuerierAddress(text: string, where: string): string {
  const trimmed = text.trim();
  const bytes = parseIPv6(trimmed);
  if (bytes === undefined) {
    throw new UsageError(
      `${where}: ${quoteInput(text)} is not an IPv6 address (with --mld, queries come from an IPv6 link-local address or ::)`,
      {
        code: 'bad-address',
      },
    );
  }
  const address = canonicalIPv6(trimmed)!;
  if (address === '::') return address;
  if (bytes[0] !== 0xfe || (bytes[1]! & 0xc0) !== 0x80) {
    throw new UsageError(
      `${where}: ${address} is not link-local (fe80::/10): listeners discard MLD queries from any other source (RFC 3810 §5.1.14)`,
      {
        code: 'bad-address',
      },
    );
  }
  return address;
}

function parseVersion(text: string): MldVersion {
  const trimmed = text.trim();
  if (trimmed === '1' || trimmed === '2') return Number(trimmed) as MldVersion;
  throw new UsageError(`--version with --mld takes 1 or 2 (the MLD version of the query), not ${quoteInput(text)}`);
}

function parseSources(text: string): string[] {
  const sources = text.split(',').map((part) => checkMldSource(part.trim(), '--source'));
  if (new Set(sources).size !== sources.length) throw new UsageError('--source names a source twice');
  if (sources.length > MAX_QUERY_SOURCES)
    throw new UsageError(`--source: at most ${MAX_QUERY_SOURCES} sources fit in one MLD query, not ${sources.length}`);
  return sources;
}

/** Seconds with at most three decimals (the field counts milliseconds), within the version's range. */
function parseMaxRespMs(text: string, version: MldVersion): number {
  const max = MAX_RESP_MS[version];
  const range = `0.001 to ${max / 1000} s for MLDv${version}`;
  const match = /^([0-9]+)(?:\.([0-9]{1,3}))?$/.exec(text.trim());
  if (match === null)
    throw new UsageError(
      `--max-resp takes seconds to the millisecond (${range}), such as 10 or 0.5, not ${quoteInput(text)}`,
    );
  const ms = Number(match[1]) * 1000 + Number((match[2] ?? '').padEnd(3, '0'));
  if (ms < 1 || ms > max) throw new UsageError(`--max-resp ${quoteInput(text)} is out of range: ${range}`);
  return ms;
}
