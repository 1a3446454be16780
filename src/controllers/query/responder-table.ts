/**
 * What came back from the link while `query` listened: who answered for which group,
 * with which filter and IGMP version, how long after the query; which other queriers
 * spoke; and which querier wins the election. Pure: the link feeds it what it heard,
 * stamped with the time it was heard.
 */
import type { IgmpReport, IgmpV2Leave } from '../../packet/igmp/message.js';
import type { HeardIgmp, LinkPort } from '../../adapters/query-link/query-link.js';
import { ANY_SOURCE, applyGroupRecord, type FilterMode, type SourceFilter } from '../../domain/membership/source-filter.js';
import { compareAddresses } from '../../wire/ip-address.js';
import type { IgmpVersion } from '../../packet/igmp/message.js';
import type { QueryKind } from './query-spec.js';

export interface SentQuery {
  /** Milliseconds since the epoch. */
  at: number;
  version: IgmpVersion;
  kind: QueryKind;
  group: string | null;
  sources: string[];
  src: string;
  dst: string;
  maxRespMs: number;
  /** Its IPv4 identification. */
  identification: number;
}

export interface Responder {
  host: string;
  group: string;
  /** The version of the report the host sent, whatever the query's. */
  version: IgmpVersion;
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
  version: IgmpVersion;
  /** Our own queries. */
  self: boolean;
  /**
   * Lowest non-zero address among the v2 and v3 queriers (RFC 2236 §3, RFC 3376 §6.6.2).
   * 0.0.0.0 takes no part, and neither does a v1 querier: IGMPv1 has no election.
   */
  elected: boolean;
  queries: number;
  port?: string;
  pod?: string;
}

export interface ResponderTableOptions {
  /** A group-specific query: answers for other groups are only counted. */
  group?: string;
  /** Our querier: its address (0.0.0.0 stays out of the election) and version. */
  self: { address: string; version: IgmpVersion };
}

interface ResponderEntry {
  /** The sources as the reports carried them. */
  filter: SourceFilter<string>;
  version: IgmpVersion;
  delayMs: number;
  answers: number;
  port: LinkPort | undefined;
}

interface QuerierEntry {
  address: string;
  version: IgmpVersion;
  queries: number;
  port: LinkPort | undefined;
}

export class ResponderTable {
  private readonly sent: SentQuery[] = [];
  /** `group|host|port` → what that host said last */
  private readonly entries = new Map<string, ResponderEntry & { host: string; group: string }>();
  private readonly others = new Map<string, QuerierEntry>();
  private ignored = 0;

  constructor(private readonly options: ResponderTableOptions) {}

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

  heard(event: HeardIgmp): void {
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
        version: entry.version,
        mode: entry.filter.mode,
        sources: [...entry.filter.sources].sort(compareAddresses),
        delayMs: entry.delayMs,
        answers: entry.answers,
        ...portFields(entry.port),
      });
    }
    return out.sort((a, b) => compareAddresses(a.group, b.group) || compareAddresses(a.host, b.host) || (a.port ?? '').localeCompare(b.port ?? ''));
  }

  /** Every querier heard, and ours; sorted by address, the election decided. */
  queriers(): QuerierSeen[] {
    const all: Array<Omit<QuerierSeen, 'elected'>> = [...this.others.values()].map((entry) => ({
      address: entry.address,
      version: entry.version,
      self: false,
      queries: entry.queries,
      ...portFields(entry.port),
    }));
    const { self } = this.options;
    if (self.address !== '0.0.0.0' && this.sent.length > 0) all.push({ address: self.address, version: self.version, self: true, queries: this.sent.length });
    all.sort((a, b) => compareAddresses(a.address, b.address) || Number(a.self) - Number(b.self));
    const winner = all.find((querier) => querier.address !== '0.0.0.0' && querier.version !== 1);
    return all.map((querier) => ({ ...querier, elected: querier === winner }));
  }

  private heardQuery(event: HeardIgmp, version: IgmpVersion): void {
    // Our own query, echoed by the link (loopback does): not another querier.
    if (event.src === this.options.self.address && this.sent.some((query) => query.identification === event.ipId)) return;
    const key = `${event.src}|${event.port?.name ?? ''}`;
    const entry = this.others.get(key);
    if (entry === undefined) this.others.set(key, { address: event.src, version, queries: 1, port: event.port });
    else {
      entry.version = version;
      entry.queries++;
    }
  }

  private heardReport(event: HeardIgmp, message: IgmpReport | IgmpV2Leave): void {
    const query = this.latestQueryAt(event.at);
    if (message.kind === 'report' && message.version === 3) {
      for (const record of message.records) {
        if (query === undefined || !this.inScope(record.group)) this.ignored++;
        else this.update(event, record.group, query, (current) => applyGroupRecord(current, record), 3);
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
    event: HeardIgmp,
    group: string,
    query: SentQuery,
    next: (current: SourceFilter<string> | undefined) => SourceFilter<string> | undefined,
    version: IgmpVersion,
  ): void {
    const key = `${group}|${event.src}|${event.port?.name ?? ''}`;
    const entry = this.entries.get(key);
    const filter = next(entry?.filter);
    if (filter === undefined) {
      this.entries.delete(key); // a leave (v2 leave, v3 TO_IN {}): no longer a member
      return;
    }
    if (entry === undefined) {
      this.entries.set(key, { host: event.src, group, filter, version, delayMs: Math.max(0, Math.round(event.at - query.at)), answers: 1, port: event.port });
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
