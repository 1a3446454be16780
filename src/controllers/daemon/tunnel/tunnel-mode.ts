/**
 * Tunnel mode in the daemon's loop: the tunnel port on the bridge (found by name in
 * OVSDB, like the gateway), the exchange of membership with the peers through it
 * (./peer-exchange.ts), and what a group's sync needs of both (the port and the peers
 * that want the group). The controller owns one when --tunnel-port is set; without it,
 * nothing of this runs and the switch is programmed as before. The port must be a
 * flow-based Geneve or VXLAN one (../../domain/peers/tunnel-port.ts): one that is not is
 * refused at start and, when it changes so later, treated as absent.
 */
import { type DirectoryPort, portNamed } from '../../../domain/pods/pod-directory.js';
import { tunnelPortProblem } from '../../../domain/peers/tunnel-port.js';
import { TunnelShedCount } from './tunnel-shed.js';
import { UsageError } from '../../../errors.js';
import type { DaemonEvent, GroupView, PeerDropReason, TunnelView } from '../../../transport/control/daemon-view.js';
import type { GroupAddress, HostAddress } from '../../../wire/ip-address.js';
import type { DaemonConfig, TunnelConfig } from '../config/daemon-config.js';
import type { GroupSync } from '../loop/group-sync.js';
import { PeerExchange } from './peer-exchange.js';
import { PortPacketBudget } from '../../../domain/membership/packet-budget.js';
import type { PortMeter } from '../../../domain/pipeline/pipeline-entries.js';
import type { EventStream } from '../loop/event-stream.js';
import type { ControllerLogger, ControllerMetrics, DaemonClock, HostFacts, SwitchPort } from '../loop/ports.js';
import { tunnelViewOf, withRemoteMembers } from '../observe/tunnel-views.js';

/** The MTU of the underlay path when the daemon cannot tell: Ethernet's. */
const DEFAULT_PATH_MTU = 1_500;
/**
 * What Geneve (without options) or VXLAN over IPv4 adds to a pod's packet: inner Ethernet 14,
 * the tunnel header 8 (the same size for both), UDP 8, outer IPv4 20.
 */
const TUNNEL_OVERHEAD = 50;

export interface TunnelModeOptions {
  config: TunnelConfig;
  /** The node's limit of groups (maxGroups) as the loop reads it now: the groups only peers want count against it. */
  maxGroups?: () => number;
  vswitch: SwitchPort;
  clock: DaemonClock;
  logger: ControllerLogger;
  /** The frames to the peers come from the gateway's MAC, when there is a gateway. */
  host: Pick<HostFacts, 'interfaceIPv4' | 'interfaceMtu' | 'interfaceHolding'>;
  gateway: string | undefined;
  /**
   * The remote members of `group` changed: sync it (`lane`: the peer's, when one peer's message changed it; its syncs
   * take turns with the pods').
   */
  markDirty: (group: GroupAddress, lane: string | undefined) => void;
  metrics?: Pick<ControllerMetrics, 'peerMessage'>;
  /** The daemon's events (`snoop --daemon`): the messages with the peers go there, built only while someone listens. */
  events?: Pick<EventStream, 'listened' | 'publish'>;
  /**
   * A pod port's IGMP budget now (igmpRatePerPort, igmpBurstPerPort) and whether it goes through a meter (igmpMeter):
   * the tunnel's is that much for each peer (tunnelBudget).
   */
  podBudget: () => PortMeter & { metered: boolean };
  /** Counts a packet-in from the tunnel with the pods' (the status's and the metrics' packet-ins). */
  countPacketIn?: () => void;
}

/** The largest rate and burst a meter holds (32 bits). */
const MAX_METER_FIELD = 0xffff_ffff;

/**
 * The tunnel port named `name` among the bridge's `ports`: its number, and why it cannot be used when it cannot;
 * undefined while it is not there.
 */
function tunnelPortOn(
  ports: readonly DirectoryPort[],
  name: string,
): { ofport: number; problem: string | undefined } | undefined {
  const port = portNamed(ports, name);
  return port === undefined ? undefined : { ofport: port.ofport, problem: tunnelPortProblem(port) };
}

/** What makes `name` a port the tunnel can use. */
function tunnelPortHint(name: string): string {
  return `make it a flow-based tunnel: ovs-vsctl set Interface ${name} type=geneve options:remote_ip=flow (or type=vxlan), or name another with --tunnel-port`;
}

