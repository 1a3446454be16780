/**
 * A bridge over OpenFlow, in memory, as the daemon's loop sees it (SwitchPort): it keeps
 * each group's ports as OVS would (its (S,G) entries too), records every change that reached it, can refuse the
 * next syncs, holds groups installed statically, and emits packet-ins and reconnections.
 */
import { McastError } from '../../src/errors.js';
import type { GroupOutcome } from '../../src/domain/pipeline/plan.js';
import type { SwitchPort, SyncSendOptions, WantedForwarding } from '../../src/controllers/daemon/loop/ports.js';
import type { WantedPortEntries } from '../../src/domain/pipeline/port-entries.js';
import type { PortMeter } from '../../src/domain/pipeline/pipeline-entries.js';
import type { SourcePorts } from '../../src/domain/pipeline/source-split.js';
import {
  compareAddresses,
  type GroupAddress,
  type HostAddress,
  type SourceAddress,
} from '../../src/wire/ip-address.js';

export interface AppliedGroup {
  group: GroupAddress;
  ports: number[];
  outcome: GroupOutcome;
  /** Tunnel mode: the peers it was synced with (sorted, once each), and the tunnel port. */
  tunnel?: { ofport: number; peers: HostAddress[] };
  /** Its (S,G) entries, when it has some: each source's ports (sorted), by source. */
  sources?: SourcePorts[];
}

/** One sendToPeers call. */
export interface PeerFrame {
  frame: Uint8Array;
  tunnelOfport: number;
  peers: HostAddress[];
}

export class FakeSwitch implements SwitchPort {
  connected = true;
  /** What the switch forwards now: learned groups, by group, with every port any of their entries reaches. */
  readonly groups = new Map<GroupAddress, number[]>();
  /** The ports of each learned group's (*,G) entry now: those of every source its (S,G) entries leave out. */
  readonly everySource = new Map<GroupAddress, number[]>();
  /** The (S,G) entries of each learned group now, by source (groups without any are absent). */
  readonly sources = new Map<GroupAddress, SourcePorts[]>();
  /** Tunnel mode: the peers each learned group goes to now (groups without peers are absent). */
  readonly peers = new Map<GroupAddress, HostAddress[]>();
  /** Groups installed statically (install, reconcile), with their ports. */
  readonly staticGroups = new Map<GroupAddress, number[]>();
  /** Every sync that changed the switch, in order. */
  readonly applied: AppliedGroup[] = [];
  /** Every installBase call: the gateway port it was given. */
  readonly baseFlows: Array<number | undefined> = [];
  /**
   * Every installBase call, in the same order as baseFlows: the tunnel port it was given (undefined: tunnel mode off).
   */
  readonly baseTunnels: Array<number | undefined> = [];
  /** Every installBase call, in the same order: the peers whose membership messages the tunnel lets in. */
  readonly basePeers: Array<readonly string[] | undefined> = [];
  /** Every installBase call, in the same order: the tunnel's meter (undefined: none). */
  readonly baseMeters: Array<PortMeter | undefined> = [];
  /** Every frame sent out, with its ports. */
  readonly sent: Array<{ frame: Uint8Array; ports: number[] }> = [];
  /** Every frame sent to peers through the tunnel, with its tunnel port and peers. */
  readonly sentToPeers: PeerFrame[] = [];
  /** What each pod port has of ours: its meter and send-policy drops. */
  readonly ports = new Map<number, WantedPortEntries>();
  /** Packets each port's meter dropped, as the test sets them. */
  readonly drops = new Map<number, bigint>();
  /** Membership messages from the tunnel the switch dropped for a source that is no peer, as the test sets them. */
  tunnelShed = 0n;
  /** Membership messages from the tunnel the switch's tunnel meter dropped, as the test sets them. */
  tunnelMetered = 0n;
  /** The switch has meters (false: like a switch without them, every port unmetered). */
  meters = true;
  refreshes = 0;
  closed = false;
  private failures = 0;
  private readonly packetInListeners: Array<
    (frame: Uint8Array, ofport: number | undefined, tunnelSource?: string) => void
  > = [];
  /** The tunnel port each group's buckets toward the peers output to. */
  readonly tunnelPorts = new Map<GroupAddress, number>();
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<(error: Error) => void> = [];

