/**
 * The daemon's front door: the one place that starts it, reloads it and stops it. The
 * command (src/cli/commands/daemon.ts) only parses the flags and hands a checked
 * configuration over, with the sources a reload reads again; what the host starts comes
 * through DaemonHostServices (./system-services.ts gives the real ones: the control
 * socket, the metrics listener, the state directory, the loop on the real switch and
 * kernel), so that the unit tests run the same host on fakes.
 *
 *   start: the policy file (a bad one stops the start, 64) ─► the state directory ─►
 *          the control socket and the metrics listener (a second daemon stops here,
 *          before it touches OVS or the kernel) ─► the loop ─► the peers' watch
 *   reload (SIGHUP; the peers also when their source changes): the configuration, the
 *          group policy, the peer keys and the peers, each read again; a bad one leaves
 *          what runs;
 *          one reload at a time, and the last one starts after the last request
 *   stop:  the peers' watch, the listeners, then the loop (its final save)
 */
import { type McastError, messageOf, UnavailableError } from '../../../errors.js';
import { GroupPolicy } from '../../../domain/policy/group-policy.js';
import type { PeerKeyRing } from '../../../domain/peers/peer-keys.js';
import type { PeerSet } from '../../../domain/peers/peer-set.js';
import type { PeerSource } from '../../../domain/peers/peer-source.js';
import type { LogLevel } from '../../../runtime/logger.js';
import type { DaemonEvent, DaemonView } from '../../../transport/control/daemon-view.js';
import type { DaemonConfig } from '../config/daemon-config.js';
import { ReloadQueue, type ReloadScope } from './reload-queue.js';
import { planReload } from '../config/reload.js';
import type { ControllerLogger, ControllerMetrics, ControllerStateStore, LoadedPolicy } from '../loop/ports.js';

/** What the host needs of the running loop (src/controllers/daemon/loop/controller.ts). */
export interface DaemonLoop extends DaemonView {
  readonly configuration: DaemonConfig;
  reconfigure(config: DaemonConfig): void;
  /** True when the new policy decides otherwise than the one in force. */
  setPolicy(policy: GroupPolicy, file: string | undefined): boolean;
  summary(): Record<string, unknown>;
  /** Saves the state now: the state directory, or undefined without one. */
  saveNow(): Promise<string | undefined>;
  stop(): Promise<void>;
}

/** What the loop is started with besides its configuration. */
export interface LoopStart {
  logger: ControllerLogger;
  stateStore: ControllerStateStore;
  metrics?: ControllerMetrics;
  policy?: LoadedPolicy;
  /** Something the daemon cannot go on without failed: the host stops. */
  onFatal(error: McastError): void;
  /**
   * Called once the loop exists, before it starts: whoever subscribed while the daemon was
   * starting is attached here, so that they see its start (the first queries' answers) too.
   */
  onCreated?(loop: Pick<DaemonLoop, 'subscribe'>): void;
}

/** Something the host listens with, closed at stop. */
export interface Listening {
  close(): Promise<void>;
}

/** Everything outside that the host starts. */
export interface DaemonHostServices {
  /** The state directory, checked before anything is connected to (one others could change is refused, 64). */
  openStateStore(dir: string): Promise<ControllerStateStore>;
  /** Answers the control socket's clients from `view`. */
  listenControl(options: { path: string; view: DaemonView; logger: ControllerLogger }): Promise<Listening>;
  /** Serves the metrics of `view` at `address`; `address` in the result is where it listens (the port of :0). */
  listenMetrics(
    address: string,
    view: DaemonView,
  ): Promise<Listening & { address: string; metrics: ControllerMetrics }>;
  /** Starts the loop (on the real switch and kernel: ./wiring.ts). */
  startLoop(config: DaemonConfig, start: LoopStart): Promise<DaemonLoop>;
}

