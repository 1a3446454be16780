/**
 * What the membership table takes in and gives out besides effects: its timing, the records it is fed,
 * the members a restart gives back, and its snapshot; and how a member's router-side state
 * (./router-filter.ts) is made from what was saved and shown in a snapshot.
 */
import type { GroupRecord, IgmpVersion } from '../../packet/igmp/message.js';
import { compareAddresses, type GroupAddress, type HostAddress, type SourceAddress } from '../../wire/ip-address.js';
import type { SourceFilter } from './source-filter.js';
import * as routerFilter from './router-filter.js';

export interface MembershipTiming {
  /**
   * Group Membership Interval, RV × QI + QRI (RFC 3376 §8.4): 260 s by default. Also the Older Host Present Interval
   * (§8.13).
   */
  groupMembershipIntervalMs: number;
  /** Last Member Query Time, LMQC × LMQI (§8.9): 2 s by default. */
  lastMemberQueryTimeMs: number;
}

export const DEFAULT_MEMBERSHIP_TIMING: Readonly<MembershipTiming> = Object.freeze({
  groupMembershipIntervalMs: 260_000,
  lastMemberQueryTimeMs: 2_000,
});

/** One group record of an IGMPv3 report, its addresses checked (the snooper drops sources that are none). */
export interface MembershipRecord {
  type: GroupRecord['type'];
  group: GroupAddress;
  sources: readonly SourceAddress[];
}

/** A member as saved by the daemon and given back to restore(). */
export interface RestoredMember {
  group: GroupAddress;
  port: number;
  host: HostAddress;
  filter: SourceFilter;
  /** On this table's clock. */
  lastReportAt: number;
  compatibility: IgmpVersion;
  /** When each requested source's timer ends, on this table's clock; absent: lastReportAt + GMI for every source. */
  sourceTimers?: readonly SourceTimer[];
  /** When an EXCLUDE member's group timer ends, on this table's clock; absent: lastReportAt + GMI. */
  groupTimerUntil?: number;
}

/** A requested source of a member (INCLUDE: forwarded; EXCLUDE: asked for by name) and when its timer ends. */
interface SourceTimer {
  source: SourceAddress;
  until: number;
}

export interface MemberSnapshot {
  port: number;
  host: HostAddress;
  /** The oldest version heard from the port lately: how the port is treated (§7.3.2). */
  compatibility: IgmpVersion;
  /** What the member is forwarded. */
  filter: { mode: SourceFilter['mode']; sources: SourceAddress[] };
  lastReportAt: number;
  /** Set while a leave waits for the Last Member Query Time. */
  leavingUntil?: number;
  /** The requested sources' timers, sorted by source (absent: none). */
  sourceTimers?: SourceTimer[];
  /** EXCLUDE: when the group timer ends. */
  groupTimerUntil?: number;
}

export interface GroupSnapshot {
  group: GroupAddress;
  ports: number[];
  members: MemberSnapshot[];
}

/** A saved member's state: its timers as saved, or (older saves) all ending a GMI after its last report. */
export function restoredState(member: RestoredMember, groupMembershipIntervalMs: number): routerFilter.RouterFilter {
  const until = member.lastReportAt + groupMembershipIntervalMs;
  const timers =
    member.sourceTimers === undefined
      ? undefined
      : new Map(member.sourceTimers.map(({ source, until }) => [source, until]));
  return routerFilter.routerFilterOf({
    filter: member.filter,
    until,
    ...(timers === undefined ? {} : { timers }),
    groupUntil: member.groupTimerUntil ?? until,
  });
}

/** A member's timers as a snapshot shows them. */
export function timersOf(state: routerFilter.RouterFilter): Pick<MemberSnapshot, 'sourceTimers' | 'groupTimerUntil'> {
  const sourceTimers = [...state.timers]
    .map(([source, until]) => ({ source, until }))
    .sort((a, b) => compareAddresses(a.source, b.source));
  return {
    ...(sourceTimers.length === 0 ? {} : { sourceTimers }),
    ...(state.mode === 'exclude' ? { groupTimerUntil: state.groupUntil } : {}),
  };
}
