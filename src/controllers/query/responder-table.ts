/**
 * What came back from the link while `query` listened: who answered for which group,
 * with which filter and IGMP or MLD version, how long after the query; which other
 * queriers spoke; and which querier wins the election. Pure: the link feeds it what it
 * heard, stamped with the time it was heard. One table is one family: a run in IGMP
 * counts IGMP only, a run in MLD counts MLD only (the link hears both).
 */
import type { IgmpReport, IgmpV2Leave } from '../../packet/igmp/message.js';
import type { MldDone, MldReport, MldVersion } from '../../packet/mld/message.js';
import type { MembershipProtocol } from '../../packet/frame-decoder.js';
import type { HeardIgmp, HeardMembership, HeardMld, LinkPort } from '../../adapters/query-link/query-link.js';
import {
  ANY_SOURCE,
  applyGroupRecord,
  type FilterMode,
  type SourceFilter,
} from '../../domain/membership/source-filter.js';
import { compareAddresses, textFamily } from '../../wire/ip-address.js';
import { parseIPv6 } from '../../wire/ipv6-address.js';
import type { IgmpVersion } from '../../packet/igmp/message.js';
import type { QueryKind } from './query-spec.js';

/** A version of either family: IGMPv1-3 or MLDv1-2; `protocol` says which. */
export type QueryVersion = IgmpVersion | MldVersion;

export interface SentQuery {
  /** Milliseconds since the epoch. */
  at: number;
  /** Absent: IGMP (the table's own family). */
  protocol?: MembershipProtocol;
  version: QueryVersion;
  kind: QueryKind;
  group: string | null;
  sources: string[];
  src: string;
  dst: string;
  maxRespMs: number;
  /** Its IPv4 identification (IGMP only: IPv6 has none). */
  identification?: number;
}

export interface Responder {
  host: string;
  group: string;
  protocol: MembershipProtocol;
  /** The version of the report the host sent (of `protocol`), whatever the query's. */
  version: QueryVersion;
  mode: FilterMode;
  sources: string[];
  /** From the latest query sent before its first answer. */
  delayMs: number;
  /** Reports (or v3 records) it sent for the group during the run. */
  answers: number;
  port?: string;
  pod?: string;
}

export interface QuerierSeen {
  address: string;
  protocol: MembershipProtocol;
  version: QueryVersion;
  /** Our own queries. */
  self: boolean;
  /**
   * IGMP: lowest non-zero address among the v2 and v3 queriers (RFC 2236 §3, RFC 3376
   * §6.6.2); 0.0.0.0 takes no part, and neither does a v1 querier: IGMPv1 has no election.
   * MLD: lowest address among queriers of either version (RFC 2710 §4, RFC 3810 §7.6.2);
   * :: takes no part.
   */
  elected: boolean;
  queries: number;
  port?: string;
  pod?: string;
}

export interface ResponderTableOptions {
  /** A group-specific query: answers for other groups are only counted. */
  group?: string;
  /** Our querier: its address (0.0.0.0 or :: stays out of the election) and version. */
  self: { address: string; version: QueryVersion };
  /** The family counted (default IGMP); messages of the other are not looked at. */
  protocol?: MembershipProtocol;
}

interface ResponderEntry {
  /** The sources as the reports carried them. */
  filter: SourceFilter<string>;
  version: QueryVersion;
  delayMs: number;
  answers: number;
  port: LinkPort | undefined;
}

interface QuerierEntry {
  address: string;
  version: QueryVersion;
  queries: number;
  port: LinkPort | undefined;
}

export class ResponderTable {
  private readonly sent: SentQuery[] = [];
  /** `group|host|port` → what that host said last */
  private readonly entries = new Map<string, ResponderEntry & { host: string; group: string }>();
  private readonly others = new Map<string, QuerierEntry>();
  private ignored = 0;

  private readonly protocol: MembershipProtocol;

  constructor(private readonly options: ResponderTableOptions) {
    this.protocol = options.protocol ?? 'igmp';
  }

  querySent(query: SentQuery): void {
    this.sent.push(query);
  }

  get queries(): readonly SentQuery[] {
    return this.sent;
  }

  /** Reports and leaves not counted as answers: for other groups, or heard before the first query. */
  get ignoredReports(): number {
    return this.ignored;
  }

  heard(event: HeardMembership): void {
    if (isMld(event)) {
      if (this.protocol === 'mld') this.heardMld(event);
      return;
    }
    if (this.protocol !== 'igmp') return;
    const { message } = event;
    switch (message.kind) {
      case 'query':
        this.heardQuery(event, message.version);
        return;
      case 'report':
      case 'leave':
        this.heardReport(event, message);
        return;
      case 'other':
        return;
    }
  }

  /** Sorted by group, then host, then port. */
  responders(): Responder[] {
    const out: Responder[] = [];
    for (const entry of this.entries.values()) {
      out.push({
        host: entry.host,
        group: entry.group,
        protocol: this.protocol,
        version: entry.version,
        mode: entry.filter.mode,
        sources: [...entry.filter.sources].sort(compareAnyAddresses),
        delayMs: entry.delayMs,
        answers: entry.answers,
        ...portFields(entry.port),
      });
    }
    return out.sort(
      (a, b) =>
        compareAnyAddresses(a.group, b.group) ||
        compareAnyAddresses(a.host, b.host) ||
        (a.port ?? '').localeCompare(b.port ?? ''),
    );
  }

