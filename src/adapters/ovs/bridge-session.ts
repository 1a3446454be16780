/**
 * One bridge, as the static-group commands see it: its ports (from OVSDB), what of the
 * multicast pipeline is installed on it (read back over OpenFlow), and a way to apply a
 * plan. The narrow interface between the commands and the two OVS clients.
 */
import { UsageError } from '../../errors.js';
import { output } from '../../protocol/openflow/action.js';
import { OpenFlowConnection } from '../../transport/openflow/connection.js';
import { inPortOf } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import type { OpenFlowError } from '../../protocol/openflow/errors.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../protocol/openflow/limits.js';
import { OvsdbClient } from '../../transport/ovsdb/client.js';
import { bridgeInterfaces, NoSuchBridgeError, type InterfaceRow } from './vswitch.js';
import type { PipelineConfig } from '../../domain/pipeline/config.js';
import { MulticastPipeline, type FlowEntry, type InstalledPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, flowSlotOf, groupEntryOf } from '../../domain/pipeline/openflow-entries.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import { describePortRef, type PortRef } from '../../domain/declared-state/group-address.js';
import type { OvsTarget } from './locations.js';

/** How OVSDB numbers the bridge's own internal port (OpenFlow 1.3 calls it LOCAL, 0xfffffffe). */
const OVSDB_LOCAL_OFPORT = 65534;

export interface BridgePort {
  ofport: number;
  name: string;
  /** `namespace/name` from the interface's external_ids, where a CNI plugin set them. */
  pod?: string;
}

interface FlowCounters {
  packets: bigint;
  bytes: bigint;
}

export interface InstalledState {
  pipeline: InstalledPipeline;
  /** Packet and byte counts of each group's flow. */
  counters: Map<string, FlowCounters>;
  /** Flows of others in our table that have the shape of ours (install must not take their place). */
  foreignFlows: FlowEntry[];
}

export interface BridgeSessionOptions {
  pipeline: PipelineConfig;
  /** Per request (default 10 s). */
  timeoutMs?: number;
}

export class BridgeSession {
  private constructor(
    readonly target: OvsTarget,
    readonly pipeline: MulticastPipeline,
    readonly ports: readonly BridgePort[],
    /** The MAC of the bridge's own (LOCAL) interface, the source of frames it sends. */
    readonly localMac: string | undefined,
    private readonly ovsdb: OvsdbClient,
    private readonly openflow: OpenFlowConnection,
  ) {}

