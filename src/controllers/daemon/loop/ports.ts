/**
 * What the daemon's control loop needs of the world outside it, each as narrow as the
 * loop uses it. The loop connects to nothing itself: src/controllers/daemon/host/wiring.ts
 * connects the real OVS, kernel and host and hands them in; the unit tests hand in
 * fakes (test/fakes/).
 */
import type { GroupAddress, HostAddress, SourceAddress } from '../../../wire/ip-address.js';
import type { McastError } from '../../../errors.js';
import type { DaemonConfig } from '../config/config.js';
import type { WorkQueueTimers } from '../../../domain/membership/work-queue.js';
import type { GroupOutcome } from '../../../domain/pipeline/plan.js';
import type { WantedPortEntries } from '../../../domain/pipeline/port-entries.js';
import type { PortMeter } from '../../../domain/pipeline/pipeline-entries.js';
import type { SourcePorts } from '../../../domain/pipeline/source-split.js';
import type { SourceFilter } from '../../../domain/membership/source-filter.js';
import type { PortGroupTraffic } from '../../../adapters/ovs/traffic-counters.js';
import type { RouteView } from '../../../transport/control/daemon-view.js';
import type { SavedState } from '../state/state-format.js';
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import type { PodDirectory } from '../../../domain/pods/pod-directory.js';

/** How one group's sync goes to the switch (SwitchPort.syncForwarding). */
export interface SyncSendOptions {
  expedite?: boolean;
  onWritten?: () => void;
}

export interface ControllerLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What the controller tells the metrics (src/controllers/daemon/observe/metrics.ts implements it). */
export interface ControllerMetrics {
  packetIn(): void;
  /** One membership message; `protocol` only for MLD, so IGMP's series keep their labels. */
  igmpMessage(type: string, version: number, protocol?: 'igmp' | 'mld'): void;
  ignoredNonPod(): void;
  syncDone(seconds: number, ok: boolean): void;
  error(kind: string): void;
  queriesSent(count: number): void;
  /** A membership message from (in) or to (out) a peer of tunnel mode. */
  peerMessage(peer: string, direction: 'in' | 'out', type: 'report' | 'query'): void;
}

/** Where learned state is kept across restarts (src/controllers/daemon/state/state-store.ts). */
export interface ControllerStateStore {
  load(): Promise<{ state?: SavedState; warning?: string }>;
  save(state: SavedState): Promise<void>;
  /** The `savedAt` (epoch milliseconds) of the last state written; undefined before the first. */
  lastSaved(): number | undefined;
}

/** What one group should be forwarded to, source by source (see SwitchPort.syncForwarding). */
export interface WantedForwarding {
  group: GroupAddress;
  /**
   * The receivers of every source not in `bySource` (all members when nobody filters), the gateway included when the
   * group is wanted.
   */
  ports: readonly number[];
  /**
   * The sources whose receivers differ from `ports`, each with its ports (the gateway included); empty: the (*,G) entry
   * alone.
   */
  bySource: readonly SourcePorts[];
  tunnel?: { ofport: number; peers: readonly HostAddress[] };
  /** Pod ports whose traffic to each entry of the group gets a sender counting flow (absent: none). */
  counterPorts?: readonly number[];
}

/**
 * The bridge over OpenFlow: our flows and groups on it, and the frames it sends up and out
 * (src/adapters/ovs/bridge-client.ts).
 */
export interface SwitchPort {
  readonly connected: boolean;
  /** Reads what of ours is installed (at start and after a reconnect). */
  refresh(): Promise<void>;
  /** Groups whose forwarding of ours is on the switch (as of the last refresh or sync). */
  readonly installedGroups: readonly GroupAddress[];
  /** Groups the daemon itself installed, with their member ports then. */
  readonly learnedGroups: ReadonlyArray<{
    group: GroupAddress;
    ports: readonly number[];
    peers?: readonly HostAddress[];
    sources?: readonly SourcePorts[];
  }>;
  /**
   * Makes the switch forward `wanted.group` source by source: each source of `bySource`
   * to its own ports, every other source to `ports`; the (S,G) entries of the group not
   * named there go. Tunnel mode (`tunnel`): to the peers too, through the tunnel port, in
   * the pipeline's tunnel layout; `ports` are still the local member pod ports and the
   * gateway, and link 0 holds the gateway installBase was last given. Removed when it has
   * neither ports nor peers nor sources. `expedite`: its OpenFlow goes ahead of the syncs
   * waiting for the switch (a quiet port's join, not a flood's). `onWritten`: told when its
   * OpenFlow is written (not called when nothing had to change).
   */
  syncForwarding(wanted: WantedForwarding, options?: SyncSendOptions): Promise<GroupOutcome>;
  /**
   * The flows every group relies on (IGMP to the controller, link-local, unknown groups).
   * Tunnel mode (`tunnel`): also the catch-all drop of multicast from the tunnel, and
   * from the gateway when there is one, and the tunnel's membership messages to the
   * controller from its `peers` only (any other's dropped in the switch), through its
   * `meter` when there is one.
   */
  installBase(
    gatewayOfport: number | undefined,
    tunnel?: { ofport: number; peers: readonly string[]; meter?: PortMeter },
  ): Promise<void>;
  /**
   * Makes the switch hold exactly `wanted` for pod port `ofport` (undefined: nothing of it); says whether its IGMP is
   * metered now.
   */
  syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }>;
  /** Ports with entries of ours (meters, metered IGMP flows, send-policy drops) on the switch. */
  readonly portsWithEntries: readonly number[];
  /** Packets each pod port's IGMP meter dropped, by port (its counter restarts when the meter changes). */
  meterDrops(): Promise<ReadonlyMap<number, bigint>>;
  /**
   * Tunnel mode: membership messages from the tunnel the switch dropped, for an outer source that is no peer and past
   * the tunnel's meter (each count restarts when installBase writes the base flows or the meter again).
   */
  tunnelDrops(): Promise<{ notPeer: bigint; overRate: bigint }>;
  /**
   * What each port received from and sent to each group, read from the switch now (absent: a switch that cannot tell).
   */
  trafficCounters?(): Promise<PortGroupTraffic[]>;
  /** Sends `frame` out of each of `ports`: how many went, and what the switch refused. */
  sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<{ sent: number; refused: Error[] }>;
  /**
   * Sends `frame` to each of `peers` through the tunnel port `tunnelOfport` (one PACKET_OUT each): how many went, and
   * what the switch refused.
   */
  sendToPeers(
    frame: Uint8Array,
    tunnelOfport: number,
    peers: readonly HostAddress[],
  ): Promise<{ sent: number; refused: Error[] }>;
  /**
   * Every packet-in: its frame, its in_port, and (one from a tunnel port) the outer IPv4 source the underlay delivered
   * it from.
   */
  onPacketIn(listener: (frame: Uint8Array, ofport: number | undefined, tunnelSource?: string) => void): void;
  onDisconnected(listener: (error: Error) => void): void;
  /** ovs-vswitchd is reachable again (perhaps restarted, with nothing installed). */
  onReconnected(listener: () => void): void;
  enablePacketIn(): Promise<void>;
  close(): Promise<void>;
}

