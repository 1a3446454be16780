/**
 * The members the membership table keeps: every host behind a bridge port that is a member
 * of a group, indexed by group and then by port and host, with the count of groups per port
 * that the limits read. The table (./membership-table.ts) decides by the protocol who joins,
 * stays and leaves; this holds the outcome apart from those rules and answers what forwarding
 * and the daemon read from it: a group's member ports and their merged filters, the counts,
 * and when a member's timer next ends.
 */
import type { GroupAddress, HostAddress } from '../../wire/ip-address.js';
import { PortGroupCounts } from './membership-limits.js';
import { forwardingShape, portFiltersOfMembers } from './port-filters.js';
import type { RouterFilter } from './router-filter.js';
import type { PortFilter, SourceFilter } from './source-filter.js';

/** One host behind one port as a member of one group. */
export interface MemberEntry {
  port: number;
  host: HostAddress;
  /** The router-side source state (RFC 3376 §6.2.1). */
  state: RouterFilter;
  /** What `state` forwards, kept for merging ports and for the limits. */
  filter: SourceFilter;
  /** When a timer of `state` next ends. */
  due: number;
  lastReportAt: number;
  leavingUntil: number | undefined;
}

export class MemberStore {
  /** group → `port|host` → member */
  private readonly groups = new Map<GroupAddress, Map<string, MemberEntry>>();
  private readonly portGroups = new PortGroupCounts();
  /**
   * Each group's member ports, sorted, once asked for and until a member comes or goes: a
   * sync, the limits and the events all read them, many times for one change in a burst.
   */
  private readonly portsCache = new Map<GroupAddress, readonly number[]>();

  /** The members of `group` by port and host, or undefined when it has none. */
  membersOf(group: GroupAddress): ReadonlyMap<string, MemberEntry> | undefined {
    return this.groups.get(group);
  }

  /** The member of `group` that is `host` behind `port`, if there is one. */
  memberOf(group: GroupAddress, port: number, host: HostAddress): MemberEntry | undefined {
    return this.groups.get(group)?.get(memberKey(port, host));
  }

  /** Every group with its members, as a copy: the caller may remove members while it walks them. */
  groupsWithMembers(): [GroupAddress, ReadonlyMap<string, MemberEntry>][] {
    return [...this.groups];
  }

  /** Every member of every group. */
  allMembers(): MemberEntry[] {
    return [...this.groups.values()].flatMap((members) => [...members.values()]);
  }

  /** Puts `member` in `group`, in place of the entry of the same port and host if any; says whether it is new. */
  put(group: GroupAddress, member: MemberEntry): boolean {
    let members = this.groups.get(group);
    if (members === undefined) {
      members = new Map();
      this.groups.set(group, members);
    }
    const key = memberKey(member.port, member.host);
    const isNew = !members.has(key);
    if (isNew) {
      this.portGroups.added(member.port, group);
      this.portsCache.delete(group);
    }
    members.set(key, member);
    return isNew;
  }

  /**
   * Takes `host` behind `port` out of `group`, if it was there. A group left without members
   * stays until dropIfEmpty, so that whoever is changing it keeps its place in the order.
   */
  delete(group: GroupAddress, port: number, host: HostAddress): boolean {
    const deleted = this.groups.get(group)?.delete(memberKey(port, host)) === true;
    if (deleted) {
      this.portGroups.removed(port, group);
      this.portsCache.delete(group);
    }
    return deleted;
  }

  /** Forgets `group` once its last member is gone. */
  dropIfEmpty(group: GroupAddress): void {
    if (this.groups.get(group)?.size === 0) {
      this.groups.delete(group);
      this.portsCache.delete(group);
    }
  }

  /** When a member's timer next ends, or undefined if there are no members. */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const members of this.groups.values()) {
      for (const member of members.values()) {
        if (next === undefined || member.due < next) next = member.due;
      }
    }
    return next;
  }

  /** The ports with members of `group`, sorted (the caller's own copy). */
  portsOf(group: GroupAddress): number[] {
    const cached = this.portsCache.get(group);
    if (cached !== undefined) return cached.slice();
    const members = this.groups.get(group);
    if (members === undefined) return [];
    const ports = [...new Set([...members.values()].map((member) => member.port))].sort((a, b) => a - b);
    this.portsCache.set(group, ports);
    return ports.slice();
  }

  /** Each member port of `group` with the filters of the hosts behind it merged, sorted by port. */
  portFiltersOf(group: GroupAddress): PortFilter[] {
    const members = this.groups.get(group);
    return members === undefined ? [] : portFiltersOfMembers(members.values());
  }

  /**
   * A canonical form of what forwarding `group` depends on: its member ports (of `ports`, if given) and their merged
   * filters.
   */
  shapeOf(group: GroupAddress, ports?: ReadonlySet<number>): string {
    return forwardingShape(this.groups.get(group)?.values() ?? [], ports);
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

  /** How many groups `port` has members of. */
  groupCountOf(port: number): number {
    return this.portGroups.groupsOf(port);
  }
}

function memberKey(port: number, host: HostAddress): string {
  return `${port}|${host}`;
}
