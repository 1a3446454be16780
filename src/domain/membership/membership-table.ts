/**
 * The daemon's group state: which hosts behind which bridge ports
 * are members of which group, kept as a router keeps it (RFC 3376 §6, with the host
 * compatibility rules of §7.3), and what has to happen when that changes.
 *
 * Pure and driven from outside: IGMP comes in as method calls, time comes from an
 * injected clock, and every call returns the effects to carry out: a group's member
 * ports or their source filters changed (reprogram its OVS entries), or a port must be
 * asked about a group (a group-specific query, when a member leaves without fast leave)
 * or about some of its sources (when a host stops wanting them). Each member keeps the
 * router-side source state of §6.2.1 (./router-filter.ts): a record adds to it by the
 * tables of §6.4, so one record split over several reports counts whole. `expire()` at
 * `nextDeadline()` runs the source and group timers down: members that fell silent,
 * leaves nobody contradicted and sources asked about that nobody still wants.
 */
import type { IgmpVersion } from '../../packet/igmp/message.js';
import { ANY_SOURCE, type PortFilter, type SourceFilter } from './source-filter.js';
import { HostCompatibility, recordAsCounted } from './host-compatibility.js';
import * as routerFilter from './router-filter.js';
import {
  DEFAULT_MEMBERSHIP_TIMING,
  type GroupSnapshot,
  type MembershipRecord,
  type MembershipTiming,
  type RestoredMember,
} from './member-records.js';

export type { GroupSnapshot, MembershipRecord, MembershipTiming, RestoredMember } from './member-records.js';
import {
  type MembershipLimitSettings,
  type MembershipRefusal,
  type RefusalReason,
  refusalOf,
  UNLIMITED,
} from './membership-limits.js';
import { type GroupAddress, type HostAddress, hostAddress, type SourceAddress } from '../../wire/ip-address.js';
import { type MemberEntry, MemberStore } from './member-store.js';
import { groupOrderOf, restoreMembers, snapshotOf } from './membership-snapshot.js';

interface MembershipClock {
  /** Milliseconds, monotonic. */
  now(): number;
}

export interface MembershipTableOptions {
  clock: MembershipClock;
  timing?: MembershipTiming;
  /**
   * A leave removes the host at once. Right for pod ports, which have one host each; off,
   * a leave makes the port be asked (a group-specific query) and the membership ends
   * only if nobody answers within the Last Member Query Time.
   */
  fastLeave: boolean;
  /** Told of every host that joins or leaves a group (for the event stream and logs). */
  onMemberChange?: (change: MemberChange) => void;
  /** What a report may add (./membership-limits.ts); none: no limits. */
  limits?: MembershipLimitSettings;
  /** Told of every join the limits refused. */
  onRefusal?: (refusal: MembershipRefusal) => void;
  /** The groups the node holds for others only (tunnel mode: the peers'): they count against maxGroups too. */
  heldForOthers?: { count(): number; has(group: GroupAddress): boolean };
}

/**
 * The host of a member known only from OVS (a group the daemon had installed before it
 * restarted, without saved state for it): some host behind the port wanted the group.
 * The first real report from the port replaces it; a leave from any host there ends it.
 */
export const UNKNOWN_HOST: HostAddress = hostAddress('0.0.0.0');

export type LeaveReason = 'leave' | 'expired' | 'no-answer' | 'port-removed' | 'denied';

export type MemberChange =
  | { type: 'join'; group: GroupAddress; port: number; host: HostAddress }
  | { type: 'leave'; group: GroupAddress; port: number; host: HostAddress; reason: LeaveReason };

export type MembershipEffect =
  /**
   * The ports with members of `group`, or their filters (portFiltersOf), changed: forward it to exactly these (none:
   * stop).
   */
  | { kind: 'members'; group: GroupAddress; ports: number[] }
  /**
   * Ask `port` whether anyone still wants `group` (from `sources` only, when given: sources a host stopped wanting),
   * to answer within `responseMs` when given (else the last member query interval).
   */
  | { kind: 'query'; group: GroupAddress; port: number; sources?: SourceAddress[]; responseMs?: number };

export class MembershipTable {
  private timing: MembershipTiming;
  private fastLeave: boolean;
  /** Every member of every group (./member-store.ts). */
  private readonly members = new MemberStore();
  /** When older-version hosts were last heard on each port, per group (§7.3.2). */
  private readonly compatibility = new HostCompatibility();
  private limits: Readonly<MembershipLimitSettings>;

