/**
 * One member's source state as a router keeps it (RFC 3376 §6.2.1): a timer per source and,
 * in EXCLUDE mode, a group timer; changed by each group record as the tables of §6.4.1 and
 * §6.4.2 say, and run down by time (§6.3, §6.5).
 *
 * A record adds to what the member has instead of replacing it: a host may split one record
 * with many sources over several reports (§4.2.16), and a source the latest record does not
 * name ends with its own timer, or after the Last Member Query Time when the port is asked
 * about it (Q(G,S), §6.6.3.2).
 */
import type { GroupRecord } from '../../packet/igmp/message.js';
import type { SourceAddress } from '../../wire/ip-address.js';
import { ANY_SOURCE, type FilterMode, type SourceFilter } from './source-filter.js';

export interface RouterFilter {
  mode: FilterMode;
  /** INCLUDE: the sources A; EXCLUDE: the requested sources X. Each with when its timer ends, on the table's clock. */
  readonly timers: Map<SourceAddress, number>;
  /** EXCLUDE: the excluded sources Y (their timers are 0). Empty in INCLUDE. */
  readonly excluded: Set<SourceAddress>;
  /** EXCLUDE: when the group timer ends. 0 in INCLUDE. */
  groupUntil: number;
}

export interface RouterRecordContext {
  now: number;
  groupMembershipIntervalMs: number;
  lastMemberQueryTimeMs: number;
  /**
   * A port with one host: what it reports is the port's whole wish. Blocked sources go at
   * once, an IS_EX or TO_EX excludes exactly what it names at once (such a record is never
   * split over reports, §4.2.16), and nobody is asked anything. What a TO_IN stops asking
   * for still waits out the Last Member Query Time, for the rest of a record split over
   * reports.
   */
  fastLeave: boolean;
}

export interface AppliedRouterRecord {
  /** The member's state after the record; undefined: no member (INCLUDE with no source). */
  filter: RouterFilter | undefined;
  /**
   * What the port is to be asked: about the group (`sources` absent) or about these sources of it; undefined: nothing.
   */
  query: { sources?: SourceAddress[] } | undefined;
}

/**
 * The state of a member known as a forwarded filter (restored, or a v1/v2 report): every source
 * timer and the group timer end at `until`, unless `timers` (requested sources) or `groupUntil` say otherwise.
 */
export function routerFilterOf(options: {
  filter: SourceFilter;
  until: number;
  timers?: ReadonlyMap<SourceAddress, number>;
  groupUntil?: number;
}): RouterFilter {
  const { filter, until } = options;
  const timers = new Map<SourceAddress, number>();
  if (filter.mode === 'include')
    for (const source of filter.sources) timers.set(source, options.timers?.get(source) ?? until);
  if (filter.mode === 'include') return { mode: 'include', timers, excluded: new Set(), groupUntil: 0 };
  // EXCLUDE: the requested sources are those saved with a timer that the filter does not exclude.
  for (const [source, timer] of options.timers ?? []) if (!filter.sources.has(source)) timers.set(source, timer);
  return { mode: 'exclude', timers, excluded: new Set(filter.sources), groupUntil: options.groupUntil ?? until };
}

/**
 * `current` after `record` (§6.4.1, §6.4.2), without changing `current`. No current state is
 * INCLUDE {}. The sources asked about have their timers lowered to the Last Member Query Time,
 * and a group query lowers the group timer (§6.6.3); a group query covers any sources asked too.
 */