  /**
   * Connects to OVSDB and to the bridge's OpenFlow socket. Throws UnavailableError (69)
   * when either is unreachable, and UsageError (64) when the bridge does not exist.
   */
  static async open(target: OvsTarget, options: BridgeSessionOptions): Promise<BridgeSession> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    const ovsdb = await OvsdbClient.connect({ endpoint: target.db, timeoutMs, reconnect: false });
    let interfaces: InterfaceRow[];
    try {
      interfaces = await bridgeInterfaces(ovsdb, target.bridge);
    } catch (error) {
      await ovsdb.close();
      if (error instanceof NoSuchBridgeError) throw new UsageError(error.message, { code: 'no-such-interface', hint: error.hint });
      throw error;
    }
    let openflow: OpenFlowConnection;
    try {
      openflow = await OpenFlowConnection.connect({ endpoint: target.openflow, timeoutMs, reconnect: false });
    } catch (error) {
      await ovsdb.close();
      throw error;
    }
    const ports = interfaces
      .filter((row) => row.ofport !== undefined && row.ofport > 0)
      .map((row): BridgePort => {
        const pod = row.external_ids['pod-name'];
        const namespace = row.external_ids['pod-namespace'];
        return { ofport: row.ofport!, name: row.name, ...(pod === undefined ? {} : { pod: namespace === undefined ? pod : `${namespace}/${pod}` }) };
      })
      .sort((a, b) => a.ofport - b.ofport);
    const pipeline = new MulticastPipeline(options.pipeline, { maxBucketsPerGroup: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD });
    const localMac = interfaces.find((row) => row.ofport === OVSDB_LOCAL_OFPORT)?.mac_in_use;
    return new BridgeSession(target, pipeline, ports, localMac, ovsdb, openflow);
  }

  /** The port a user named, or a UsageError (prefixed with `where()`) saying which ports the bridge has. */
  resolvePort(ref: PortRef, where: () => string): BridgePort {
    const port = 'ofport' in ref ? this.ports.find((p) => p.ofport === ref.ofport) : this.ports.find((p) => p.name === ref.name);
    if (port !== undefined && port.ofport === OVSDB_LOCAL_OFPORT) {
      throw new UsageError(`${where()}: ${port.name} is the bridge's own (LOCAL) port, which cannot be a group member`, { code: 'no-such-interface' });
    }
    if (port !== undefined) return port;
    const known = this.ports.filter((p) => p.ofport !== OVSDB_LOCAL_OFPORT).map((p) => `${p.name} (${p.ofport})`);
    const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, ...` : known.join(', ') || 'none';
    throw new UsageError(`${where()}: bridge ${this.target.bridge} has no port ${describePortRef(ref)}`, {
      code: 'no-such-interface',
      hint: `its ports: ${list}`,
    });
  }

  portByNumber(ofport: number): BridgePort | undefined {
    return this.ports.find((port) => port.ofport === ofport);
  }

  /** False once the OpenFlow connection is lost (the switch restarted or went away). */
  get connected(): boolean {
    return this.openflow.connected;
  }

  /** Calls `listener` once if the OpenFlow connection is lost. */
  onConnectionLost(listener: (reason: Error) => void): void {
    this.openflow.once('disconnected', listener);
  }

  /** Every port but the bridge's own LOCAL one: where pods and other hosts attach. */
  get memberPorts(): BridgePort[] {
    return this.ports.filter((port) => port.ofport !== OVSDB_LOCAL_OFPORT);
  }

  /**
   * Asks the switch for packet-ins on this session's connection and passes each one on
   * with the port it came in on (undefined if the switch did not say, or for LOCAL).
   */
  async receivePackets(listener: (frame: Uint8Array, port: BridgePort | undefined) => void): Promise<void> {
    this.openflow.on('packet-in', (packetIn) => {
      const ofport = inPortOf(packetIn);
      listener(packetIn.data, ofport === undefined ? undefined : this.portByNumber(ofport));
    });
    await this.openflow.enablePacketIn();
  }

  /**
   * Sends `frame` out of each of `ports` (one PACKET_OUT each, pipelined, then a barrier).
   * Returns the ports the switch refused it on, with the reason.
   */
  async sendFrame(frame: Uint8Array, ports: readonly BridgePort[]): Promise<Map<BridgePort, OpenFlowError>> {
    const messages = ports.map((port) => packetOut({ data: frame, actions: [output(port.ofport)] }));
    const { errors } = await this.openflow.batch(messages);
    return new Map([...errors].map(([index, error]) => [ports[index]!, error]));
  }

  /** What of ours is on the switch now, read back from it. */
  async readInstalled(): Promise<InstalledState> {
    // Groups first, then flows: a controller that adds a group and then its flow (the
    // daemon) is never caught between the two, its group seen without its flow (stray).
    // Both requests go out at once: the switch answers one connection's requests in
    // order, so the group dump is still taken before the flow dump. The whole table, not
    // only our cookie: install must see a flow of someone else's that has the very match
    // and priority it is about to add.
    const [descriptions, stats] = await Promise.all([this.openflow.dumpGroups(), this.openflow.dumpFlows({ tableId: this.pipeline.config.table })]);
    const { cookie, mask } = this.pipeline.cookieMatch;
    const flows: FlowEntry[] = [];
    const foreignFlows: FlowEntry[] = [];
    const counters = new Map<string, FlowCounters>();
    const countersByFlow = new Map<FlowEntry, FlowCounters>();
    for (const entry of stats) {
      if ((entry.cookie & mask) !== cookie) {
        const slot = flowSlotOf(entry);
        if (slot !== undefined) foreignFlows.push(slot);
        continue;
      }
      const flow = flowEntryOf(entry);
      if (flow === undefined) continue;
      flows.push(flow);
      countersByFlow.set(flow, { packets: entry.packetCount, bytes: entry.byteCount });
    }
    const groups = descriptions.filter((desc) => this.pipeline.ownsGroupId(desc.groupId)).map(groupEntryOf);
    const pipeline = this.pipeline.readInstalled(flows, groups);
    for (const group of pipeline.groups) {
      const flowCounters = countersByFlow.get(group.flow);
      if (flowCounters !== undefined) counters.set(group.group, flowCounters);
    }
    return { pipeline, counters, foreignFlows };
  }

  /**
   * Sends every change in one pipelined batch closed by a barrier. Returns the changes
   * OVS refused, by index into `changes`; the others were applied.
   */
  async apply(changes: readonly PipelineChange[]): Promise<Map<number, OpenFlowError>> {
    if (changes.length === 0) return new Map();
    const result = await this.openflow.batch(changes.map(changeMessage));
    return result.errors;
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.openflow.close(), this.ovsdb.close()]);
  }
}
