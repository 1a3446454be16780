/** The daemon's configuration: defaults < YAML file < flags, and every way it can be wrong. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import {
  DAEMON_CONFIG_KEYS,
  loadDaemonConfig,
  MAX_CONFIG_FILE_BYTES,
  membershipTiming,
  type DaemonConfig,
  type DaemonFlags,
} from '../../src/controllers/daemon/config/config.js';
import { addDaemonOptions } from '../../src/cli/options/daemon-options.js';
import { ExitCode, UsageError } from '../../src/errors.js';
import { FileRefusedError } from '../../src/runtime/regular-file.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const directory = mkdtempSync(join(tmpdir(), 'mcastctl-daemon-config-'));
after(() => rmSync(directory, { recursive: true, force: true }));

let fileCount = 0;
function configFile(text: string): string {
  const path = join(directory, `daemon-${++fileCount}.yaml`);
  writeFileSync(path, text);
  return path;
}

/** Loads with no OVS_RUNDIR, so that the defaults do not depend on the test's environment. */
function load(flags: DaemonFlags, env: NodeJS.ProcessEnv = {}): Promise<DaemonConfig> {
  return loadDaemonConfig(flags, env);
}

function loadFile(text: string, flags: DaemonFlags = {}): Promise<DaemonConfig> {
  return load({ ...flags, config: configFile(text) });
}

/** Parses argv the way the daemon command will, and returns what the action would get. */
function commandFlags(argv: string[]): DaemonFlags {
  const command = addDaemonOptions(
    new Command('daemon').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} }),
  );
  command.parse(argv, { from: 'user' });
  return command.opts<DaemonFlags>();
}

const DEFAULTS: DaemonConfig = {
  target: {
    bridge: 'br-int',
    db: 'unix:/var/run/openvswitch/db.sock',
    openflow: 'unix:/var/run/openvswitch/br-int.mgmt',
  },
  pipeline: {
    table: 0,
    priorities: { igmp: 300, sendPolicy: 280, linkLocal: 250, group: 200, unknownGroup: 190 },
    cookiePrefix: 0x4d43,
    groupIdBase: 0x10000000,
    meterIdBase: 0x20000,
  },
  multicastInterfaces: [],
  queryIntervalMs: 125_000,
  queryResponseIntervalMs: 10_000,
  queryVersions: [3],
  mldQueryVersions: [2],
  querierElection: 'auto',
  robustness: 2,
  lastMemberQueryIntervalMs: 1_000,
  fastLeave: true,
  workers: 4,
  syncBackoffMinMs: 5_000,
  syncBackoffMaxMs: 300_000,
  routeIdleTimeoutMs: 120_000,
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
  stateDir: '/var/lib/mcastctl',
  controlSocket: '/run/mcastctl/mcastctl.sock',
  metricsAddress: '127.0.0.1:9815',
  logFormat: 'text',
  logLevel: 'info',
};

/** Asserts a UsageError (exit 64) whose message matches. */
async function rejectsUsage(promise: Promise<unknown>, pattern: RegExp, label: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof UsageError, `${label}: ${String(error)}`);
    assert.equal(error.exitCode, ExitCode.Usage, label);
    assert.match(error.message, pattern, label);
    return true;
  });
}

describe('daemon configuration: defaults', () => {
  it('with nothing given, is every default', async () => {
    assert.deepEqual(await load({}), DEFAULTS);
  });
  it('follows OVS_RUNDIR for the OVS sockets', async () => {
    const config = await load({}, { OVS_RUNDIR: '/tmp/ovs' });
    assert.deepEqual(config.target, {
      bridge: 'br-int',
      db: 'unix:/tmp/ovs/db.sock',
      openflow: 'unix:/tmp/ovs/br-int.mgmt',
    });
  });
  it('an empty file, or one of comments only, is every default', async () => {
    assert.deepEqual(await loadFile(''), DEFAULTS);
    assert.deepEqual(await loadFile('# nothing here\n'), DEFAULTS);
  });
  it('a key without a value keeps its default', async () => {
    assert.deepEqual(await loadFile('queryInterval:\ngateway: null\n'), DEFAULTS);
  });
  it("commander gives no values when no flag is given (beyond --no-metrics's own true)", () => {
    const flags = commandFlags([]);
    assert.deepEqual(
      Object.entries(flags).filter(([, value]) => value !== undefined),
      [['metrics', true]],
    );
  });
});

