/**
 * The daemon's composition root: connects the real OVS, kernel and host, in the order
 * that keeps a failed start harmless, and starts the loop on them.
 *
 *   OVSDB ─► the bridge exists ─► its lock ─► its interfaces watched ─► the gateway port
 *   ─► the kernel router (before OVS is touched: a refused MRT_INIT changes nothing)
 *   ─► OpenFlow ─► the loop: read the switch, restore, seed, save, base flows, packet-in,
 *   querier, timers
 *
 * Anything that fails undoes what was done and throws.
 */
import { hostname } from 'node:os';
import { McastError, messageOf, UsageError } from '../../../errors.js';
import { OpenFlowConnection } from '../../../transport/openflow/connection.js';
import { OvsdbClient } from '../../../transport/ovsdb/client.js';
import { BridgeLock } from '../../../adapters/ovs/bridge-lock.js';
import { KernelRouter } from '../../../adapters/kernel-router.js';
import { MrouteError } from '../../../protocol/mroute/mroute-error.js';
import { MULTICAST_ROUTING } from '../../../transport/multicast-routing.js';
import { type AddressFamily, addressFamily, type GroupAddress } from '../../../wire/ip-address.js';
import { BridgeClient } from '../../../adapters/ovs/bridge-client.js';
import { OvsdbPodDirectory } from '../../../adapters/ovs/ovsdb-pod-directory.js';
import { portNamed } from '../../../domain/pods/pod-directory.js';
import { ovsPipeline } from '../../../adapters/ovs/read-back.js';
import { findBridge, watchInterfaces } from '../../../adapters/ovs/vswitch.js';
import type { RouteView } from '../../../transport/control/daemon-view.js';
import type { DaemonConfig } from '../config/config.js';
import { MulticastController } from '../loop/controller.js';
import { refuseUnusableTunnelPort } from '../tunnel/tunnel-mode.js';
import { routingFailure } from '../loop/failures.js';
import { processMemory } from '../../../runtime/memory-release.js';
import { formatIpPrefix } from '../../../domain/policy/ip-prefix.js';
import { systemClock, systemHost } from './ovs-ports.js';
import type {
  ControllerLogger,
  ControllerMetrics,
  ControllerStateStore,
  DaemonClock,
  LoadedPolicy,
  RouterEvents,
  RouterPort,
} from '../loop/ports.js';
import type { SourceFilter } from '../../../domain/membership/source-filter.js';

const OPENFLOW_RECONNECT = { minDelayMs: 100, maxDelayMs: 1_000 };
const OVSDB_RECONNECT = { minDelayMs: 100, maxDelayMs: 2_000 };
const CONNECT_TIMEOUT_MS = 10_000;

export interface DaemonDeps {
  logger: ControllerLogger;
  stateStore?: ControllerStateStore;
  metrics?: ControllerMetrics;
  /** The group policy to start with (default: none). */
  policy?: LoadedPolicy;
  /** Something the daemon cannot go on without failed: stop and exit 1. */
  onFatal?: (error: McastError) => void;
  /** Default: the system's. */
  clock?: DaemonClock;
  /** Called with the loop once it exists, before it starts (LoopStart.onCreated). */
  onCreated?: (loop: MulticastController) => void;
}

