/**
 * `mcastctl daemon`: the multicast controller, running until SIGTERM or SIGINT. This file
 * parses the flags, checks the whole configuration (exit 64, nothing started), and hands
 * it to the daemon host (src/controllers/daemon/host/daemon-host.ts), the one place that
 * starts, reloads and stops the daemon, with the sources a reload reads again and the
 * signals that ask for one.
 */
import type { Command } from 'commander';
import inspector from 'node:inspector';
import { loadDaemonConfig, type DaemonFlags } from '../../controllers/daemon/config/config.js';
import { loadGroupPolicy } from '../../controllers/daemon/config/policy-loader.js';
import { loadPeerKeyFile, peersFileSource } from '../../controllers/daemon/config/peers-loader.js';
import type { DaemonHost } from '../../controllers/daemon/host/daemon-host.js';
import { fixedPeers } from '../../domain/peers/peer-source.js';
import { messageOf } from '../../errors.js';
import { holdYoungGeneration, limitMallocArenas } from '../../runtime/memory-release.js';
import { addDaemonOptions } from '../options/daemon-options.js';
import { DaemonSignals } from '../daemon-signals.js';
import { StopSignal } from '../stop.js';

/** malloc arenas of the daemon (glibc's default: eight per core). */
const DAEMON_MALLOC_ARENAS = 2;

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
  // Loaded here, not at the top: every other command starts faster without them.
  const [{ DaemonHost }, { SYSTEM_SERVICES }, { Logger }] = await Promise.all([
    import('../../controllers/daemon/host/daemon-host.js'),
    import('../../controllers/daemon/host/system-services.js'),
    import('../../runtime/logger.js'),
  ]);
  // Two malloc arenas, not eight per core: a flood's freed memory goes back (runtime/memory-release.ts).
  limitMallocArenas(DAEMON_MALLOC_ARENAS);
  holdYoungGeneration();
  const logger = new Logger({ format: config.logFormat, level: config.logLevel });
  closeInspector(logger);
  const stop = new StopSignal();
  let host: DaemonHost | undefined;
  signals.on({
    reload: async () => {
      if (host === undefined)
        return logger.warn('SIGHUP while starting: nothing reloaded; send it again once the daemon listens');
      await host.reload();
    },
    summary: () => (host === undefined ? logger.info('SIGUSR1: starting') : host.logSummary()),
    save: async () => (host === undefined ? logger.info('SIGUSR2: starting; nothing saved yet') : host.save()),
    onError: (signal, error) => logger.error(`${signal}: failed`, { error: messageOf(error) }),
  });
  const tunnel = config.tunnel;
  const peerSource =
    tunnel === undefined
      ? undefined
      : tunnel.peersFile === undefined
        ? fixedPeers(tunnel.peers)
        : peersFileSource(tunnel.peersFile);
  try {
    host = await DaemonHost.start({
      config,
      logger,
      services: SYSTEM_SERVICES,
      ...(flags.config === undefined
        ? {}
        : { configSource: { file: flags.config, read: () => loadDaemonConfig(flags) } }),
      policySource: { read: loadGroupPolicy },
      peerKeySource: { read: loadPeerKeyFile },
      ...(peerSource === undefined ? {} : { peerSource }),
    });
    host.onFailure(() => stop.stop());
    await stop.whenStopped();
    logger.info('stopping');
  } finally {
    stop.dispose();
    // A failed final save throws here: exit 1, after everything else was closed.
    await host?.stop();
  }
  logger.info('stopped: OVS keeps the flows and groups of learned groups; the kernel removed our VIFs and routes');
  if (host.fatal !== undefined) throw host.fatal;
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
  logger.warn(
    'the Node.js inspector was open (--inspect or NODE_OPTIONS): closed, since anyone on this host could run code as the daemon',
    { url },
  );
}