export class TunnelMode {
  private readonly exchange: PeerExchange;
  /** The tunnel port while it is on the bridge and usable. */
  private port: { ofport: number } | undefined;
  /** The configured peers now (a reload may change them). */
  private peers: readonly HostAddress[];
  /** The tunnel's configuration now (a reload may change its peers and keys). */
  private config: TunnelConfig;
  /** The daemon's budget for the tunnel's packet-ins (tunnelBudget), after the switch's meter. */
  private readonly budget: PortPacketBudget;
  /** The base flows as last written (baseFlows), to tell whether a reload changed them. */
  private writtenBase: string | undefined;
  /** What the switch dropped from the tunnel for an outer source that is no peer. */
  private readonly shed: TunnelShedCount;
  /** Why the port on the bridge cannot be used, as last warned of; undefined while it can (or is absent). */
  private problem: string | undefined;
  /** The MTU of the interface that holds the node address: what an encapsulated packet must fit. */
  readonly pathMtu: number;
  /** Pod ports already checked against the path MTU (each is warned of once). */
  private readonly mtuChecked = new Set<string>();

  constructor(private readonly options: TunnelModeOptions) {
    this.shed = new TunnelShedCount({
      vswitch: options.vswitch,
      clock: options.clock,
      portPresent: () => this.port !== undefined,
    });
    this.shed.start();
    this.peers = options.config.peers;
    this.config = options.config;
    const { rate, burst } = this.tunnelBudget();
    this.budget = new PortPacketBudget({ ratePerSecond: rate, burst }, () => options.clock.monotonicMs());
    const { config, vswitch, clock, logger, host } = options;
    const underlay = host.interfaceHolding?.(config.nodeAddress);
    this.pathMtu = (underlay === undefined ? undefined : host.interfaceMtu?.(underlay)) ?? DEFAULT_PATH_MTU;
    this.exchange = new PeerExchange({
      port: {
        sendToPeers: async (frame, peers) => {
          const ofport = this.port?.ofport;
          if (ofport === undefined || !vswitch.connected) return { sent: 0, refused: [] };
          return vswitch.sendToPeers(frame, ofport, peers);
        },
        groupsChanged: (groups, peer) => {
          for (const group of groups) options.markDirty(group, peer === undefined ? undefined : `peer ${peer}`);
        },
        clock,
        logger,
        onMessage: (peer, direction, type) => options.metrics?.peerMessage(peer, direction, type),
        watchers: {
          listened: () => options.events?.listened ?? false,
          publish: (notice) => {
            const event: DaemonEvent = { ...notice, time: new Date(clock.wallMs()).toISOString() };
            options.events?.publish(event);
          },
        },
      },
      nodeAddress: config.nodeAddress,
      sourceMac: () => (options.gateway === undefined ? undefined : options.host.interfaceIPv4(options.gateway)?.mac),
      peers: config.peers,
      keys: config.peerKeys,
      pathMtu: this.pathMtu,
      refreshIntervalMs: config.refreshIntervalMs,
      peerTimeoutMs: config.peerTimeoutMs,
      maxGroupsPerPeer: config.maxGroupsPerPeer,
      ...(options.maxGroups === undefined ? {} : { maxGroups: options.maxGroups }),
    });
  }

  /** The tunnel port's number on the bridge, once OVSDB has shown it. */
  get ofport(): number | undefined {
    return this.port?.ofport;
  }

  /**
   * Takes the bridge's ports as they are now; true when the usable tunnel port
   * appeared, went or got another number. A port of that name that cannot carry the
   * frames to the peers (not a flow-based tunnel) counts as absent, warned of once per reason.
   */
  updatePorts(ports: readonly DirectoryPort[]): boolean {
    const { config, logger } = this.options;
    this.checkMtu(ports.filter((port) => port.pod !== undefined && port.ofport !== undefined).map((port) => port.name));
    const found = tunnelPortOn(ports, config.port);
    const before = this.port?.ofport;
    this.port = found === undefined || found.problem !== undefined ? undefined : { ofport: found.ofport };
    const problem = found?.problem;
    if (problem !== undefined && problem !== this.problem) {
      logger.warn('the tunnel port cannot carry frames to the peers: nothing goes to them', {
        port: config.port,
        reason: problem,
        hint: tunnelPortHint(config.port),
      });
    }
    this.problem = problem;
    if (before === this.port?.ofport) return false;
    if (found === undefined)
      logger.warn('the tunnel port is not on the bridge: nothing goes to the peers', { port: config.port });
    return true;
  }

