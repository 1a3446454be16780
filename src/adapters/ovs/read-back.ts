/**
 * What of ours is installed on a bridge, read back over OpenFlow: the one read-back
 * behind both the commands (BridgeClient.readInstalled) and the daemon's mirror
 * (PipelineSync.refresh), so that the two see the switch alike, and the pipeline as OVS
 * takes it (at most as many buckets per group as one GROUP_MOD holds).
 */
import type { FlowDumpFilter } from '../../transport/openflow/connection.js';
import type { MeterSelector } from '../../transport/openflow/meters.js';
import { OpenFlowError } from '../../protocol/openflow/errors.js';
import { MeterFlag } from '../../protocol/openflow/meter-mod.js';
import type { MeterConfig } from '../../protocol/openflow/meter-stats.js';
import type { PortMeter } from '../../domain/pipeline/multicast-pipeline.js';
import type { FlowStats } from '../../protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../protocol/openflow/group-desc.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../protocol/openflow/limits.js';
import type { PipelineConfig } from '../../domain/pipeline/config.js';
import { MulticastPipeline, type FlowEntry, type InstalledPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import { flowEntryOf, flowSlotOf, groupEntryOf } from '../../domain/pipeline/openflow-entries.js';
import { forwardingKey } from '../../domain/pipeline/forwarding-key.js';

/** What the read-back uses of an OpenFlow connection (OpenFlowConnection has it). */
export interface PipelineReader {
  dumpGroups(): Promise<GroupDesc[]>;
  dumpFlows(filter: FlowDumpFilter): Promise<FlowStats[]>;
  meterConfigs(meterId: MeterSelector): Promise<MeterConfig[]>;
}

interface FlowCounters {
  packets: bigint;
  bytes: bigint;
}

export interface InstalledState {
  pipeline: InstalledPipeline;
  /** Packet and byte counts of each entry's flow, by its forwarding key: the group for (*,G), `S>G` for (S,G). */
  counters: Map<string, FlowCounters>;
  /** Flows of others in our table that have the shape of ours: ours must never take their place (OFPFC_ADD would). */
  foreignFlows: FlowEntry[];
  /** Every OVS group id of our range on the switch, whatever reaches it. */
  groupIds: Set<number>;
  /** The pod ports' meters of our id range, by meter id. */
  meters: Map<number, PortMeter>;
  /** The tunnel's meter (pipeline.tunnelMeterId), when the switch holds it. */
  tunnelMeter?: PortMeter;
}

export function ovsPipeline(config: PipelineConfig): MulticastPipeline {
  return new MulticastPipeline(config, { maxBucketsPerGroup: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD });
}

/** What of ours is on the switch now, read back from it. */
export async function readInstalled(openflow: PipelineReader, pipeline: MulticastPipeline): Promise<InstalledState> {
  // Groups first, then flows: a controller that adds a group and then its flow (the
  // daemon) is never caught between the two, its group seen without its flow (stray).
  // Both requests go out at once: the switch answers one connection's requests in
  // order, so the group dump is still taken before the flow dump. The whole table, not
  // only our cookie: install must see a flow of someone else's that has the very match
  // and priority it is about to add.
  const [descriptions, stats, meterConfigs] = await Promise.all([
    openflow.dumpGroups(),
    openflow.dumpFlows({ tableId: pipeline.config.table }),
    readMeterConfigs(openflow),
  ]);
  const { cookie, mask } = pipeline.cookieMatch;
  const flows: FlowEntry[] = [];
  const foreignFlows: FlowEntry[] = [];
  const countersByFlow = new Map<FlowEntry, FlowCounters>();
  for (const entry of stats) {
    if ((entry.cookie & mask) !== cookie) {
      // Others' flows by their place alone (whatever their actions).
      const slot = flowSlotOf(entry);
      if (slot !== undefined) foreignFlows.push(slot);
      continue;
    }
    const flow = flowEntryOf(entry);
    if (flow === undefined) continue;
    flows.push(flow);
    countersByFlow.set(flow, { packets: entry.packetCount, bytes: entry.byteCount });
  }
  const groups = descriptions.filter((desc) => pipeline.ownsGroupId(desc.groupId)).map(groupEntryOf);
  const installed = pipeline.readInstalled(flows, groups);
  const counters = new Map<string, FlowCounters>();
  for (const group of installed.groups) {
    const flowCounters = countersByFlow.get(group.flow);
    if (flowCounters !== undefined) counters.set(forwardingKey(group), flowCounters);
  }
  const meters = new Map<number, PortMeter>();
  let tunnelMeter: PortMeter | undefined;
  for (const config of meterConfigs) {
    if (pipeline.meterPort(config.meterId) !== undefined) meters.set(config.meterId, portMeterOf(config));
    if (config.meterId === pipeline.tunnelMeterId) tunnelMeter = portMeterOf(config);
  }
  return {
    ...(tunnelMeter === undefined ? {} : { tunnelMeter }),
    pipeline: installed,
    counters,
    foreignFlows,
    groupIds: new Set(groups.map((group) => group.groupId)),
    meters,
  };
}

/** Every meter's configuration; none from a switch that has no meters (it refuses the request). */
async function readMeterConfigs(openflow: PipelineReader): Promise<MeterConfig[]> {
  try {
    return await openflow.meterConfigs('all');
  } catch (error) {
    if (error instanceof OpenFlowError) return [];
    throw error;
  }
}

/**
 * A meter as the pipeline writes it: packets a second, with a burst, one drop band. Anything else reads as a rate of
 * -1, which no wanted meter has.
 */
function portMeterOf(config: MeterConfig): PortMeter {
  const [band] = config.bands;
  const ours = (config.flags & (MeterFlag.PKTPS | MeterFlag.BURST)) === (MeterFlag.PKTPS | MeterFlag.BURST);
  if (!ours || config.bands.length !== 1 || band?.type !== 'DROP') return { rate: -1, burst: -1 };
  return { rate: band.rate, burst: band.burstSize };
}
