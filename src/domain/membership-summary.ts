/**
 * What a snoop learned: which host is in which group, with what filter, speaking which
 * IGMP version, last heard when; and which queriers were heard.
 *
 * This is an observer's view, not a router's state machine: every host reports its own
 * full state for a group (RFC 3376 §5.1), so the summary keeps one filter per (group,
 * host) and applies each report to it, without timers. Expiry and querier election
 * belong to the group state of the daemon.
 */
import type { GroupRecord, IgmpVersion } from '../packet/igmp/index.js';
import { applyGroupRecord, type FilterMode } from './membership/source-filter.js';
import { compareAddresses } from '../wire/ip-address.js';
import type { FrameEvent, IgmpFrameEvent } from '../packet/frame-decoder.js';

export interface MemberState {
  host: string;
  /** exclude with no sources = "any source", what v1/v2 hosts and a plain v3 join mean. */
  mode: FilterMode;
  sources: string[];
  /** The version of the host's last report. */
  version: IgmpVersion;
  lastSeen: number;
}

export interface GroupSummary {
  group: string;
  members: MemberState[];
  lastSeen: number;
}

export interface QuerierSummary {
  address: string;
  version: IgmpVersion;
  queries: number;
  lastSeen: number;
}

export interface SnoopCounts {
  queries: number;
  reports: number;
  leaves: number;
  other: number;
  malformed: number;
}

interface MemberEntry {
  mode: FilterMode;
  sources: ReadonlySet<string>;
  version: IgmpVersion;
  lastSeen: number;
}

export class MembershipSummary {
  /** group → host → filter */
  private readonly groups = new Map<string, Map<string, MemberEntry>>();
  private readonly queriers = new Map<string, QuerierSummary>();
  readonly counts: SnoopCounts = { queries: 0, reports: 0, leaves: 0, other: 0, malformed: 0 };

  observe(event: FrameEvent): void {
    if (event.kind === 'malformed') {
      this.counts.malformed++;
      return;
    }
    const { message } = event;
    switch (message.kind) {
      case 'query':
        this.counts.queries++;
        this.observeQuery(event.src, message.version, event.ts);
        break;
      case 'report':
        this.counts.reports++;
        if (message.version === 3) {
          for (const record of message.records) this.applyRecord(event, record);
        } else {
          this.setMember(message.group, event.src, { mode: 'exclude', sources: new Set(), version: message.version, lastSeen: event.ts });
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

  /** Groups with at least one member, sorted by address; members sorted by address. */
  groupSummaries(): GroupSummary[] {
    const out: GroupSummary[] = [];
    for (const [group, hosts] of this.groups) {
      const members: MemberState[] = [];
      let lastSeen = 0;
      for (const [host, entry] of hosts) {
        members.push({ host, mode: entry.mode, sources: [...entry.sources].sort(compareAddresses), version: entry.version, lastSeen: entry.lastSeen });
        lastSeen = Math.max(lastSeen, entry.lastSeen);
      }
      members.sort((a, b) => compareAddresses(a.host, b.host));
      out.push({ group, members, lastSeen });
    }
    return out.sort((a, b) => compareAddresses(a.group, b.group));
  }

  querierSummaries(): QuerierSummary[] {
    return [...this.queriers.values()].sort((a, b) => compareAddresses(a.address, b.address));
  }

  private observeQuery(address: string, version: IgmpVersion, ts: number): void {
    const querier = this.queriers.get(address);
    if (querier === undefined) {
      this.queriers.set(address, { address, version, queries: 1, lastSeen: ts });
    } else {
      querier.version = version;
      querier.queries++;
      querier.lastSeen = ts;
    }
  }

  /** RFC 3376 §6.4's filter arithmetic, from one host's point of view. */
  private applyRecord(event: IgmpFrameEvent, record: GroupRecord): void {
    const host = event.src;
    const filter = applyGroupRecord(this.groups.get(record.group)?.get(host), record);
    if (filter === undefined) this.removeMember(record.group, host);
    else this.setMember(record.group, host, { mode: filter.mode, sources: filter.sources, version: 3, lastSeen: event.ts });
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