export function applyRouterRecord(
  current: RouterFilter | undefined,
  record: { type: GroupRecord['type']; sources: readonly SourceAddress[] },
  context: RouterRecordContext,
): AppliedRouterRecord {
  const state = current === undefined ? emptyInclude() : copyOf(current);
  const gmi = context.now + context.groupMembershipIntervalMs;
  const named = new Set(record.sources);
  let asked: SourceAddress[] = [];
  let askGroup = false;
  switch (record.type) {
    case 'MODE_IS_INCLUDE':
    case 'ALLOW_NEW_SOURCES':
      request(state, named, gmi);
      break;
    case 'CHANGE_TO_INCLUDE_MODE':
      // INCLUDE: Q(G, A−B); EXCLUDE: Q(G, X−A) and Q(G).
      asked = [...state.timers.keys()].filter((source) => !named.has(source));
      askGroup = state.mode === 'exclude';
      request(state, named, gmi);
      break;
    case 'MODE_IS_EXCLUDE':
    case 'CHANGE_TO_EXCLUDE_MODE':
      if (context.fastLeave)
        replace(state, { mode: 'exclude', timers: new Map(), excluded: new Set(named), groupUntil: gmi });
      else asked = toExclude(state, named, { isChange: record.type === 'CHANGE_TO_EXCLUDE_MODE', gmi });
      break;
    case 'BLOCK_OLD_SOURCES':
      asked = block(state, named, context.fastLeave);
      break;
  }
  const lowered = context.now + context.lastMemberQueryTimeMs;
  for (const source of asked) state.timers.set(source, Math.min(state.timers.get(source)!, lowered));
  if (askGroup) state.groupUntil = Math.min(state.groupUntil, lowered);
  const query = context.fastLeave ? undefined : askGroup ? {} : asked.length > 0 ? { sources: asked } : undefined;
  return { filter: state.mode === 'include' && state.timers.size === 0 ? undefined : state, query };
}

/** (B) = GMI: INCLUDE (A+B), or EXCLUDE (X+A, Y−A). */
function request(state: RouterFilter, sources: ReadonlySet<SourceAddress>, until: number): void {
  for (const source of sources) {
    state.timers.set(source, until);
    state.excluded.delete(source);
  }
}

/** IS_EX and TO_EX; returns the sources to ask about (TO_EX only). */
function toExclude(
  state: RouterFilter,
  named: ReadonlySet<SourceAddress>,
  { isChange, gmi }: { isChange: boolean; gmi: number },
): SourceAddress[] {
  const asked: SourceAddress[] = [];
  const timers = new Map<SourceAddress, number>();
  const excluded = new Set<SourceAddress>();
  for (const source of named) {
    const timer = state.timers.get(source);
    if (state.mode === 'include') {
      // EXCLUDE (A*B, B−A), (B−A) = 0, delete (A−B); TO_EX: Q(G, A*B).
      if (timer === undefined) excluded.add(source);
      else {
        timers.set(source, timer);
        if (isChange) asked.push(source);
      }
    } else if (state.excluded.has(source)) excluded.add(source);
    else {
      // EXCLUDE (A−Y, Y*A), (A−X−Y) = GMI (IS_EX) or the group timer (TO_EX), delete (X−A), (Y−A); TO_EX: Q(G, A−Y).
      timers.set(source, timer ?? (isChange ? state.groupUntil : gmi));
      if (isChange) asked.push(source);
    }
  }
  replace(state, { mode: 'exclude', timers, excluded, groupUntil: gmi });
  return asked;
}

/** BLOCK; returns the sources to ask about. With fast leave the blocked sources go at once. */
function block(state: RouterFilter, named: ReadonlySet<SourceAddress>, fastLeave: boolean): SourceAddress[] {
  const asked: SourceAddress[] = [];
  for (const source of named) {
    if (state.mode === 'include') {
      // INCLUDE (A), Q(G, A*B).
      if (!state.timers.has(source)) continue;
      if (fastLeave) state.timers.delete(source);
      else asked.push(source);
    } else if (state.excluded.has(source)) continue;
    else if (fastLeave) {
      state.timers.delete(source);
      state.excluded.add(source);
    } else {
      // EXCLUDE (X+(A−Y), Y), (A−X−Y) = group timer, Q(G, A−Y).
      if (!state.timers.has(source)) state.timers.set(source, state.groupUntil);
      asked.push(source);
    }
  }
  return asked;
}

/**
 * Runs `filter`'s timers to `now`, changing it: an EXCLUDE whose group timer ended turns to
 * INCLUDE of its requested sources with their timers (§6.5); a source whose timer ended goes
 * in INCLUDE and becomes excluded in EXCLUDE (§6.3). Undefined: the member is gone.
 */