  /** Every querier heard, and ours; sorted by address, the election decided. */
  queriers(): QuerierSeen[] {
    const { protocol } = this;
    const all: Array<Omit<QuerierSeen, 'elected'>> = [...this.others.values()].map((entry) => ({
      address: entry.address,
      protocol,
      version: entry.version,
      self: false,
      queries: entry.queries,
      ...portFields(entry.port),
    }));
    const { self } = this.options;
    if (!isUnspecified(self.address) && this.sent.length > 0)
      all.push({ address: self.address, protocol, version: self.version, self: true, queries: this.sent.length });
    all.sort((a, b) => compareAnyAddresses(a.address, b.address) || Number(a.self) - Number(b.self));
    const winner = all.find(
      (querier) => !isUnspecified(querier.address) && (protocol === 'mld' || querier.version !== 1),
    );
    return all.map((querier) => ({ ...querier, elected: querier === winner }));
  }

  private heardQuery(event: HeardIgmp, version: IgmpVersion): void {
    // Our own query, echoed by the link (loopback does): not another querier.
    if (event.src === this.options.self.address && this.sent.some((query) => query.identification === event.ipId))
      return;
    this.otherQuerier(event, version);
  }

  private heardMld(event: HeardMld): void {
    const { message } = event;
    if (message.kind === 'query') {
      // Our own query, echoed by the link: the same source, version and group as one we
      // sent (IPv6 has no identification; another querier with our link-local address
      // would be a duplicate address that DAD exists to prevent).
      const group = message.group === '::' ? null : message.group;
      const ours =
        event.src === this.options.self.address &&
        this.sent.some((query) => query.version === message.version && query.group === group);
      if (!ours) this.otherQuerier(event, message.version);
      return;
    }
    this.heardReport(event, message);
  }

  private otherQuerier(event: HeardMembership, version: QueryVersion): void {
    const key = `${event.src}|${event.port?.name ?? ''}`;
    const entry = this.others.get(key);
    if (entry === undefined) this.others.set(key, { address: event.src, version, queries: 1, port: event.port });
    else {
      entry.version = version;
      entry.queries++;
    }
  }

  private heardReport(event: HeardMembership, message: IgmpReport | IgmpV2Leave | MldReport | MldDone): void {
    const query = this.latestQueryAt(event.at);
    if (message.kind === 'report' && 'records' in message) {
      for (const record of message.records) {
        if (query === undefined || !this.inScope(record.group)) this.ignored++;
        else this.update(event, record.group, query, (current) => applyGroupRecord(current, record), message.version);
      }
      return;
    }
    if (query === undefined || !this.inScope(message.group)) {
      this.ignored++;
      return;
    }
    const filter = message.kind === 'leave' ? undefined : ANY_SOURCE;
    this.update(event, message.group, query, () => filter, message.version);
  }

  private update(
    event: HeardMembership,
    group: string,
    query: SentQuery,
    next: (current: SourceFilter<string> | undefined) => SourceFilter<string> | undefined,
    version: QueryVersion,
  ): void {
    const key = `${group}|${event.src}|${event.port?.name ?? ''}`;
    const entry = this.entries.get(key);
    const filter = next(entry?.filter);
    if (filter === undefined) {
      this.entries.delete(key); // a leave (v2 leave, v3 TO_IN {}): no longer a member
      return;
    }
    if (entry === undefined) {
      this.entries.set(key, {
        host: event.src,
        group,
        filter,
        version,
        delayMs: Math.max(0, Math.round(event.at - query.at)),
        answers: 1,
        port: event.port,
      });
    } else {
      entry.filter = filter;
      entry.version = version;
      entry.answers++;
    }
  }

  private inScope(group: string): boolean {
    return this.options.group === undefined || this.options.group === group;
  }

  private latestQueryAt(at: number): SentQuery | undefined {
    for (let i = this.sent.length - 1; i >= 0; i--) if (this.sent[i]!.at <= at) return this.sent[i];
    return undefined;
  }
}

function portFields(port: LinkPort | undefined): { port?: string; pod?: string } {
  if (port === undefined) return {};
  return port.pod === undefined ? { port: port.name } : { port: port.name, pod: port.pod };
}

function isMld(event: HeardMembership): event is HeardMld {
  return 'protocol' in event && event.protocol === 'mld';
}

/** 0.0.0.0 or ::: a querier without an address, no candidate in the election. */
function isUnspecified(address: string): boolean {
  return address === '0.0.0.0' || address === '::';
}

/** IPv4 addresses in their order (compareAddresses), then IPv6 ones by their 16 octets. */
function compareAnyAddresses(a: string, b: string): number {
  const a6 = textFamily(a) === 'ipv6' ? parseIPv6(a) : undefined;
  const b6 = textFamily(b) === 'ipv6' ? parseIPv6(b) : undefined;
  if (a6 === undefined && b6 === undefined) return compareAddresses(a, b);
  if (a6 === undefined) return -1;
  if (b6 === undefined) return 1;
  for (let i = 0; i < a6.length; i++) if (a6[i] !== b6[i]) return a6[i]! - b6[i]!;
  return 0;
}
