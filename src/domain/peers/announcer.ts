/**
 * What this node tells its peers about its own groups (those with local pod members), as
 * reports through the tunnel: IGMPv3 for IPv4 groups, MLDv2 for IPv6 ones (the same
 * records, RFC 3810 having taken IGMPv3's), each family in reports of its own:
 *
 * - a group's first local member: CHANGE_TO_EXCLUDE_MODE {} ("send me all of it");
 * - its last local member leaving: CHANGE_TO_INCLUDE_MODE {} ("send me none of it");
 * - the full state, sent every refresh interval and in answer to a query: one
 *   MODE_IS_EXCLUDE {} per group; with no groups, one report of no records (valid
 *   IGMPv3), which the peers take as a heartbeat.
 *
 * Changes are batched: `change()` only notes them, and `flush()` (on the next tick) gives
 * the reports, so a burst of joins costs ⌈N / R⌉ reports and not N. Each change is sent
 * again once, `retransmitIntervalMs` later (RFC 3376 §5.1, robustness 2), with the group's
 * state THEN: a join followed by a leave within the interval cannot re-join.
 *
 * Reports hold at most R records, so that the IP packet, encapsulated, fits the path:
 * R = ⌊(pathMtu − 50 − H − 8 − 32) / r⌋, with 50 the Geneve over IPv4 overhead (inner
 * Ethernet 14, Geneve 8, UDP 8, IP 20), H the report's IP headers with Router Alert (24
 * for IPv4; 48 for IPv6: 40 and a hop-by-hop header of 8), 8 the report's header, 32 the
 * seal of a node with cluster keys (./peer-seal.ts; kept free without, so that a reload
 * that adds keys changes no report's size), and r a record without sources (8 for IPv4,
 * 20 for IPv6): 173 and 68 for a 1,500-octet path.
 *
 * Pure: time is passed in; the caller sends the reports (to every peer, or to the one
 * that asked) and runs `flush()` again at `nextDeadline()`.
 */
import type { GroupRecord, IgmpV3Report } from '../../packet/igmp/message.js';
import type { MldV2Report } from '../../packet/mld/message.js';
import { SEAL_LENGTH } from './peer-seal.js';
import {
  type AddressFamily,
  addressFamily,
  addressOrderKey,
  compareOrderKeys,
  type GroupAddress,
  isLinkScopeGroup,
} from '../../wire/ip-address.js';

/** A report to the peers: IGMPv3 (version 3) for IPv4 groups, MLDv2 (version 2) for IPv6 ones. */
export type PeerReport = IgmpV3Report | MldV2Report;

/** What Geneve over IPv4 adds to an inner packet: inner Ethernet 14, Geneve 8, UDP 8, outer IPv4 20. */
const TUNNEL_OVERHEAD = 50;
const REPORT_HEADER_LENGTH = 8;

/**
 * What a report's size depends on in each family: its IP headers (Router Alert included) and a record without sources
 * or aux data.
 */
const REPORT_LAYOUT: Readonly<Record<AddressFamily, { ipHeaders: number; emptyRecord: number }>> = {
  ipv4: { ipHeaders: 24, emptyRecord: 8 },
  ipv6: { ipHeaders: 48, emptyRecord: 20 },
};

/** The least path MTU that leaves room for one record of either family. */
const MIN_PATH_MTU =
  TUNNEL_OVERHEAD + REPORT_LAYOUT.ipv6.ipHeaders + REPORT_HEADER_LENGTH + SEAL_LENGTH + REPORT_LAYOUT.ipv6.emptyRecord;

/** Records a report of `family` may hold on a path of `pathMtu` octets (module comment). */
export function recordsPerReport(pathMtu: number, family: AddressFamily = 'ipv4'): number {
  const { ipHeaders, emptyRecord } = REPORT_LAYOUT[family];
  return Math.floor((pathMtu - TUNNEL_OVERHEAD - ipHeaders - REPORT_HEADER_LENGTH - SEAL_LENGTH) / emptyRecord);
}

export interface AnnouncerOptions {
  /** MTU of the underlay path, the interface that holds --node-address (1,500 when unknown). */
  pathMtu: number;
  /** When a change is sent again (RFC 3376's Unsolicited Report Interval: 1 s). */
  retransmitIntervalMs: number;
}

