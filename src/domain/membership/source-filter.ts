/**
 * One host's source filter for one group, and how a group record of its report changes
 * it (RFC 3376 §6.4, seen from the host's side: every record states or changes that
 * host's own filter). Shared by `snoop`'s summary and `query`'s responder table.
 */
import type { GroupRecord } from '../../packet/igmp/message.js';
import type { SourceAddress } from '../../wire/ip-address.js';

export type FilterMode = 'include' | 'exclude';

/**
 * The daemon's filters hold checked SourceAddress values; the tools that show what was
 * on the wire (`snoop`, `query`) keep the sources as the packet carried them (S = string).
 */
export interface SourceFilter<S extends string = SourceAddress> {
  /** exclude with no sources = "any source": what v1/v2 hosts and a plain v3 join mean. */
  mode: FilterMode;
  sources: ReadonlySet<S>;
}

/** What a v1 or v2 report says (RFC 3376 §7.3.2: treated as IS_EX {}). */
export const ANY_SOURCE: SourceFilter<never> = Object.freeze({ mode: 'exclude', sources: new Set<never>() });

/**
 * The filter after `record`; undefined when the host is not (or no longer) a member:
 * INCLUDE {} is a leave, and blocking sources of a group it is not in changes nothing.
 */
export function applyGroupRecord<S extends string>(
  current: SourceFilter<S> | undefined,
  record: { type: GroupRecord['type']; sources: readonly S[] },
): SourceFilter<S> | undefined {
  const sources = new Set(record.sources);
  switch (record.type) {
    case 'MODE_IS_INCLUDE':
    case 'CHANGE_TO_INCLUDE_MODE':
      return sources.size === 0 ? undefined : { mode: 'include', sources };
    case 'MODE_IS_EXCLUDE':
    case 'CHANGE_TO_EXCLUDE_MODE':
      return { mode: 'exclude', sources };
    case 'ALLOW_NEW_SOURCES':
      if (current === undefined) return { mode: 'include', sources };
      return current.mode === 'include'
        ? { mode: 'include', sources: union(current.sources, sources) }
        : { mode: 'exclude', sources: difference(current.sources, sources) };
    case 'BLOCK_OLD_SOURCES': {
      if (current === undefined) return undefined;
      if (current.mode === 'exclude') return { mode: 'exclude', sources: union(current.sources, sources) };
      const left = difference(current.sources, sources);
      return left.size === 0 ? undefined : { mode: 'include', sources: left };
    }
  }
}

function union<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): Set<T> {
  return new Set([...a, ...b]);
}

function difference<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): Set<T> {
  return new Set([...a].filter((item) => !b.has(item)));
}

/** A port's filter for a group: the merge of its hosts' filters. */
export interface PortFilter {
  port: number;
  filter: SourceFilter;
}

/**
 * The filter of an interface from the filters of the hosts behind it (RFC 3376 §3.2): with
 * any EXCLUDE, EXCLUDE of the sources every EXCLUDE filter blocks and no INCLUDE filter
 * asks for; otherwise INCLUDE of every source asked for. Undefined for no filter.
 */
export function mergeFilters<S extends string>(filters: Iterable<SourceFilter<S>>): SourceFilter<S> | undefined {
  let blocked: Set<S> | undefined;
  const included = new Set<S>();
  let any = false;
  for (const filter of filters) {
    any = true;
    if (filter.mode === 'include') for (const source of filter.sources) included.add(source);
    else
      blocked =
        blocked === undefined
          ? new Set(filter.sources)
          : new Set([...blocked].filter((source) => filter.sources.has(source)));
  }
  if (!any) return undefined;
  if (blocked === undefined) return { mode: 'include', sources: included };
  for (const source of included) blocked.delete(source);
  return { mode: 'exclude', sources: blocked };
}

/** Whether traffic from `source` passes `filter`. */
export function admits<S extends string>(filter: SourceFilter<S>, source: S): boolean {
  return filter.mode === 'include' ? filter.sources.has(source) : !filter.sources.has(source);
}
