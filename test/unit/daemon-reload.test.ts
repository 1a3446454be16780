/**
 * Reload (SIGHUP) planning, the daemon's signal listeners, and the runtime settings
 * each component takes: pure or in-process, no root.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { DaemonSignals } from '../../src/cli/daemon-signals.js';
import { loadDaemonConfig, type DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { planReload, RUNTIME_SETTINGS } from '../../src/controllers/daemon/config/reload.js';
import { Logger } from '../../src/runtime/logger.js';
import { MembershipTable } from '../../src/domain/membership/membership-table.js';
import { Querier } from '../../src/controllers/daemon/loop/querier.js';
import { WorkQueue } from '../../src/domain/membership/work-queue.js';
import { groupAddress, hostAddress } from '../../src/wire/ip-address.js';

const ENV = { OVS_RUNDIR: '/run/mcl-unit' };

async function config(flags: Record<string, string | boolean> = {}): Promise<DaemonConfig> {
  return loadDaemonConfig(flags, ENV);
}

describe('planReload', () => {
  it('applies changed runtime settings and keeps everything else as it runs', async () => {
    const running = await config({ bridge: 'br-int', queryInterval: '125s', logLevel: 'info' });
    const next = await config({
      bridge: 'br-other',
      queryInterval: '60s',
      logLevel: 'debug',
      fastLeave: false,
      workers: '8',
      routeIdleTimeout: '30s',
    });
    const plan = planReload(running, next);
    assert.deepEqual(plan.applied.map((change) => change.key).sort(), [
      'fastLeave',
      'logLevel',
      'queryInterval',
      'routeIdleTimeout',
    ]);
    // The bridge names its management socket too.
    assert.deepEqual(plan.needRestart.sort(), ['bridge', 'openflow', 'workers']);
    assert.equal(plan.config.queryIntervalMs, 60_000);
    assert.equal(plan.config.logLevel, 'debug');
    assert.equal(plan.config.fastLeave, false);
    assert.equal(plan.config.routeIdleTimeoutMs, 30_000);
    // Not runtime: the running values stay.
    assert.equal(plan.config.target.bridge, 'br-int');
    assert.equal(plan.config.workers, running.workers);
    assert.deepEqual(
      plan.applied.find((change) => change.key === 'queryInterval'),
      { key: 'queryInterval', from: 125_000, to: 60_000 },
    );
  });

  it('a changed SSM range is applied, and shown as blocks of text', async () => {
    const plan = planReload(await config(), await config({ ssmRange: '232.0.0.0/8,239.232.0.0/16' }));
    assert.deepEqual(plan.applied, [{ key: 'ssmRange', from: '232.0.0.0/8', to: '232.0.0.0/8,239.232.0.0/16' }]);
    assert.equal(plan.config.ssmRange.length, 2);
  });

  it('finds nothing to do in the same configuration', async () => {
    const plan = planReload(await config(), await config());
    assert.deepEqual([plan.applied, plan.needRestart], [[], []]);
  });

  it('knows every runtime setting by its file key', async () => {
    const running = await config();
    const next = await config({
      queryInterval: '100s',
      queryResponseInterval: '5s',
      queryVersions: '2,3',
      mldQueryVersions: '1,2',
      querierElection: 'never',
      robustness: '3',
      lastMemberQueryInterval: '2s',
      fastLeave: false,
      syncBackoffMin: '1s',
      syncBackoffMax: '10s',
      routeIdleTimeout: '10s',
      maxGroupsPerPort: '10',
      maxSourcesPerGroup: '10',
      maxGroups: '10',
      igmpMeter: false,
      igmpRatePerPort: '10',
      igmpBurstPerPort: '10',
      ssmRange: '',
      trafficCounters: true,
      maxTrafficCounters: '10',
      groupPolicy: '/tmp/policy.yaml',
      maxSendDenyRanges: '10',
      logLevel: 'warn',
    });
    assert.deepEqual(
      planReload(running, next)
        .applied.map((change) => change.key)
        .sort(),
      [...RUNTIME_SETTINGS].sort(),
    );
  });
});

describe('DaemonSignals', () => {
  it('SIGHUP, SIGUSR1 and SIGUSR2 run their action and never end the process', async () => {
    const signals = new DaemonSignals();
    const seen: string[] = [];
    let release: () => void = () => undefined;
    signals.on({
      reload: () =>
        new Promise<void>((resolve) => {
          seen.push('reload');
          release = resolve;
        }),
      summary: () => void seen.push('summary'),
      save: () => {
        seen.push('save');
        throw new Error('disk full');
      },
      onError: (signal, error) => seen.push(`${signal} failed: ${(error as Error).message}`),
    });
    try {
      process.kill(process.pid, 'SIGHUP');
      process.kill(process.pid, 'SIGUSR1');
      process.kill(process.pid, 'SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Two more SIGHUPs while the first reload runs: one more reload after it, not two.
      process.kill(process.pid, 'SIGHUP');
      process.kill(process.pid, 'SIGHUP');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(
        seen.filter((entry) => entry === 'reload'),
        ['reload'],
      );
      release();
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen, ['reload', 'summary', 'save', 'SIGUSR2 failed: disk full', 'reload']);
    } finally {
      signals.dispose();
    }
  });

  it('before its actions are known, a signal does nothing (and does not kill)', async () => {
    const signals = new DaemonSignals();
    try {
      process.kill(process.pid, 'SIGUSR2');
      process.kill(process.pid, 'SIGHUP');
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      signals.dispose();
    }
  });
});

describe('runtime settings of the components', () => {
  it('Logger: a new level reaches its children', () => {
    const lines: string[] = [];
    const logger = new Logger({ format: 'json', level: 'info', stream: { write: (line: string) => lines.push(line) } });
    const child = logger.child({ part: 'x' });
    child.debug('hidden');
    logger.level = 'debug';
    child.debug('shown');
    assert.equal(logger.level, 'debug');
    assert.deepEqual(
      lines.map((line) => JSON.parse(line).msg),
      ['shown'],
    );
  });

  it('MembershipTable: a new Group Membership Interval and fast leave count at once', () => {
    let now = 0;
    const table = new MembershipTable({
      clock: { now: () => now },
      timing: { groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 },
      fastLeave: true,
    });
    table.report(1, hostAddress('10.0.0.1'), groupAddress('239.1.1.1'), 2);
    now = 10_000;
    assert.deepEqual(table.expire(), []);
    table.reconfigure({ timing: { groupMembershipIntervalMs: 5_000, lastMemberQueryTimeMs: 2_000 }, fastLeave: false });
    assert.equal(table.nextDeadline(), 5_000);
    assert.ok(table.expire().some((effect) => effect.kind === 'members'));
    table.report(2, hostAddress('10.0.0.2'), groupAddress('239.1.1.2'), 2);
    // No fast leave now: a leave makes the port be asked first.
    assert.ok(
      table.leave(2, hostAddress('10.0.0.2'), groupAddress('239.1.1.2')).some((effect) => effect.kind === 'query'),
    );
  });

  it('Querier: the next general query comes one new interval after the reload', () => {
    const timers: Array<{ at: number; run: () => void; cancelled: boolean }> = [];
    let now = 0;
    const querier = new Querier({
      versions: [3],
      queryIntervalMs: 125_000,
      queryResponseIntervalMs: 10_000,
      lastMemberQueryIntervalMs: 1_000,
      robustness: 1,
      source: () => ({ address: '10.0.0.1' }),
      ports: () => [1],
      send: async () => 1,
      onError: () => undefined,
      timers: {
        after: (ms, run) => {
          const timer = { at: now + ms, run, cancelled: false };
          timers.push(timer);
          return () => {
            timer.cancelled = true;
          };
        },
      },
    });
    querier.start();
    const live = () => timers.filter((timer) => !timer.cancelled);
    assert.deepEqual(
      live().map((timer) => timer.at),
      [125_000],
    );
    now = 1_000;
    querier.reconfigure({
      versions: [2, 3],
      queryIntervalMs: 30_000,
      queryResponseIntervalMs: 5_000,
      lastMemberQueryIntervalMs: 1_000,
      robustness: 2,
    });
    assert.deepEqual(
      live().map((timer) => timer.at),
      [31_000],
    );
    querier.stop();
  });

  it('WorkQueue: new backoff delays from the next failure on', async () => {
    const delays: number[] = [];
    const queue = new WorkQueue<string>({
      sync: async () => {
        throw new Error('no');
      },
      workers: 1,
      minBackoffMs: 5_000,
      maxBackoffMs: 300_000,
      timers: { after: () => () => undefined },
      onError: (_key, _error, retryInMs) => delays.push(retryInMs),
    });
    queue.setBackoff(100, 200);
    queue.add('g');
    await new Promise((resolve) => setTimeout(resolve, 20));
    queue.stop();
    assert.ok(delays.length === 1 && delays[0]! <= 200, `retry in ${delays.join(',')} ms`);
  });
});
