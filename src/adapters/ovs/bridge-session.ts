/**
 * One bridge, as the static-group commands see it: its ports (from OVSDB), what of the
 * multicast pipeline is installed on it (read back over OpenFlow), and a way to apply a
 * plan. The narrow interface between the one-shot commands and the two OVS clients; its
 * ports and read-back are the daemon's too (./bridge-ports.ts, ./read-back.ts).
 */
import { UsageError } from '../../errors.js';
import { output } from '../../protocol/openflow/action.js';
import { OpenFlowConnection } from '../../transport/openflow/connection.js';
import { inPortOf } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import type { OpenFlowError } from '../../protocol/openflow/errors.js';
import { OvsdbClient } from '../../transport/ovsdb/client.js';
import { bridgeInterfaces, NoSuchBridgeError, type InterfaceRow } from './vswitch.js';
import type { PipelineConfig } from '../../domain/pipeline/config.js';
import type { MulticastPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import { changeMessage } from '../../domain/pipeline/openflow-entries.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import { describePortRef, type PortRef } from '../../domain/declared-state/group-address.js';
import { BridgePorts, isLocalPort, type BridgePort } from './bridge-ports.js';
import { ovsPipeline, readInstalled, type InstalledState } from './read-back.js';
import type { OvsTarget } from './locations.js';

export interface BridgeSessionOptions {
  pipeline: PipelineConfig;
  /** Per request (default 10 s). */
  timeoutMs?: number;
}

export class BridgeSession {
  private constructor(
    readonly target: OvsTarget,
    readonly pipeline: MulticastPipeline,
    private readonly bridgePorts: BridgePorts,
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
    return new BridgeSession(target, ovsPipeline(options.pipeline), new BridgePorts(interfaces), ovsdb, openflow);
  }

  /** The MAC of the bridge's own (LOCAL) interface, the source of frames it sends. */
  get localMac(): string | undefined {
    return this.bridgePorts.localMac;
  }

  /** The port a user named, or a UsageError (prefixed with `where()`) saying which ports the bridge has. */
  resolvePort(ref: PortRef, where: () => string): BridgePort {
    const port = 'ofport' in ref ? this.bridgePorts.byNumber(ref.ofport) : this.bridgePorts.byName(ref.name);
    if (port !== undefined && isLocalPort(port)) {
      throw new UsageError(`${where()}: ${port.name} is the bridge's own (LOCAL) port, which cannot be a group member`, { code: 'no-such-interface' });
    }
    if (port !== undefined) return port;
    const known = this.memberPorts.map((p) => `${p.name} (${p.ofport})`);
    const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, ...` : known.join(', ') || 'none';
    throw new UsageError(`${where()}: bridge ${this.target.bridge} has no port ${describePortRef(ref)}`, {
      code: 'no-such-interface',
      hint: `its ports: ${list}`,
    });
  }

  /** The port's IPv4 addresses (external_ids ip-address), where its CNI plugin wrote them. */
  addressesOf(ofport: number): readonly string[] | undefined {
    return this.bridgePorts.addresses.get(ofport);
  }

  /** The pod's MAC (external_ids attached-mac), where its CNI plugin wrote it. */
  macOf(ofport: number): string | undefined {
    return this.bridgePorts.macs.get(ofport);
  }

  portByNumber(ofport: number): BridgePort | undefined {
    return this.bridgePorts.byNumber(ofport);
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
    return this.bridgePorts.members;
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
  readInstalled(): Promise<InstalledState> {
    return readInstalled(this.openflow, this.pipeline);
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
