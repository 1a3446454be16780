/**
 * `mcastctl daemon`: the multicast controller, running until SIGTERM or SIGINT. Checks
 * its whole configuration first (exit 64, nothing started), then the control socket and
 * the metrics listener (a second daemon stops here, before it touches OVS or the
 * kernel), then the controller.
 */
import type { Command } from 'commander';
import { loadDaemonConfig, type DaemonFlags } from '../../controllers/daemon/config/config.js';
import type { DaemonConfig } from '../../controllers/daemon/config/daemon-config.js';
import { loadGroupPolicy } from '../../controllers/daemon/config/policy-loader.js';
import { type PeersFileWatch, type PeersReread, rereadPeers, watchPeersFile } from '../../controllers/daemon/config/peers-loader.js';
import { GroupPolicy } from '../../domain/policy/group-policy.js';
import { holdYoungGeneration, limitMallocArenas } from '../../runtime/memory-release.js';

/** malloc arenas of the daemon (glibc's default: eight per core). */
const DAEMON_MALLOC_ARENAS = 2;
import { addDaemonOptions } from '../options/daemon-options.js';
import type { ControlServer } from '../../transport/control/control-server.js';
import type { MulticastController } from '../../controllers/daemon/loop/controller.js';
import type { MetricsServer } from '../../controllers/daemon/observe/metrics.js';
import type { DaemonView } from '../../transport/control/daemon-view.js';
import inspector from 'node:inspector';
import { type McastError, messageOf, UnavailableError } from '../../errors.js';
import { DaemonSignals } from '../daemon-signals.js';
import { StopSignal } from '../stop.js';

export function registerDaemon(program: Command): void {
  const command = program
    .command('daemon')
    .summary('run the multicast controller: IGMP and MLD snooping, queries, OVS groups and kernel multicast routes')
    .description(
      'Snoop IGMP and MLD (IPv4 and IPv6, dual-stack) from the pod ports of an OVS bridge, keep the group state ' +
        '(RFC 3376 and RFC 3810 timers, queries, expiry), program an OVS group and flow per group so that its traffic ' +
        "reaches exactly its members, and, with --gateway and --multicast-interfaces, be the kernel's multicast " +
        'router for both families between the pods and the network outside. Runs until SIGTERM or SIGINT; SIGHUP re-reads the configuration file, the group policy and the peers file, SIGUSR1 logs a state summary, SIGUSR2 saves the state. One daemon per bridge. Needs root (CAP_NET_ADMIN, CAP_NET_RAW).',
    );
  addDaemonOptions(command).addHelpText(
    'after',
    `
Examples:
  mcastctl daemon --bridge br-int --gateway antrea-gw0 --multicast-interfaces eth0
  mcastctl daemon --config /etc/mcastctl/daemon.yaml --log-level debug

Inspect it with mcastctl status, mcastctl groups and mcastctl snoop --daemon.
See mcastctl-daemon(1) for every setting and what stays behind after it stops.`,
  );
  command.action(async (flags: DaemonFlags) => {
    // First of all: until these listen, SIGHUP or SIGUSR2 would kill the daemon.
    const signals = new DaemonSignals();
    try {
      await runDaemon(flags, signals);
    } finally {
      signals.dispose();
    }
  });
}

