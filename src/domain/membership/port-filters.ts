/**
 * What forwarding a group needs from its members: each member port with the filters of the
 * hosts behind it merged (RFC 3376 §3.2), and a canonical form of that for telling whether
 * a report changed anything a switch has to be told.
 */
import { mergeFilters, type PortFilter, type SourceFilter } from './source-filter.js';

interface FilteredMember {
  port: number;
  /** What the member is forwarded. */
  filter: SourceFilter;
}

/** Each port of `members` with its hosts' filters merged, sorted by port. */
export function portFiltersOfMembers(members: Iterable<FilteredMember>): PortFilter[] {
  return mergedByPort(members, undefined);
}

/**
 * A canonical form of the merged filters of `ports` (all when absent) among `members`: equal
 * before and after a change exactly when none of those ports joined, left or changed its
 * merged filter. A report touches one port, so only that port is merged and written out; in
 * a group of thousands of members that is what keeps a refresh cheap.
 */
export function forwardingShape(members: Iterable<FilteredMember>, ports?: ReadonlySet<number>): string {
  return mergedByPort(members, ports)
    .map(({ port, filter }) => `${port}${filter.mode === 'include' ? '+' : '-'}${[...filter.sources].sort().join(',')}`)
    .join(' ');
}

function mergedByPort(members: Iterable<FilteredMember>, ports: ReadonlySet<number> | undefined): PortFilter[] {
  const byPort = new Map<number, SourceFilter[]>();
  for (const member of members) {
    if (ports !== undefined && !ports.has(member.port)) continue;
    const filters = byPort.get(member.port);
    const { filter } = member;
    if (filters === undefined) byPort.set(member.port, [filter]);
    else filters.push(filter);
  }
  // One host per port (every pod port) needs no merge.
  return [...byPort]
    .sort(([a], [b]) => a - b)
    .map(([port, filters]) => ({ port, filter: filters.length === 1 ? filters[0]! : mergeFilters(filters)! }));
}