export class PeerAnnouncer {
  private readonly maxRecords: Readonly<Record<AddressFamily, number>>;
  /** The groups with local members, as change() and setLocalMembers() gave them. */
  private readonly current = new Set<GroupAddress>();
  /** What the peers were last told of each group by a change record: member or not. */
  private readonly announced = new Map<GroupAddress, boolean>();
  /** Groups changed since the last flush. */
  private readonly pending = new Set<GroupAddress>();
  /** group → when its change is sent again. */
  private readonly retransmits = new Map<GroupAddress, number>();

  constructor(private readonly options: AnnouncerOptions) {
    if (!Number.isInteger(options.pathMtu) || options.pathMtu < MIN_PATH_MTU) {
      throw new RangeError(
        `a path MTU of ${options.pathMtu} leaves no room for a report (at least ${MIN_PATH_MTU} octets)`,
      );
    }
    this.maxRecords = {
      ipv4: recordsPerReport(options.pathMtu, 'ipv4'),
      ipv6: recordsPerReport(options.pathMtu, 'ipv6'),
    };
  }

  /** Records a report of `family` holds at most. */
  recordLimit(family: AddressFamily = 'ipv4'): number {
    return this.maxRecords[family];
  }

  /** The local groups with members before and after a change; what differs goes out at the next flush(). */
  change(before: ReadonlySet<GroupAddress>, after: ReadonlySet<GroupAddress>): void {
    for (const group of after) if (!before.has(group)) this.setLocalMembers(group, true);
    for (const group of before) if (!after.has(group)) this.setLocalMembers(group, false);
  }

  /** One group's change, as the membership table's effects give it (no ports left: false). */
  setLocalMembers(group: GroupAddress, hasMembers: boolean): void {
    if (this.current.has(group) === hasMembers) return;
    if (hasMembers) this.current.add(group);
    else this.current.delete(group);
    this.pending.add(group);
  }

  /** Whether flush() has something to send now (a change waits for it). */
  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /**
   * The reports to send to every peer now: the changes since the last flush, and the
   * retransmissions due by `now`, each with the group's current state. A group that
   * changed and changed back before a flush sends nothing, as peers never heard of it.
   */
  flush(now: number): PeerReport[] {
    const records = new Map<GroupAddress, GroupRecord>();
    for (const group of this.pending) {
      const member = this.current.has(group);
      if ((this.announced.get(group) ?? false) === member) continue;
      this.announced.set(group, member);
      records.set(group, this.changeRecord(group));
      this.retransmits.set(group, now + this.options.retransmitIntervalMs);
    }
    this.pending.clear();
    for (const [group, due] of this.retransmits) {
      if (due > now || records.has(group)) continue;
      this.retransmits.delete(group);
      records.set(group, this.changeRecord(group));
      // Told twice that the group is gone: the peers need nothing more of it.
      if (!this.current.has(group)) this.announced.delete(group);
    }
    return this.split([...records.values()]);
  }

  /** When flush() next has a retransmission to send, or undefined. */
  nextDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const due of this.retransmits.values()) if (earliest === undefined || due < earliest) earliest = due;
    return earliest;
  }

  /**
   * The full state, for a refresh or the answer to a query: never empty (no groups: one IGMPv3 report of no records).
   */
  fullState(): PeerReport[] {
    const records = [...this.current].map((group): GroupRecord => ({ type: 'MODE_IS_EXCLUDE', group, sources: [] }));
    const reports = this.split(records);
    return reports.length > 0 ? reports : [{ kind: 'report', version: 3, records: [] }];
  }

  private changeRecord(group: GroupAddress): GroupRecord {
    return { type: this.current.has(group) ? 'CHANGE_TO_EXCLUDE_MODE' : 'CHANGE_TO_INCLUDE_MODE', group, sources: [] };
  }

  /** Records in reports of their family of at most R, sorted by group (IPv4's first); no records, no reports. */
  private split(records: GroupRecord[]): PeerReport[] {
    const kept = records.filter((record) => !isLinkScopeGroup(record.group));
    const keyed = kept
      .map((record) => ({ record, key: addressOrderKey(record.group) }))
      .sort((a, b) => compareOrderKeys(a.key, b.key));
    const reports: PeerReport[] = [];
    for (const family of ['ipv4', 'ipv6'] as const) {
      const ofFamily = keyed.filter(({ record }) => addressFamily(record.group) === family).map(({ record }) => record);
      const limit = this.maxRecords[family];
      for (let at = 0; at < ofFamily.length; at += limit) {
        const slice = ofFamily.slice(at, at + limit);
        reports.push(
          family === 'ipv4'
            ? { kind: 'report', version: 3, records: slice }
            : { kind: 'report', version: 2, records: slice },
        );
      }
    }
    return reports;
  }
}
