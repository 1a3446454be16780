/**
 * Sources a host stops wanting while fast leave is off (RFC 3376 §6.4.2, §6.6.3): they are
 * not dropped at once, since another host behind the port that the table does not know
 * may still want them. The port is asked about them (a group-and-source-specific query),
 * and they stay forwarded for the Last Member Query Time; a host that still wants them
 * says so in its answer, and its own filter keeps them after that.
 */
import { admits, mergeFilters, type SourceFilter } from './source-filter.js';
import type { SourceAddress } from '../../wire/ip-address.js';

/** What a member's previous filter still forwards until `until`. */
export interface FadingFilter {
  /** What the host wanted before it dropped sources (merged over several drops). */
  kept: SourceFilter;
  /** On the membership table's clock. */
  until: number;
  /** `kept` merged with the host's current filter: what forwarding uses meanwhile. */
  forwarded: SourceFilter;
}

/**
 * What `previous` admitted that `next` no longer does: undefined for nothing; `sources`
 * absent when that cannot be listed (from EXCLUDE to INCLUDE, every source but a few
 * goes), and the port is then asked about the whole group.
 */
export function droppedSources(previous: SourceFilter, next: SourceFilter): { sources?: SourceAddress[] } | undefined {
  if (previous.mode === 'exclude' && next.mode === 'include') return {};
  const named = new Set([...previous.sources, ...next.sources]);
  const dropped = [...named].filter((source) => admits(previous, source) && !admits(next, source));
  return dropped.length === 0 ? undefined : { sources: dropped };
}

/** The fading part of a member after its filter became `current`, as of `now`; `dropping`: the filter it just left with sources dropped. */
export function nextFading(options: {
  fading: FadingFilter | undefined;
  dropping: SourceFilter | undefined;
  current: SourceFilter;
  now: number;
  until: number;
}): FadingFilter | undefined {
  const active = options.fading !== undefined && options.fading.until > options.now ? options.fading : undefined;
  if (options.dropping === undefined) return active === undefined ? undefined : fading(active.kept, options.current, active.until);
  // A later drop extends the earlier ones to its own deadline: a superset for at most one more Last Member Query Time.
  const kept = active === undefined ? options.dropping : mergeFilters([active.kept, options.dropping])!;
  return fading(kept, options.current, options.until);
}

function fading(kept: SourceFilter, current: SourceFilter, until: number): FadingFilter {
  return { kept, until, forwarded: mergeFilters([kept, current])! };
}