export async function startDaemonController(config: DaemonConfig, deps: DaemonDeps): Promise<MulticastController> {
  const { target } = config;
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  let podDirectory: OvsdbPodDirectory | undefined;
  let bridgeLock: BridgeLock | undefined;
  let router: RouterRelay | undefined;
  let openflow: OpenFlowConnection | undefined;
  let handedOver = false;
  try {
    // OVSDB: the bridge must exist; its ports are watched from now on.
    const ovsdb = await OvsdbClient.connect({
      endpoint: target.db,
      timeoutMs: CONNECT_TIMEOUT_MS,
      reconnect: OVSDB_RECONNECT,
    });
    podDirectory = new OvsdbPodDirectory(ovsdb);
    if ((await findBridge(ovsdb, target.bridge)) === undefined) {
      throw new UsageError(`OVS has no bridge ${target.bridge} (at ${target.db})`, {
        code: 'no-such-interface',
        hint: 'create it, or name another with --bridge; list them with `ovs-vsctl list-br`',
      });
    }
    // One daemon per bridge: before anything is read or written, OVS names the owner.
    const holder = `pid ${process.pid} on ${hostname()}, control socket ${config.controlSocket}`;
    bridgeLock = await BridgeLock.acquire({ client: ovsdb, bridge: target.bridge, holder });
    const directory = podDirectory;
    directory.attach(
      await watchInterfaces(ovsdb, target.bridge, (changes) =>
        directory.changed(changes.interfaces, changes.reason === 'resync'),
      ),
    );
    if (config.gateway !== undefined && portNamed(directory.ports(), config.gateway) === undefined) {
      throw new UsageError(
        `bridge ${target.bridge} has no port ${config.gateway} with an OpenFlow port number (--gateway)`,
        {
          code: 'no-such-interface',
          hint: `add it (ovs-vsctl add-port ${target.bridge} ${config.gateway} -- set interface ${config.gateway} type=internal), or name the right port`,
        },
      );
    }

    refuseUnusableTunnelPort({ config, ports: directory.ports() });

    // The kernel, before OVS is touched: a refused MRT_INIT changes nothing.
    if (config.gateway !== undefined && config.multicastInterfaces.length > 0) {
      router = await RouterRelay.open({
        config: { ...config, gateway: config.gateway },
        clock,
        logger,
        onFatal: deps.onFatal,
      });
    }

    // OpenFlow: the loop reads what is installed, puts back what was learned, then syncs.
    openflow = await OpenFlowConnection.connect({
      endpoint: target.openflow,
      timeoutMs: CONNECT_TIMEOUT_MS,
      reconnect: OPENFLOW_RECONNECT,
    });
    const vswitch = BridgeClient.wrap({ bridge: target.bridge, openflow, pipeline: ovsPipeline(config.pipeline) });
    // A configuration the loop refuses throws here, while the ports are still this function's to close.
    const controller = new MulticastController({
      config,
      logger,
      vswitch,
      podDirectory,
      ...(router === undefined ? {} : { router }),
      bridgeLock,
      host: systemHost,
      clock,
      ...(deps.stateStore === undefined ? {} : { stateStore: deps.stateStore }),
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
      ...(deps.policy === undefined ? {} : { policy: deps.policy }),
      memory: processMemory,
      ...(deps.onFatal === undefined ? {} : { onFatal: deps.onFatal }),
    });
    handedOver = true; // the loop closes every port from now on, also when its start fails
    deps.onCreated?.(controller);
    try {
      await controller.start();
    } catch (error) {
      await controller.stop({ save: false });
      throw error;
    }
    return controller;
  } catch (error) {
    if (!handedOver) {
      router?.close();
      await bridgeLock?.release();
      await Promise.allSettled([podDirectory?.close(), openflow?.close()]);
    }
    throw error;
  }
}

interface RouterRelayOptions {
  config: DaemonConfig & { gateway: string };
  clock: DaemonClock;
  logger: ControllerLogger;
  onFatal: ((error: McastError) => void) | undefined;
}

/**
 * The kernel routers as the loop sees them: one for each family, each group told to its
 * family's. The routers are opened (and may report) before the loop exists; until the loop
 * binds itself, their failures are logged and a failed routing socket still stops the
 * daemon. A kernel without IPv6 (or without IPv6 multicast routing) routes IPv4 only.
 */
class RouterRelay implements RouterPort {
  private readonly routers = new Map<AddressFamily, KernelRouter>();
  private events: RouterEvents;
  private idleMs: number;