export interface RouteChange {
  action: 'add' | 'update' | 'remove';
  source: SourceAddress;
  group: GroupAddress;
  iif: string;
  oifs: string[];
}

/** The kernel's multicast router, already open (src/adapters/kernel-router.ts). */
export interface RouterPort {
  /** Where its upcalls' routes and its failures go from now on (the loop binds itself at construction). */
  bind(events: RouterEvents): void;
  /**
   * Whether the node has members of `group`, and (`filter`) which sources they want all
   * told (the merge of every local member's filter; absent: any source): the upstream
   * join and the inbound routes follow it.
   */
  setLocalMembers(group: GroupAddress, present: boolean, filter?: SourceFilter): void;
  sweepIdle(): Promise<void>;
  routeViews(): Promise<RouteView[]>;
  readonly routeCount: number;
  idleTimeoutMs: number;
  readonly active: boolean;
  close(): void;
}

/** What the router asks and tells the loop; the router is opened with these bound to it. */
export interface RouterEvents {
  hasLocalMembers(group: GroupAddress): boolean;
  onRoute(change: RouteChange): void;
  /** A kernel call refused: the router goes on. */
  onError(error: McastError): void;
  /** The routing socket failed: the kernel dropped our VIFs and routes. */
  onFailure(error: McastError): void;
}

/** One daemon per bridge: the lock, already taken. */
export interface BridgeLockPort {
  /** After an OVSDB reconnection: false when another daemon has it now. */
  reacquire(): Promise<boolean>;
  release(): Promise<void>;
}

/** Facts about this host's interfaces. */
export interface HostFacts {
  /** The interface's IPv4 address and MAC, if it has one. */
  interfaceIPv4(name: string): { address: string; mac: string } | undefined;
  /** The interface's MTU, if the host tells it. */
  interfaceMtu?(name: string): number | undefined;
  /** The interface that holds `address`, if one does. */
  interfaceHolding?(address: string): string | undefined;
}

/** Time, for every timer and timestamp of the loop. */
export interface DaemonClock extends WorkQueueTimers {
  /** Monotonic milliseconds. */
  monotonicMs(): number;
  /** Wall-clock epoch milliseconds. */
  wallMs(): number;
}

/** The group policy a daemon starts with: the file's, or none (everything allowed). */
export interface LoadedPolicy {
  policy: GroupPolicy;
  /** The file it was read from. */
  file?: string;
}

/** What the loop is given (see src/controllers/daemon/loop/controller.ts). */
export interface ControllerOptions {
  config: DaemonConfig;
  logger: ControllerLogger;
  /** The bridge over OpenFlow, connected. */
  vswitch: SwitchPort;
  /** Which ports are pods (OVSDB today), watched. */
  podDirectory: PodDirectory;
  /** The kernel's multicast router, open (with a gateway and multicast interfaces). */
  router?: RouterPort;
  /** The bridge's lock, held. */
  bridgeLock?: BridgeLockPort;
  host: HostFacts;
  clock: DaemonClock;
  stateStore?: ControllerStateStore;
  metrics?: ControllerMetrics;
  /** The process's memory: how much is resident, and giving back what is free; none: never given back. */
  memory?: MemoryPort;
  /** The group policy to start with (default: none, everything allowed); setPolicy replaces it. */
  policy?: LoadedPolicy;
  /** Something the daemon cannot go on without failed (the routing socket, the bridge lock): stop and exit 1. */
  onFatal?: (error: McastError) => void;
  /** For the status (default: this process's). */
  pid?: number;
}

export const NO_METRICS: ControllerMetrics = {
  packetIn() {},
  igmpMessage() {},
  ignoredNonPod() {},
  syncDone() {},
  error() {},
  queriesSent() {},
  peerMessage() {},
};

/** The daemon's own memory (runtime/memory-release.ts). */
export interface MemoryPort {
  /** The process's resident memory now, in bytes. */
  residentBytes(): number;
  /** Gives what the heaps hold free back to the system (a pause of some tens of milliseconds). */
  release(): void;
}
