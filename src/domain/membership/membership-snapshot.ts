/**
 * The membership table's members written out and put back: the snapshot that the daemon
 * saves and shows, and the members a restart gives back, made members again with their
 * report times, timers and host compatibility as they were. Kept apart from the table's
 * protocol rules, which never read a snapshot.
 */
import type { IgmpVersion } from '../../packet/igmp/message.js';
import { addressOrderKey, compareAddresses, compareOrderKeys, type GroupAddress } from '../../wire/ip-address.js';
import type { HostCompatibility } from './host-compatibility.js';
import { type GroupSnapshot, type RestoredMember, restoredState, timersOf } from './member-records.js';
import type { MemberEntry, MemberStore } from './member-store.js';
import { type MembershipLimitSettings, type RefusalReason, refusalOf } from './membership-limits.js';
import * as routerFilter from './router-filter.js';

/**
 * Every group of `members` (of `only`, if given: those still there), sorted by address;
 * members by port, then host, each with the version `modeOf` says its port is treated as
 * speaking for the group.
 */
export function snapshotOf(
  members: MemberStore,
  modeOf: (group: GroupAddress, port: number) => IgmpVersion,
  only?: readonly GroupAddress[],
): GroupSnapshot[] {
  const groups =
    only === undefined
      ? members.groupsWithMembers()
      : only.flatMap((group): [GroupAddress, ReadonlyMap<string, MemberEntry>][] => {
          const groupMembers = members.membersOf(group);
          return groupMembers === undefined ? [] : [[group, groupMembers]];
        });
  // Sorted by a key parsed once per group (a save and every `groups` take a snapshot of thousands).
  const order = new Map<GroupAddress, string>();
  for (const [group] of groups) order.set(group, addressOrderKey(group));
  return groups
    .map(([group, groupMembers]) => ({
      group,
      ports: members.portsOf(group),
      members: [...groupMembers.values()]
        .sort((a, b) => a.port - b.port || compareAddresses(a.host, b.host))
        .map((member) => ({
          port: member.port,
          host: member.host,
          compatibility: modeOf(group, member.port),
          filter: { mode: member.filter.mode, sources: [...member.filter.sources].sort(compareAddresses) },
          lastReportAt: member.lastReportAt,
          ...(member.leavingUntil === undefined ? {} : { leavingUntil: member.leavingUntil }),
          ...timersOf(member.state),
        })),
    }))
    .sort((a, b) => compareOrderKeys(order.get(a.group)!, order.get(b.group)!));
}

/** The groups of `members`, sorted by address as a snapshot has them. */
export function groupOrderOf(members: MemberStore): GroupAddress[] {
  return members
    .groupsWithMembers()
    .map(([group]) => ({ group, key: addressOrderKey(group) }))
    .sort((a, b) => compareOrderKeys(a.key, b.key))
    .map(({ group }) => group);
}

/** Where restored members go, the limits they are held to, and the clock and interval they are restored by. */
interface RestoreTarget {
  members: MemberStore;
  compatibility: HostCompatibility;
  limits: Readonly<MembershipLimitSettings>;
  groupMembershipIntervalMs: number;
  now: number;
}

/**
 * Puts `saved` back into `target`, in the order given, but for members whose timers all ended
 * and those the limits refuse (`refused` hears why). A saved member is admitted as the live
 * join of its whole filter would be (refusalOf, the table's own admission), not cut down to
 * what fits: a filter short of some sources would forward what its host never asked for
 * (EXCLUDE) or miss what it did (INCLUDE), and the host's next report asks again anyway.
 * Returns the groups whose member ports or their merged filters changed, in the order they
 * were first restored to.
 */
export function restoreMembers(
  saved: readonly RestoredMember[],
  target: RestoreTarget,
  refused?: (reason: RefusalReason) => void,
): GroupAddress[] {
  const { members, compatibility, limits, groupMembershipIntervalMs, now } = target;
  const touched = new Map<GroupAddress, string>();
  for (const member of saved) {
    const state = routerFilter.expireRouterFilter(restoredState(member, groupMembershipIntervalMs), now);
    if (state === undefined) continue;
    const { group, port, host, lastReportAt } = member;
    const filter = routerFilter.forwardedFilterOf(state);
    const refusal = refusalOf({
      ...{ limits, group, port, host, filter, members: members.membersOf(group)?.values() },
      ...{ groupCount: members.groupCount, portGroupCount: members.groupCountOf(port) },
    });
    if (refusal !== undefined) {
      refused?.(refusal.reason);
      continue;
    }
    if (!touched.has(group)) touched.set(group, members.shapeOf(group));
    members.put(group, {
      port,
      host,
      state,
      filter,
      due: routerFilter.nextTimerOf(state),
      lastReportAt,
      leavingUntil: undefined,
    });
    if (member.compatibility !== 3) {
      const until = member.lastReportAt + groupMembershipIntervalMs;
      compatibility.restored({ group, port, version: member.compatibility, until });
    }
  }
  return [...touched].filter(([group, before]) => members.shapeOf(group) !== before).map(([group]) => group);
}