/** Where a reload reads the configuration again: the file with the same flags. */
export interface ConfigSource {
  /** The file, for the log. */
  readonly file: string;
  read(): Promise<DaemonConfig>;
}

/** Where the group policy is read from. */
interface PolicySource {
  read(file: string): Promise<GroupPolicy>;
}

export interface DaemonHostOptions {
  config: DaemonConfig;
  /** The daemon's logger: a reload sets its level. */
  logger: ControllerLogger & { level: LogLevel };
  services: DaemonHostServices;
  /** Absent: no configuration file, a reload reads the policy and the peers only. */
  configSource?: ConfigSource;
  policySource: PolicySource;
  /** Tunnel mode's peers (the flags' list, or the peers file); absent: not in tunnel mode. */
  peerSource?: PeerSource;
  /** Where tunnel mode's peer key file is read again from (SIGHUP); absent: it is not. */
  peerKeySource?: { read(file: string): Promise<PeerKeyRing> };
}

export class DaemonHost {
  /** Answers the control socket and the metrics from the loop, or "starting" until it runs. */
  readonly view: DaemonView;
  /** The first thing that stopped the daemon on its own, once it did (exit 1). */
  fatal: McastError | undefined;
  private loop: DaemonLoop | undefined;
  /** The loop once it exists, while it starts: subscriptions go to it. */
  private created: Pick<DaemonLoop, 'subscribe'> | undefined;
  /** Subscribers that came before the loop existed, each with its detach once attached. */
  private readonly early = new Set<{ listener: (event: DaemonEvent) => void; detach?: () => void }>();
  private readonly listening: Listening[] = [];
  private metricsAddress: string | undefined;
  private peersWatch: { close(): void } | undefined;
  private readonly reloads = new ReloadQueue((scope, why) => this.runReload(scope, why));
  private readonly failedListeners: Array<(error: McastError) => void> = [];
  private stopped = false;

  private constructor(private readonly options: DaemonHostOptions) {
    const running = (): DaemonLoop => {
      if (this.loop === undefined) throw new UnavailableError('the daemon is starting: try again in a moment');
      return this.loop;
    };
    this.view = {
      // The metrics address as listened on: the real port where port 0 was asked for.
      status: () => {
        const status = running().status();
        return this.metricsAddress === undefined ? status : { ...status, metricsAddress: this.metricsAddress };
      },
      groups: () => running().groups(),
      routes: () => running().routes(),
      // Events can be followed from the start: a subscriber need not wait for the loop to run.
      subscribe: (listener) => this.subscribe(listener),
      port: (query) => running().port(query),
      stats: () => running().stats(),
    };
  }

  /** Starts the daemon (module comment); what failed is undone and thrown. */
  static async start(options: DaemonHostOptions): Promise<DaemonHost> {
    const host = new DaemonHost(options);
    try {
      await host.open();
    } catch (error) {
      await host.stop();
      throw error;
    }
    return host;
  }

  /** Calls `listener` when something the daemon cannot go on without fails (at once, if it did already). */
  onFailure(listener: (error: McastError) => void): void {
    if (this.fatal !== undefined) listener(this.fatal);
    else this.failedListeners.push(listener);
  }