describe('daemon configuration: membership timing', () => {
  const cases: Array<{ name: string; yaml: string; gmi: number; lmqt: number }> = [
    { name: 'defaults: 2 × 125 s + 10 s, 2 × 1 s', yaml: '', gmi: 260_000, lmqt: 2_000 },
    {
      name: 'robustness 3, 60 s, 5 s, 500 ms',
      yaml: 'robustness: 3\nqueryInterval: 60s\nqueryResponseInterval: 5s\nlastMemberQueryInterval: 500ms\n',
      gmi: 185_000,
      lmqt: 1_500,
    },
    {
      name: 'robustness 1, 2 s, 1 s, 100 ms',
      yaml: 'robustness: 1\nqueryInterval: 2\nqueryResponseInterval: 1\nlastMemberQueryInterval: 100ms\n',
      gmi: 3_000,
      lmqt: 100,
    },
    {
      name: 'robustness 7, the longest query interval',
      yaml: 'robustness: 7\nqueryInterval: 31744s\nqueryResponseInterval: 3174.4s\n',
      gmi: 7 * 31_744_000 + 3_174_400,
      lmqt: 7_000,
    },
  ];
  for (const { name, yaml, gmi, lmqt } of cases) {
    it(name, async () => {
      assert.deepEqual(membershipTiming(await loadFile(yaml)), {
        groupMembershipIntervalMs: gmi,
        lastMemberQueryTimeMs: lmqt,
      });
    });
  }
});