async function runDaemon(flags: DaemonFlags, signals: DaemonSignals): Promise<void> {
  const config = await loadDaemonConfig(flags);
  // A bad policy file stops the start here (exit 64, naming its line), before anything is touched.
  const policy = config.groupPolicy === undefined ? undefined : { policy: await loadGroupPolicy(config.groupPolicy), file: config.groupPolicy };
  // Loaded here, not at the top: every other command starts faster without them
  // (prom-client alone takes about 50 ms to load).
  const [{ ControlServer }, { startDaemonController }, { Logger }, { DaemonMetrics, MetricsServer }, { StateStore }, { planReload }] = await Promise.all([
    import('../../transport/control/control-server.js'),
    import('../../controllers/daemon/host/wiring.js'),
    import('../../runtime/logger.js'),
    import('../../controllers/daemon/observe/metrics.js'),
    import('../../controllers/daemon/state/state-store.js'),
    import('../../controllers/daemon/config/reload.js'),
  ]);
  // Two malloc arenas, not eight per core: a flood's freed memory goes back (runtime/memory-release.ts).
  limitMallocArenas(DAEMON_MALLOC_ARENAS);
  holdYoungGeneration();
  const logger = new Logger({ format: config.logFormat, level: config.logLevel });
  closeInspector(logger);
  const stop = new StopSignal();
  let controller: MulticastController | undefined;
  // The control socket and the metrics listener come first, so that a second daemon
  // stops there (exit 1, 'busy') before it touches OVS or the kernel. Until the
  // controller runs, they answer that the daemon is starting.
  let metricsServer: MetricsServer | undefined;
  const view: DaemonView = {
    // The metrics address as listened on: the real port where port 0 was asked for.
    status: () => {
      const status = running().status();
      return metricsServer === undefined ? status : { ...status, metricsAddress: metricsServer.address };
    },
    groups: () => running().groups(),
    routes: () => running().routes(),
    subscribe: (listener) => running().subscribe(listener),
    port: (query) => running().port(query),
    stats: () => running().stats(),
  };
  const running = (): MulticastController => {
    if (controller === undefined) throw new UnavailableError('the daemon is starting: try again in a moment');
    return controller;
  };

  // Re-reads the file with the same flags; a bad file leaves everything as it runs.
  const reloadConfig = async (running: MulticastController): Promise<void> => {
    let next: DaemonConfig;
    try {
      next = await loadDaemonConfig(flags);
    } catch (error) {
      return logger.error('SIGHUP: the configuration was not reloaded; the running one stays', { file: flags.config, error: messageOf(error) });
    }
    const plan = planReload(running.configuration, next);
    if (plan.applied.length > 0) {
      running.reconfigure(plan.config);
      logger.level = plan.config.logLevel;
    }
    if (plan.needRestart.length > 0) {
      logger.warn('SIGHUP: these settings changed in the file but take effect only at the next start', { keys: plan.needRestart.join(',') });
    }
    if (plan.applied.length === 0 && plan.needRestart.length === 0) logger.info('SIGHUP: configuration read again; nothing changed', { file: flags.config });
    for (const change of plan.applied) logger.info('SIGHUP: setting changed', { key: change.key, from: change.from, to: change.to });
  };
  // The policy file is read again whatever else changed; a bad one leaves the policy in force.
  const reloadPolicy = async (running: MulticastController): Promise<void> => {
    const file = running.configuration.groupPolicy;
    let next: GroupPolicy;
    try {
      next = file === undefined ? GroupPolicy.allowAll() : await loadGroupPolicy(file);
    } catch (error) {
      return logger.error('SIGHUP: the group policy was not reloaded; the one in force stays', { file, error: messageOf(error) });
    }
    const changed = running.setPolicy(next, file);
    logger.info(changed ? 'SIGHUP: group policy in force' : 'SIGHUP: group policy read again; it decides as before', {
      file: file ?? 'none',
      rules: next.ruleCount,
    });
  };

  // The peers file is read again at SIGHUP and whenever it changes; a bad one leaves the peers as they are.
  const reloadPeers = async (running: MulticastController, why: string): Promise<void> => {
    const tunnel = running.configuration.tunnel;
    if (tunnel?.peersFile === undefined) return;
    let reread: PeersReread;
    try {
      reread = await rereadPeers({ ...tunnel, peersFile: tunnel.peersFile });
    } catch (error) {
      return logger.error(`${why}: the peers file was not reloaded; the peers stay`, { file: tunnel.peersFile, error: messageOf(error) });
    }
    if (reread.added.length === 0 && reread.removed.length === 0)
      return logger.info(`${why}: peers file read again; the same peers`, { file: tunnel.peersFile });
    running.reconfigure({ ...running.configuration, tunnel: reread.tunnel });
    logger.info(`${why}: the peers changed`, {
      file: tunnel.peersFile,
      added: reread.added.join(','),
      removed: reread.removed.join(','),
      peers: reread.tunnel.peers.length,
    });
  };

  signals.on({
    reload: async () => {
      if (controller === undefined) return logger.warn('SIGHUP while starting: nothing reloaded; send it again once the daemon listens');
      if (flags.config === undefined) logger.info('SIGHUP: no configuration file (--config) to read again');
      else await reloadConfig(controller);
      await reloadPolicy(controller);
      await reloadPeers(controller, 'SIGHUP');
    },
    summary: () => {
      if (controller === undefined) logger.info('SIGUSR1: starting');
      else logger.info('SIGUSR1: state summary', controller.summary());
    },
    save: async () => {
      if (controller === undefined) return logger.info('SIGUSR2: starting; nothing saved yet');
      try {
        const dir = await controller.saveNow();
        logger.info(dir === undefined ? 'SIGUSR2: no state directory' : 'SIGUSR2: state saved', { stateDir: dir });
      } catch (error) {
        logger.error('SIGUSR2: the state could not be saved', { error: messageOf(error) });
      }
    },
    onError: (signal, error) => logger.error(`${signal}: failed`, { error: messageOf(error) }),
  });

  let fatal: McastError | undefined;
  let controlServer: ControlServer | undefined;
  let peersWatch: PeersFileWatch | undefined;
  try {
    // Before anything is connected to: a state directory others could change is refused (64).
    const stateStore = await StateStore.prepare({ dir: config.stateDir });
    controlServer = await ControlServer.listen({ path: config.controlSocket, view, logger });
    // Metrics are gathered only when they are served (the default process metrics run a timer).
    const metrics = config.metricsAddress === undefined ? undefined : new DaemonMetrics(view);
    if (config.metricsAddress !== undefined && metrics !== undefined) metricsServer = await MetricsServer.listen(config.metricsAddress, metrics.registry);
    controller = await startDaemonController(config, {
      logger,
      stateStore,
      ...(metrics === undefined ? {} : { metrics }),
      ...(policy === undefined ? {} : { policy }),
      onFatal: (error) => {
        fatal ??= error;
        stop.stop();
      },
    });
    const peersFile = config.tunnel?.peersFile;
    if (peersFile !== undefined) {
      const running = controller;
      const onError = (error: Error) => logger.warn('the peers file cannot be watched: SIGHUP reads it again', { file: peersFile, error: error.message });
      peersWatch = watchPeersFile({ path: peersFile, onChange: () => void reloadPeers(running, 'peers file changed'), onError });
    }
    logger.info('listening', {
      controlSocket: config.controlSocket,
      ...(metricsServer === undefined ? {} : { metrics: `http://${metricsServer.address}/metrics` }),
    });
    await stop.whenStopped();
    logger.info('stopping');
  } finally {
    stop.dispose();
    peersWatch?.close();
    await controlServer?.close();
    await metricsServer?.close();
    // A failed final save throws here: exit 1, after everything else was closed.
    await controller?.stop();
  }
  logger.info('stopped: OVS keeps the flows and groups of learned groups; the kernel removed our VIFs and routes');
  if (fatal !== undefined) throw fatal;
}

/**
 * Node's inspector lets anyone on the host who can reach 127.0.0.1:9229 run code in the
 * process: in a daemon running as root, a root shell for every local user. It is closed
 * if NODE_OPTIONS or a flag opened it (SIGUSR1 cannot: see DaemonSignals).
 */
function closeInspector(logger: { warn(message: string, fields?: Record<string, unknown>): void }): void {
  const url = inspector.url();
  if (url === undefined) return;
  inspector.close();
  logger.warn('the Node.js inspector was open (--inspect or NODE_OPTIONS): closed, since anyone on this host could run code as the daemon', { url });
}