  private constructor({ config, logger, onFatal }: RouterRelayOptions) {
    this.idleMs = config.routeIdleTimeoutMs;
    const fail = (error: McastError) => logger.error('mroute failure', { error: error.message, code: error.code });
    this.events = {
      hasLocalMembers: () => false,
      onRoute: () => undefined,
      onError: fail,
      onFailure: (error) => {
        fail(error);
        onFatal?.(routingFailure(error));
      },
    };
  }

  static async open(options: RouterRelayOptions): Promise<RouterRelay> {
    const relay = new RouterRelay(options);
    try {
      for (const family of ['ipv4', 'ipv6'] as const) await relay.openFamily(family, options);
    } catch (error) {
      relay.close();
      throw error;
    }
    return relay;
  }

  private async openFamily(family: AddressFamily, { config, clock, logger }: RouterRelayOptions): Promise<void> {
    // The pods of other nodes, whose multicast of this family comes through the tunnel.
    const tunnelled = config.tunnel?.clusterCidrs?.filter((prefix) => prefix.family === family);
    let router: KernelRouter;
    try {
      router = await KernelRouter.open({
        kernel: MULTICAST_ROUTING[family],
        gateway: config.gateway,
        multicastInterfaces: config.multicastInterfaces,
        idleTimeoutMs: config.routeIdleTimeoutMs,
        ...(tunnelled === undefined ? {} : { tunnelledSources: tunnelled }),
        clock: () => clock.monotonicMs(),
        hasLocalMembers: (group) => this.events.hasLocalMembers(group),
        onRoute: (change) => this.events.onRoute(change),
        onError: (error) => this.events.onError(error),
        onFailure: (error) => this.events.onFailure(error),
      });
    } catch (error) {
      if (family === 'ipv6' && kernelLacksFamily(error)) {
        logger.warn('IPv6 multicast routing off: the kernel has no IPv6 multicast routing', {
          error: messageOf(error),
        });
        return;
      }
      throw error;
    }
    this.routers.set(family, router);
    const word = MULTICAST_ROUTING[family].interfaceWord;
    const uplinks = router.uplinks.map((uplink) => `${uplink.name} (${word} ${uplink.vif})`).join(',');
    const notRoutedIn = tunnelled?.map(formatIpPrefix).join(',');
    logger.info('multicast routing on', {
      family,
      gateway: `${router.gateway.name} (${word} ${router.gateway.vif})`,
      uplinks,
      ...(notRoutedIn === undefined || notRoutedIn === '' ? {} : { notRoutedIn }),
    });
  }

  bind(events: RouterEvents): void {
    this.events = events;
  }

  setLocalMembers(group: GroupAddress, present: boolean, filter?: SourceFilter): void {
    this.routers.get(addressFamily(group) ?? 'ipv4')?.setLocalMembers(group, present, filter);
  }

  async sweepIdle(): Promise<void> {
    for (const router of this.routers.values()) await router.sweepIdle();
  }

  async routeViews(): Promise<RouteView[]> {
    const views = await Promise.all([...this.routers.values()].map((router) => router.routeViews()));
    return views.flat();
  }

  get routeCount(): number {
    let count = 0;
    for (const router of this.routers.values()) count += router.routeCount;
    return count;
  }

  get idleTimeoutMs(): number {
    return this.idleMs;
  }

  set idleTimeoutMs(ms: number) {
    this.idleMs = ms;
    for (const router of this.routers.values()) router.idleTimeoutMs = ms;
  }

  get active(): boolean {
    return this.routers.size > 0 && [...this.routers.values()].every((router) => router.active);
  }

  close(): void {
    for (const router of this.routers.values()) router.close();
  }
}

/** The kernel refused the family itself (no IPv6, or no IPv6 multicast routing), not our use of it. */
function kernelLacksFamily(error: unknown): boolean {
  if (error instanceof McastError && error.code === 'no-multicast-routing') return true;
  return error instanceof MrouteError && ['EAFNOSUPPORT', 'ENOPROTOOPT', 'EOPNOTSUPP'].includes(error.errno ?? '');
}