  /** Warns of each new pod port whose MTU leaves no room for the encapsulation: its large datagrams would not cross. */
  private checkMtu(podPorts: readonly string[]): void {
    const { host, logger } = this.options;
    const current = new Set(podPorts);
    // gone: a new pod of that name is checked again
    for (const name of this.mtuChecked) if (!current.has(name)) this.mtuChecked.delete(name);
    for (const name of podPorts) {
      if (this.mtuChecked.has(name)) continue;
      this.mtuChecked.add(name);
      const mtu = host.interfaceMtu?.(name);
      if (mtu === undefined || mtu + TUNNEL_OVERHEAD <= this.pathMtu) continue;
      logger.warn(
        'a pod port leaves no room for the tunnel: its datagrams over the path MTU less 50 octets will not reach other nodes',
        {
          port: name,
          mtu,
          pathMtu: this.pathMtu,
          hint: `give the pods an MTU of at most ${this.pathMtu - TUNNEL_OVERHEAD}, or the underlay one of at least ${mtu + TUNNEL_OVERHEAD}`,
        },
      );
    }
  }

  /** Starts the exchange: every peer gets this node's groups and is asked for its own. */
  start(): void {
    this.exchange.start();
  }

  /**
   * Whether the packet-in came in on the tunnel port; if so, it is the exchange's (a peer's report or query), within
   * the tunnel's budget: what the meter let through past it (no meters, or a burst the meter's slack let in) is dropped
   * unread.
   */
  takes(frame: Uint8Array, ofport: number | undefined, tunnelSource: string | undefined): boolean {
    if (ofport === undefined || ofport !== this.port?.ofport) return false;
    this.options.countPacketIn?.();
    if (this.budget.take(ofport)) this.exchange.take(frame, tunnelSource);
    else this.exchange.drop('over-rate', undefined, { outerSource: tunnelSource ?? null });
    return true;
  }

  /** A group's local members changed: the peers are told when it gained its first or lost its last. */
  localMembers(group: GroupAddress, hasMembers: boolean): void {
    this.exchange.localGroupChanged(group, hasMembers);
  }

  /** The changes told by localMembers go to the peers now. */
  announceChanges(): void {
    this.exchange.flushChanges();
  }

  /** What the sync of `group` programs toward the tunnel; undefined while the tunnel port is not on the bridge. */
  tunnelOf(group: GroupAddress): { ofport: number; peers: readonly HostAddress[] } | undefined {
    const ofport = this.port?.ofport;
    return ofport === undefined ? undefined : { ofport, peers: this.exchange.peersOf(group) };
  }

  /**
   * The groups the node holds for the peers alone (no local member): they count against maxGroups with the local ones,
   * and a pod's join of one adds no group.
   */
  readonly heldForPeers = {
    count: (): number => this.exchange.groupCounts.peerOnly,
    has: (group: GroupAddress): boolean => this.exchange.peersOf(group).length > 0,
  };

  /** The groups some peer wants now: synced like the local ones when the switch needs them all again. */
  groupsWithRemoteMembers(): GroupAddress[] {
    return this.exchange.groupsWithRemoteMembers();
  }

  /**
   * A groups' remote members read back from the switch at start (a restart): they hold until refreshed or timed out.
   */
  seed(group: GroupAddress, peers: readonly HostAddress[]): void {
    this.exchange.seed(group, peers);
  }

  /**
   * The tunnel's configuration of a reload: its peers (the ones gone lose their groups at once, new ones are greeted)
   * and its keys (the rest changes only at a restart), and the pod ports' budget of the settings now. Whether the base
   * flows must be written again: they let in the peers' membership messages only, through the tunnel's meter.
   */
  reconfigure(config: TunnelConfig): boolean {
    this.exchange.setKeys(config.peerKeys);
    this.config = config;
    this.peers = config.peers;
    this.exchange.setPeers(config.peers);
    const { rate, burst } = this.tunnelBudget();
    this.budget.reconfigure({ ratePerSecond: rate, burst });
    return JSON.stringify(this.currentBase()) !== this.writtenBase;
  }

  /**
   * The tunnel's part of the base flows while its port is usable: the port, the peers it lets in, and the meter they
   * go through (when pod ports' IGMP does).
   */
  baseFlows(): { ofport: number; peers: readonly HostAddress[]; meter?: PortMeter } | undefined {
    const base = this.currentBase();
    this.writtenBase = JSON.stringify(base);
    return base;
  }

