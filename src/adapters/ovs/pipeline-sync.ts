/**
 * What the daemon keeps in step on the bridge: a mirror of what of ours is installed
 * (read back at start and after every reconnect, ./read-back.ts, the read-back the
 * commands use too), and the syncs planned against it (the base flows, a group's
 * forwarding, a pod port's own entries), so that a sync sends only what differs: nothing
 * at all for a group that is already right, which is how a restarted daemon resumes
 * without disturbing forwarding. A piece of the bridge client (./bridge-client.ts).
 */
import { McastError } from '../../errors.js';
import type { GroupAddress } from '../../wire/ip-address.js';
import {
  decodeFlowCookie,
  encodeFlowCookie,
  FLOW_COOKIE_FULL_MASK,
  FlowCookieFlag,
  FlowKind,
} from '../../domain/pipeline/flow-cookie.js';
import type { FlowEntry, InstalledGroup, MulticastPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import type { GroupOutcome, PipelineChange } from '../../domain/pipeline/plan.js';
import {
  installedPortEntries,
  planPortSync,
  portEntries,
  portOfFlow,
  sameMeter,
  type PortEntries,
  type WantedPortEntries,
} from '../../domain/pipeline/port-entries.js';
import { flowMatchKey, type PortMeter } from '../../domain/pipeline/pipeline-entries.js';
import { readInstalled } from './read-back.js';
import { applyChanges, type BridgeConnection } from './bridge-connection.js';
import {
  InstalledForwarding,
  planForwarding,
  type ForwardingWanted,
  type LearnedForwarding,
} from './forwarding-sync.js';
import { entryPortCounters, TrafficCarry, trafficOf, type PortGroupTraffic } from './traffic-counters.js';
import { familyOf } from '../../domain/family/families.js';
import { forwardingKey } from '../../domain/pipeline/forwarding-key.js';
import type { BatchOptions } from '../../transport/openflow/requests.js';

/**
 * Tunnel mode's part of the base flows: the tunnel port, the peers whose membership messages it lets in, and the meter
 * they go through (absent: none).
 */
export interface BaseTunnel {
  ofport: number;
  peers: readonly string[];
  meter?: PortMeter;
}

/** What the switch dropped of the tunnel's membership messages: from no peer, and past the tunnel's meter. */
export interface TunnelDrops {
  notPeer: bigint;
  overRate: bigint;
}

export class PipelineSync {
  private installed = new InstalledForwarding();
  /** Every OVS group id of our range on the switch, whatever reaches it. */
  private groupIds = new Set<number>();
  private otherFlows: FlowEntry[] = [];
  /** Flows of others in our table: ours must never take their place (OFPFC_ADD would). */
  private foreignFlows: FlowEntry[] = [];
  /**
   * Groups ever seen installed statically (install, reconcile). Remembered across a
   * restart of ovs-vswitchd, which empties the switch: the declared group is reconcile's
   * to put back, not the daemon's to take as learned.
   */
  private readonly staticGroups = new Set<GroupAddress>();
  /** Each pod port's entries of ours (its meter, metered IGMP flow, send-policy drops) on the switch. */
  private ports = new Map<number, PortEntries>();
  /** The highest meter id the switch holds (0: it has no meters); read once, at the first refresh. */
  private maxMeter: number | undefined;
  /** The gateway port installBase was last given: in tunnel mode it sits in link 0 of every group with a member. */
  private gatewayOfport: number | undefined;
  /** The tunnel's meter on the switch (as of the last refresh or installBase). */
  private tunnelMeter: PortMeter | undefined;
  /**
   * What each port received of each entry before its OVS groups were last rewritten (which zeroes their buckets'
   * counters).
   */
  private readonly carry = new TrafficCarry();

  constructor(
    private readonly openflow: BridgeConnection,
    private readonly pipeline: MulticastPipeline,
  ) {}

  /** Reads what of ours is on the switch now (at start, and after a reconnect). */
  async refresh(): Promise<void> {
    const { pipeline, foreignFlows, groupIds, meters, tunnelMeter } = await readInstalled(this.openflow, this.pipeline);
    this.tunnelMeter = tunnelMeter;
    this.installed = new InstalledForwarding(pipeline.groups);
    // Any static entry of a group, (*,G) or (S,G), makes the group the operator's.
    const staticNow = new Set(pipeline.groups.filter((entry) => !entry.learned).map((entry) => entry.group));
    for (const { group } of pipeline.groups) {
      if (staticNow.has(group)) this.staticGroups.add(group);
      else this.staticGroups.delete(group);
    }
    this.groupIds = groupIds;
    this.otherFlows = pipeline.otherFlows.filter((flow) => portOfFlow(this.pipeline, flow) === undefined);
    this.ports = installedPortEntries(this.pipeline, pipeline.otherFlows, meters);
    this.foreignFlows = foreignFlows;
    this.maxMeter ??= await this.openflow.meterFeatures().then(
      (features) => features.maxMeter,
      () => 0,
    );
  }

  /** Pod ports with entries of ours on the switch (as of the last refresh or sync). */
  get portsWithEntries(): number[] {
    return [...this.ports.keys()];
  }

  /** Whether the switch can hold the IGMP meter of pod port `ofport` (known after the first refresh). */
  canMeter(ofport: number): boolean {
    return this.pipeline.meterIdOf(ofport) <= (this.maxMeter ?? 0);
  }

  /**
   * Makes the switch hold exactly `wanted` for pod port `ofport` (undefined: nothing of
   * the port's). A meter the switch cannot hold (past its meters) is left out, and with
   * it the metered flow: the port's IGMP then takes the flow for every port. Returns
   * whether the port is metered now.
   */
  async syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }> {
    const meter = wanted?.meter !== undefined && this.canMeter(ofport) ? wanted.meter : undefined;
    const entries =
      wanted === undefined
        ? undefined
        : portEntries(this.pipeline, ofport, {
            deniedSend: wanted.deniedSend,
            ...(meter === undefined ? {} : { meter }),
          });
    for (const flow of entries?.flows ?? []) this.refuseForeignSlot(flow);
    const changes = planPortSync(this.pipeline, ofport, this.ports.get(ofport), entries);
    try {
      await this.apply(changes, `port ${ofport}`);
    } catch (error) {
      await this.refresh().catch(() => undefined);
      throw error;
    }
    if (entries === undefined || (entries.meter === undefined && entries.flows.length === 0)) this.ports.delete(ofport);
    else this.ports.set(ofport, entries);
    return { metered: entries?.meter !== undefined };
  }

  /**
   * Packets each pod port's IGMP meter dropped (its band's count), by port, since the meter was added or last changed.
   */
  async meterDrops(): Promise<Map<number, bigint>> {
    const drops = new Map<number, bigint>();
    if ((this.maxMeter ?? 0) === 0) return drops;
    for (const stats of await this.openflow.meterStats('all')) {
      const ofport = this.pipeline.meterPort(stats.meterId);
      if (ofport !== undefined)
        drops.set(
          ofport,
          stats.bandStats.reduce((sum, band) => sum + band.packetCount, 0n),
        );
    }
    return drops;
  }

  /**
   * What each port received from and sent to each group of ours, from the switch's group
   * and flow statistics, read now (./traffic-counters.ts). The buckets are those of the
   * mirror: a group being synced meanwhile may read one bucket against another's counter
   * for that one call.
   */
  async trafficCounters(): Promise<PortGroupTraffic[]> {
    const { cookie, mask } = this.pipeline.cookieMatch;
    const [groupStats, flows] = await Promise.all([
      this.openflow.groupStats(),
      this.openflow.dumpFlows({ tableId: this.pipeline.config.table, cookie, cookieMask: mask }),
    ]);
    const entries = this.installed.groups.flatMap((group) => this.installed.of(group));
    return trafficOf({ pipeline: this.pipeline, entries, groupStats, flows }, this.carry);
  }

  /**
   * Membership messages from the tunnel that the switch dropped: for an outer source that is no peer (the packets of
   * tunnelMembership's drop flows, asked for by their whole cookie), and past the tunnel's meter (its band's count).
   * The counts restart when installBase writes the flows again, or the meter.
   */
  async tunnelDrops(): Promise<TunnelDrops> {
    const { config } = this.pipeline;
    const cookie = encodeFlowCookie({ prefix: config.cookiePrefix, kind: FlowKind.TunnelMembership, value: 0 });
    const [flows, meters] = await Promise.all([
      this.openflow.dumpFlows({ tableId: config.table, cookie, cookieMask: FLOW_COOKIE_FULL_MASK }),
      this.tunnelMeter === undefined ? [] : this.openflow.meterStats(this.pipeline.tunnelMeterId),
    ]);
    return {
      notPeer: flows.reduce((sum, flow) => sum + flow.packetCount, 0n),
      overRate: meters.flatMap((meter) => meter.bandStats).reduce((sum, band) => sum + band.packetCount, 0n),
    };
  }

  /**
   * The raw counters of `entries` (all of `group`, all learned: syncForwarding rewrites no
   * other): their OVS groups' and the group's sending rows. The rows are asked for by their
   * whole cookie, flags included (FLOW_COOKIE_FULL_MASK): with any other mask OVS walks the
   * table's every flow, on the thread that then applies the rewrite.
   */
  private async entryCounters(group: GroupAddress, entries: readonly InstalledGroup[]) {
    const { config } = this.pipeline;
    const cookie = encodeFlowCookie({
      prefix: config.cookiePrefix,
      kind: FlowKind.SendCounter,
      value: familyOf(group).cookieValue(group),
      flags: FlowCookieFlag.Learned,
    });
    const [stats, flows] = await Promise.all([
      Promise.all(entries.flatMap((entry) => entry.groups.map((link) => this.openflow.groupStats(link.groupId)))),
      this.openflow.dumpFlows({ tableId: config.table, cookie, cookieMask: FLOW_COOKIE_FULL_MASK }),
    ]);
    return entryPortCounters({ pipeline: this.pipeline, entries, groupStats: stats.flat(), flows });
  }

  /** The groups whose forwarding of ours is on the switch. */
  get installedGroups(): GroupAddress[] {
    return this.installed.groups;
  }

  /**
   * The groups the daemon itself installed (its cookie flag), with the ports of their
   * (*,G) entry then, in tunnel mode their peers, and the ports of each (S,G) entry.
   */
  get learnedGroups(): LearnedForwarding[] {
    return this.installed.learned;
  }

  /**
   * The flows every group relies on: IGMP to the controller, link-local flooding, and
   * any other multicast to the gateway (without one: dropped, so that a group nobody
   * here wants is not flooded to every pod by the bridge's own flows). In tunnel mode
   * (`tunnel`) also the catch-all drops of what comes in from the tunnel, and from the
   * gateway when there is one: only a group's ingress flows take those to its pods; and
   * the tunnel's membership messages go to the controller only from one of its `peers`,
   * through the tunnel's meter when `tunnel.meter` is given and the switch can hold it
   * (added or changed before the flows that use it, deleted after the flows that used it
   * are written again without it: OVS deletes a deleted meter's flows). Our earlier flows
   * of those kinds that are not wanted now (another gateway or tunnel port, tunnel mode
   * turned off) go. `query`'s probe flows are left to their run, the pod
   * ports' entries to syncPort. Throws McastError 'conflict' (nothing changed) when
   * another controller's flow has the match and priority of one of these.
   */
  async installBase(gatewayOfport: number | undefined, tunnel?: BaseTunnel): Promise<void> {
    const tunnelOfport = tunnel?.ofport;
    const canMeter = this.pipeline.tunnelMeterId <= (this.maxMeter ?? 0);
    const meter = tunnel?.meter !== undefined && canMeter ? tunnel.meter : undefined;
    const wanted = [
      ...this.pipeline.membershipToController(),
      ...this.pipeline.linkLocalFlood(),
      ...(gatewayOfport === undefined
        ? this.pipeline.unknownGroupDrop()
        : this.pipeline.unknownGroupToGateway(gatewayOfport)),
      ...(tunnel === undefined
        ? []
        : [
            ...this.pipeline.tunnelDrop(tunnel.ofport),
            ...this.pipeline.tunnelMembership({ ...tunnel, metered: meter !== undefined }),
          ]),
      ...(tunnelOfport === undefined || gatewayOfport === undefined ? [] : this.pipeline.gatewayDrop(gatewayOfport)),
    ];
    for (const flow of wanted) this.refuseForeignSlot(flow);
    // Wanted by cookie and slot: the tunnel's flows keep their cookies when the port's number changes.
    const slotOf = (flow: FlowEntry) => `${flow.cookie}|${flow.table}|${flow.priority}|${flowMatchKey(flow.match)}`;
    const wantedSlots = new Set(wanted.map(slotOf));
    const stale = this.otherFlows.filter((flow) => {
      const kind = decodeFlowCookie(flow.cookie, this.pipeline.config.cookiePrefix)?.kind;
      return kind !== FlowKind.IgmpQueryProbe && !wantedSlots.has(slotOf(flow));
    });
    const meterId = this.pipeline.tunnelMeterId;
    const before = this.tunnelMeter;
    const changes: PipelineChange[] = [
      ...(meter === undefined || (before !== undefined && sameMeter(before, meter))
        ? []
        : [{ op: before === undefined ? 'add-meter' : 'modify-meter', meterId, meter } as const]),
      ...stale.map((entry): PipelineChange => ({ op: 'delete-flow', entry })),
      ...wanted.map((entry): PipelineChange => ({ op: 'add-flow', entry })),
      ...(meter === undefined && before !== undefined ? [{ op: 'delete-meter', meterId } as const] : []),
    ];
    await this.apply(changes, 'the base flows');
    this.otherFlows = wanted;
    this.gatewayOfport = gatewayOfport;
    this.tunnelMeter = meter;
  }

  /**
   * Makes the switch forward `wanted.group` as asked: each source of `bySource` to its own
   * ports, every other source to `ports` (none, and no peer: the (*,G) entry goes). In
   * tunnel mode (`tunnel`) also to each of its peers through the tunnel port, in the
   * tunnel layout (tunnel-layout.ts), with the gateway installBase was last given in link
   * 0. The group's (S,G) entries not named go, and their group id slots with them; the
   * group goes when it has neither ports nor peers nor sources. One batch, planned in
   * forwarding-sync.ts; `expedite` sends it ahead of the batches waiting for the switch.
   */
  async syncForwarding(wanted: ForwardingWanted, options: BatchOptions = {}): Promise<GroupOutcome> {
    const { group } = wanted;
    const current = this.installed.of(group);
    const isWanted = wanted.ports.length > 0 || wanted.bySource.length > 0 || (wanted.tunnel?.peers.length ?? 0) > 0;
    // A group declared with `install` (or `reconcile`) is theirs, not the daemon's: the
    // two never write the same group (see mcastctl-reconcile(1)). Any static entry of
    // the group, (*,G) or (S,G), makes the whole group theirs.
    if (current.some((entry) => !entry.learned) || (current.length === 0 && this.staticGroups.has(group))) {
      if (!isWanted) return 'absent';
      throw new McastError(
        'conflict',
        `group ${group} is installed statically (mcastctl install or reconcile); the daemon leaves it alone`,
        {
          hint: `remove it from the declared state (mcastctl uninstall ${group}) to let the daemon take it`,
        },
      );
    }
    const { pipeline, groupIds, foreignFlows, gatewayOfport } = this;
    const plan = planForwarding({ pipeline, wanted, current, groupIds, foreignFlows, gatewayOfport });
    if (plan.changes.length === 0) return plan.outcome;
    // Read before the batch on the same connection: the switch answers with the counters of before the rewrite.
    const rewritten = new Set(
      plan.changes.flatMap((change) => (change.op === 'modify-group' ? [change.entry.groupId] : [])),
    );
    const rewrites = current.filter((entry) => entry.groups.some((link) => rewritten.has(link.groupId)));
    const before = rewrites.length === 0 ? undefined : this.entryCounters(group, rewrites).catch(() => undefined);
    try {
      await this.apply(plan.changes, `group ${group}`, options);
    } catch (error) {
      this.carry.rewritten((await before) ?? []);
      // What went through is unknown: read the switch again before the retry plans.
      await this.refresh().catch(() => undefined);
      throw error;
    }
    this.carry.rewritten((await before) ?? []);
    for (const target of plan.removed) this.carry.forget(forwardingKey(target));
    for (const entry of plan.installed) this.carry.keep(forwardingKey(entry), new Set(entry.ports));
    for (const change of plan.changes) {
      if (change.op === 'add-group' || change.op === 'modify-group') this.groupIds.add(change.entry.groupId);
      else if (change.op === 'delete-group') this.groupIds.delete(change.groupId);
    }
    for (const target of plan.removed) {
      this.installed.delete(target);
      // Its entries are gone from the switch: the slot may go to another group.
      this.pipeline.groupIds.releaseTarget(target);
    }
    for (const entry of plan.installed) this.installed.set(entry);
    return plan.outcome;
  }

  /** Throws McastError 'conflict' when another controller's flow has the match and priority of `flow`. */
  private refuseForeignSlot(flow: FlowEntry): void {
    const clash = this.foreignFlows.find((other) => sameSlot(other, flow));
    if (clash === undefined) return;
    throw new McastError(
      'conflict',
      `another controller's flow (cookie 0x${clash.cookie.toString(16)}) has the match and priority ${flow.priority} of the daemon's ${describeMatch(flow)} flow in table ${flow.table}`,
      { hint: 'give the daemon a table of its own (--table) or remove that flow' },
    );
  }

  private async apply(changes: readonly PipelineChange[], what: string, options: BatchOptions = {}): Promise<void> {
    const errors = await applyChanges(this.openflow, changes, options);
    const first = errors.values().next();
    if (!first.done)
      throw new McastError(
        'refused',
        `OVS refused ${errors.size} of ${changes.length} changes for ${what}: ${first.value.message}`,
        {
          cause: first.value,
        },
      );
  }
}