describe('daemon configuration: durations', () => {
  const cases: Array<[string, number]> = [
    ['125s', 125_000],
    ['2m', 120_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    ['90', 90_000],
    ['1.5', 1_500],
    ['2.5s', 2_500],
    ['0.25', 250],
    ['"45"', 45_000],
    ['" 3s "', 3_000],
  ];
  for (const [text, ms] of cases) {
    it(`${text} in the file is ${ms} ms; the same as a flag too`, async () => {
      assert.equal((await loadFile(`syncBackoffMin: ${text}\nsyncBackoffMax: 2h\n`)).syncBackoffMinMs, ms);
      assert.equal((await load({ syncBackoffMin: text.replace(/"/g, ''), syncBackoffMax: '2h' })).syncBackoffMinMs, ms);
    });
  }
});

describe('daemon configuration: file values', () => {
  it('reads every kind of key', async () => {
    const config = await loadFile(
      [
        'bridge: br0',
        'ovsRundir: /tmp/ovs-x',
        'openflow: tcp:127.0.0.1:6653',
        'table: 10',
        'cookiePrefix: "abcd"',
        'groupIdBase: 0x20000000',
        'gateway: gw0',
        'multicastInterfaces:',
        '  - eth0',
        '  - eth1',
        'queryInterval: 60s',
        'queryResponseInterval: 5s',
        'queryVersions: [3, 2]',
        'robustness: 3',
        'lastMemberQueryInterval: 200ms',
        'fastLeave: false',
        'workers: 8',
        'syncBackoffMin: 1s',
        'syncBackoffMax: 1m',
        'routeIdleTimeout: 10m',
        'stateDir: /tmp/mcast-state',
        'controlSocket: /tmp/mcast.sock',
        'metricsAddress: localhost:0',
        'logFormat: json',
        'logLevel: debug',
      ].join('\n'),
    );
    assert.deepEqual(config, {
      target: { bridge: 'br0', db: 'unix:/tmp/ovs-x/db.sock', openflow: 'tcp:127.0.0.1:6653' },
      pipeline: { ...DEFAULTS.pipeline, table: 10, cookiePrefix: 0xabcd, groupIdBase: 0x20000000 },
      gateway: 'gw0',
      multicastInterfaces: ['eth0', 'eth1'],
      queryIntervalMs: 60_000,
      queryResponseIntervalMs: 5_000,
      queryVersions: [2, 3],
      mldQueryVersions: [2],
      querierElection: 'auto',
      robustness: 3,
      lastMemberQueryIntervalMs: 200,
      fastLeave: false,
      workers: 8,
      syncBackoffMinMs: 1_000,
      syncBackoffMaxMs: 60_000,
      routeIdleTimeoutMs: 600_000,
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
      stateDir: '/tmp/mcast-state',
      controlSocket: '/tmp/mcast.sock',
      metricsAddress: 'localhost:0',
      logFormat: 'json',
      logLevel: 'debug',
    });
  });
  it('takes lists as comma strings too', async () => {
    const config = await loadFile('gateway: gw0\nmulticastInterfaces: "eth0, eth1"\nqueryVersions: "2,3"\n');
    assert.deepEqual(
      [config.multicastInterfaces, config.queryVersions],
      [
        ['eth0', 'eth1'],
        [2, 3],
      ],
    );
    assert.deepEqual((await loadFile('queryVersions: 2\n')).queryVersions, [2]);
  });
  it('metricsAddress: any, loopback and unicast addresses are served on', async () => {
    for (const address of [
      '0.0.0.0:9815',
      '127.0.0.1:9815',
      '127.3.4.5:1',
      '10.1.2.3:9815',
      '223.255.255.255:80',
      'localhost:9815',
    ]) {
      assert.equal((await load({ metricsAddress: address })).metricsAddress, address);
    }
  });
  it('metricsAddress: off (or false) disables metrics', async () => {
    assert.equal((await loadFile('metricsAddress: off\n')).metricsAddress, undefined);
    assert.equal((await loadFile('metricsAddress: false\n')).metricsAddress, undefined);
    assert.ok(!('metricsAddress' in (await loadFile('metricsAddress: off\n'))));
  });
  it('an empty gateway or interface list means none', async () => {
    const config = await loadFile('gateway: ""\nmulticastInterfaces: []\n');
    assert.equal(config.gateway, undefined);
    assert.deepEqual(config.multicastInterfaces, []);
  });
  it('takes the cookie prefix and group id base as hex strings or numbers', async () => {
    assert.equal((await loadFile('cookiePrefix: "0x4d44"\n')).pipeline.cookiePrefix, 0x4d44);
    assert.equal((await loadFile('cookiePrefix: 0x4d44\n')).pipeline.cookiePrefix, 0x4d44);
    assert.equal((await loadFile('cookiePrefix: 4d44\n')).pipeline.cookiePrefix, 0x4d44);
    assert.equal((await loadFile('groupIdBase: "30000000"\n')).pipeline.groupIdBase, 0x30000000);
  });
});

describe('daemon configuration: flags over the file', () => {
  const file = [
    'gateway: gw0',
    'multicastInterfaces: [eth0]',
    'queryInterval: 60s',
    'queryVersions: [2]',
    'robustness: 3',
    'fastLeave: true',
    'workers: 2',
    'metricsAddress: 127.0.0.1:9000',
    'logLevel: warn',
    'bridge: br0',
    'table: 5',
  ].join('\n');
  it('each given flag overrides its key, the others stay', async () => {
    const config = await loadFile(file, {
      queryInterval: '30s',
      workers: '16',
      logLevel: 'debug',
      bridge: 'br1',
      table: 7,
    });
    assert.equal(config.queryIntervalMs, 30_000);
    assert.equal(config.workers, 16);
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.target.bridge, 'br1');
    assert.equal(config.target.openflow, 'unix:/var/run/openvswitch/br1.mgmt');
    assert.equal(config.pipeline.table, 7);
    assert.equal(config.robustness, 3);
    assert.equal(config.gateway, 'gw0');
    assert.deepEqual(config.queryVersions, [2]);
    assert.equal(config.metricsAddress, '127.0.0.1:9000');
  });
  it("--no-fast-leave beats the file's fastLeave: true", async () => {
    assert.equal((await loadFile(file, commandFlags(['--no-fast-leave']))).fastLeave, false);
  });
  it("a file's fastLeave: false stands when no flag is given", async () => {
    assert.equal((await loadFile('fastLeave: false\n', commandFlags([]))).fastLeave, false);
    assert.equal((await loadFile('fastLeave: false\n', commandFlags(['--fast-leave']))).fastLeave, true);
  });
  it('commander: --fast-leave, --no-fast-leave, and neither', () => {
    assert.equal(commandFlags([]).fastLeave, undefined);
    assert.equal(commandFlags(['--fast-leave']).fastLeave, true);
    assert.equal(commandFlags(['--no-fast-leave']).fastLeave, false);
  });
  it("--no-metrics beats the file's metricsAddress; --metrics-address off too", async () => {
    assert.equal((await loadFile(file, commandFlags(['--no-metrics']))).metricsAddress, undefined);
    assert.equal((await loadFile(file, commandFlags(['--metrics-address', 'off']))).metricsAddress, undefined);
    assert.equal(
      (await loadFile(file, commandFlags(['--metrics-address', '0.0.0.0:9100']))).metricsAddress,
      '0.0.0.0:9100',
    );
  });
  it('multicast interfaces without a gateway are refused, from a file or from flags, before the daemon touches anything', async () => {
    const message =
      'multicastInterfaces (--multicast-interfaces) need a gateway (--gateway): traffic crosses between the uplinks and the pods through it';
    const refused = (error: unknown) =>
      error instanceof UsageError &&
      error.message === message &&
      error.code === 'usage' &&
      error.exitCode === ExitCode.Usage;
    await assert.rejects(loadFile('multicastInterfaces: [eth0]\n'), refused);
    await assert.rejects(loadFile(file, commandFlags(['--gateway', ''])), refused);
    await assert.rejects(load(commandFlags(['--multicast-interfaces', 'eth0'])), refused);
  });
  it("empty --gateway and --multicast-interfaces clear the file's", async () => {
    const config = await loadFile(file, commandFlags(['--gateway', '', '--multicast-interfaces', '']));
    assert.equal(config.gateway, undefined);
    assert.deepEqual(config.multicastInterfaces, []);
  });
  it('the whole command line parses into the config', async () => {
    const flags = commandFlags([
      '--gateway',
      'antrea-gw0',
      '--multicast-interfaces',
      'eth0,eth1',
      '--query-interval',
      '30s',
      '--query-response-interval',
      '2s',
      '--query-versions',
      '3,2',
      '--robustness',
      '4',
      '--last-member-query-interval',
      '300ms',
      '--no-fast-leave',
      '--workers',
      '1',
      '--sync-backoff-min',
      '100ms',
      '--sync-backoff-max',
      '1s',
      '--route-idle-timeout',
      '30',
      '--state-dir',
      '/tmp/s',
      '--control-socket',
      '/tmp/c.sock',
      '--metrics-address',
      '127.0.0.1:0',
      '--log-format',
      'json',
      '--log-level',
      'error',
      '--bridge',
      'br9',
      '--ovs-rundir',
      '/tmp/o',
      '--table',
      '3',
      '--cookie-prefix',
      '1234',
      '--group-id-base',
      '40000000',
    ]);
    assert.deepEqual(await load(flags), {
      target: { bridge: 'br9', db: 'unix:/tmp/o/db.sock', openflow: 'unix:/tmp/o/br9.mgmt' },
      pipeline: { ...DEFAULTS.pipeline, table: 3, cookiePrefix: 0x1234, groupIdBase: 0x40000000 },
      gateway: 'antrea-gw0',
      multicastInterfaces: ['eth0', 'eth1'],
      queryIntervalMs: 30_000,
      queryResponseIntervalMs: 2_000,
      queryVersions: [2, 3],
      mldQueryVersions: [2],
      querierElection: 'auto',
      robustness: 4,
      lastMemberQueryIntervalMs: 300,
      fastLeave: false,
      workers: 1,
      syncBackoffMinMs: 100,
      syncBackoffMaxMs: 1_000,
      routeIdleTimeoutMs: 30_000,
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
      stateDir: '/tmp/s',
      controlSocket: '/tmp/c.sock',
      metricsAddress: '127.0.0.1:0',
      logFormat: 'json',
      logLevel: 'error',
    });
  });
});

describe('daemon configuration: bad files (exit 64, naming the file, line and key)', () => {
  const cases: Array<{ yaml: string; line: number; key: string; why: RegExp }> = [
    { yaml: 'queryInterval: soon\n', line: 1, key: 'queryInterval', why: /"soon" is not a duration/ },
    { yaml: '# c\n\nqueryInterval: 0\n', line: 3, key: 'queryInterval', why: /not a duration/ },
    {
      yaml: 'queryInterval: 500ms\nqueryResponseInterval: 100ms\n',
      line: 1,
      key: 'queryInterval',
      why: /not from 1s to 31744s/,
    },
    { yaml: 'queryInterval: 31745s\n', line: 1, key: 'queryInterval', why: /not from 1s/ },
    { yaml: 'queryInterval: 30d\n', line: 1, key: 'queryInterval', why: /not a duration/ },
    {
      yaml: 'queryInterval: 5s\n',
      line: 1,
      key: 'queryInterval',
      why: /must be longer than queryResponseInterval \(10s, the default\)/,
    },
    {
      yaml: 'queryInterval: 20s\nqueryResponseInterval: 20s\n',
      line: 2,
      key: 'queryResponseInterval',
      why: /20s must be shorter than queryInterval \(20s\)/,
    },
    { yaml: 'queryResponseInterval: 50ms\n', line: 1, key: 'queryResponseInterval', why: /below 100ms/ },
    {
      yaml: 'queryVersions: [2, 3]\nqueryResponseInterval: 26s\n',
      line: 2,
      key: 'queryResponseInterval',
      why: /does not fit an IGMPv2 query \(at most 25.5s\)/,
    },
    {
      yaml: 'queryInterval: 2h\nqueryResponseInterval: 3175s\n',
      line: 2,
      key: 'queryResponseInterval',
      why: /does not fit an IGMPv3 query \(at most 3174.4s\)/,
    },
    { yaml: 'queryVersions: [4]\n', line: 1, key: 'queryVersions', why: /4 is not an IGMP version/ },
    { yaml: 'queryVersions:\n  - 3\n  - 3\n', line: 3, key: 'queryVersions', why: /version 3 is listed twice/ },
    { yaml: 'queryVersions: []\n', line: 1, key: 'queryVersions', why: /at least one/ },
    { yaml: 'queryVersions: {a: 1}\n', line: 1, key: 'queryVersions', why: /a mapping is not a list/ },
    { yaml: 'robustness: 0\n', line: 1, key: 'robustness', why: /not a whole number from 1 to 7/ },
    { yaml: 'robustness: 8\n', line: 1, key: 'robustness', why: /from 1 to 7/ },
    { yaml: 'robustness: 2.5\n', line: 1, key: 'robustness', why: /from 1 to 7/ },
    { yaml: 'lastMemberQueryInterval: 26s\n', line: 1, key: 'lastMemberQueryInterval', why: /not from 100ms to 25.5s/ },
    { yaml: 'fastLeave: yes\n', line: 1, key: 'fastLeave', why: /"yes" is not true or false/ },
    { yaml: 'workers: 0\n', line: 1, key: 'workers', why: /from 1 to 64/ },
    { yaml: 'workers: 65\n', line: 1, key: 'workers', why: /from 1 to 64/ },
    {
      yaml: 'syncBackoffMin: 10s\nsyncBackoffMax: 5s\n',
      line: 2,
      key: 'syncBackoffMax',
      why: /5s is shorter than syncBackoffMin \(10s\)/,
    },
    {
      yaml: 'syncBackoffMin: 10m\n',
      line: 1,
      key: 'syncBackoffMin',
      why: /600s is longer than syncBackoffMax \(300s, the default\)/,
    },
    { yaml: 'routeIdleTimeout: 500ms\n', line: 1, key: 'routeIdleTimeout', why: /below 1s/ },
    { yaml: 'gateway: a/b\n', line: 1, key: 'gateway', why: /not an interface name/ },
    { yaml: 'gateway: sixteen-chars-xx\n', line: 1, key: 'gateway', why: /not an interface name/ },
    { yaml: 'gateway: 7\n', line: 1, key: 'gateway', why: /7 is not an interface name/ },
    {
      yaml: 'multicastInterfaces:\n  - eth0\n  - "eth 1"\n',
      line: 3,
      key: 'multicastInterfaces',
      why: /"eth 1" is not an interface name/,
    },
    {
      yaml: 'multicastInterfaces: [eth0, eth0:1]\n',
      line: 1,
      key: 'multicastInterfaces',
      why: /"eth0:1" is not an interface name/,
    },
    { yaml: 'multicastInterfaces: [eth0, eth0]\n', line: 1, key: 'multicastInterfaces', why: /eth0 is listed twice/ },
    {
      yaml: 'gateway: gw0\nmulticastInterfaces:\n  - eth0\n  - gw0\n',
      line: 4,
      key: 'multicastInterfaces',
      why: /gw0 is both the gateway and a multicast interface/,
    },
    { yaml: 'stateDir: ""\n', line: 1, key: 'stateDir', why: /"" is not a path/ },
    { yaml: 'stateDir: [a]\n', line: 1, key: 'stateDir', why: /a list is not a path/ },
    {
      yaml: `controlSocket: /${'x'.repeat(120)}\n`,
      line: 1,
      key: 'controlSocket',
      why: /longer than a socket path can be/,
    },
    { yaml: 'metricsAddress: 9815\n', line: 1, key: 'metricsAddress', why: /9815 is not HOST:PORT/ },
    {
      yaml: 'metricsAddress: example.com:9815\n',
      line: 1,
      key: 'metricsAddress',
      why: /"example.com" is not an IPv4 address or localhost/,
    },
    { yaml: 'metricsAddress: 127.0.0.1:65536\n', line: 1, key: 'metricsAddress', why: /port 65536 is not 0 to 65535/ },
    { yaml: 'metricsAddress: "[::1]:9815"\n', line: 1, key: 'metricsAddress', why: /not HOST:PORT/ },
    {
      yaml: 'metricsAddress: 239.1.1.1:9815\n',
      line: 1,
      key: 'metricsAddress',
      why: /239\.1\.1\.1 is a multicast address/,
    },
    {
      yaml: 'metricsAddress: 255.255.255.255:9815\n',
      line: 1,
      key: 'metricsAddress',
      why: /255\.255\.255\.255 is the broadcast address/,
    },
    { yaml: 'logFormat: xml\n', line: 1, key: 'logFormat', why: /"xml" is not one of text, json/ },
    { yaml: 'logLevel: trace\n', line: 1, key: 'logLevel', why: /"trace" is not one of debug, info, warn, error/ },
    { yaml: 'bridge: a/b\n', line: 1, key: 'bridge', why: /not a bridge name/ },
    { yaml: 'ovsRundir: relative/dir\n', line: 1, key: 'ovsRundir', why: /not an absolute directory path/ },
    { yaml: 'db: ssl:1.2.3.4:6640\n', line: 1, key: 'db', why: /"ssl:1.2.3.4:6640" is not an OVSDB address/ },
    { yaml: 'openflow: tcp:1.2.3.4\n', line: 1, key: 'openflow', why: /is not an OpenFlow address/ },
    { yaml: 'table: 255\n', line: 1, key: 'table', why: /from 0 to 254/ },
    { yaml: 'cookiePrefix: "0"\n', line: 1, key: 'cookiePrefix', why: /0x0 is not a 16-bit value/ },
    { yaml: 'cookiePrefix: "10000"\n', line: 1, key: 'cookiePrefix', why: /0x10000 is not a 16-bit value/ },
    { yaml: 'cookiePrefix: xyz\n', line: 1, key: 'cookiePrefix', why: /not a 16-bit cookie prefix in hexadecimal/ },
    {
      yaml: 'groupIdBase: 10000000\n',
      line: 1,
      key: 'groupIdBase',
      why: /a bare YAML number is decimal: write "10000000" in quotes, or 0x10000000/,
    },
    {
      yaml: 'groupIdBase: "f0000000"\n',
      line: 1,
      key: 'groupIdBase',
      why: /not a multiple of 0x10000000 from 0x10000000 to 0xe0000000/,
    },
  ];
  for (const { yaml, line, key, why } of cases) {
    it(`${key}: ${JSON.stringify(yaml)}`, async () => {
      const path = configFile(yaml);
      const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      await rejectsUsage(load({ config: path }), new RegExp(`^config ${escaped} line ${line}: ${key}: `), key);
      await rejectsUsage(load({ config: path }), why, key);
    });
  }
  it('names an unknown key and lists the known ones', async () => {
    const path = configFile('queryInterval: 60s\nqueryIntervall: 60s\n');
    await rejectsUsage(
      load({ config: path }),
      /line 2: unknown key "queryIntervall" \(known: bridge, ovsRundir, .*queryInterval, .*logLevel\)/,
      'unknown',
    );
  });
  it('names the line of a YAML syntax error', async () => {
    await rejectsUsage(
      load({ config: configFile('queryInterval: 60s\nqueryVersions: [2, 3\nrobustness: 2\n') }),
      /line 3: not valid YAML: /,
      'syntax',
    );
    await rejectsUsage(
      load({ config: configFile('workers: 1\nworkers: 2\n') }),
      /line 2: not valid YAML: duplicated mapping key/,
      'duplicate',
    );
    await rejectsUsage(load({ config: configFile('  a: 1\n b: 2\n') }), /line 2: not valid YAML/, 'indent');
  });
  it('refuses a file that is not a mapping', async () => {
    await rejectsUsage(
      load({ config: configFile('- queryInterval: 60s\n') }),
      /line 1: the file must be a mapping/,
      'list',
    );
    await rejectsUsage(load({ config: configFile('just words\n') }), /line 1: the file must be a mapping/, 'scalar');
  });
  it('a missing or unreadable file is bad-file, with what to do', async () => {
    for (const path of [join(directory, 'missing.yaml'), directory]) {
      await assert.rejects(load({ config: path }), (error: unknown) => {
        assert.ok(error instanceof UsageError);
        assert.equal(error.code, 'bad-file');
        assert.equal(error.exitCode, ExitCode.Usage);
        assert.match(error.message, /^cannot read config .*: (ENOENT \(no such file\)|a directory)/);
        assert.match(error.hint ?? '', /--config/);
        return true;
      });
    }
  });
  it('the hint says which flag overrides the key', async () => {
    await assert.rejects(
      load({ config: configFile('workers: 0\n') }),
      (error: unknown) => error instanceof UsageError && /--workers/.test(error.hint ?? ''),
    );
  });
});

describe('daemon configuration: hostile files (exit 64 at once, naming the file and line)', () => {
  const refused = async (promise: Promise<unknown>, reason: string, message: RegExp) => {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof FileRefusedError, String(error));
      assert.equal(error.exitCode, ExitCode.Usage);
      assert.equal(error.reason, reason);
      assert.match(error.message, message);
      assert.match(error.hint ?? '', /--config|at most 1 MiB/);
      return true;
    });
  };
  it('refuses /dev/zero at once, not after filling memory', async () => {
    const started = Date.now();
    await refused(load({ config: '/dev/zero' }), 'not-regular', /^cannot read config \/dev\/zero: a character device/);
    assert.ok(Date.now() - started < 1_000);
  });
  it('refuses a FIFO at once instead of waiting for a writer', { timeout: 5_000 }, async () => {
    const path = join(directory, 'daemon.fifo');
    execFileSync('mkfifo', [path]);
    const started = Date.now();
    await refused(load({ config: path }), 'not-regular', /a FIFO/);
    assert.ok(Date.now() - started < 2_000);
  });
  it('refuses a file over 1 MiB, saying so', async () => {
    const path = configFile(`# ${'x'.repeat(MAX_CONFIG_FILE_BYTES)}\nworkers: 2\n`);
    await refused(load({ config: path }), 'too-large', /over the limit of 1 MiB$/);
    assert.equal((await loadFile(`# ${'x'.repeat(MAX_CONFIG_FILE_BYTES - 100)}\nworkers: 2\n`)).workers, 2);
  });
  it("refuses nesting deeper than 64 levels, before either parser's stack overflows", async () => {
    await rejectsUsage(
      loadFile(`queryVersions: ${'['.repeat(1000)}${']'.repeat(1000)}\n`),
      /^config .* line 1: nested deeper than 64 levels/,
      'flow',
    );
    const block = Array.from({ length: 1000 }, (_, depth) => `${' '.repeat(depth + 2)}-`).join('\n');
    await rejectsUsage(
      loadFile(`workers: 2\nmulticastInterfaces:\n${block}\n`),
      /^config .* line 6\d: nested deeper than 64 levels/,
      'block',
    );
    await rejectsUsage(
      loadFile(`queryVersions: ${'['.repeat(100_000)}\n`),
      /line 1: nested deeper than 64 levels/,
      'unclosed',
    );
  });
  it('refuses anchors and aliases: a legal file of 150 aliases', async () => {
    const text = `gateway: &uplink gw0\nmulticastInterfaces: [${Array(150).fill('*uplink').join(', ')}]\n`;
    await rejectsUsage(
      loadFile(text),
      /^config .* line 1: an anchor \(&uplink\): anchors and aliases \(&name, \*name\) are not allowed here$/,
      'aliases',
    );
    await assert.rejects(
      loadFile(text),
      (error: unknown) => error instanceof UsageError && error.hint === 'write each value out in full',
    );
  });
  it('refuses a billion laughs at its first anchor', async () => {
    const levels = ['gateway: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let level = 1; level < 9; level++) {
      levels.push(
        `${DAEMON_CONFIG_KEYS[level]}: &${String.fromCharCode(97 + level)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + level)}`)
          .join(', ')}]`,
      );
    }
    await rejectsUsage(loadFile(`${levels.join('\n')}\n`), /^config .* line 1: an anchor \(&a\)/, 'laughs');
  });
  it('refuses an alias without an anchor', async () => {
    await rejectsUsage(
      loadFile('workers: 2\nlogLevel: *level\n'),
      /^config .* line 2: not valid YAML: unidentified alias "level": anchors and aliases/,
      'alias',
    );
  });
  it('refuses more nodes than a configuration has, in well under a second', async () => {
    const keys = Array.from({ length: 40_000 }, (_, index) => `k${index}: 1`).join('\n');
    const started = Date.now();
    await rejectsUsage(
      loadFile(`${keys}\n`),
      /^config .* line 5001: more than 10000 keys, values and list items/,
      'keys',
    );
    assert.ok(Date.now() - started < 1_000, `${Date.now() - started} ms`);
  });
  it('quotes a long value or key cut short', async () => {
    await rejectsUsage(
      loadFile(`logLevel: ${'v'.repeat(10_000)}\n`),
      /^config .* line 1: logLevel: "v{64}"… \(10000 characters\) is not one of/,
      'value',
    );
    await rejectsUsage(
      loadFile(`? ${'k'.repeat(10_000)}\n: 1\n`),
      /^config .* line 1: unknown key "k{64}"… \(10000 characters\) \(known:/,
      'key',
    );
  });
});

describe('daemon configuration: bad flags (exit 64, naming the flag)', () => {
  const cases: Array<{ flags: DaemonFlags; flag: string; why: RegExp }> = [
    { flags: { queryInterval: 'soon' }, flag: '--query-interval', why: /not a duration/ },
    {
      flags: { queryInterval: '5s' },
      flag: '--query-interval',
      why: /must be longer than queryResponseInterval \(10s, the default\)/,
    },
    {
      flags: { queryResponseInterval: '200s' },
      flag: '--query-response-interval',
      why: /must be shorter than queryInterval \(125s, the default\)/,
    },
    {
      flags: { queryInterval: '60s', queryResponseInterval: '60s' },
      flag: '--query-response-interval',
      why: /shorter than --query-interval \(60s\)/,
    },
    {
      flags: { queryVersions: '2', queryResponseInterval: '30s' },
      flag: '--query-response-interval',
      why: /does not fit an IGMPv2 query/,
    },
    { flags: { queryVersions: '1,x' }, flag: '--query-versions', why: /"x" is not an IGMP version/ },
    { flags: { robustness: '-1' }, flag: '--robustness', why: /from 1 to 7/ },
    { flags: { lastMemberQueryInterval: '1m' }, flag: '--last-member-query-interval', why: /not from 100ms to 25.5s/ },
    { flags: { workers: 'four' }, flag: '--workers', why: /from 1 to 64/ },
    {
      flags: { syncBackoffMax: '1s' },
      flag: '--sync-backoff-max',
      why: /shorter than syncBackoffMin \(5s, the default\)/,
    },
    { flags: { routeIdleTimeout: '1ms' }, flag: '--route-idle-timeout', why: /below 1s/ },
    { flags: { gateway: 'gw 0' }, flag: '--gateway', why: /not an interface name/ },
    {
      flags: { multicastInterfaces: 'eth0,,eth1' },
      flag: '--multicast-interfaces',
      why: /"" is not an interface name/,
    },
    {
      flags: { gateway: 'eth0', multicastInterfaces: 'eth0' },
      flag: '--multicast-interfaces',
      why: /both the gateway and a multicast interface/,
    },
    { flags: { metricsAddress: 'nohost' }, flag: '--metrics-address', why: /not HOST:PORT/ },
    {
      flags: { metricsAddress: '224.0.0.1:9815' },
      flag: '--metrics-address',
      why: /224\.0\.0\.1 is a multicast address/,
    },
    { flags: { metricsAddress: '239.255.255.255:1' }, flag: '--metrics-address', why: /is a multicast address/ },
    { flags: { metricsAddress: '255.255.255.255:9815' }, flag: '--metrics-address', why: /the broadcast address/ },
    {
      flags: { logLevel: 'v'.repeat(10_000) },
      flag: '--log-level',
      why: /^--log-level: "v{64}"… \(10000 characters\) is not one of debug/,
    },
    {
      flags: { metricsAddress: `${'h'.repeat(10_000)}:1` },
      flag: '--metrics-address',
      why: /^--metrics-address: "h{64}"… \(10000 characters\) is not an IPv4 address/,
    },
    { flags: { logFormat: 'yaml' }, flag: '--log-format', why: /not one of text, json/ },
    { flags: { logLevel: 'verbose' }, flag: '--log-level', why: /not one of debug/ },
    { flags: { cookiePrefix: 0 }, flag: '--cookie-prefix', why: /0x0 is not a 16-bit value/ },
    { flags: { groupIdBase: 0x1234 }, flag: '--group-id-base', why: /not a multiple of 0x10000000/ },
    { flags: { bridge: 'a/b' }, flag: '--bridge', why: /not a bridge name/ },
    { flags: { db: 'nowhere' }, flag: '--db', why: /is not an OVSDB address/ },
  ];
  for (const { flags, flag, why } of cases) {
    it(`${flag} ${JSON.stringify(flags)}`, async () => {
      await rejectsUsage(load(flags), new RegExp(`^${flag}: `), flag);
      await rejectsUsage(load(flags), why, flag);
    });
  }
  it('a clash between a flag and a key names both', async () => {
    await rejectsUsage(
      load({ config: configFile('queryInterval: 30s\n'), queryResponseInterval: '30s' }),
      /^--query-response-interval: 30s must be shorter than queryInterval \(30s\)/,
      'clash',
    );
  });
  it('--no-metrics with --metrics-address is refused', async () => {
    await rejectsUsage(
      load(commandFlags(['--no-metrics', '--metrics-address', '127.0.0.1:1'])),
      /--no-metrics and --metrics-address/,
      'metrics',
    );
  });
  it('commander refuses a bad --table before we see it', () => {
    assert.throws(() => commandFlags(['--table', '300']), UsageError);
  });
});

describe('contrib/daemon.yaml, the man page and the help', () => {
  const example = join(ROOT, 'contrib', 'daemon.yaml');
  const man = readFileSync(join(ROOT, 'man', 'mcastctl-daemon.1'), 'utf8');
  it('lists every key, and loads to exactly the defaults', async () => {
    const document = parseYaml(readFileSync(example, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(document).sort(), [...DAEMON_CONFIG_KEYS].sort());
    assert.deepEqual(await load({ config: example }), DEFAULTS);
  });
  it('lets OVS_RUNDIR through (its OVS locations are left empty)', async () => {
    assert.equal((await load({ config: example }, { OVS_RUNDIR: '/tmp/r' })).target.db, 'unix:/tmp/r/db.sock');
  });
  it('every key is documented in mcastctl-daemon(1), CONFIGURATION FILE', () => {
    const section = man.slice(man.indexOf('.SH CONFIGURATION FILE'), man.indexOf('.SH SIGNALS'));
    for (const key of DAEMON_CONFIG_KEYS) assert.match(section, new RegExp(`^\\.BR ${key} " \\(`, 'm'), key);
  });
  it('every flag is in mcastctl-daemon(1) (with escaped dashes) and in the help', () => {
    const command = addDaemonOptions(new Command('daemon'));
    const help = command.helpInformation();
    const flags = command.options.map((option) => option.long).filter((long): long is string => long !== undefined);
    assert.ok(flags.length >= 26, `${flags.length} flags`);
    for (const flag of flags) {
      assert.ok(man.includes(flag.replace(/-/g, '\\-')), `${flag} in the man page`);
      assert.ok(help.includes(flag), `${flag} in the help`);
    }
    for (const option of command.options) assert.ok(option.description.length > 10, `${option.long} has a description`);
  });
});
