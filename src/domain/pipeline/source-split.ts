/**
 * Which ports get which sources of a group, from each port's filter: the split the
 * per-source entries of the pipeline express. A source gets an entry of its own only
 * when its receivers differ from those of the sources nobody names (the (*,G) entry's),
 * so a group whose members all take every source keeps its single entry.
 */
import { admits, type PortFilter } from '../membership/source-filter.js';
import { compareAddresses, type SourceAddress } from '../../wire/ip-address.js';

/** One source of a group and the ports that receive it, sorted. */
export interface SourcePorts {
  source: SourceAddress;
  ports: number[];
}

export interface SourceSplit {
  /** The ports that receive every source not in `bySource` (the EXCLUDE-mode ports), sorted. */
  other: number[];
  /**
   * The sources whose receivers differ from `other`, by address; empty: one entry for the group, as without filters.
   */
  bySource: SourcePorts[];
}

export function splitBySource(filters: readonly PortFilter[]): SourceSplit {
  const other = filters
    .filter(({ filter }) => filter.mode === 'exclude')
    .map(({ port }) => port)
    .sort((a, b) => a - b);
  const named = new Set<SourceAddress>();
  for (const { filter } of filters) for (const source of filter.sources) named.add(source);
  const bySource: SourcePorts[] = [];
  for (const source of [...named].sort(compareAddresses)) {
    const ports = filters
      .filter(({ filter }) => admits(filter, source))
      .map(({ port }) => port)
      .sort((a, b) => a - b);
    if (!sameNumbers(ports, other)) bySource.push({ source, ports });
  }
  return { other, bySource };
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}