  private async open(): Promise<void> {
    const { config, services, logger } = this.options;
    const file = config.groupPolicy;
    // A bad policy file stops the start here (exit 64, naming its line), before anything is touched.
    const policy = file === undefined ? undefined : { policy: await this.options.policySource.read(file), file };
    const stateStore = await services.openStateStore(config.stateDir);
    this.listening.push(await services.listenControl({ path: config.controlSocket, view: this.view, logger }));
    let metrics: ControllerMetrics | undefined;
    if (config.metricsAddress !== undefined) {
      const server = await services.listenMetrics(config.metricsAddress, this.view);
      this.listening.push(server);
      this.metricsAddress = server.address;
      metrics = server.metrics;
    }
    this.loop = await services.startLoop(config, {
      logger,
      stateStore,
      ...(metrics === undefined ? {} : { metrics }),
      ...(policy === undefined ? {} : { policy }),
      onFatal: (error) => this.fail(error),
      onCreated: (loop) => this.attachEarly(loop),
    });
    const peers = this.options.peerSource;
    if (peers?.watch !== undefined && config.tunnel !== undefined) {
      const onError = (error: Error) =>
        logger.warn(`${peers.label} cannot be watched: SIGHUP reads it again`, { error: error.message });
      this.peersWatch = peers.watch(() => void this.reloads.request('peers', `${peers.label} changed`), onError);
    }
    logger.info('listening', {
      controlSocket: config.controlSocket,
      ...(this.metricsAddress === undefined ? {} : { metrics: `http://${this.metricsAddress}/metrics` }),
    });
  }

  private subscribe(listener: (event: DaemonEvent) => void): () => void {
    const loop = this.loop ?? this.created;
    if (loop !== undefined) return loop.subscribe(listener);
    const entry: { listener: (event: DaemonEvent) => void; detach?: () => void } = { listener };
    this.early.add(entry);
    return () => {
      this.early.delete(entry);
      entry.detach?.();
    };
  }

  private attachEarly(loop: Pick<DaemonLoop, 'subscribe'>): void {
    this.created = loop;
    for (const entry of this.early) entry.detach = loop.subscribe(entry.listener);
    this.early.clear();
  }

  /**
   * Reads the configuration, the group policy and the peers again (SIGHUP); a bad one leaves what runs. Reloads run one
   * at a time (ReloadQueue): resolves once one that started after the call has ended.
   */
  reload(): Promise<void> {
    return this.reloads.request('all', 'SIGHUP');
  }

  private async runReload(scope: ReloadScope, why: string): Promise<void> {
    const loop = this.loop;
    if (loop === undefined || this.stopped) return;
    if (scope === 'all') {
      if (this.options.configSource === undefined)
        this.options.logger.info('SIGHUP: no configuration file (--config) to read again');
      else await this.reloadConfig(loop, this.options.configSource);
      await this.reloadPolicy(loop);
      await this.reloadPeerKeys(loop);
    }
    await this.reloadPeers(why);
  }

  /** Logs one line's worth of what the daemon holds (SIGUSR1). */
  logSummary(): void {
    this.options.logger.info('SIGUSR1: state summary', this.loop?.summary() ?? {});
  }

  /** Saves the state now (SIGUSR2); a failure is logged, never thrown. */
  async save(): Promise<void> {
    const { logger } = this.options;
    if (this.loop === undefined) return;
    try {
      const dir = await this.loop.saveNow();
      logger.info(dir === undefined ? 'SIGUSR2: no state directory' : 'SIGUSR2: state saved', { stateDir: dir });
    } catch (error) {
      logger.error('SIGUSR2: the state could not be saved', { error: messageOf(error) });
    }
  }

  /**
   * Stops what was started, last in first out; a failed final save of the loop throws, after everything else was
   * closed.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.peersWatch?.close();
    await this.reloads.idle();
    for (const listening of this.listening.splice(0).reverse()) await listening.close();
    await this.loop?.stop();
  }

  private fail(error: McastError): void {
    if (this.fatal !== undefined) return;
    this.fatal = error;
    for (const listener of this.failedListeners) listener(error);
  }

  /** Re-reads the file with the same flags; a bad file leaves everything as it runs. */
  private async reloadConfig(loop: DaemonLoop, source: ConfigSource): Promise<void> {
    const { logger } = this.options;
    let next: DaemonConfig;
    try {
      next = await source.read();
    } catch (error) {
      return logger.error('SIGHUP: the configuration was not reloaded; the running one stays', {
        file: source.file,
        error: messageOf(error),
      });
    }
    const plan = planReload(loop.configuration, next);
    if (plan.applied.length > 0) {
      loop.reconfigure(plan.config);
      logger.level = plan.config.logLevel;
    }
    if (plan.needRestart.length > 0) {
      logger.warn('SIGHUP: these settings changed in the file but take effect only at the next start', {
        keys: plan.needRestart.join(','),
      });
    }
    if (plan.applied.length === 0 && plan.needRestart.length === 0)
      logger.info('SIGHUP: configuration read again; nothing changed', { file: source.file });
    for (const change of plan.applied)
      logger.info('SIGHUP: setting changed', { key: change.key, from: change.from, to: change.to });
  }

