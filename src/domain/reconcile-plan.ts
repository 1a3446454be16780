/**
 * Reconcile: what differs between the declared state (a file) and what the node has,
 * and the smallest set of changes that repairs it. Pure planning over what was read
 * back, so that a dry run and a repair plan the same way, and the planning is tested
 * without a switch or a kernel.
 *
 * Ownership decides what may be touched. Groups whose flow carries the daemon's
 * "learned" cookie flag are the daemon's: never changed or removed here (a declared
 * group the daemon has learned is a conflict, reported). Every other group of ours
 * (our cookie, our group-id range) is reconcile's: added, changed or removed to match
 * the file. A group's (S,G) entries are entries of their own, each keyed by its forwarding
 * key: one can be missing, differ or be undeclared while the group's (*,G) entry is right.
 * Ownership stays per group: a declared (S,G) entry of a group the daemon learned is a
 * conflict too. Flows of other controllers and our non-group flows (the daemon's IGMP,
 * link-local and gateway flows) are left alone. Kernel routes: the daemon's own (S,G)
 * entries (listed by its control socket) are left alone; every other entry is static
 * and must be declared.
 */
import type { PipelineChange } from './pipeline/plan.js';
import { planInstall, planUninstall } from './pipeline/plan.js';
import type {
  FlowEntry,
  GroupMembership,
  InstalledPipeline,
  MulticastPipeline,
} from './pipeline/multicast-pipeline.js';
import { compareAddresses, type GroupAddress, type SourceAddress } from '../wire/ip-address.js';
import { type ForwardingTarget, forwardingKey } from './pipeline/forwarding-key.js';

type DriftAction = 'add' | 'remove' | 'change';

export interface GroupDrift {
  object: 'group';
  group: GroupAddress;
  /** Present: the drift of the group's (S,G) entry for this source. */
  source?: SourceAddress;
  action: DriftAction;
  /** Member ports on the switch now, and as declared (OpenFlow port numbers). */
  before: number[];
  after: number[];
  /** Why it counts as drift, for people. */
  detail: string;
  changes: PipelineChange[];
}

export interface StrayGroupDrift {
  object: 'stray-group';
  groupId: number;
  action: 'remove';
  detail: string;
  changes: PipelineChange[];
}

export interface GroupReconcilePlan {
  drift: Array<GroupDrift | StrayGroupDrift>;
  /** Declared groups that cannot be made true here, and why (another controller's flow, the daemon's group). */
  conflicts: Array<{ group: GroupAddress; source?: SourceAddress; problem: string }>;
  /** Groups the daemon learned, left alone. */
  learnedGroups: GroupAddress[];
  /** Declared groups already right. */
  inSync: number;
}

export interface GroupReconcileInput {
  pipeline: MulticastPipeline;
  installed: InstalledPipeline;
  foreignFlows: readonly FlowEntry[];
  /** The declared groups, ports resolved to OpenFlow numbers. */
  declared: readonly GroupMembership[];
}

export function planGroupReconcile(input: GroupReconcileInput): GroupReconcilePlan {
  const { pipeline, installed, foreignFlows, declared } = input;
  const learned = new Set(installed.groups.filter((group) => group.learned).map((group) => group.group));
  const conflicts: GroupReconcilePlan['conflicts'] = [];
  const wanted: GroupMembership[] = [];
  for (const membership of declared) {
    if (learned.has(membership.group)) {
      const problem = 'the daemon learned this group and programs it; reconcile leaves it to the daemon';
      conflicts.push({ ...targetOf(membership), problem });
    } else wanted.push(membership);
  }
  // Reconcile's view of the switch: its own groups only (the daemon's are not there to change).
  const own: InstalledPipeline = { ...installed, groups: installed.groups.filter((group) => !group.learned) };
  const byKey = new Map(own.groups.map((group) => [forwardingKey(group), group]));
  const drift: GroupReconcilePlan['drift'] = [];
  let inSync = 0;
  for (const plan of planInstall(pipeline, wanted, own, foreignFlows)) {
    if (plan.outcome === 'conflict') {
      conflicts.push({ ...targetOf(plan), problem: plan.problem ?? 'conflict' });
      continue;
    }
    if (plan.changes.length === 0) {
      inSync++;
      continue;
    }
    const current = byKey.get(forwardingKey(plan));
    const before = current?.ports ?? [];
    // No flow, but its OVS group is there (a flow deleted by hand): a change, not an add.
    const flowOnly = current === undefined && plan.changes.some((change) => change.op === 'modify-group');
    drift.push({
      object: 'group',
      ...targetOf(plan),
      action: current === undefined && !flowOnly ? 'add' : 'change',
      before,
      after: plan.ports,
      detail: flowOnly
        ? 'its flow is missing (its OVS group is there)'
        : current === undefined
          ? 'declared, not installed'
          : describeChange(current.problem, before, plan.ports),
      changes: plan.changes,
    });
  }
  const declaredKeys = new Set(declared.map(forwardingKey));
  const extra = own.groups.filter((group) => !declaredKeys.has(forwardingKey(group))).map(targetOf);
  for (const plan of planUninstall(extra, own)) {
    drift.push({
      object: 'group',
      ...targetOf(plan),
      action: 'remove',
      before: plan.ports,
      after: [],
      detail: 'installed, not declared',
      changes: plan.changes,
    });
  }
  // OVS groups in our range that no flow reaches: left by a failed change, or made by
  // hand. Those a declared group's chain will reuse are modified by its plan instead.
  const reused = new Set(
    drift.flatMap((entry) =>
      entry.changes.flatMap((change) => (change.op === 'modify-group' ? [change.entry.groupId] : [])),
    ),
  );
  for (const stray of installed.strayGroups) {
    if (reused.has(stray.groupId)) continue;
    drift.push({
      object: 'stray-group',
      groupId: stray.groupId,
      action: 'remove',
      detail: 'an OVS group in our id range that no flow of ours reaches',
      changes: [{ op: 'delete-group', groupId: stray.groupId }],
    });
  }
  drift.sort(compareDrift);
  return { drift, conflicts, learnedGroups: [...learned].sort(compareAddresses), inSync };
}

