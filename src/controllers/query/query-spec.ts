/**
 * What `mcastctl query` asks the link: the IGMP version, general or group-specific (and
 * in v3 group-and-source-specific), and the Max Response Time, checked once from the
 * user's words and then turned into the exact message to put on the wire.
 */
import { quoteInput, UsageError } from '../../errors.js';
import { encodeFloatCode, decodeFloatCode, MAX_FLOAT_CODE_VALUE } from '../../packet/igmp/float-code.js';
import type { IgmpQuery, IgmpVersion } from '../../packet/igmp/message.js';
import { checkGroupAddress, checkSourceAddress } from '../../domain/declared-state/group-address.js';

export type QueryKind = 'general' | 'group' | 'group-and-source';

/** A v1 query has no Max Resp field: hosts take it as 10 s (RFC 2236 §4). */
const V1_MAX_RESP_MS = 10_000;
/** RFC 3376 §8.3 Query Response Interval: what a querier uses unless told otherwise. */
const DEFAULT_MAX_RESP_MS = 10_000;
/** RFC 3376 §8.1 Robustness Variable and §8.2 Query Interval, told to v3 hosts in QRV and QQIC. */
const DEFAULT_ROBUSTNESS = 2;
const DEFAULT_QUERY_INTERVAL_S = 125;

/** The largest Max Resp in tenths of a second: one octet in v2, the floating-point form in v3. */
const MAX_RESP_DS: Readonly<Record<2 | 3, number>> = { 2: 255, 3: MAX_FLOAT_CODE_VALUE };
/** A query must fit one unfragmented packet on a 1500-octet link: (1500 - 24 - 12) / 4. */
const MAX_QUERY_SOURCES = 366;

export interface QuerySpec {
  version: IgmpVersion;
  /** Absent: a general query. */
  group?: string;
  /** v3 only: the sources of a group-and-source-specific query. */
  sources: readonly string[];
  /** As it goes on the wire, after the v3 floating-point form rounded it down. */
  maxRespMs: number;
}

/** The flags as the command line gave them (strings not yet checked). */
export interface QueryRequest {
  version?: string;
  group?: string;
  sources?: string;
  maxResp?: string;
}

/**
 * Checks everything before anything is sent: a UsageError names the flag and says why.
 * Returns the spec with the Max Resp Time the hosts will really see.
 */
export function parseQuerySpec(request: QueryRequest): QuerySpec {
  const version = parseVersion(request.version ?? '3');
  const group = request.group === undefined ? undefined : checkGroupAddress(request.group.trim(), '--group');
  const sources = request.sources === undefined ? [] : parseSources(request.sources);
  if (sources.length > 0 && version !== 3) {
    throw new UsageError(`--source needs --version 3: only an IGMPv3 query can name sources (this is IGMPv${version})`);
  }
  if (sources.length > 0 && group === undefined)
    throw new UsageError('--source needs --group: a group-and-source-specific query is about one group');
  if (group !== undefined && version === 1)
    throw new UsageError('--group does not go with --version 1: IGMPv1 has only general queries (RFC 1112)');
  let maxRespMs: number;
  if (version === 1) {
    if (request.maxResp !== undefined) {
      throw new UsageError(
        '--max-resp does not go with --version 1: an IGMPv1 query has no Max Response Time, hosts answer within 10 s',
      );
    }
    maxRespMs = V1_MAX_RESP_MS;
  } else {
    const tenths =
      request.maxResp === undefined ? DEFAULT_MAX_RESP_MS / 100 : parseMaxRespTenths(request.maxResp, version);
    maxRespMs = (version === 3 ? decodeFloatCode(encodeFloatCode(tenths)) : tenths) * 100;
  }
  return { version, ...(group === undefined ? {} : { group }), sources, maxRespMs };
}

export function queryKind(spec: Pick<QuerySpec, 'group' | 'sources'>): QueryKind {
  if (spec.group === undefined) return 'general';
  return spec.sources.length > 0 ? 'group-and-source' : 'group';
}

/** RFC 2236 §2 / RFC 3376 §4.1.12: general queries to all-hosts, specific ones to the group. */
export function queryDestination(spec: Pick<QuerySpec, 'group'>): string {
  return spec.group ?? '224.0.0.1';
}

/** The IGMP message of `spec`. */
export function queryMessage(spec: QuerySpec): IgmpQuery {
  const group = spec.group ?? '0.0.0.0';
  switch (spec.version) {
    case 1:
      return { kind: 'query', version: 1, group: '0.0.0.0' };
    case 2:
      return { kind: 'query', version: 2, group, maxRespTimeDs: spec.maxRespMs / 100 };
    case 3:
      return {
        kind: 'query',
        version: 3,
        group,
        maxRespCode: encodeFloatCode(spec.maxRespMs / 100),
        // S: routers that hear it must not lower their group timers to the Last Member
        // Query Time (RFC 3376 §4.1.5, §6.6.1). We only ask; we are not the querier that
        // would follow up, and a router pruning members who answer late would cut traffic.
        sFlag: group !== '0.0.0.0',
        qrv: DEFAULT_ROBUSTNESS,
        qqic: encodeFloatCode(DEFAULT_QUERY_INTERVAL_S),
        sources: [...spec.sources],
      };
  }
}

function parseVersion(text: string): IgmpVersion {
  const trimmed = text.trim();
  if (trimmed === '1' || trimmed === '2' || trimmed === '3') return Number(trimmed) as IgmpVersion;
  throw new UsageError(`--version takes 1, 2 or 3 (the IGMP version of the query), not ${quoteInput(text)}`);
}

function parseSources(text: string): string[] {
  const sources = text.split(',').map((part) => checkSourceAddress(part.trim(), '--source'));
  if (new Set(sources).size !== sources.length) throw new UsageError('--source names a source twice');
  if (sources.length > MAX_QUERY_SOURCES)
    throw new UsageError(`--source: at most ${MAX_QUERY_SOURCES} sources fit in one query, not ${sources.length}`);
  return sources;
}

/** Seconds with at most one decimal (the field counts tenths), within the version's range. */
function parseMaxRespTenths(text: string, version: 2 | 3): number {
  const max = MAX_RESP_DS[version];
  const range = `0.1 to ${max / 10} s for IGMPv${version}`;
  const match = /^([0-9]+)(?:\.([0-9]))?$/.exec(text.trim());
  if (match === null)
    throw new UsageError(`--max-resp takes seconds in tenths (${range}), such as 10 or 2.5, not ${quoteInput(text)}`);
  const tenths = Number(match[1]) * 10 + Number(match[2] ?? '0');
  if (tenths < 1 || tenths > max) throw new UsageError(`--max-resp ${quoteInput(text)} is out of range: ${range}`);
  return tenths;
}
