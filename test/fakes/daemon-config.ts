/** A daemon configuration for the loop's unit tests: nothing in it points at a real file or socket. */
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';

export function testDaemonConfig(overrides: Partial<DaemonConfig> = {}): DaemonConfig {
  return {
    target: { bridge: 'br-test', db: 'unix:/nonexistent/db.sock', openflow: 'unix:/nonexistent/br-test.mgmt' },
    pipeline: DEFAULT_PIPELINE_CONFIG,
    gateway: 'gw0',
    multicastInterfaces: [],
    queryIntervalMs: 125_000,
    queryResponseIntervalMs: 10_000,
    queryVersions: [3],
    mldQueryVersions: [2],
    querierElection: 'auto',
    robustness: 2,
    lastMemberQueryIntervalMs: 1_000,
    fastLeave: true,
    workers: 2,
    syncBackoffMinMs: 500,
    syncBackoffMaxMs: 8_000,
    routeIdleTimeoutMs: 20_000,
    maxGroupsPerPort: 1024,
    maxSourcesPerGroup: 256,
    maxGroups: 8192,
    igmpMeter: true,
    igmpRatePerPort: 200,
    igmpBurstPerPort: 1000,
    trafficCounters: false,
    maxTrafficCounters: 4096,
    maxSendDenyRanges: 256,
    ssmRange: [{ family: 'ipv4', address: '232.0.0.0', length: 8 }],
    stateDir: '/nonexistent/state',
    controlSocket: '/nonexistent/mcastctl.sock',
    logFormat: 'text',
    logLevel: 'debug',
    ...overrides,
  };
}
