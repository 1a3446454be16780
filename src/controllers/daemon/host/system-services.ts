/**
 * The real services of the daemon host (./daemon-host.ts): the control socket, the
 * metrics listener, the state directory, and the loop on the real switch and kernel
 * (./wiring.ts). Loaded only by the daemon: prom-client alone takes about 50 ms to load,
 * which no other command should pay.
 */
import { ControlServer } from '../../../transport/control/control-server.js';
import { DaemonMetrics } from '../observe/metrics.js';
import { MetricsServer } from '../observe/metrics-server.js';
import { StateStore } from '../state/state-store.js';
import type { DaemonHostServices } from './daemon-host.js';
import { startDaemonController } from './wiring.js';

export const SYSTEM_SERVICES: DaemonHostServices = {
  openStateStore: (dir) => StateStore.prepare({ dir }),
  listenControl: (options) => ControlServer.listen(options),
  async listenMetrics(address, view) {
    // Metrics are gathered only when they are served (the default process metrics run a timer).
    const metrics = new DaemonMetrics(view);
    const server = await MetricsServer.listen({ address, registry: metrics.registry });
    return { address: server.address, metrics, close: () => server.close() };
  },
  startLoop: (config, start) => startDaemonController(config, start),
};
