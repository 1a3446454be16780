/**
 * The daemon's group state: which hosts behind which bridge ports
 * are members of which group, kept as a router keeps it (RFC 3376 §6, with the host
 * compatibility rules of §7.3), and what has to happen when that changes.
 *
 * Pure and driven from outside: IGMP comes in as method calls, time comes from an
 * injected clock, and every call returns the effects to carry out: a group's member
 * ports or their source filters changed (reprogram its OVS entries), or a port must be
 * asked about a group (a group-specific query, when a member leaves without fast leave)
 * or about some of its sources (when a host stops wanting them). `expire()` at
 * `nextDeadline()` handles members that fell silent, leaves nobody contradicted and
 * dropped sources whose Last Member Query Time is over.
 */
import type { GroupRecord, IgmpVersion } from '../../packet/igmp/message.js';
import { ANY_SOURCE, applyGroupRecord, type PortFilter, type SourceFilter } from './source-filter.js';
import { forwardingShape, portFiltersOfMembers } from './port-filters.js';
import { HostCompatibility, recordAsCounted } from './host-compatibility.js';
import { droppedSources, type FadingFilter, nextFading } from './leaving-sources.js';
import { type MembershipLimitSettings, type MembershipRefusal, PortGroupCounts, type RefusalReason, refusalOf, UNLIMITED } from './membership-limits.js';
import { addressOrderKey, compareAddresses, type GroupAddress, type HostAddress, hostAddress, type SourceAddress } from '../../wire/ip-address.js';

export interface MembershipTiming {
  /** Group Membership Interval, RV × QI + QRI (RFC 3376 §8.4): 260 s by default. Also the Older Host Present Interval (§8.13). */
  groupMembershipIntervalMs: number;
  /** Last Member Query Time, LMQC × LMQI (§8.9): 2 s by default. */
  lastMemberQueryTimeMs: number;
}

const DEFAULT_MEMBERSHIP_TIMING: Readonly<MembershipTiming> = Object.freeze({ groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 });

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
}

/**
 * The host of a member known only from OVS (a group the daemon had installed before it
 * restarted, without saved state for it): some host behind the port wanted the group.
 * The first real report from the port replaces it; a leave from any host there ends it.
 */
export const UNKNOWN_HOST: HostAddress = hostAddress('0.0.0.0');

/** One group record of an IGMPv3 report, its addresses checked (the snooper drops sources that are none). */
export interface MembershipRecord {
  type: GroupRecord['type'];
  group: GroupAddress;
  sources: readonly SourceAddress[];
}

export type LeaveReason = 'leave' | 'expired' | 'no-answer' | 'port-removed' | 'denied';

export type MemberChange =
  | { type: 'join'; group: GroupAddress; port: number; host: HostAddress }
  | { type: 'leave'; group: GroupAddress; port: number; host: HostAddress; reason: LeaveReason };

/** A member as saved by the daemon and given back to restore(). */
export interface RestoredMember {
  group: GroupAddress;
  port: number;
  host: HostAddress;
  filter: SourceFilter;
  /** On this table's clock. */
  lastReportAt: number;
  compatibility: IgmpVersion;
}

export type MembershipEffect =
  /** The ports with members of `group`, or their filters (portFiltersOf), changed: forward it to exactly these (none: stop). */
  | { kind: 'members'; group: GroupAddress; ports: number[] }
  /** Ask `port` whether anyone still wants `group` (from `sources` only, when given: sources a host stopped wanting). */
  | { kind: 'query'; group: GroupAddress; port: number; sources?: SourceAddress[] };

interface MemberSnapshot {
  port: number;
  host: HostAddress;
  /** The oldest version heard from the port lately: how the port is treated (§7.3.2). */
  compatibility: IgmpVersion;
  filter: { mode: SourceFilter['mode']; sources: SourceAddress[] };
  lastReportAt: number;
  /** Set while a leave waits for the Last Member Query Time. */
  leavingUntil?: number;
}

export interface GroupSnapshot {
  group: GroupAddress;
  ports: number[];
  members: MemberSnapshot[];
}