  constructor(private readonly options: MembershipTableOptions) {
    this.timing = options.timing ?? DEFAULT_MEMBERSHIP_TIMING;
    this.fastLeave = options.fastLeave;
    this.limits = options.limits ?? UNLIMITED;
  }

  /**
   * New timing and leave handling (a reload). Every member's deadline is measured with the
   * new intervals from its last report: a shorter interval can make members due at once
   * (the next expire() removes them); a leave already being asked about keeps its end.
   * New limits hold for joins from now on: what is over a lowered limit stays.
   */
  reconfigure(settings: { timing: MembershipTiming; fastLeave: boolean; limits?: MembershipLimitSettings }): void {
    const byMs = settings.timing.groupMembershipIntervalMs - this.timing.groupMembershipIntervalMs;
    const lowered = this.now() + this.timing.lastMemberQueryTimeMs;
    for (const member of byMs === 0 ? [] : this.members.allMembers()) {
      if (member.leavingUntil !== undefined) continue;
      routerFilter.shiftTimers(member.state, { byMs, lowered });
      this.refreshed(member);
    }
    this.timing = settings.timing;
    this.fastLeave = settings.fastLeave;
    if (settings.limits !== undefined) this.limits = settings.limits;
  }

  /** An IGMPv1 or v2 report: the host wants the group from any source. */
  report(port: number, host: HostAddress, group: GroupAddress, version: 1 | 2): MembershipEffect[] {
    if (this.refusal(group, port, host, ANY_SOURCE) !== undefined) return [];
    this.compatibility.heard({ group, port, version, until: this.now() + this.timing.groupMembershipIntervalMs });
    // IS_EX {} (§7.3.2), which leaves any state as EXCLUDE ({}, {}) with the group timer at the GMI.
    const state = routerFilter.routerFilterOf({
      filter: ANY_SOURCE,
      until: this.now() + this.timing.groupMembershipIntervalMs,
    });
    return this.change(group, new Set([port]), () => this.upsert(group, { port, host, state, filter: ANY_SOURCE }));
  }

  /** One group record of an IGMPv3 report, as the port's compatibility mode lets it count. */
  record(port: number, host: HostAddress, record: MembershipRecord): MembershipEffect[] {
    const effective = recordAsCounted(this.modeOf(record.group, port), record);
    if (effective === undefined) return [];
    const { group } = record;
    const current = this.members.memberOf(group, port, host);
    // INCLUDE {} is a leave, as is a BLOCK from a host the table does not know (it may be the one an UNKNOWN_HOST
    // stands for).
    const emptyInclude =
      (effective.type === 'MODE_IS_INCLUDE' || effective.type === 'CHANGE_TO_INCLUDE_MODE') &&
      effective.sources.length === 0;
    if (emptyInclude || (current === undefined && effective.type === 'BLOCK_OLD_SOURCES'))
      return this.leaveOf(group, port, host);
    const now = this.now();
    const { groupMembershipIntervalMs, lastMemberQueryTimeMs } = this.timing;
    const context = { now, groupMembershipIntervalMs, lastMemberQueryTimeMs, fastLeave: this.fastLeave };
    const applied = routerFilter.applyRouterRecord(current?.state, effective, context);
    if (applied.filter === undefined)
      return current === undefined
        ? []
        : this.change(group, new Set([port]), () => this.remove(group, current, 'leave'));
    const filter = routerFilter.forwardedFilterOf(applied.filter);
    const refused = this.refusal(group, port, host, filter);
    if (refused !== undefined) {
      // Nothing new is added, but the member that reported is still there; an ssm record is ignored altogether (RFC
      // 4604 §2.2.1).
      if (current !== undefined && refused !== 'ssm') {
        current.lastReportAt = now;
        routerFilter.refreshNamed(current.state, effective, now + groupMembershipIntervalMs);
        current.due = routerFilter.nextTimerOf(current.state);
      }
      return [];
    }
    const state = applied.filter;
    const effects = this.change(group, new Set([port]), () => this.upsert(group, { port, host, state, filter }));
    if (applied.query === undefined) return effects;
    // Asked about everything it still has: the member is leaving unless it answers.
    const end = routerFilter.endOf(state);
    const member = this.members.memberOf(group, port, host);
    if (member !== undefined && end <= now + lastMemberQueryTimeMs) member.leavingUntil = end;
    return [...effects, { kind: 'query', group, port, ...applied.query }];
  }

