/**
 * One OVS bridge, as every part of mcastctl reaches it. The one-shot commands open it
 * (OVSDB for its ports, then OpenFlow); the daemon wraps the OpenFlow connection it keeps
 * reconnecting, and learns its ports from its own OVSDB watch (./pod-ports.ts). It offers
 * the bridge's ports (./bridge-ports.ts), the read-back of what of ours is installed
 * (./read-back.ts), changes applied in one batch (./bridge-connection.ts), the daemon's
 * syncs against its mirror of the switch (./pipeline-sync.ts) with the meters' and
 * groups' counters, and frames: packet-ins up, PACKET_OUTs out of ports or through a
 * tunnel port to peers. The daemon's loop sees it as its SwitchPort.
 */
import { UsageError } from '../../errors.js';
import type { GroupAddress, HostAddress } from '../../wire/ip-address.js';
import { output, setTunnelDestination } from '../../protocol/openflow/action.js';
import { inPortOf, tunnelSourceOf } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import { OpenFlowConnection } from '../../transport/openflow/connection.js';
import type { BatchOptions } from '../../transport/openflow/requests.js';
import { OvsdbClient } from '../../transport/ovsdb/client.js';
import type { PipelineConfig } from '../../domain/pipeline/config.js';
import type { MulticastPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import type { GroupOutcome, PipelineChange } from '../../domain/pipeline/plan.js';
import type { WantedPortEntries } from '../../domain/pipeline/port-entries.js';
import { describePortRef, type PortRef } from '../../domain/declared-state/group-address.js';
import { bridgeInterfaces, NoSuchBridgeError, type InterfaceRow } from './vswitch.js';
import { BridgePorts, isLocalPort, type BridgePort } from './bridge-ports.js';
import { applyChanges, type BridgeConnection } from './bridge-connection.js';
import { ovsPipeline, readInstalled, type InstalledState } from './read-back.js';
import { type BaseTunnel, PipelineSync, type TunnelDrops } from './pipeline-sync.js';
import type { ForwardingWanted, LearnedForwarding } from './forwarding-sync.js';
import type { PortGroupTraffic } from './traffic-counters.js';
import type { OvsTarget } from './locations.js';

export interface BridgeOpenOptions {
  pipeline: PipelineConfig;
  /** Per request (default 10 s). */
  timeoutMs?: number;
}

export interface BridgeWrapOptions {
  /** The bridge's name, as OVSDB knows it. */
  bridge: string;
  /** The bridge's OpenFlow connection, connected; closed with the client. */
  openflow: BridgeConnection;
  pipeline: MulticastPipeline;
  /** The bridge's ports, where the caller read them (default: none known). */
  ports?: BridgePorts;
}

/** Frames sent out of ports or to peers: how many went, and what the switch refused. */
export interface FramesSent {
  sent: number;
  refused: Error[];
}

/** FramesSent out of ports, with the port of each refusal, in the order of `refused`. */
export interface FramesSentToPorts extends FramesSent {
  refusedPorts: number[];
}

export class BridgeClient {
  readonly bridge: string;
  readonly pipeline: MulticastPipeline;
  private readonly openflow: BridgeConnection;
  private readonly ports: BridgePorts;
  private readonly sync: PipelineSync;

  private constructor(
    options: BridgeWrapOptions,
    /** The OVSDB connection the client opened itself (open), closed with it. */
    private readonly ovsdb?: OvsdbClient,
  ) {
    this.bridge = options.bridge;
    this.pipeline = options.pipeline;
    this.openflow = options.openflow;
    this.ports = options.ports ?? new BridgePorts([]);
    this.sync = new PipelineSync(options.openflow, options.pipeline);
  }

  /**
   * Reads the bridge's ports from OVSDB and connects to its OpenFlow socket, neither
   * reconnecting. Throws UnavailableError (69) when either is unreachable, and UsageError
   * (64) when the bridge does not exist.
   */
  static async open(target: OvsTarget, options: BridgeOpenOptions): Promise<BridgeClient> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    const ovsdb = await OvsdbClient.connect({ endpoint: target.db, timeoutMs, reconnect: false });
    let interfaces: InterfaceRow[];
    try {
      interfaces = await bridgeInterfaces(ovsdb, target.bridge);
    } catch (error) {
      await ovsdb.close();
      if (error instanceof NoSuchBridgeError)
        throw new UsageError(error.message, { code: 'no-such-interface', hint: error.hint });
      throw error;
    }
    let openflow: OpenFlowConnection;
    try {
      openflow = await OpenFlowConnection.connect({ endpoint: target.openflow, timeoutMs, reconnect: false });
    } catch (error) {
      await ovsdb.close();
      throw error;
    }
    const ports = new BridgePorts(interfaces);
    return new BridgeClient({ bridge: target.bridge, openflow, pipeline: ovsPipeline(options.pipeline), ports }, ovsdb);
  }

  /** The client of an OpenFlow connection the caller made (the daemon's, which reconnects by itself). */
  static wrap(options: BridgeWrapOptions): BridgeClient {
    return new BridgeClient(options);
  }

  // --- the bridge's ports --------------------------------------------------------------

  /** The MAC of the bridge's own (LOCAL) interface, the source of frames it sends. */
  get localMac(): string | undefined {
    return this.ports.localMac;
  }

  /** Every port but the bridge's own LOCAL one: where pods and other hosts attach. */
  get memberPorts(): BridgePort[] {
    return this.ports.members;
  }

  portByNumber(ofport: number): BridgePort | undefined {
    return this.ports.byNumber(ofport);
  }

  /** The port a user named, or a UsageError (prefixed with `where()`) saying which ports the bridge has. */
  resolvePort(ref: PortRef, where: () => string): BridgePort {
    const port = 'ofport' in ref ? this.ports.byNumber(ref.ofport) : this.ports.byName(ref.name);
    if (port !== undefined && isLocalPort(port)) {
      throw new UsageError(
        `${where()}: ${port.name} is the bridge's own (LOCAL) port, which cannot be a group member`,
        { code: 'no-such-interface' },
      );
    }
    if (port !== undefined) return port;
    const known = this.memberPorts.map((p) => `${p.name} (${p.ofport})`);
    const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, ...` : known.join(', ') || 'none';
    throw new UsageError(`${where()}: bridge ${this.bridge} has no port ${describePortRef(ref)}`, {
      code: 'no-such-interface',
      hint: `its ports: ${list}`,
    });
  }

  /** The port's IPv4 addresses (external_ids ip-address), where its CNI plugin wrote them. */
  addressesOf(ofport: number): readonly string[] | undefined {
    return this.ports.addresses.get(ofport);
  }

  /** The pod's MAC (external_ids attached-mac), where its CNI plugin wrote it. */
  macOf(ofport: number): string | undefined {
    return this.ports.macs.get(ofport);
  }

  // --- the connection ------------------------------------------------------------------

  /** False while the OpenFlow connection is lost (the switch restarted or went away). */
  get connected(): boolean {
    return this.openflow.connected;
  }

  /** Told each time the OpenFlow connection is lost (once for an opened client, which does not reconnect). */
  onDisconnected(listener: (error: Error) => void): void {
    this.openflow.on('disconnected', listener);
  }

  /** ovs-vswitchd is reachable again (perhaps restarted, with nothing installed). */
  onReconnected(listener: () => void): void {
    this.openflow.on('reconnected', () => listener());
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.openflow.close(), this.ovsdb?.close()]);
  }

  // --- what is installed, and changes --------------------------------------------------

  /** What of ours is on the switch now, read back from it. */
  readInstalled(): Promise<InstalledState> {
    return readInstalled(this.openflow, this.pipeline);
  }

  /**
   * Sends every change in one pipelined batch closed by a barrier. Returns the changes
   * OVS refused, by index into `changes`; the others were applied.
   */
  apply(changes: readonly PipelineChange[]): Promise<ReadonlyMap<number, Error>> {
    return applyChanges(this.openflow, changes);
  }

  // --- the daemon's syncs (./pipeline-sync.ts) -----------------------------------------

  /** Reads what of ours is installed into the daemon's mirror (at start and after a reconnect). */
  refresh(): Promise<void> {
    return this.sync.refresh();
  }

  /** Groups whose forwarding of ours is on the switch (as of the last refresh or sync). */
  get installedGroups(): GroupAddress[] {
    return this.sync.installedGroups;
  }

  /**
   * Groups the daemon itself installed, with their (*,G) ports then, their peers, and the ports of each (S,G) entry.
   */
  get learnedGroups(): LearnedForwarding[] {
    return this.sync.learnedGroups;
  }

  /** The flows every group relies on (PipelineSync.installBase). */
  installBase(gatewayOfport: number | undefined, tunnel?: BaseTunnel): Promise<void> {
    return this.sync.installBase(gatewayOfport, tunnel);
  }

  /** Makes the switch forward one group, source by source, as `wanted` says (PipelineSync.syncForwarding). */
  syncForwarding(wanted: ForwardingWanted, options?: BatchOptions): Promise<GroupOutcome> {
    return this.sync.syncForwarding(wanted, options);
  }

  /** Makes the switch hold exactly `wanted` for pod port `ofport` (PipelineSync.syncPort). */
  syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }> {
    return this.sync.syncPort(ofport, wanted);
  }

  /** Pod ports with entries of ours on the switch (as of the last refresh or sync). */
  get portsWithEntries(): number[] {
    return this.sync.portsWithEntries;
  }

  /** Packets each pod port's IGMP meter dropped, by port. */
  meterDrops(): Promise<Map<number, bigint>> {
    return this.sync.meterDrops();
  }

  /** Tunnel mode: membership messages the switch dropped, from no peer and past the tunnel's meter (PipelineSync). */
  tunnelDrops(): Promise<TunnelDrops> {
    return this.sync.tunnelDrops();
  }

  /** What each port received from and sent to each group of ours, read from the switch now. */
  trafficCounters(): Promise<PortGroupTraffic[]> {
    return this.sync.trafficCounters();
  }

  // --- frames --------------------------------------------------------------------------

  /** Asks the switch for packet-ins on this connection (the daemon's again after each reconnect). */
  enablePacketIn(): Promise<void> {
    return this.openflow.enablePacketIn();
  }

  /**
   * Every packet-in: its frame, its in_port, and (one from a tunnel port) the outer IPv4 source the underlay delivered
   * it from.
   */
  onPacketIn(listener: (frame: Uint8Array, ofport: number | undefined, tunnelSource?: string) => void): void {
    this.openflow.on('packet-in', (packetIn) => listener(packetIn.data, inPortOf(packetIn), tunnelSourceOf(packetIn)));
  }

  /** Sends `frame` out of each of `ports`: one PACKET_OUT each, in one batch (one barrier). */
  async sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<FramesSentToPorts> {
    const { errors } = await this.openflow.batch(
      ports.map((port) => packetOut({ data: frame, actions: [output(port)] })),
    );
    return {
      sent: ports.length - errors.size,
      refused: [...errors.values()],
      refusedPorts: [...errors.keys()].map((index) => ports[index]!),
    };
  }

  /**
   * In one batch (one barrier): a PACKET_OUT from CONTROLLER per peer, its outer destination set, out of the tunnel
   * port.
   */
  async sendToPeers(frame: Uint8Array, tunnelOfport: number, peers: readonly HostAddress[]): Promise<FramesSent> {
    if (peers.length === 0) return { sent: 0, refused: [] };
    const messages = peers.map((peer) =>
      packetOut({ data: frame, actions: [setTunnelDestination(peer), output(tunnelOfport)] }),
    );
    const { errors } = await this.openflow.batch(messages);
    return { sent: peers.length - errors.size, refused: [...errors.values()] };
  }
}