interface MemberEntry {
  port: number;
  host: HostAddress;
  filter: SourceFilter;
  lastReportAt: number;
  leavingUntil: number | undefined;
  /** Sources the host stopped wanting, still forwarded while the port is asked about them (fast leave off). */
  fading: FadingFilter | undefined;
}

export class MembershipTable {
  private timing: MembershipTiming;
  private fastLeave: boolean;
  /** group → `port|host` → member */
  private readonly groups = new Map<GroupAddress, Map<string, MemberEntry>>();
  /** When older-version hosts were last heard on each port, per group (§7.3.2). */
  private readonly compatibility = new HostCompatibility();
  private limits: Readonly<MembershipLimitSettings>;
  private readonly portGroups = new PortGroupCounts();

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
    this.timing = settings.timing;
    this.fastLeave = settings.fastLeave;
    if (settings.limits !== undefined) this.limits = settings.limits;
  }

  /** An IGMPv1 or v2 report: the host wants the group from any source. */
  report(port: number, host: HostAddress, group: GroupAddress, version: 1 | 2): MembershipEffect[] {
    if (this.refusal(group, port, host, ANY_SOURCE) !== undefined) return [];
    this.compatibility.heard({ group, port, version, until: this.now() + this.timing.groupMembershipIntervalMs });
    return this.change(group, new Set([port]), () => this.upsert(group, { port, host, filter: ANY_SOURCE }));
  }

  /** One group record of an IGMPv3 report, as the port's compatibility mode lets it count. */
  record(port: number, host: HostAddress, record: MembershipRecord): MembershipEffect[] {
    const effective = recordAsCounted(this.modeOf(record.group, port), record);
    if (effective === undefined) return [];
    const key = memberKey(port, host);
    const current = this.groups.get(record.group)?.get(key);
    const filter = applyGroupRecord(current?.filter, effective);
    if (filter === undefined) return this.leaveOf(record.group, port, host);
    const refused = this.refusal(record.group, port, host, filter);
    if (refused !== undefined) {
      // Nothing new is added, but the member that reported is still there; an ssm record is ignored altogether (RFC 4604 §2.2.1).
      if (current !== undefined && refused !== 'ssm') current.lastReportAt = this.now();
      return [];
    }
    const dropped = this.fastLeave || current === undefined ? undefined : droppedSources(current.filter, filter);
    const dropping = dropped === undefined ? undefined : current?.filter;
    const effects = this.change(record.group, new Set([port]), () => this.upsert(record.group, { port, host, filter }, dropping));
    if (dropped === undefined) return effects;
    return [...effects, { kind: 'query', group: record.group, port, ...(dropped.sources === undefined ? {} : { sources: dropped.sources }) }];
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
  removeMembers(picks: (group: GroupAddress, port: number) => boolean, reason: 'port-removed' | 'denied'): MembershipEffect[] {
    const effects: MembershipEffect[] = [];
    for (const [group, members] of [...this.groups]) {
      const affected = [...members.values()].filter((member) => picks(group, member.port));
      if (affected.length === 0) continue;
      const ports = new Set(affected.map((member) => member.port));
      effects.push(...this.change(group, ports, () => affected.forEach((member) => this.remove(group, members, member, reason))));
      for (const port of ports) this.compatibility.forget(group, port);
    }
    return effects;
  }

  /** Ends what is due by now: silent members (the GMI passed) and unanswered leaves. */
  expire(): MembershipEffect[] {
    const now = this.now();
    const effects: MembershipEffect[] = [];
    for (const [group, members] of [...this.groups]) {
      const due = [...members.values()].filter(
        (member) => member.lastReportAt + this.timing.groupMembershipIntervalMs <= now || (member.leavingUntil !== undefined && member.leavingUntil <= now),
      );
      const reason = (member: MemberEntry): LeaveReason => (member.leavingUntil !== undefined && member.leavingUntil <= now ? 'no-answer' : 'expired');
      const faded = [...members.values()].filter((member) => member.fading !== undefined && member.fading.until <= now);
      if (due.length === 0 && faded.length === 0) continue;
      const ports = new Set([...due, ...faded].map((member) => member.port));
      effects.push(
        ...this.change(group, ports, () => {
          for (const member of faded) member.fading = undefined;
          for (const member of due) this.remove(group, members, member, reason(member));
        }),
      );
    }
    this.compatibility.expire(now);
    return effects;
  }

  /** When `expire()` next has something to do, or undefined if nothing is pending. */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const members of this.groups.values()) {
      for (const member of members.values()) {
        const due = Math.min(member.lastReportAt + this.timing.groupMembershipIntervalMs, member.leavingUntil ?? Infinity, member.fading?.until ?? Infinity);
        if (next === undefined || due < next) next = due;
      }
    }
    return next;
  }

  /** The ports with members of `group`, sorted. */
  portsOf(group: GroupAddress): number[] {
    const members = this.groups.get(group);
    return members === undefined ? [] : [...new Set([...members.values()].map((member) => member.port))].sort((a, b) => a - b);
  }

  /**
   * Each member port of `group` with the filter of the hosts behind it merged (a host whose leave
   * is being asked about still counts, and so do sources being asked about), sorted by port.
   */
  portFiltersOf(group: GroupAddress): PortFilter[] {
    const members = this.groups.get(group);
    return members === undefined ? [] : portFiltersOfMembers(members.values());
  }

  /** Every group with members, sorted by address; members by port, then host. */
  snapshot(): GroupSnapshot[] {
    // Sorted by a key parsed once per group (a save and every `groups` take a snapshot of thousands).
    const order = new Map<GroupAddress, number>();
    for (const group of this.groups.keys()) order.set(group, addressOrderKey(group));
    return [...this.groups.entries()]
      .map(([group, members]) => ({
        group,
        ports: this.portsOf(group),
        members: [...members.values()]
          .sort((a, b) => a.port - b.port || compareAddresses(a.host, b.host))
          .map((member) => ({
            port: member.port,
            host: member.host,
            compatibility: this.modeOf(group, member.port),
            filter: { mode: member.filter.mode, sources: [...member.filter.sources].sort(compareAddresses) },
            lastReportAt: member.lastReportAt,
            ...(member.leavingUntil === undefined ? {} : { leavingUntil: member.leavingUntil }),
          })),
      }))
      .sort((a, b) => order.get(a.group)! - order.get(b.group)!);
  }

  private leaveOf(group: GroupAddress, port: number, leaving: HostAddress): MembershipEffect[] {
    const members = this.groups.get(group);
    // A host not known by address may be the one an UNKNOWN_HOST member stands for.
    const host = members?.has(memberKey(port, leaving)) === true ? leaving : UNKNOWN_HOST;
    const member = members?.get(memberKey(port, host));
    if (members === undefined || member === undefined) return [];
    if (this.fastLeave) return this.change(group, new Set([port]), () => this.remove(group, members, member, 'leave'));
    if (member.leavingUntil !== undefined) return []; // already being asked
    member.leavingUntil = this.now() + this.timing.lastMemberQueryTimeMs;
    return [{ kind: 'query', group, port }];
  }

  /** `dropping`: the filter the host had, when the new one drops sources of it (they fade over the LMQT). */
  private upsert(group: GroupAddress, { port, host, filter }: { port: number; host: HostAddress; filter: SourceFilter }, dropping?: SourceFilter): void {
    let members = this.groups.get(group);
    if (members === undefined) {
      members = new Map();
      this.groups.set(group, members);
    }
    // A report answers any pending last-member query.
    const key = memberKey(port, host);
    // A real report from the port replaces the placeholder for whoever was there.
    if (host !== UNKNOWN_HOST && members.delete(memberKey(port, UNKNOWN_HOST))) this.portGroups.removed(port, group);
    const previous = members.get(key);
    if (previous === undefined) this.portGroups.added(port, group);
    const now = this.now();
    const fading = nextFading({ fading: previous?.fading, dropping, current: filter, now, until: now + this.timing.lastMemberQueryTimeMs });
    members.set(key, { port, host, filter, lastReportAt: now, leavingUntil: undefined, fading });
    const isNew = previous === undefined;
    if (isNew) this.options.onMemberChange?.({ type: 'join', group, port, host });
  }

  private remove(group: GroupAddress, members: Map<string, MemberEntry>, member: MemberEntry, reason: LeaveReason): void {
    if (members.delete(memberKey(member.port, member.host))) this.portGroups.removed(member.port, group);
    this.options.onMemberChange?.({ type: 'leave', group, port: member.port, host: member.host, reason });
  }

  /**
   * Puts back members saved before a restart (their report times and compatibility as
   * they were), so that forwarding resumes without waiting for reports. Returns the
   * groups whose member ports changed. Members already past the GMI are not restored.
   */
  restore(saved: readonly RestoredMember[]): MembershipEffect[] {
    const now = this.now();
    const touched = new Map<GroupAddress, string>();
    for (const member of saved) {
      if (member.lastReportAt + this.timing.groupMembershipIntervalMs <= now) continue;
      if (!touched.has(member.group)) touched.set(member.group, this.shapeOf(member.group));
      let members = this.groups.get(member.group);
      if (members === undefined) {
        members = new Map();
        this.groups.set(member.group, members);
      }
      if (!members.has(memberKey(member.port, member.host))) this.portGroups.added(member.port, member.group);
      members.set(memberKey(member.port, member.host), {
        port: member.port,
        host: member.host,
        filter: member.filter,
        lastReportAt: member.lastReportAt,
        leavingUntil: undefined,
        fading: undefined,
      });
      if (member.compatibility !== 3) {
        const until = member.lastReportAt + this.timing.groupMembershipIntervalMs;
        this.compatibility.restored({ group: member.group, port: member.port, version: member.compatibility, until });
      }
    }
    const effects: MembershipEffect[] = [];
    for (const [group, before] of touched) {
      if (this.shapeOf(group) !== before) effects.push({ kind: 'members', group, ports: this.portsOf(group) });
    }
    return effects;
  }

  /** The timing this table runs with. */
  get timings(): Readonly<MembershipTiming> {
    return this.timing;
  }

  /** How many members (hosts per group and port) there are in all. */
  get memberCount(): number {
    let count = 0;
    for (const members of this.groups.values()) count += members.size;
    return count;
  }

  get groupCount(): number {
    return this.groups.size;
  }

  /** Why the limits refuse what the report would add (and tells onRefusal so), or undefined. */
  private refusal(group: GroupAddress, port: number, host: HostAddress, filter: SourceFilter): RefusalReason | undefined {
    const members = this.groups.get(group)?.values();
    const groupCount = this.groups.size;
    const refusal = refusalOf({ limits: this.limits, group, port, host, filter, members, groupCount, portGroupCount: this.portGroups.groupsOf(port) });
    // Built field by field: with a spread of `refusal` here, a refused record cost 5.9 µs
    // instead of 0.9 (a flooding port at its limit sends thousands a second).
    if (refusal !== undefined) this.options.onRefusal?.({ reason: refusal.reason, limit: refusal.limit, group, port, host });
    return refusal?.reason;
  }

  /**
   * Runs `mutate`, which changes members on `ports` only, and says whether the group's member
   * ports or any port's merged filter changed.
   */
  private change(group: GroupAddress, ports: ReadonlySet<number>, mutate: () => void): MembershipEffect[] {
    const before = this.shapeOf(group, ports);
    mutate();
    if (this.groups.get(group)?.size === 0) this.groups.delete(group);
    return before === this.shapeOf(group, ports) ? [] : [{ kind: 'members', group, ports: this.portsOf(group) }];
  }

  /** A canonical form of what forwarding `group` depends on: its member ports (of `ports`, if given) and their merged filters. */
  private shapeOf(group: GroupAddress, ports?: ReadonlySet<number>): string {
    return forwardingShape(this.groups.get(group)?.values() ?? [], ports);
  }

  private modeOf(group: GroupAddress, port: number): IgmpVersion {
    return this.compatibility.modeOf(group, port, this.now());
  }

  private now(): number {
    return this.options.clock.now();
  }
}

function memberKey(port: number, host: HostAddress): string {
  return `${port}|${host}`;
}
