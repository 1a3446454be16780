/**
 * Static groups: install and uninstall groups on a bridge from what a user declared.
 * Validate everything first (ports exist), read what is installed, plan the smallest
 * change, apply it in one batch, and report group by group.
 */
import { UnavailableError } from '../../errors.js';
import type { GroupAddress } from '../../wire/ip-address.js';
import type { ForwardingTarget } from '../../domain/pipeline/forwarding-key.js';
import type { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import type { BridgePort } from '../../adapters/ovs/bridge-ports.js';
import type { GroupMembership } from '../../domain/pipeline/multicast-pipeline.js';
import {
  planInstall,
  planUninstall,
  planUninstallAll,
  type GroupOutcome,
  type GroupPlan,
  type PipelineChange,
} from '../../domain/pipeline/plan.js';
import type { DeclaredGroup } from '../../domain/declared-state/declared-state.js';

/** A group as declared: on the command line, or in a file (where: `--ports`, `file.yaml:12`). */
export type StaticGroup = DeclaredGroup;

export interface GroupResult {
  group: string;
  /** Present: the result of the group's (S,G) entry for this source. */
  source?: string;
  /** The OVS group at the head of its chain. */
  groupId: number;
  outcome: Exclude<GroupOutcome, 'conflict'> | 'failed';
  ports: BridgePort[];
  /** Why OVS refused it (outcome `failed`). */
  error?: string;
}

/** What static groups use of the bridge client. */
export type StaticGroupsBridge = Pick<
  BridgeClient,
  'pipeline' | 'resolvePort' | 'portByNumber' | 'readInstalled' | 'apply'
>;

export interface StaticGroupsOutcome {
  groups: GroupResult[];
  /** Refusals of changes that belong to no one group (uninstall --all's other flows). */
  otherFailures: string[];
}

export async function installGroups(
  bridge: StaticGroupsBridge,
  groups: readonly StaticGroup[],
): Promise<StaticGroupsOutcome> {
  // Every port resolves before anything is read or changed: bad input changes nothing.
  const memberships: GroupMembership[] = groups.map((entry) => ({
    group: entry.group,
    ...(entry.source === undefined ? {} : { source: entry.source }),
    ports: entry.ports.map((ref) => bridge.resolvePort(ref, entry.where).ofport),
  }));
  const installed = await bridge.readInstalled();
  return applyPlans(bridge, planInstall(bridge.pipeline, memberships, installed.pipeline, installed.foreignFlows), []);
}

/**
 * Removes the named entries, or with 'all' everything of ours on the bridge. A bare group
 * is the whole group: its (*,G) entry and every (S,G) entry of it; a target with a
 * source is that one (S,G) entry.
 */
export async function uninstallGroups(
  bridge: StaticGroupsBridge,
  groups: readonly (GroupAddress | ForwardingTarget)[] | 'all',
): Promise<StaticGroupsOutcome> {
  const installed = await bridge.readInstalled();
  if (groups === 'all') {
    const plan = planUninstallAll(installed.pipeline);
    // The daemon's meters last: their flows are among the extra flows, deleted first.
    const meters = [...installed.meters.keys()].map((meterId): PipelineChange => ({ op: 'delete-meter', meterId }));
    return applyPlans(bridge, plan.groups, [...plan.extra, ...meters]);
  }
  const targets = groups.flatMap((named): ForwardingTarget[] => {
    if (typeof named !== 'string') return [named];
    const sources = installed.pipeline.groups.flatMap((entry) =>
      entry.group === named && entry.source !== undefined ? [entry.source] : [],
    );
    // The (*,G) entry is reported absent only when the group has no entry at all.
    const whole =
      sources.length === 0 ||
      installed.pipeline.groups.some((entry) => entry.group === named && entry.source === undefined);
    return [...(whole ? [{ group: named }] : []), ...sources.map((source) => ({ group: named, source }))];
  });
  return applyPlans(bridge, planUninstall(targets, installed.pipeline), []);
}

async function applyPlans(
  bridge: StaticGroupsBridge,
  plans: readonly GroupPlan[],
  extra: readonly PipelineChange[],
): Promise<StaticGroupsOutcome> {
  const changes: PipelineChange[] = [];
  const owner: number[] = []; // change index → plan index (-1: extra)
  plans.forEach((plan, index) => {
    for (const change of plan.changes) {
      changes.push(change);
      owner.push(index);
    }
  });
  for (const change of extra) {
    changes.push(change);
    owner.push(-1);
  }
  let refused: ReadonlyMap<number, Error>;
  try {
    refused = await bridge.apply(changes);
  } catch (error) {
    if (!(error instanceof UnavailableError)) throw error;
    // Some of the batch may have been applied: say so, and what to do (install and
    // uninstall are idempotent, so the same command finishes the job).
    throw new UnavailableError(
      `${error.message}, while applying ${changes.length} changes: some of them may have been applied`,
      {
        hint: 'run the same command again once OVS is back: it changes only what still differs',
        cause: error,
      },
    );
  }
  const errors = new Map<number, Error>();
  const otherFailures: string[] = [];
  for (const [index, error] of refused) {
    const plan = owner[index]!;
    if (plan < 0) otherFailures.push(error.message);
    else if (!errors.has(plan)) errors.set(plan, error);
  }
  const results = plans.map((plan, index) => {
    const error = errors.get(index)?.message ?? plan.problem;
    const result: GroupResult = {
      group: plan.group,
      ...(plan.source === undefined ? {} : { source: plan.source }),
      groupId:
        plan.source === undefined
          ? bridge.pipeline.groupId(plan.group)
          : bridge.pipeline.sourceGroupId(plan.source, plan.group),
      outcome: error === undefined && plan.outcome !== 'conflict' ? plan.outcome : 'failed',
      ports: plan.ports.map((ofport) => bridge.portByNumber(ofport) ?? { ofport, name: String(ofport) }),
    };
    if (error !== undefined) result.error = error;
    return result;
  });
  return { groups: results, otherFailures };
}
