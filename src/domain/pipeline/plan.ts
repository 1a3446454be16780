/**
 * From what should be to what to change: the smallest list of group and flow
 * modifications that takes the switch from its installed state (read back from it) to
 * the desired one. Pure, so that `install`, `uninstall`, `reconcile` and the daemon all
 * plan the same way and the planning is tested without a switch.
 *
 * Order matters on the wire, and the plan is in wire order: an OVS group exists before
 * a group or flow that points to it; a flow goes before the group it points to.
 */
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';
import { type ForwardingTarget, forwardingKey } from './forwarding-key.js';
import { flowMatchKey } from './pipeline-entries.js';
import type {
  FlowAction,
  FlowEntry,
  PortMeter,
  GroupEntry,
  GroupMembership,
  InstalledGroup,
  InstalledPipeline,
  MulticastPipeline,
} from './multicast-pipeline.js';

export type PipelineChange =
  | { op: 'add-group'; entry: GroupEntry }
  | { op: 'modify-group'; entry: GroupEntry }
  | { op: 'delete-group'; groupId: number }
  /** Adds a flow where none of the same table, priority and match is (see planInstall). */
  | { op: 'add-flow'; entry: FlowEntry }
  /** Changes the actions of our own flow (strict match, and only with our cookie). */
  | { op: 'modify-flow'; entry: FlowEntry }
  /** Deletes exactly this flow (strict: table, priority, match, and our cookie). */
  | { op: 'delete-flow'; entry: FlowEntry }
  /** A pod port's IGMP meter (port-entries.ts): added, or its band replaced (which zeroes its counters). */
  | { op: 'add-meter' | 'modify-meter'; meterId: number; meter: PortMeter }
  /** Deletes a meter, and with it (in OVS) every flow that uses it. */
  | { op: 'delete-meter'; meterId: number };

export type GroupOutcome = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent' | 'conflict';

export interface GroupPlan {
  group: GroupAddress;
  /** Present: the plan of the (S,G) entry of `group` for this source. */
  source?: SourceAddress;
  outcome: GroupOutcome;
  /** Member ports after the change (for a removal: the ports it had). */
  ports: number[];
  changes: PipelineChange[];
  /** Why nothing is done (outcome `conflict`). */
  problem?: string;
}

/**
 * Install (add or update) `desired`; leaves every other entry alone. Each desired entry,
 * (*,G) or (S,G) (`source` set: the desired list may hold both for one group), is diffed
 * against the installed entry of the same forwarding key. An entry whose flow would take
 * the place of a flow of someone else's (`foreignFlows`: same table, priority and match)
 * is a conflict: nothing is done for it.
 */
export function planInstall(
  pipeline: MulticastPipeline,
  desired: readonly GroupMembership[],
  installed: InstalledPipeline,
  foreignFlows: readonly FlowEntry[] = [],
): GroupPlan[] {
  const byKey = new Map(installed.groups.map((group) => [forwardingKey(group), group]));
  const foreignByKey = new Map(foreignFlows.map((flow) => [flowKey(flow), flow]));
  const installedIds = new Set([
    ...installed.groups.flatMap((group) => group.groups.map((entry) => entry.groupId)),
    ...installed.strayGroups.map((entry) => entry.groupId),
  ]);
  return desired.map((membership) => {
    const forwarding = pipeline.forwarding(membership);
    const current = byKey.get(forwardingKey(membership));
    const target = targetFields(membership);
    const ports = [...new Set(membership.ports)].sort((a, b) => a - b);
    const currentIngress = new Map((current?.ingress ?? []).map((flow) => [flow.match.inPort, flow]));
    const wantedIngress = forwarding.ingress ?? [];
    const currentCounters = new Map((current?.counters ?? []).map((flow) => [flow.match.inPort, flow]));
    const wantedCounters = forwarding.counters ?? [];
    // Only flows that are not ours yet can take the place of someone else's.
    const foreign = [
      ...(current === undefined ? [forwarding.flow] : []),
      ...wantedIngress.filter((flow) => !currentIngress.has(flow.match.inPort)),
      ...wantedCounters.filter((flow) => !currentCounters.has(flow.match.inPort)),
    ]
      .map((flow) => foreignByKey.get(flowKey(flow)))
      .find((flow) => flow !== undefined);
    if (foreign !== undefined) {
      const problem = `another controller's flow (cookie 0x${foreign.cookie.toString(16)}) has the same match and priority ${foreign.priority}`;
      return { ...target, outcome: 'conflict', ports, changes: [], problem };
    }
    const currentById = new Map((current?.groups ?? []).map((entry) => [entry.groupId, entry]));
    const changes: PipelineChange[] = [];
    for (const entry of forwarding.groups) {
      const existing = currentById.get(entry.groupId);
      if (existing === undefined)
        changes.push({ op: installedIds.has(entry.groupId) ? 'modify-group' : 'add-group', entry });
      else if (!sameBuckets(existing, entry)) changes.push({ op: 'modify-group', entry });
    }
    // Tunnel mode's ingress flows, by in_port: each after the link it points to, and before the group flow.
    const wantedInPorts = new Set(wantedIngress.map((flow) => flow.match.inPort));
    for (const flow of current?.ingress ?? [])
      if (!wantedInPorts.has(flow.match.inPort)) changes.push({ op: 'delete-flow', entry: flow });
    for (const flow of wantedIngress) {
      const existing = currentIngress.get(flow.match.inPort);
      if (existing === undefined) changes.push({ op: 'add-flow', entry: flow });
      else if (!sameFlow(existing, flow)) changes.push({ op: 'modify-flow', entry: flow });
    }
    // The sender counting rows, by in_port, the same way: after the head they point to.
    const countedPorts = new Set(wantedCounters.map((flow) => flow.match.inPort));
    for (const flow of current?.counters ?? [])
      if (!countedPorts.has(flow.match.inPort)) changes.push({ op: 'delete-flow', entry: flow });
    for (const flow of wantedCounters) {
      const existing = currentCounters.get(flow.match.inPort);
      if (existing === undefined) changes.push({ op: 'add-flow', entry: flow });
      else if (!sameFlow(existing, flow)) changes.push({ op: 'modify-flow', entry: flow });
    }
    if (current === undefined) changes.push({ op: 'add-flow', entry: forwarding.flow });
    else if (!sameFlow(current.flow, forwarding.flow)) changes.push({ op: 'modify-flow', entry: forwarding.flow });
    // Links of a longer chain that the new one no longer reaches.
    const wanted = new Set(forwarding.groups.map((entry) => entry.groupId));
    for (const entry of current?.groups ?? [])
      if (!wanted.has(entry.groupId)) changes.push({ op: 'delete-group', groupId: entry.groupId });
    const outcome: GroupOutcome = current === undefined ? 'added' : changes.length === 0 ? 'unchanged' : 'updated';
    return { ...target, outcome, ports, changes };
  });
}

