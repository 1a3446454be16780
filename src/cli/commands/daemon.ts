/**
 * `mcastctl daemon`: the multicast controller, running until SIGTERM or SIGINT. Checks
 * its whole configuration first (exit 64, nothing started), then the control socket and
 * the metrics listener (a second daemon stops here, before it touches OVS or the
 * kernel), then the controller.
 */
import type { Command } from 'commander';
import { addDaemonOptions, loadDaemonConfig, type DaemonFlags } from '../../daemon/config.js';
import type { ControlServer } from '../../daemon/control-server.js';
import type { MulticastController } from '../../daemon/controller.js';
import type { MetricsServer } from '../../daemon/metrics.js';
import type { DaemonView } from '../../daemon/daemon-view.js';
import { McastError, UnavailableError } from '../../errors.js';
import { StopSignal } from '../stop.js';

export function registerDaemon(program: Command): void {
  const command = program
    .command('daemon')
    .summary('run the multicast controller: IGMP snooping, queries, OVS groups and kernel multicast routes')
    .description(
      'Snoop IGMP from the pod ports of an OVS bridge, keep the group state (RFC 3376 timers, queries, ' +
        'expiry), program an OVS group and flow per group so that its traffic reaches exactly its members, ' +
        "and, with --gateway and --multicast-interfaces, be the kernel's multicast router between the pods " +
        'and the network outside. Runs until SIGTERM or SIGINT. Needs root (CAP_NET_ADMIN, CAP_NET_RAW).',
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
    const config = await loadDaemonConfig(flags);
    // Loaded here, not at the top: every other command starts faster without them
    // (prom-client alone takes about 50 ms to load).
    const [{ ControlServer }, { MulticastController }, { Logger }, { DaemonMetrics, MetricsServer }, { StateStore }] = await Promise.all([
      import('../../daemon/control-server.js'),
      import('../../daemon/controller.js'),
      import('../../daemon/logger.js'),
      import('../../daemon/metrics.js'),
      import('../../daemon/state-store.js'),
    ]);
    const logger = new Logger({ format: config.logFormat, level: config.logLevel });
    const stop = new StopSignal();
    let controller: MulticastController | undefined;
    // The control socket and the metrics listener come first, so that a second daemon
    // stops there (exit 1, 'busy') before it touches OVS or the kernel. Until the
    // controller runs, they answer that the daemon is starting.
    const view: DaemonView = {
      status: () => running().status(),
      groups: () => running().groups(),
      routes: () => running().routes(),
      subscribe: (listener) => running().subscribe(listener),
    };
    const running = (): MulticastController => {
      if (controller === undefined) throw new UnavailableError('the daemon is starting: try again in a moment');
      return controller;
    };
    let fatal: McastError | undefined;
    let metricsServer: MetricsServer | undefined;
    let controlServer: ControlServer | undefined;
    try {
      controlServer = await ControlServer.listen({ path: config.controlSocket, view, logger });
      // Metrics are gathered only when they are served (the default process metrics run a timer).
      const metrics = config.metricsAddress === undefined ? undefined : new DaemonMetrics(view);
      if (config.metricsAddress !== undefined && metrics !== undefined) metricsServer = await MetricsServer.listen(config.metricsAddress, metrics.registry);
      controller = await MulticastController.start({
        config,
        logger,
        stateStore: new StateStore({ dir: config.stateDir }),
        ...(metrics === undefined ? {} : { metrics }),
        onFatal: (error) => {
          fatal ??= error;
          stop.stop();
        },
      });
      logger.info('listening', { controlSocket: config.controlSocket, ...(metricsServer === undefined ? {} : { metrics: `http://${metricsServer.address}/metrics` }) });
      await stop.whenStopped();
      logger.info('stopping');
    } finally {
      stop.dispose();
      await controlServer?.close();
      await metricsServer?.close();
      await controller?.stop();
    }
    logger.info('stopped: OVS keeps the flows and groups of learned groups; the kernel removed our VIFs and routes');
    if (fatal !== undefined) throw fatal;
  });
}
