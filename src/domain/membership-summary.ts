/**
 * What a snoop learned: which host is in which group, with what filter, speaking which
 * IGMP or MLD version, last heard when; and which queriers were heard.
 *
 * This is an observer's view, not a router's state machine: every host reports its own
 * full state for a group (RFC 3376 §5.1), so the summary keeps one filter per (group,
 * host) and applies each report to it, without timers. Expiry and querier election
 * belong to the group state of the daemon.
 *
 * IGMP's groups and MLD's share one table: an IPv4 group and an IPv6 group never have the
 * same text, and each member says which protocol it spoke. IPv4 addresses sort first.
 */
import type { GroupRecord, IgmpVersion } from '../packet/igmp/index.js';
import type { MldRecord, MldVersion } from '../packet/mld/message.js';
import { applyGroupRecord, type FilterMode } from './membership/source-filter.js';
import { compareAddresses } from '../wire/ip-address.js';
import { parseIPv6 } from '../wire/ipv6-address.js';
import type { FrameEvent, IgmpFrameEvent, MembershipProtocol, MldFrameEvent } from '../packet/frame-decoder.js';

/** A version of IGMP (1 to 3) or of MLD (1, 2): which, the protocol beside it says. */
export type MembershipVersion = IgmpVersion | MldVersion;

export interface MemberState {
  host: string;
  /** exclude with no sources = "any source", what v1/v2 hosts and a plain v3 join mean. */
  mode: FilterMode;
  sources: string[];
  /** The protocol and version of the host's last report. */
  protocol: MembershipProtocol;
  version: MembershipVersion;
  lastSeen: number;
}

export interface GroupSummary {
  group: string;
  members: MemberState[];
  lastSeen: number;
}

export interface QuerierSummary {
  address: string;
  protocol: MembershipProtocol;
  version: MembershipVersion;
  queries: number;
  lastSeen: number;
}

export interface SnoopCounts {
  queries: number;
  reports: number;
  leaves: number;
  other: number;
  malformed: number;
  /** How many of the messages above were MLD (malformed ones included); the rest were IGMP. */
  mld: number;
}

interface MemberEntry {
  mode: FilterMode;
  sources: ReadonlySet<string>;
  protocol: MembershipProtocol;
  version: MembershipVersion;
  lastSeen: number;
}

export class MembershipSummary {
  /** group → host → filter */
  private readonly groups = new Map<string, Map<string, MemberEntry>>();
  private readonly queriers = new Map<string, QuerierSummary>();
  readonly counts: SnoopCounts = { queries: 0, reports: 0, leaves: 0, other: 0, malformed: 0, mld: 0 };

  observe(event: FrameEvent): void {
    if (event.kind === 'malformed') {
      this.counts.malformed++;
      if (event.protocol === 'mld') this.counts.mld++;
      return;
    }
    if (event.kind === 'mld') {
      this.counts.mld++;
      this.observeMld(event);
      return;
    }
    const { message } = event;
    switch (message.kind) {
      case 'query':
        this.counts.queries++;
        this.observeQuery(event.src, 'igmp', message.version, event.ts);
        break;
      case 'report':
        this.counts.reports++;
        if (message.version === 3) {
          for (const record of message.records) this.applyRecord(event, record);
        } else {
          this.setMember(message.group, event.src, {
            mode: 'exclude',
            sources: new Set(),
            protocol: 'igmp',
            version: message.version,
            lastSeen: event.ts,
          });
        }
        break;
      case 'leave':
        this.counts.leaves++;
        this.removeMember(message.group, event.src);
        break;
      case 'other':
        this.counts.other++;
        break;
    }
  }

  /** MLD is IGMP's model again (RFC 3810 §7.4 repeats RFC 3376 §6.4): v1 as IGMPv2, v2 as IGMPv3. */
  private observeMld(event: MldFrameEvent): void {
    const { message } = event;
    switch (message.kind) {
      case 'query':
        this.counts.queries++;
        this.observeQuery(event.src, 'mld', message.version, event.ts);
        break;
      case 'report':
        this.counts.reports++;
        if (message.version === 2) {
          for (const record of message.records) this.applyRecord(event, record);
        } else {
          this.setMember(message.group, event.src, {
            mode: 'exclude',
            sources: new Set(),
            protocol: 'mld',
            version: 1,
            lastSeen: event.ts,
          });
        }
        break;
      case 'leave':
        this.counts.leaves++;
        this.removeMember(message.group, event.src);
        break;
    }
  }

  /** Groups with at least one member, sorted by address; members sorted by address. */
  groupSummaries(): GroupSummary[] {
    const out: GroupSummary[] = [];
    for (const [group, hosts] of this.groups) {
      const members: MemberState[] = [];
      let lastSeen = 0;
      for (const [host, entry] of hosts) {
        members.push({
          host,
          mode: entry.mode,
          sources: [...entry.sources].sort(compareSummaryAddresses),
          protocol: entry.protocol,
          version: entry.version,
          lastSeen: entry.lastSeen,
        });
        lastSeen = Math.max(lastSeen, entry.lastSeen);
      }
      members.sort((a, b) => compareSummaryAddresses(a.host, b.host));
      out.push({ group, members, lastSeen });
    }
    return out.sort((a, b) => compareSummaryAddresses(a.group, b.group));
  }

  querierSummaries(): QuerierSummary[] {
    return [...this.queriers.values()].sort((a, b) => compareSummaryAddresses(a.address, b.address));
  }

  private observeQuery(address: string, protocol: MembershipProtocol, version: MembershipVersion, ts: number): void {
    const querier = this.queriers.get(address);
    if (querier === undefined) {
      this.queriers.set(address, { address, protocol, version, queries: 1, lastSeen: ts });
    } else {
      querier.protocol = protocol;
      querier.version = version;
      querier.queries++;
      querier.lastSeen = ts;
    }
  }

  /** RFC 3376 §6.4's filter arithmetic (RFC 3810 §7.4 for MLDv2), from one host's point of view. */
  private applyRecord(event: IgmpFrameEvent | MldFrameEvent, record: GroupRecord | MldRecord): void {
    const host = event.src;
    const filter = applyGroupRecord(this.groups.get(record.group)?.get(host), record);
    if (filter === undefined) {
      this.removeMember(record.group, host);
      return;
    }
    const [protocol, version] = event.kind === 'igmp' ? (['igmp', 3] as const) : (['mld', 2] as const);
    this.setMember(record.group, host, {
      mode: filter.mode,
      sources: filter.sources,
      protocol,
      version,
      lastSeen: event.ts,
    });
  }

  private setMember(group: string, host: string, entry: MemberEntry): void {
    let hosts = this.groups.get(group);
    if (hosts === undefined) {
      hosts = new Map();
      this.groups.set(group, hosts);
    }
    hosts.set(host, entry);
  }

  private removeMember(group: string, host: string): void {
    const hosts = this.groups.get(group);
    if (hosts === undefined) return;
    hosts.delete(host);
    if (hosts.size === 0) this.groups.delete(group);
  }
}

/**
 * The order of the summary's tables: IPv4 addresses numerically (compareAddresses), then
 * IPv6 ones by their 128 bits (compareAddresses leaves those tied).
 */
function compareSummaryAddresses(a: string, b: string): number {
  const byIPv4 = compareAddresses(a, b);
  if (byIPv4 !== 0) return byIPv4;
  const x = parseIPv6(a);
  const y = parseIPv6(b);
  if (x === undefined || y === undefined) return 0;
  for (let at = 0; at < x.length; at++) if (x[at] !== y[at]) return x[at]! - y[at]!;
  return 0;
}