/**
 * Removes the named entries (absent ones are reported as such, not as errors). A bare
 * group names its (*,G) entry only: callers that remove a whole group name its (S,G)
 * entries too.
 */
export function planUninstall(
  targets: readonly (GroupAddress | ForwardingTarget)[],
  installed: InstalledPipeline,
): GroupPlan[] {
  const byKey = new Map(installed.groups.map((group) => [forwardingKey(group), group]));
  return targets.map((named) => {
    const target = targetFields(typeof named === 'string' ? { group: named } : named);
    const current = byKey.get(forwardingKey(target));
    if (current === undefined) return { ...target, outcome: 'absent', ports: [], changes: [] };
    return { ...target, outcome: 'removed', ports: current.ports, changes: removal(current) };
  });
}

/** The group and (when set) the source of an entry, for its plan. */
function targetFields(target: ForwardingTarget): ForwardingTarget {
  return target.source === undefined ? { group: target.group } : { group: target.group, source: target.source };
}

/**
 * Removes everything of ours: every group, our other flows (IGMP, link-local, unknown
 * group), and OVS groups in our range that nothing reaches.
 */
export function planUninstallAll(installed: InstalledPipeline): { groups: GroupPlan[]; extra: PipelineChange[] } {
  const groups = installed.groups.map(
    (current): GroupPlan => ({
      ...targetFields(current),
      outcome: 'removed',
      ports: current.ports,
      changes: removal(current),
    }),
  );
  const extra: PipelineChange[] = [
    ...installed.otherFlows.map((entry): PipelineChange => ({ op: 'delete-flow', entry })),
    ...installed.strayGroups.map((entry): PipelineChange => ({ op: 'delete-group', groupId: entry.groupId })),
  ];
  return { groups, extra };
}

/**
 * Every flow of the group (its group flow, then its ingress flows and counting rows) before the groups they point to.
 */
function removal(current: InstalledGroup): PipelineChange[] {
  return [
    { op: 'delete-flow', entry: current.flow },
    ...(current.ingress ?? []).map((entry): PipelineChange => ({ op: 'delete-flow', entry })),
    ...(current.counters ?? []).map((entry): PipelineChange => ({ op: 'delete-flow', entry })),
    ...current.groups.map((entry): PipelineChange => ({ op: 'delete-group', groupId: entry.groupId })),
  ];
}

/** What makes two flows the same entry of a table: table, priority and match. */
function flowKey(flow: FlowEntry): string {
  return `${flow.table} ${flow.priority} ${flowMatchKey(flow.match)}`;
}

// Compared field by field, not through JSON.stringify: reconcile compares 10,000 of each.
function sameBuckets(a: GroupEntry, b: GroupEntry): boolean {
  if (a.groupType !== b.groupType || a.buckets.length !== b.buckets.length) return false;
  return a.buckets.every((bucket, index) => {
    const other = b.buckets[index]!;
    if (bucket.type === 'group') return other.type === 'group' && other.groupId === bucket.groupId;
    return (
      other.type === 'output' && other.port === bucket.port && other.tunnelDestination === bucket.tunnelDestination
    );
  });
}

function sameFlow(a: FlowEntry, b: FlowEntry): boolean {
  return (
    a.cookie === b.cookie &&
    a.priority === b.priority &&
    a.table === b.table &&
    a.actions.length === b.actions.length &&
    a.actions.every((action, index) => sameAction(action, b.actions[index]!))
  );
}

function sameAction(a: FlowAction, b: FlowAction): boolean {
  switch (a.type) {
    case 'output':
      return b.type === 'output' && b.port === a.port;
    case 'group':
      return b.type === 'group' && b.groupId === a.groupId;
    default:
      return b.type === a.type;
  }
}