  /** The next `count` syncs that would change the switch are refused. */
  failNextSyncs(count: number): void {
    this.failures = count;
  }

  /** A group the daemon installed in an earlier run (read back by refresh); in tunnel mode with its peers. */
  preinstall(group: GroupAddress, ports: number[], peers: readonly HostAddress[] = []): void {
    this.groups.set(group, sorted(ports));
    this.everySource.set(group, sorted(ports));
    if (peers.length > 0) this.peers.set(group, sortedPeers(peers));
  }

  /** The (S,G) entries of a group the daemon installed in an earlier run (with preinstall for its (*,G) ports). */
  preinstallSources(group: GroupAddress, sources: readonly SourcePorts[]): void {
    const ports = this.everySource.get(group) ?? [];
    this.everySource.set(group, ports);
    this.sources.set(group, sortedSources(sources));
    this.groups.set(group, reached(ports, sources));
  }

  async refresh(): Promise<void> {
    this.refreshes++;
  }

  get installedGroups(): GroupAddress[] {
    return [...this.groups.keys(), ...this.staticGroups.keys()];
  }

  get learnedGroups(): Array<{ group: GroupAddress; ports: number[]; peers?: HostAddress[]; sources?: SourcePorts[] }> {
    return [...this.everySource].map(([group, ports]) => {
      const peers = this.peers.get(group);
      const sources = this.sources.get(group);
      return {
        group,
        ports: [...ports],
        ...(peers === undefined ? {} : { peers: [...peers] }),
        ...(sources === undefined ? {} : { sources: sortedSources(sources) }),
      };
    });
  }

  async syncForwarding(
    { group, ports, bySource, tunnel }: WantedForwarding,
    options: SyncSendOptions = {},
  ): Promise<GroupOutcome> {
    const peers = sortedPeers(tunnel?.peers ?? []);
    const sources = sortedSources(bySource);
    const removing = ports.length === 0 && peers.length === 0 && sources.length === 0;
    if (this.staticGroups.has(group)) {
      if (removing) return 'absent';
      throw new McastError(
        'conflict',
        `group ${group} is installed statically (mcastctl install or reconcile); the daemon leaves it alone`,
      );
    }
    const current = this.everySource.get(group);
    const wanted = sorted(ports);
    if (removing && current === undefined) return 'absent';
    const sameTunnel = peers.length === 0 || this.tunnelPorts.get(group) === tunnel?.ofport;
    const sameEntries = sameSources(this.sources.get(group) ?? [], sources);
    if (
      current !== undefined &&
      same(current, wanted) &&
      samePeers(this.peers.get(group) ?? [], peers) &&
      sameTunnel &&
      sameEntries
    )
      return 'unchanged';
    if (this.failures > 0) {
      this.failures--;
      throw new McastError('refused', `OVS refused 2 of 2 changes for group ${group}: OFPGMFC_GROUP_EXISTS`);
    }
    options.onWritten?.();
    const outcome: GroupOutcome = removing ? 'removed' : current === undefined ? 'added' : 'updated';
    if (removing) {
      this.groups.delete(group);
      this.everySource.delete(group);
    } else {
      this.groups.set(group, reached(wanted, sources));
      this.everySource.set(group, wanted);
    }
    if (sources.length === 0) this.sources.delete(group);
    else this.sources.set(group, sources);
    if (peers.length === 0) {
      this.peers.delete(group);
      this.tunnelPorts.delete(group);
    } else {
      this.peers.set(group, peers);
      this.tunnelPorts.set(group, tunnel!.ofport);
    }
    this.applied.push({
      group,
      ports: wanted,
      outcome,
      ...(tunnel === undefined ? {} : { tunnel: { ofport: tunnel.ofport, peers } }),
      ...(sources.length === 0 ? {} : { sources }),
    });
    return outcome;
  }

