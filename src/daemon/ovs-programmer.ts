/**
 * The OVS side of the daemon: the pipeline's flows and groups on the bridge, kept in
 * step with the group state. It mirrors what of ours is installed (read back at start
 * and after every reconnect), so that a sync sends only what differs: nothing at all
 * for a group that is already right, which is how a restarted daemon resumes without
 * disturbing forwarding.
 */
import { McastError } from '../errors.js';
import type { OpenFlowConnection } from '../openflow/connection.js';
import { decodeFlowCookie, FlowKind } from '../pipeline/flow-cookie.js';
import type { FlowEntry, InstalledGroup, MulticastPipeline } from '../pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, groupEntryOf } from '../pipeline/openflow-entries.js';
import { planInstall, planUninstall, type GroupOutcome, type PipelineChange } from '../pipeline/plan.js';

export class OvsProgrammer {
  private installed = new Map<string, InstalledGroup>();
  /** Every OVS group id of our range on the switch, whatever reaches it. */
  private groupIds = new Set<number>();
  private otherFlows: FlowEntry[] = [];

  constructor(
    private readonly openflow: OpenFlowConnection,
    readonly pipeline: MulticastPipeline,
  ) {}

  /** Reads what of ours is on the switch now (at start, and after a reconnect). */
  async refresh(): Promise<void> {
    const { cookie, mask } = this.pipeline.cookieMatch;
    const [stats, descriptions] = await Promise.all([
      this.openflow.dumpFlows({ tableId: this.pipeline.config.table, cookie, cookieMask: mask }),
      this.openflow.dumpGroups(),
    ]);
    const flows = stats.map(flowEntryOf).filter((flow): flow is FlowEntry => flow !== undefined);
    const groups = descriptions.filter((desc) => this.pipeline.ownsGroupId(desc.groupId)).map(groupEntryOf);
    const pipeline = this.pipeline.readInstalled(flows, groups);
    this.installed = new Map(pipeline.groups.map((group) => [group.group, group]));
    this.groupIds = new Set(groups.map((group) => group.groupId));
    this.otherFlows = pipeline.otherFlows;
  }

  /** The groups whose forwarding of ours is on the switch. */
  get installedGroups(): string[] {
    return [...this.installed.keys()];
  }

  /**
   * The flows every group relies on: IGMP to the controller, link-local flooding, and
   * (with a gateway) any other multicast to the gateway. Our earlier flows of those
   * kinds that are not wanted now (another gateway port, per-port IGMP flows) go.
   * `query`'s probe flows are left to their run.
   */
  async installBase(gatewayOfport: number | undefined): Promise<void> {
    const wanted = [this.pipeline.igmpToController(), this.pipeline.linkLocalFlood(), ...(gatewayOfport === undefined ? [] : [this.pipeline.unknownGroupToGateway(gatewayOfport)])];
    const wantedCookies = new Set(wanted.map((flow) => flow.cookie));
    const stale = this.otherFlows.filter((flow) => {
      const kind = decodeFlowCookie(flow.cookie, this.pipeline.config.cookiePrefix)?.kind;
      return kind !== FlowKind.IgmpQueryProbe && !wantedCookies.has(flow.cookie);
    });
    const changes: PipelineChange[] = [...stale.map((entry): PipelineChange => ({ op: 'delete-flow', entry })), ...wanted.map((entry): PipelineChange => ({ op: 'add-flow', entry }))];
    await this.apply(changes, 'the base flows');
    this.otherFlows = wanted;
  }

  /** Makes the switch forward `group` to exactly `ports` (none: remove its forwarding). */
  async syncGroup(group: string, ports: readonly number[]): Promise<GroupOutcome> {
    const current = this.installed.get(group);
    // Ids of the wanted chain that are on the switch though this group's flow does not
    // reach them (left by a failed sync): they must be modified, not added.
    const chain = this.chainIds(current);
    const strayGroups =
      ports.length === 0 ? [] : this.pipeline.forwarding({ group, ports }).groups.filter((entry) => this.groupIds.has(entry.groupId) && !chain.has(entry.groupId)).map(({ groupId }) => ({ groupId, buckets: [] }));
    const installedView = { groups: current === undefined ? [] : [current], otherFlows: [], strayGroups };
    const [plan] = ports.length === 0 ? planUninstall([group], installedView) : planInstall(this.pipeline, [{ group, ports }], installedView);
    if (plan === undefined || plan.changes.length === 0) return plan?.outcome ?? 'unchanged';
    try {
      await this.apply(plan.changes, `group ${group}`);
    } catch (error) {
      // What went through is unknown: read the switch again before the retry plans.
      await this.refresh().catch(() => undefined);
      throw error;
    }
    for (const change of plan.changes) {
      if (change.op === 'add-group' || change.op === 'modify-group') this.groupIds.add(change.entry.groupId);
      else if (change.op === 'delete-group') this.groupIds.delete(change.groupId);
    }
    if (ports.length === 0) this.installed.delete(group);
    else {
      const forwarding = this.pipeline.forwarding({ group, ports });
      this.installed.set(group, { group, ports: [...ports].sort((a, b) => a - b), flow: forwarding.flow, groups: [...forwarding.groups].reverse() });
    }
    return plan.outcome;
  }

  private chainIds(current: InstalledGroup | undefined): Set<number> {
    return new Set((current?.groups ?? []).map((entry) => entry.groupId));
  }

  private async apply(changes: readonly PipelineChange[], what: string): Promise<void> {
    if (changes.length === 0) return;
    const { errors } = await this.openflow.batch(changes.map(changeMessage));
    const first = errors.values().next();
    if (!first.done) throw new McastError('refused', `OVS refused ${errors.size} of ${changes.length} changes for ${what}: ${first.value.message}`, undefined, { cause: first.value });
  }
}