  /** The policy file is read again whatever else changed; a bad one leaves the policy in force. */
  private async reloadPolicy(loop: DaemonLoop): Promise<void> {
    const { logger } = this.options;
    const file = loop.configuration.groupPolicy;
    let next: GroupPolicy;
    try {
      next = file === undefined ? GroupPolicy.allowAll() : await this.options.policySource.read(file);
    } catch (error) {
      return logger.error('SIGHUP: the group policy was not reloaded; the one in force stays', {
        file,
        error: messageOf(error),
      });
    }
    const changed = loop.setPolicy(next, file);
    logger.info(changed ? 'SIGHUP: group policy in force' : 'SIGHUP: group policy read again; it decides as before', {
      file: file ?? 'none',
      rules: next.ruleCount,
    });
  }

  /** The peer key file is read again (SIGHUP: a rotation); a bad one leaves the keys in force. */
  private async reloadPeerKeys(loop: DaemonLoop): Promise<void> {
    const { logger, peerKeySource } = this.options;
    const file = loop.configuration.tunnel?.peerKeys?.file;
    if (file === undefined || peerKeySource === undefined) return;
    let next: PeerKeyRing;
    try {
      next = await peerKeySource.read(file);
    } catch (error) {
      return logger.error('SIGHUP: the peer key file was not read again; the keys in force stay', {
        file,
        error: messageOf(error),
      });
    }
    // The loop's configuration as it is now: the peers may have been read again meanwhile.
    const running = loop.configuration;
    const tunnel = running.tunnel;
    if (tunnel === undefined || next.sameAs(tunnel.peerKeys))
      return logger.info('SIGHUP: peer key file read again; the same keys', { file });
    loop.reconfigure({ ...running, tunnel: { ...tunnel, peerKeys: next } });
    logger.info('SIGHUP: peer keys in force', { file, keys: next.ids.join(','), sealing: next.ids[0] });
  }

  /** The peers are read again (SIGHUP, or their source changed); a bad source leaves the peers as they are. */
  private async reloadPeers(why: string): Promise<void> {
    const { logger, peerSource } = this.options;
    const loop = this.loop;
    const tunnel = loop?.configuration.tunnel;
    if (loop === undefined || tunnel === undefined || peerSource === undefined || this.stopped) return;
    let next: PeerSet;
    try {
      next = await peerSource.read(tunnel.nodeAddress);
    } catch (error) {
      return logger.error(`${why}: the peers were not read again; they stay`, {
        source: peerSource.label,
        error: messageOf(error),
      });
    }
    // The loop's configuration as it is now: a reload of the file may have come in meanwhile.
    const running = loop.configuration;
    const now = running.tunnel ?? tunnel;
    const before = new Set(now.peers);
    const after = new Set(next.peers);
    const added = next.peers.filter((peer) => !before.has(peer));
    const removed = now.peers.filter((peer) => !after.has(peer));
    if (added.length === 0 && removed.length === 0)
      return logger.info(`${why}: peers read again; the same peers`, { source: peerSource.label });
    loop.reconfigure({ ...running, tunnel: { ...now, peers: next.peers } });
    logger.info(`${why}: the peers changed`, {
      source: peerSource.label,
      added: added.join(','),
      removed: removed.join(','),
      peers: next.peers.length,
    });
  }
}