  async installBase(
    gatewayOfport: number | undefined,
    tunnel?: { ofport: number; peers: readonly string[]; meter?: PortMeter },
  ): Promise<void> {
    this.baseFlows.push(gatewayOfport);
    this.baseTunnels.push(tunnel?.ofport);
    this.basePeers.push(tunnel?.peers);
    this.baseMeters.push(this.meters ? tunnel?.meter : undefined);
  }

  async syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }> {
    const meter = this.meters ? wanted?.meter : undefined;
    if (wanted === undefined || (meter === undefined && wanted.deniedSend.length === 0)) this.ports.delete(ofport);
    else
      this.ports.set(ofport, {
        deniedSend: [...wanted.deniedSend],
        ...(meter === undefined ? {} : { meter: { ...meter } }),
      });
    return { metered: meter !== undefined };
  }

  get portsWithEntries(): number[] {
    return [...this.ports.keys()];
  }

  async tunnelDrops(): Promise<{ notPeer: bigint; overRate: bigint }> {
    return { notPeer: this.tunnelShed, overRate: this.tunnelMetered };
  }

  async meterDrops(): Promise<Map<number, bigint>> {
    return new Map([...this.drops].filter(([ofport]) => this.ports.get(ofport)?.meter !== undefined));
  }

  async sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<{ sent: number; refused: Error[] }> {
    this.sent.push({ frame, ports: [...ports] });
    return { sent: ports.length, refused: [] };
  }

  async sendToPeers(
    frame: Uint8Array,
    tunnelOfport: number,
    peers: readonly HostAddress[],
  ): Promise<{ sent: number; refused: Error[] }> {
    this.sentToPeers.push({ frame, tunnelOfport, peers: [...peers] });
    return { sent: peers.length, refused: [] };
  }

  onPacketIn(listener: (frame: Uint8Array, ofport: number | undefined, tunnelSource?: string) => void): void {
    this.packetInListeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.disconnectListeners.push(listener);
  }

  onReconnected(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  async enablePacketIn(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
  }

  /**
   * A frame from `ofport`, as OVS sends it up to the controller; from a tunnel port, with the outer source it came
   * from.
   */
  packetIn(frame: Uint8Array, ofport: number | undefined, tunnelSource?: string): void {
    for (const listener of this.packetInListeners) listener(frame, ofport, tunnelSource);
  }

  /** ovs-vswitchd restarted: the switch comes back empty (static groups are reconcile's to put back). */
  restartVswitchd(): void {
    this.connected = false;
    for (const listener of this.disconnectListeners) listener(new Error('connection reset'));
    this.groups.clear();
    this.everySource.clear();
    this.sources.clear();
    this.peers.clear();
    this.tunnelPorts.clear();
    this.ports.clear();
    this.connected = true;
    for (const listener of this.reconnectListeners) listener();
  }
}

function sorted(ports: readonly number[]): number[] {
  return [...ports].sort((a, b) => a - b);
}

/** Every port the entries of a group reach. */
function reached(ports: readonly number[], sources: readonly SourcePorts[]): number[] {
  return sorted([...new Set([...ports, ...sources.flatMap((entry) => entry.ports)])]);
}

function sortedSources(sources: ReadonlyArray<{ source: SourceAddress; ports: readonly number[] }>): SourcePorts[] {
  return sources
    .map(({ source, ports }) => ({ source, ports: sorted(ports) }))
    .sort((a, b) => compareAddresses(a.source, b.source));
}

function sameSources(a: readonly SourcePorts[], b: readonly SourcePorts[]): boolean {
  return (
    a.length === b.length &&
    a.every((entry, index) => entry.source === b[index]!.source && same(entry.ports, b[index]!.ports))
  );
}

function sortedPeers(peers: readonly HostAddress[]): HostAddress[] {
  return [...new Set(peers)].sort(compareAddresses);
}

function samePeers(a: readonly HostAddress[], b: readonly HostAddress[]): boolean {
  return a.length === b.length && a.every((peer, index) => peer === b[index]);
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((port, index) => port === b[index]);
}