  /** An IGMPv2 leave. Ignored while the port has v1 hosts for the group (§7.3.2). */
  leave(port: number, host: HostAddress, group: GroupAddress): MembershipEffect[] {
    if (this.modeOf(group, port) === 1) return [];
    return this.leaveOf(group, port, host);
  }

  /** The port is gone (the pod was deleted): it leaves every group at once. */
  removePort(port: number): MembershipEffect[] {
    return this.removeMembers((_group, member) => member === port, 'port-removed');
  }

  /** The ports `picks` picks leave those groups at once (denied: a new group policy no longer lets them in). */
  removeMembers(
    picks: (group: GroupAddress, port: number) => boolean,
    reason: 'port-removed' | 'denied',
  ): MembershipEffect[] {
    const effects: MembershipEffect[] = [];
    for (const [group, members] of this.members.groupsWithMembers()) {
      const affected = [...members.values()].filter((member) => picks(group, member.port));
      if (affected.length === 0) continue;
      const ports = new Set(affected.map((member) => member.port));
      effects.push(
        ...this.change(group, ports, () => affected.forEach((member) => this.remove(group, member, reason))),
      );
      for (const port of ports) this.compatibility.forget(group, port);
    }
    return effects;
  }

  /**
   * Ends what is due by now: the source and group timers that ran out, and with them silent members and unanswered
   * leaves; in at most `maxGroups` groups (the rest stay due, for the next call).
   */
  expire(maxGroups = Number.POSITIVE_INFINITY): MembershipEffect[] {
    const now = this.now();
    const effects: MembershipEffect[] = [];
    let groups = 0;
    for (const [group, members] of this.members.groupsWithMembers()) {
      if (groups >= maxGroups) break;
      const due = [...members.values()].filter((member) => member.due <= now);
      if (due.length === 0) continue;
      groups++;
      const reason = (member: MemberEntry): LeaveReason =>
        member.leavingUntil !== undefined && member.leavingUntil <= now ? 'no-answer' : 'expired';
      const ports = new Set(due.map((member) => member.port));
      effects.push(
        ...this.change(group, ports, () => {
          for (const member of due) {
            if (routerFilter.expireRouterFilter(member.state, now) === undefined)
              this.remove(group, member, reason(member));
            else this.refreshed(member);
          }
        }),
      );
    }
    this.compatibility.expire(now);
    return effects;
  }

  /** When `expire()` next has something to do, or undefined if nothing is pending. */
  nextDeadline(): number | undefined {
    return this.members.nextDeadline();
  }

  /** The ports with members of `group`, sorted. */
  portsOf(group: GroupAddress): number[] {
    return this.members.portsOf(group);
  }

  /**
   * Each member port of `group` with the filter of the hosts behind it merged (a host whose leave
   * is being asked about still counts, and so do sources being asked about until their timers end), sorted by port.
   */
  portFiltersOf(group: GroupAddress): PortFilter[] {
    return this.members.portFiltersOf(group);
  }

  /** Every group with members (of `only`, if given), sorted by address; members by port, then host. */
  snapshot(only?: readonly GroupAddress[]): GroupSnapshot[] {
    return snapshotOf(this.members, (group, port) => this.modeOf(group, port), only);
  }

  /** The groups with members, sorted by address (a snapshot taken in slices goes by it). */
  groupsInOrder(): GroupAddress[] {
    return groupOrderOf(this.members);
  }

  private leaveOf(group: GroupAddress, port: number, leaving: HostAddress): MembershipEffect[] {
    // A host not known by address may be the one an UNKNOWN_HOST member stands for.
    const host = this.members.memberOf(group, port, leaving) !== undefined ? leaving : UNKNOWN_HOST;
    const member = this.members.memberOf(group, port, host);
    if (member === undefined) return [];
    if (this.fastLeave) return this.change(group, new Set([port]), () => this.remove(group, member, 'leave'));
    if (member.leavingUntil !== undefined) return []; // already being asked
    member.leavingUntil = this.now() + this.timing.lastMemberQueryTimeMs;
    // As TO_IN {} (§6.4.2): every timer lowered to the Last Member Query Time.
    routerFilter.lowerAll(member.state, member.leavingUntil);
    member.due = routerFilter.nextTimerOf(member.state);
    return [{ kind: 'query', group, port }];
  }