/** The group and, for an (S,G) entry, the source: no `source` key at all for a (*,G) one. */
function targetOf(entry: ForwardingTarget): ForwardingTarget {
  return entry.source === undefined ? { group: entry.group } : { group: entry.group, source: entry.source };
}

function describeChange(problem: string | undefined, before: readonly number[], after: readonly number[]): string {
  if (problem !== undefined) return problem;
  const added = after.filter((port) => !before.includes(port));
  const removed = before.filter((port) => !after.includes(port));
  const parts = [
    added.length > 0 ? `ports ${added.join(',')} missing` : '',
    removed.length > 0 ? `ports ${removed.join(',')} not declared` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join('; ') : 'its flow or OVS group differs from what it should be';
}

function compareDrift(a: GroupDrift | StrayGroupDrift, b: GroupDrift | StrayGroupDrift): number {
  if (a.object === 'group' && b.object === 'group')
    return compareAddresses(a.group, b.group) || compareSources(a.source, b.source);
  if (a.object === 'stray-group' && b.object === 'stray-group') return a.groupId - b.groupId;
  return a.object === 'group' ? -1 : 1;
}

/** A group's (*,G) entry before its (S,G) entries, and those by source. */
function compareSources(a: SourceAddress | undefined, b: SourceAddress | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  return compareAddresses(a, b);
}

/**
 * A kernel route as the diff sees it: interfaces by name, addresses as the kernel holds
 * them (an entry of another router's may have any source, 0.0.0.0 included).
 */
export interface RouteState {
  source: string;
  group: string;
  iif: string;
  oifs: string[];
}

export interface RouteDrift {
  object: 'route';
  source: string;
  group: string;
  action: DriftAction;
  before?: RouteState;
  after?: RouteState;
  detail: string;
}

export interface RouteReconcilePlan {
  drift: RouteDrift[];
  inSync: number;
  /** Declared routes whose (S,G) the daemon routes otherwise: its entry is left alone. */
  conflicts: Array<{ source: string; group: string; problem: string }>;
}

/**
 * Declared static routes against the kernel's entries: what to add, change and remove.
 * `router` are the entries of the running router (the daemon): never changed or
 * removed; a declared route the daemon has as declared is in sync, one it routes
 * otherwise is a conflict.
 */
export function planRouteReconcile(
  declared: readonly RouteState[],
  actual: readonly RouteState[],
  router: readonly RouteState[] = [],
): RouteReconcilePlan {
  const key = (route: Pick<RouteState, 'source' | 'group'>) => `${route.source}>${route.group}`;
  const routers = new Map(router.map((route) => [key(route), route]));
  const current = new Map(actual.filter((route) => !routers.has(key(route))).map((route) => [key(route), route]));
  const wanted = new Set(declared.map(key));
  const drift: RouteDrift[] = [];
  const conflicts: RouteReconcilePlan['conflicts'] = [];
  let inSync = 0;
  for (const route of declared) {
    const normal = { ...route, oifs: [...route.oifs].sort() };
    const theirs = routers.get(key(route));
    if (theirs !== undefined) {
      if (sameRoute(theirs, normal)) inSync++;
      else
        conflicts.push({
          source: route.source,
          group: route.group,
          problem: `the daemon routes it ${theirs.iif} → ${theirs.oifs.join(',') || 'nowhere'}; reconcile leaves the daemon's entry alone`,
        });
      continue;
    }
    const now = current.get(key(route));
    if (now === undefined)
      drift.push({
        object: 'route',
        source: route.source,
        group: route.group,
        action: 'add',
        after: normal,
        detail: 'declared, not in the kernel',
      });
    else if (!sameRoute(now, normal)) {
      drift.push({
        object: 'route',
        source: route.source,
        group: route.group,
        action: 'change',
        before: now,
        after: normal,
        detail: `${now.iif} → ${now.oifs.join(',') || 'nowhere'} instead of ${route.iif} → ${normal.oifs.join(',')}`,
      });
    } else inSync++;
  }
  for (const route of current.values()) {
    if (!wanted.has(key(route)))
      drift.push({
        object: 'route',
        source: route.source,
        group: route.group,
        action: 'remove',
        before: route,
        detail: 'in the kernel, not declared',
      });
  }
  drift.sort((a, b) => compareAddresses(a.group, b.group) || compareAddresses(a.source, b.source));
  return { drift, inSync, conflicts };
}

function sameRoute(a: RouteState, b: RouteState): boolean {
  return a.iif === b.iif && [...a.oifs].sort().join(',') === [...b.oifs].sort().join(',');
}