/** Two flows that are the same entry of a table: table, priority and match. */
function sameSlot(a: FlowEntry, b: FlowEntry): boolean {
  return a.table === b.table && a.priority === b.priority && flowMatchKey(a.match) === flowMatchKey(b.match);
}

function describeMatch(flow: FlowEntry): string {
  const { inPort, tunSrc, ethType, ipProto, icmpv6Type, ipSrc, ipDst, ipDstMask } = flow.match;
  // ovs-ofctl's own words, so that the text can be looked up in a flow dump.
  const ipv6 = ethType === 0x86dd;
  const parts = [
    inPort === undefined ? '' : `in_port=${inPort}`,
    tunSrc === undefined ? '' : `tun_src=${tunSrc}`,
    ipProto === undefined ? '' : `nw_proto=${ipProto}`,
    icmpv6Type === undefined ? '' : `icmpv6_type=${icmpv6Type}`,
    ipSrc === undefined ? '' : `${ipv6 ? 'ipv6_src' : 'nw_src'}=${ipSrc}`,
    ipDst === undefined
      ? ''
      : `${ipv6 ? 'ipv6_dst' : 'nw_dst'}=${ipDst}${ipDstMask === undefined ? '' : `/${ipDstMask}`}`,
  ];
  return `${ipv6 ? 'ipv6' : 'ip'}${parts
    .filter(Boolean)
    .map((part) => `,${part}`)
    .join('')}`;
}