  private upsert(
    group: GroupAddress,
    { port, host, state, filter }: Pick<MemberEntry, 'port' | 'host' | 'state' | 'filter'>,
  ): void {
    // A real report from the port replaces the placeholder for whoever was there.
    if (host !== UNKNOWN_HOST) this.members.delete(group, port, UNKNOWN_HOST);
    // A report answers any pending last-member query.
    const isNew = this.members.put(group, {
      port,
      host,
      state,
      filter,
      due: routerFilter.nextTimerOf(state),
      lastReportAt: this.now(),
      leavingUntil: undefined,
    });
    if (isNew) this.options.onMemberChange?.({ type: 'join', group, port, host });
  }

  /** After `member.state` changed in place: what it forwards and when it is next due. */
  private refreshed(member: MemberEntry): void {
    member.filter = routerFilter.forwardedFilterOf(member.state);
    member.due = routerFilter.nextTimerOf(member.state);
  }

  private remove(group: GroupAddress, member: MemberEntry, reason: LeaveReason): void {
    this.members.delete(group, member.port, member.host);
    this.options.onMemberChange?.({ type: 'leave', group, port: member.port, host: member.host, reason });
  }

  /**
   * Puts back members saved before a restart (report times, timers and compatibility as they were), so that
   * forwarding resumes without waiting for reports. Held to the limits as live joins, in the order given (`refused`
   * hears why one is left out); members whose timers all ended are not restored. Returns the groups that changed.
   */
  restore(saved: readonly RestoredMember[], refused?: (reason: RefusalReason) => void): MembershipEffect[] {
    const { members, compatibility, limits, timing } = this;
    const target = { members, compatibility, limits, groupMembershipIntervalMs: timing.groupMembershipIntervalMs };
    const changed = restoreMembers(saved, { ...target, now: this.now() }, refused);
    return changed.map((group) => ({ kind: 'members', group, ports: this.portsOf(group) }));
  }

  /**
   * The version `port` is treated as speaking for `group` now (RFC 3376 §7.3.2; for MLD,
   * RFC 3810 §8.3.2: an MLDv1 host counts as an IGMPv2 one, so 2 means MLDv1 and 3 MLDv2).
   * What a group-specific query to the port must be.
   */
  compatibilityOf(group: GroupAddress, port: number): IgmpVersion {
    return this.modeOf(group, port);
  }

  /** The timing this table runs with. */
  get timings(): Readonly<MembershipTiming> {
    return this.timing;
  }

  /** How many members (hosts per group and port) there are in all. */
  get memberCount(): number {
    return this.members.memberCount;
  }

  get groupCount(): number {
    return this.members.groupCount;
  }

  /** Why the limits refuse what the report would add (and tells onRefusal so), or undefined. */
  private refusal(
    group: GroupAddress,
    port: number,
    host: HostAddress,
    filter: SourceFilter,
  ): RefusalReason | undefined {
    const members = this.members.membersOf(group)?.values();
    const others = this.options.heldForOthers;
    // No spread: this runs for every record of a flood.
    const refusal = refusalOf({
      limits: this.limits,
      group,
      port,
      host,
      filter,
      members,
      groupCount: this.members.groupCount + (others?.count() ?? 0),
      heldForOthers: others === undefined ? undefined : (held) => others.has(held),
      portGroupCount: this.members.groupCountOf(port),
    });
    // Built field by field: with a spread of `refusal` here, a refused record cost 5.9 µs
    // instead of 0.9 (a flooding port at its limit sends thousands a second).
    if (refusal !== undefined)
      this.options.onRefusal?.({ reason: refusal.reason, limit: refusal.limit, group, port, host });
    return refusal?.reason;
  }

  /**
   * Runs `mutate`, which changes members on `ports` only, and says whether the group's member
   * ports or any port's merged filter changed.
   */
  private change(group: GroupAddress, ports: ReadonlySet<number>, mutate: () => void): MembershipEffect[] {
    const before = this.shapeOf(group, ports);
    mutate();
    this.members.dropIfEmpty(group);
    return before === this.shapeOf(group, ports) ? [] : [{ kind: 'members', group, ports: this.portsOf(group) }];
  }

  /**
   * A canonical form of what forwarding `group` depends on: its member ports (of `ports`, if given) and their merged
   * filters.
   */
  private shapeOf(group: GroupAddress, ports?: ReadonlySet<number>): string {
    return this.members.shapeOf(group, ports);
  }

  private modeOf(group: GroupAddress, port: number): IgmpVersion {
    return this.compatibility.modeOf(group, port, this.now());
  }

  private now(): number {
    return this.options.clock.now();
  }
}
