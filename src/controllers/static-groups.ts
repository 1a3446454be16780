/**
 * Static groups: install and uninstall groups on a bridge from what a user declared.
 * Validate everything first (ports exist), read what is installed, plan the smallest
 * change, apply it in one batch, and report group by group.
 */
import type { OpenFlowError } from '../openflow/errors.js';
import type { BridgePort, BridgeSession } from '../ovs/bridge-session.js';
import type { GroupMembership } from '../pipeline/multicast-pipeline.js';
import { planInstall, planUninstall, planUninstallAll, type GroupOutcome, type GroupPlan, type PipelineChange } from '../pipeline/plan.js';
import type { PortRef } from '../state/group-address.js';

export interface StaticGroup {
  group: string;
  ports: readonly PortRef[];
  /** Where it was declared, for messages: `--ports`, or `file.yaml:12` (computed only when needed). */
  where: () => string;
}

export interface GroupResult {
  group: string;
  groupId: number;
  outcome: GroupOutcome | 'failed';
  ports: BridgePort[];
  /** Why OVS refused it (outcome `failed`). */
  error?: string;
}

export interface StaticGroupsOutcome {
  groups: GroupResult[];
  /** Refusals of changes that belong to no one group (uninstall --all's other flows). */
  otherFailures: string[];
}

export async function installGroups(session: BridgeSession, groups: readonly StaticGroup[]): Promise<StaticGroupsOutcome> {
  // Every port resolves before anything is read or changed: bad input changes nothing.
  const memberships: GroupMembership[] = groups.map((entry) => ({
    group: entry.group,
    ports: entry.ports.map((ref) => session.resolvePort(ref, entry.where).ofport),
  }));
  const installed = await session.readInstalled();
  return applyPlans(session, planInstall(session.pipeline, memberships, installed.pipeline), []);
}

/** Removes the named groups, or with 'all' everything of ours on the bridge. */
export async function uninstallGroups(session: BridgeSession, groups: readonly string[] | 'all'): Promise<StaticGroupsOutcome> {
  const installed = await session.readInstalled();
  if (groups === 'all') {
    const plan = planUninstallAll(installed.pipeline, { everything: true });
    return applyPlans(session, plan.groups, plan.extra);
  }
  return applyPlans(session, planUninstall(groups, installed.pipeline), []);
}

async function applyPlans(session: BridgeSession, plans: readonly GroupPlan[], extra: readonly PipelineChange[]): Promise<StaticGroupsOutcome> {
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
  const refused = await session.apply(changes);
  const errors = new Map<number, OpenFlowError>();
  const otherFailures: string[] = [];
  for (const [index, error] of refused) {
    const plan = owner[index]!;
    if (plan < 0) otherFailures.push(error.message);
    else if (!errors.has(plan)) errors.set(plan, error);
  }
  const results = plans.map((plan, index) => {
    const error = errors.get(index);
    const result: GroupResult = {
      group: plan.group,
      groupId: session.pipeline.groupId(plan.group),
      outcome: error === undefined ? plan.outcome : 'failed',
      ports: plan.ports.map((ofport) => session.portByNumber(ofport) ?? { ofport, name: String(ofport) }),
    };
    if (error !== undefined) result.error = error.message;
    return result;
  });
  return { groups: results, otherFailures };
}