export function expireRouterFilter(filter: RouterFilter, now: number): RouterFilter | undefined {
  if (filter.mode === 'exclude' && filter.groupUntil <= now) {
    filter.mode = 'include';
    filter.excluded.clear();
    filter.groupUntil = 0;
  }
  for (const [source, until] of filter.timers) {
    if (until > now) continue;
    filter.timers.delete(source);
    if (filter.mode === 'exclude') filter.excluded.add(source);
  }
  return filter.mode === 'include' && filter.timers.size === 0 ? undefined : filter;
}

/** When a timer of `filter` next ends (what expireRouterFilter then has to do). */
export function nextTimerOf(filter: RouterFilter): number {
  let next = filter.mode === 'exclude' ? filter.groupUntil : Number.POSITIVE_INFINITY;
  for (const until of filter.timers.values()) if (until < next) next = until;
  return next;
}

/** When the member ends if nothing more is heard: its last timer (in EXCLUDE, not before the group timer). */
export function endOf(filter: RouterFilter): number {
  let end = filter.mode === 'exclude' ? filter.groupUntil : 0;
  for (const until of filter.timers.values()) if (until > end) end = until;
  return end;
}

/** What traffic the member is forwarded: INCLUDE the sources with a running timer, or EXCLUDE the excluded ones. */
export function forwardedFilterOf(filter: RouterFilter): SourceFilter {
  if (filter.mode === 'include') return { mode: 'include', sources: new Set(filter.timers.keys()) };
  return filter.excluded.size === 0 ? ANY_SOURCE : { mode: 'exclude', sources: new Set(filter.excluded) };
}

/**
 * A record the limits refused still says the member is there: the timers of what it already
 * has that the record names run again (the group timer, for an EXCLUDE-mode record).
 */
export function refreshNamed(
  filter: RouterFilter,
  record: { type: GroupRecord['type']; sources: readonly SourceAddress[] },
  until: number,
): void {
  if (record.type === 'BLOCK_OLD_SOURCES') return;
  if (record.type === 'MODE_IS_EXCLUDE' || record.type === 'CHANGE_TO_EXCLUDE_MODE') {
    if (filter.mode === 'exclude') filter.groupUntil = until;
    return;
  }
  for (const source of record.sources) if (filter.timers.has(source)) filter.timers.set(source, until);
}

/**
 * New intervals (a reload): each timer not lowered for a query (ending after `lowered`) moves by
 * how much the Group Membership Interval changed, as if the reports that set it had come with the new one.
 */
export function shiftTimers(filter: RouterFilter, { byMs, lowered }: { byMs: number; lowered: number }): void {
  for (const [source, until] of filter.timers) if (until > lowered) filter.timers.set(source, until + byMs);
  if (filter.mode === 'exclude' && filter.groupUntil > lowered) filter.groupUntil += byMs;
}

/** Every source timer and the group timer lowered to `until` at the latest (a leave being asked about). */
export function lowerAll(filter: RouterFilter, until: number): void {
  for (const [source, timer] of filter.timers) if (timer > until) filter.timers.set(source, until);
  if (filter.mode === 'exclude') filter.groupUntil = Math.min(filter.groupUntil, until);
}

function emptyInclude(): RouterFilter {
  return { mode: 'include', timers: new Map(), excluded: new Set(), groupUntil: 0 };
}

function copyOf(filter: RouterFilter): RouterFilter {
  return {
    mode: filter.mode,
    timers: new Map(filter.timers),
    excluded: new Set(filter.excluded),
    groupUntil: filter.groupUntil,
  };
}

function replace(state: RouterFilter, next: RouterFilter): void {
  state.mode = next.mode;
  state.timers.clear();
  for (const [source, until] of next.timers) state.timers.set(source, until);
  state.excluded.clear();
  for (const source of next.excluded) state.excluded.add(source);
  state.groupUntil = next.groupUntil;
}