  private currentBase(): { ofport: number; peers: readonly HostAddress[]; meter?: PortMeter } | undefined {
    if (this.port === undefined) return undefined;
    const { metered, ...meter } = this.tunnelBudget();
    return { ofport: this.port.ofport, peers: this.peers, ...(metered ? { meter } : {}) };
  }

  /**
   * The tunnel's budget, in the switch (its meter) and in the daemon: what a pod port may send for each peer. A peer's
   * steady state is a full state a refresh (at most ⌈8,192 / 68⌉ reports) and its changes, far below; whoever floods
   * under a peer's address shares the peers' budget, and the daemon's slow path stays bounded.
   */
  private tunnelBudget(): PortMeter & { metered: boolean } {
    const { rate, burst, metered } = this.options.podBudget();
    const peers = Math.max(1, this.peers.length);
    return {
      rate: Math.min(MAX_METER_FIELD, rate * peers),
      burst: Math.min(MAX_METER_FIELD, burst * peers),
      metered,
    };
  }

  /** The status's tunnel part: the port, this node's address, every configured peer, the drops. */
  status(): TunnelView {
    const { counters } = this.exchange;
    const { config } = this;
    const { clock } = this.options;
    // The switch's drops of senders that are no peer, and past the meter, are the exchange's drops, made earlier.
    const { packets: shed, metered } = this.shed;
    const remote = this.exchange.view();
    const unknownPeer = (drops: Partial<Record<PeerDropReason, number>>) => ({
      ...drops,
      'unknown-peer': (drops['unknown-peer'] ?? 0) + shed,
      'over-rate': (drops['over-rate'] ?? 0) + metered,
    });
    return tunnelViewOf({
      tunnel: config,
      ofport: this.port?.ofport,
      portProblem: this.problem,
      remote: { ...remote, unattributedDrops: unknownPeer(remote.unattributedDrops) },
      drops: unknownPeer(counters.drops),
      clock,
    });
  }

  /** The groups as `groups` shows them: the local ones with their remote members, and those only peers want. */
  groupViews(local: readonly GroupView[], sync: Pick<GroupSync, 'dirty' | 'syncErrors'>): GroupView[] {
    const { dirty, syncErrors } = sync;
    return withRemoteMembers({ local, remote: this.exchange.view(), clock: this.options.clock, dirty, syncErrors });
  }

  stop(): void {
    this.shed.stop();
    this.exchange.stop();
  }
}

/**
 * Tunnel mode as `config` has it (found on the bridge's `ports` now), or undefined when it is off (no --tunnel-port).
 */
export function tunnelModeOf(
  options: Omit<TunnelModeOptions, 'config' | 'gateway'> & { config: DaemonConfig; ports: readonly DirectoryPort[] },
): TunnelMode | undefined {
  const { config, ports, ...rest } = options;
  if (config.tunnel === undefined) return undefined;
  const { port } = config.tunnel;
  refuseUnusableTunnelPort({ config, ports });
  // Absent is no refusal: the port may be added after the daemon (it is used once it appears).
  if (tunnelPortOn(ports, port) === undefined)
    rest.logger.warn('the tunnel port is not on the bridge yet: nothing goes to the peers until it is', { port });
  const { peerKeys } = config.tunnel;
  if (peerKeys === undefined)
    rest.logger.warn(
      "peers are believed by address alone (no --peer-key-file): whoever can send from a peer's address speaks for it",
    );
  else rest.logger.info('messages with the peers are sealed', { keyFile: peerKeys.file, keys: peerKeys.ids.join(',') });
  const tunnel = new TunnelMode({ ...rest, config: config.tunnel, gateway: config.gateway });
  tunnel.updatePorts(ports);
  return tunnel;
}

/**
 * Throws a UsageError (exit 64) when tunnel mode is on and its port is on the bridge but
 * cannot carry the frames to the peers (a bucket's set_field:PEER->tun_dst means nothing
 * on it): at start, before anything is programmed. A port not there (yet) passes.
 */
export function refuseUnusableTunnelPort(options: {
  config: Pick<DaemonConfig, 'tunnel'>;
  ports: readonly DirectoryPort[];
}): void {
  const port = options.config.tunnel?.port;
  const problem = port === undefined ? undefined : tunnelPortOn(options.ports, port)?.problem;
  if (port === undefined || problem === undefined) return;
  throw new UsageError(`the tunnel port ${port} cannot carry frames to the peers (--tunnel-port): ${problem}`, {
    hint: tunnelPortHint(port),
  });
}
