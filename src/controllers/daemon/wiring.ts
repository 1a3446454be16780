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
import { McastError, UsageError } from '../../errors.js';
import { OpenFlowConnection } from '../../transport/openflow/connection.js';
import { OvsdbClient } from '../../transport/ovsdb/client.js';
import { BridgeLock } from '../../adapters/ovs/bridge-lock.js';
import { KernelRouter } from '../../adapters/kernel-router.js';
import { OvsProgrammer } from '../../adapters/ovs/ovs-programmer.js';
import { BridgePorts } from '../../adapters/ovs/bridge-ports.js';
import { ovsPipeline } from '../../adapters/ovs/read-back.js';
import { findBridge, watchInterfaces } from '../../adapters/ovs/vswitch.js';
import type { RouteView } from '../../transport/control/daemon-view.js';
import type { DaemonConfig } from './config.js';
import { MulticastController } from './controller.js';
import { refuseUnusableTunnelPort } from './tunnel-mode.js';
import { routingFailure } from './failures.js';
import { releaseMemory } from '../../runtime/memory-release.js';
import { formatPrefix } from '../../domain/policy/ipv4-prefix.js';
import { OvsdbPortWatch, OvsSwitch, systemClock, systemHost } from './ovs-ports.js';
import type { ControllerLogger, ControllerMetrics, ControllerStateStore, DaemonClock, LoadedPolicy, RouterEvents, RouterPort } from './ports.js';
import type { SourceFilter } from '../../domain/membership/source-filter.js';

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
}

export async function startDaemonController(config: DaemonConfig, deps: DaemonDeps): Promise<MulticastController> {
  const { target } = config;
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  let portWatch: OvsdbPortWatch | undefined;
  let bridgeLock: BridgeLock | undefined;
  let router: RouterRelay | undefined;
  let openflow: OpenFlowConnection | undefined;
  let handedOver = false;
  try {
    // OVSDB: the bridge must exist; its ports are watched from now on.
    const ovsdb = await OvsdbClient.connect({ endpoint: target.db, timeoutMs: CONNECT_TIMEOUT_MS, reconnect: OVSDB_RECONNECT });
    portWatch = new OvsdbPortWatch(ovsdb);
    if ((await findBridge(ovsdb, target.bridge)) === undefined) {
      throw new UsageError(`OVS has no bridge ${target.bridge} (at ${target.db})`, {
        code: 'no-such-interface',
        hint: 'create it, or name another with --bridge; list them with `ovs-vsctl list-br`',
      });
    }
    // One daemon per bridge: before anything is read or written, OVS names the owner.
    const holder = `pid ${process.pid} on ${hostname()}, control socket ${config.controlSocket}`;
    bridgeLock = await BridgeLock.acquire({ client: ovsdb, bridge: target.bridge, holder });
    const watch = portWatch;
    watch.attach(await watchInterfaces(ovsdb, target.bridge, (changes) => watch.changed(changes.interfaces, changes.reason === 'resync')));
    if (config.gateway !== undefined && new BridgePorts(watch.interfaces().values()).member(config.gateway) === undefined) {
      throw new UsageError(`bridge ${target.bridge} has no port ${config.gateway} with an OpenFlow port number (--gateway)`, {
        code: 'no-such-interface',
        hint: `add it (ovs-vsctl add-port ${target.bridge} ${config.gateway} -- set interface ${config.gateway} type=internal), or name the right port`,
      });
    }

    refuseUnusableTunnelPort({ config, interfaces: watch.interfaces() });

    // The kernel, before OVS is touched: a refused MRT_INIT changes nothing.
    if (config.gateway !== undefined && config.multicastInterfaces.length > 0) {
      router = await RouterRelay.open({ config: { ...config, gateway: config.gateway }, clock, logger, onFatal: deps.onFatal });
    }

    // OpenFlow: the loop reads what is installed, puts back what was learned, then syncs.
    openflow = await OpenFlowConnection.connect({ endpoint: target.openflow, timeoutMs: CONNECT_TIMEOUT_MS, reconnect: OPENFLOW_RECONNECT });
    const programmer = new OvsProgrammer(openflow, ovsPipeline(config.pipeline));
    const vswitch = new OvsSwitch(openflow, programmer);
    // A configuration the loop refuses throws here, while the ports are still this function's to close.
    const controller = new MulticastController({
      config,
      logger,
      vswitch,
      portWatch,
      ...(router === undefined ? {} : { router }),
      bridgeLock,
      host: systemHost,
      clock,
      ...(deps.stateStore === undefined ? {} : { stateStore: deps.stateStore }),
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
      ...(deps.policy === undefined ? {} : { policy: deps.policy }),
      releaseMemory,
      ...(deps.onFatal === undefined ? {} : { onFatal: deps.onFatal }),
    });
    handedOver = true; // the loop closes every port from now on, also when its start fails
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
      await Promise.allSettled([portWatch?.close(), openflow?.close()]);
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
 * The kernel router as the loop sees it. The router is opened (and may report) before
 * the loop exists; until the loop binds itself, its failures are logged and a failed
 * routing socket still stops the daemon.
 */
class RouterRelay implements RouterPort {
  private router: KernelRouter | undefined;
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
    const { config, clock, logger } = options;
    const relay = new RouterRelay(options);
    const router = await KernelRouter.open({
      gateway: config.gateway,
      multicastInterfaces: config.multicastInterfaces,
      idleTimeoutMs: config.routeIdleTimeoutMs,
      ...(config.tunnel?.clusterCidrs === undefined ? {} : { tunnelledSources: config.tunnel.clusterCidrs }),
      clock: () => clock.monotonicMs(),
      hasLocalMembers: (group) => relay.events.hasLocalMembers(group),
      onRoute: (change) => relay.events.onRoute(change),
      onError: (error) => relay.events.onError(error),
      onFailure: (error) => relay.events.onFailure(error),
    });
    relay.router = router;
    const uplinks = router.uplinks.map((uplink) => `${uplink.name} (vif ${uplink.vif})`).join(',');
    const tunnelled = config.tunnel?.clusterCidrs?.map(formatPrefix).join(',');
    logger.info('multicast routing on', {
      gateway: `${router.gateway.name} (vif ${router.gateway.vif})`,
      uplinks,
      ...(tunnelled === undefined || tunnelled === '' ? {} : { notRoutedIn: tunnelled }),
    });
    return relay;
  }

  private get opened(): KernelRouter {
    if (this.router === undefined) throw new McastError('io', 'the kernel router is not open');
    return this.router;
  }

  bind(events: RouterEvents): void {
    this.events = events;
  }

  setLocalMembers(group: string, present: boolean, filter?: SourceFilter): void {
    this.opened.setLocalMembers(group, present, filter);
  }

  sweepIdle(): Promise<void> {
    return this.opened.sweepIdle();
  }

  routeViews(): Promise<RouteView[]> {
    return this.opened.routeViews();
  }

  get routeCount(): number {
    return this.router?.routeCount ?? 0;
  }

  get idleTimeoutMs(): number {
    return this.idleMs;
  }

  set idleTimeoutMs(ms: number) {
    this.idleMs = ms;
    this.opened.idleTimeoutMs = ms;
  }

  get active(): boolean {
    return this.router?.active === true;
  }

  close(): void {
    this.router?.close();
  }
}
