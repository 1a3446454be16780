/**
 * The real ports of the daemon's loop (see ./ports.ts): the bridge over OpenFlow, its
 * interfaces over OVSDB, this host's interfaces, and the system clock.
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import type { GroupAddress, HostAddress } from '../../wire/ip-address.js';
import { output, setTunnelDestination } from '../../protocol/openflow/action.js';
import { inPortOf, tunnelSourceOf } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import { systemTimers } from '../../domain/membership/work-queue.js';
import type { GroupOutcome } from '../../domain/pipeline/plan.js';
import type { WantedPortEntries } from '../../domain/pipeline/port-entries.js';
import type { OpenFlowConnection } from '../../transport/openflow/connection.js';
import type { OvsdbClient } from '../../transport/ovsdb/client.js';
import type { OvsProgrammer } from '../../adapters/ovs/ovs-programmer.js';
import type { LearnedForwarding } from '../../adapters/ovs/forwarding-sync.js';
import type { PortGroupTraffic } from '../../adapters/ovs/traffic-counters.js';
import type { InterfaceRow, InterfaceWatch } from '../../adapters/ovs/vswitch.js';
import type { DaemonClock, HostFacts, PortWatch, SwitchPort, WantedForwarding } from './ports.js';

/** The bridge: the programmer's mirror of our flows and groups, and the connection under it. */
export class OvsSwitch implements SwitchPort {
  constructor(
    private readonly openflow: OpenFlowConnection,
    private readonly programmer: OvsProgrammer,
  ) {}

  get connected(): boolean {
    return this.openflow.connected;
  }

  refresh(): Promise<void> {
    return this.programmer.refresh();
  }

  get installedGroups(): GroupAddress[] {
    return this.programmer.installedGroups;
  }

  get learnedGroups(): LearnedForwarding[] {
    return this.programmer.learnedGroups;
  }

  syncGroup(group: GroupAddress, ports: readonly number[], tunnel?: { ofport: number; peers: readonly HostAddress[] }): Promise<GroupOutcome> {
    return this.programmer.syncGroup(group, ports, tunnel);
  }

  syncForwarding(wanted: WantedForwarding, options?: { expedite?: boolean }): Promise<GroupOutcome> {
    return this.programmer.syncForwarding(wanted, options);
  }

  installBase(gatewayOfport: number | undefined, tunnelOfport?: number): Promise<void> {
    return this.programmer.installBase(gatewayOfport, tunnelOfport);
  }

  syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }> {
    return this.programmer.syncPort(ofport, wanted);
  }

  get portsWithEntries(): number[] {
    return this.programmer.portsWithEntries;
  }

  meterDrops(): Promise<Map<number, bigint>> {
    return this.programmer.meterDrops();
  }

  trafficCounters(): Promise<PortGroupTraffic[]> {
    return this.programmer.trafficCounters();
  }

  async sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<{ sent: number; refused: Error[] }> {
    const { errors } = await this.openflow.batch(ports.map((port) => packetOut({ data: frame, actions: [output(port)] })));
    return { sent: ports.length - errors.size, refused: [...errors.values()] };
  }

  /** In one batch (one barrier): a PACKET_OUT from CONTROLLER per peer, its outer destination set, out of the tunnel port. */
  async sendToPeers(frame: Uint8Array, tunnelOfport: number, peers: readonly HostAddress[]): Promise<{ sent: number; refused: Error[] }> {
    if (peers.length === 0) return { sent: 0, refused: [] };
    const messages = peers.map((peer) => packetOut({ data: frame, actions: [setTunnelDestination(peer), output(tunnelOfport)] }));
    const { errors } = await this.openflow.batch(messages);
    return { sent: peers.length - errors.size, refused: [...errors.values()] };
  }

  onPacketIn(listener: (frame: Uint8Array, ofport: number | undefined, tunnelSource?: string) => void): void {
    this.openflow.on('packet-in', (packetIn) => listener(packetIn.data, inPortOf(packetIn), tunnelSourceOf(packetIn)));
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.openflow.on('disconnected', listener);
  }

  onReconnected(listener: () => void): void {
    this.openflow.on('reconnected', () => listener());
  }

  enablePacketIn(): Promise<void> {
    return this.openflow.enablePacketIn();
  }

  close(): Promise<void> {
    return this.openflow.close();
  }
}

/**
 * The bridge's interfaces, watched over OVSDB. Changes are held back until the loop
 * listens: it reads the interfaces as they are then, so none is missed.
 */
export class OvsdbPortWatch implements PortWatch {
  private readonly listeners: Array<(interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void> = [];
  private watch: InterfaceWatch | undefined;

  constructor(private readonly ovsdb: OvsdbClient) {}

  /** The handler to give watchInterfaces(); `attach` the watch it returns. */
  readonly changed = (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean): void => {
    for (const listener of this.listeners) listener(interfaces, resync);
  };

  attach(watch: InterfaceWatch): void {
    this.watch = watch;
  }

  get connected(): boolean {
    return this.ovsdb.state === 'connected';
  }

  interfaces(): ReadonlyMap<string, InterfaceRow> {
    return this.watch?.interfaces() ?? new Map();
  }

  onChange(listener: (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void): void {
    this.listeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.ovsdb.on('disconnected', (event) => listener(event.error));
  }

  onReconnected(listener: () => void): void {
    this.ovsdb.on('reconnected', () => listener());
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.watch?.cancel(), this.ovsdb.close()]);
  }
}

export const systemHost: HostFacts = {
  interfaceIPv4(name) {
    const entry = networkInterfaces()[name]?.find((address) => address.family === 'IPv4');
    return entry === undefined ? undefined : { address: entry.address, mac: entry.mac };
  },
  interfaceMtu(name) {
    // An interface name is no path: anything else (a slash, dots) is not looked up.
    if (!/^[\w.-]{1,15}$/.test(name) || name === '.' || name === '..') return undefined;
    try {
      const mtu = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'utf8').trim());
      return Number.isInteger(mtu) && mtu > 0 ? mtu : undefined;
    } catch {
      return undefined;
    }
  },
  interfaceHolding(address) {
    return Object.entries(networkInterfaces()).find(([, entries]) => entries?.some((entry) => entry.address === address))?.[0];
  },
};

export const systemClock: DaemonClock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, run) => systemTimers.after(ms, run),
};
