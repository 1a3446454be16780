/**
 * What this node tells its peers about its own groups (those with local pod members), as
 * IGMPv3 reports through the tunnel:
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
 * R = ⌊(pathMtu − 50 − 24 − 8) / 8⌋, with 50 the Geneve over IPv4 overhead (inner
 * Ethernet 14, Geneve 8, UDP 8, IP 20), 24 the IPv4 header with Router Alert, 8 the
 * report's header, and 8 a record without sources: 177 for a 1,500-octet path.
 *
 * Pure: time is passed in; the caller sends the reports (to every peer, or to the one
 * that asked) and runs `flush()` again at `nextDeadline()`.
 */
import type { GroupRecord, IgmpV3Report } from '../../packet/igmp/message.js';
import { addressFamily, addressOrderKey, compareOrderKeys, type GroupAddress, isLinkScopeGroup } from '../../wire/ip-address.js';

/** What Geneve over IPv4 adds to an inner IPv4 packet: inner Ethernet 14, Geneve 8, UDP 8, outer IPv4 20. */
const TUNNEL_OVERHEAD = 50;
/** The IPv4 header of a report: 20 octets and the Router Alert option. */
const REPORT_IP_HEADER_LENGTH = 24;
const REPORT_HEADER_LENGTH = 8;
/** A group record with no sources and no aux data. */
const EMPTY_RECORD_LENGTH = 8;

/** Records a report may hold on a path of `pathMtu` octets (module comment). */
export function recordsPerReport(pathMtu: number): number {
  return Math.floor((pathMtu - TUNNEL_OVERHEAD - REPORT_IP_HEADER_LENGTH - REPORT_HEADER_LENGTH) / EMPTY_RECORD_LENGTH);
}

export interface AnnouncerOptions {
  /** MTU of the underlay path, the interface that holds --node-address (1,500 when unknown). */
  pathMtu: number;
  /** When a change is sent again (RFC 3376's Unsolicited Report Interval: 1 s). */
  retransmitIntervalMs: number;
}

export class PeerAnnouncer {
  private readonly maxRecords: number;
  /** The groups with local members, as change() and setLocalMembers() gave them. */
  private readonly current = new Set<GroupAddress>();
  /** What the peers were last told of each group by a change record: member or not. */
  private readonly announced = new Map<GroupAddress, boolean>();
  /** Groups changed since the last flush. */
  private readonly pending = new Set<GroupAddress>();
  /** group → when its change is sent again. */
  private readonly retransmits = new Map<GroupAddress, number>();

  constructor(private readonly options: AnnouncerOptions) {
    this.maxRecords = recordsPerReport(options.pathMtu);
    if (!Number.isInteger(options.pathMtu) || this.maxRecords < 1) {
      throw new RangeError(`a path MTU of ${options.pathMtu} leaves no room for a report (at least ${TUNNEL_OVERHEAD + 40} octets)`);
    }
  }

  /** Records a report holds at most. */
  get recordLimit(): number {
    return this.maxRecords;
  }

  /** The local groups with members before and after a change; what differs goes out at the next flush(). */
  change(before: ReadonlySet<GroupAddress>, after: ReadonlySet<GroupAddress>): void {
    for (const group of after) if (!before.has(group)) this.setLocalMembers(group, true);
    for (const group of before) if (!after.has(group)) this.setLocalMembers(group, false);
  }

  /** One group's change, as the membership table's effects give it (no ports left: false). */
  setLocalMembers(group: GroupAddress, hasMembers: boolean): void {
    // IPv6 groups: not yet announced to peers (the reports through the tunnel are IGMPv3).
    if (addressFamily(group) === 'ipv6') return;
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
  flush(now: number): IgmpV3Report[] {
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

  /** The full state, for a refresh or the answer to a query: never empty (no groups: one report of no records). */
  fullState(): IgmpV3Report[] {
    const records = [...this.current].map((group): GroupRecord => ({ type: 'MODE_IS_EXCLUDE', group, sources: [] }));
    const reports = this.split(records);
    return reports.length > 0 ? reports : [{ kind: 'report', version: 3, records: [] }];
  }

  private changeRecord(group: GroupAddress): GroupRecord {
    return { type: this.current.has(group) ? 'CHANGE_TO_EXCLUDE_MODE' : 'CHANGE_TO_INCLUDE_MODE', group, sources: [] };
  }

  /** Records in reports of at most R, sorted by group; no records, no reports. */
  private split(records: GroupRecord[]): IgmpV3Report[] {
    const kept = records.filter((record) => !isLinkScopeGroup(record.group));
    const keyed = kept.map((record) => ({ record, key: addressOrderKey(record.group) })).sort((a, b) => compareOrderKeys(a.key, b.key));
    const reports: IgmpV3Report[] = [];
    for (let at = 0; at < keyed.length; at += this.maxRecords) {
      reports.push({ kind: 'report', version: 3, records: keyed.slice(at, at + this.maxRecords).map(({ record }) => record) });
    }
    return reports;
  }
}
