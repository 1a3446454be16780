/**
 * `mcastctl status`, `groups` and `snoop --daemon` end to end against a real control
 * socket served from an in-memory DaemonView. The CLI runs from source (through tsx),
 * so no build is needed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ControlServer } from '../../src/transport/control/control-server.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY =
  'import { run } from "./src/cli/main.js"; import { watchStdout } from "./src/cli/stop.js"; watchStdout(); process.exitCode = await run(process.argv.slice(1));';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts the CLI from source; `whenStarted` lets the test act while it runs. */
function cli(args: readonly string[], whenStarted?: (child: ReturnType<typeof spawn>) => void): Promise<Result> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ENTRY, '--', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', TZ: 'UTC' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  whenStarted?.(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const time = '2026-01-01T12:00:00.000Z';
const podA = { ofport: 5, name: 'veth-a', pod: 'default/pod-a' };
const EVENTS: DaemonEvent[] = [
  {
    type: 'igmp',
    time,
    clockMs: 1000.5,
    port: podA,
    record: {
      frame: 1,
      ts: 1767268800,
      src: '10.0.0.5',
      dst: '224.0.0.22',
      protocol: 'igmp',
      version: 3,
      type: 'report',
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.2.3', sources: [] }],
    },
  },
  { type: 'join', time, group: '239.1.2.3', port: podA, host: '10.0.0.5' },
  { type: 'sync', time, group: '239.1.2.3', ports: [5, 6], latencyMs: 1.25, sentMs: 0.25, clockMs: 1001.75, ok: true },
  { type: 'leave', time, group: '239.1.2.3', port: podA, host: '10.0.0.5', reason: 'expired' },
  { type: 'route', time, action: 'add', source: '10.0.0.5', group: '239.1.2.3', iif: 'gw0', oifs: ['eth0'] },
  { type: 'replay', time, what: 'openflow', groups: 3 },
];

let root: string;
let path: string;
let view: FakeDaemonView;
let server: ControlServer;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-cli-'));
  path = join(root, 'run', 'mcastctl.sock');
  view = new FakeDaemonView();
  server = await ControlServer.listen({ path, view });
});
after(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

describe('mcastctl status', { concurrency: true }, () => {
  it('--json prints the daemon status document as it is', async () => {
    const result = await cli(['status', '--control-socket', path, '--json']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), view.statusValue);
    assert.equal(result.stderr, '');
  });

  it('prints a key: value summary for people', async () => {
    const result = await cli(['status', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^daemon: +mcastctl 0\.1\.0, pid 4242, up 1h02m/m);
    assert.match(result.stdout, /^openflow: +connected$/m);
    assert.match(result.stdout, /^kernel routing: +active, interfaces eth0, gateway gw0 \(1\)$/m);
    assert.match(result.stdout, /^groups: +2 \(3 members\)$/m);
    assert.match(result.stdout, /^IGMP messages: +v2_leave 1, v3_report 7$/m);
    assert.match(result.stdout, /^IGMP refused: +policy 2, spoofed 1 \(veth-a \(5\) default\/pod-a 3\)$/m);
    assert.match(
      result.stdout,
      /^IGMP meters: +200\/s, burst 1000, on 3 ports; 4200 dropped \(veth-a \(5\) default\/pod-a 4200\)$/m,
    );
    assert.match(
      result.stdout,
      /^group policy: +\/etc\/mcastctl\/policy\.yaml: 4 rules, read 2026-12-01T15:00:00\.000Z; 1 port denied sending$/m,
    );
    assert.match(result.stdout, /^syncs: +5 \(1 failed\)$/m);
    assert.match(result.stdout, /^metrics: +http:\/\/127\.0\.0\.1:9100\/metrics$/m);
  });

  it('exits 69 with what to do when no daemon listens', async () => {
    const missing = join(root, 'nothing.sock');
    const result = await cli(['status', '--control-socket', missing]);
    assert.equal(result.code, 69);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `mcastctl: cannot reach the mcastctl daemon at ${missing}: ENOENT (is \`mcastctl daemon\` running? set --control-socket)\n`,
    );
  });
});

describe('mcastctl groups', { concurrency: true }, () => {
  it('--json prints the GroupView array; with a group, only that group', async () => {
    const all = await cli(['groups', '--control-socket', path, '--json']);
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(JSON.parse(all.stdout), view.groupsValue);
    const one = await cli(['groups', '232.1.1.1', '--control-socket', path, '--json']);
    assert.deepEqual(
      JSON.parse(one.stdout),
      view.groupsValue.filter((group) => group.group === '232.1.1.1'),
    );
    const none = await cli(['groups', '239.9.9.9', '--control-socket', path, '--json']);
    assert.equal(none.code, 0);
    assert.deepEqual(JSON.parse(none.stdout), []);
  });

  it('prints one row per member with port, pod, host, version, filter and timers', async () => {
    const result = await cli(['groups', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    for (const text of [
      '239.1.2.3',
      'veth-a (5)',
      'default/pod-b',
      '10.0.0.6',
      'v2',
      'any source',
      'INCLUDE {10.9.9.9}',
      'sync failed: OFPET_GROUP_MOD_FAILED',
      'leaving, ',
      ' ago',
    ]) {
      assert.ok(result.stdout.includes(text), `${text} in\n${result.stdout}`);
    }
    assert.match(result.stdout, /2 groups, 3 members/);
    assert.match(
      result.stdout,
      /^IGMP refused: policy 2, spoofed 1 \(veth-a \(5\) default\/pod-a 3\)$/m,
      'the joins refused, last',
    );
  });

  it('a group with no members: says so, exit 0', async () => {
    const result = await cli(['groups', '239.9.9.9', '--control-socket', path]);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, '239.9.9.9: no members\n');
  });

  it('a group that is not a multicast address is a usage error (64), before the daemon is asked', async () => {
    const result = await cli(['groups', '10.0.0.1', '--control-socket', join(root, 'nothing.sock')]);
    assert.equal(result.code, 64);
    assert.match(result.stderr, /"10\.0\.0\.1" is not a multicast address/);
  });

  it('--cluster on a daemon not in tunnel mode: exit 64, saying so; with --stats: exit 64', async () => {
    const result = await cli(['groups', '--cluster', '--control-socket', path]);
    assert.equal(result.code, 64, result.stderr);
    assert.match(result.stderr, /the daemon is not in tunnel mode: it knows of no other node/);
    assert.match(result.stderr, /--tunnel-port/);
    const both = await cli(['groups', '--cluster', '--stats', '--control-socket', path]);
    assert.equal(both.code, 64, both.stderr);
    assert.match(both.stderr, /give --stats or --cluster, not both/);
  });

  it('an IPv6 group is compared in canonical text: FF15:0::8000:1 finds ff15::8000:1', async () => {
    const result = await cli(['groups', 'FF15:0::8000:1', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'ff15::8000:1: no members\n');
  });
});

describe('mcastctl top', { concurrency: true }, () => {
  it('--once --json: the rates over the reads of the window (5 s), by group and pod', async () => {
    const result = await cli(['top', '--once', '--json', '--interval', '0.2', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    const rates = JSON.parse(result.stdout) as { windowSeconds: number; counting: boolean; groups: unknown[] };
    assert.ok(rates.windowSeconds >= 5 && rates.windowSeconds < 7, String(rates.windowSeconds));
    assert.equal(rates.counting, true);
    // The fake's counters stand still: nothing a second.
    assert.deepEqual(rates.groups, [
      {
        group: '239.1.2.3',
        received: { packetsPerSecond: 0, bytesPerSecond: 0 },
        sent: { packetsPerSecond: 0, bytesPerSecond: 0 },
        pods: [
          {
            pod: 'default/pod-a',
            port: 'veth-a',
            received: { packetsPerSecond: 0, bytesPerSecond: 0 },
            sent: { packetsPerSecond: 0, bytesPerSecond: 0 },
          },
        ],
      },
    ]);
  });

  it('--once without a terminal: the table once, as lines (no measuring screen before it)', async () => {
    const result = await cli(['top', '--once', '--interval', '0.2', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /^mcastctl top: 1 group, a second over the last [56]\.\d s, \d\d:\d\d:\d\d UTC; q quits\n/,
    );
    assert.match(result.stdout, /\n {2}default\/pod-a +0\.0 +0 +0\.0 +0\n/);
    assert.doesNotMatch(result.stdout, /\x1b/, 'no escape sequence off a terminal');
  });

  it('bad flags: exit 64 before the daemon is asked', async () => {
    const nowhere = join(root, 'nothing.sock');
    const json = await cli(['top', '--json', '--control-socket', nowhere]);
    assert.equal(json.code, 64);
    assert.match(json.stderr, /--json needs --once/);
    const interval = await cli(['top', '--interval', '0', '--control-socket', nowhere]);
    assert.equal(interval.code, 64);
    assert.match(interval.stderr, /--interval "0" is not a number of seconds from 0\.2 to 3600/);
  });
});

describe('mcastctl completion --list', { concurrency: true }, () => {
  it('groups: the groups the daemon has learned, one a line, sorted', async () => {
    const result = await cli(['completion', '--list', 'groups', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '232.1.1.1\n239.1.2.3\n');
  });

  it('pods: every pod the daemon meters or has as a member', async () => {
    const result = await cli(['completion', '--list', 'pods', '--control-socket', path]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'default/pod-a\ndefault/pod-b\n');
  });

  it('pods: a name with control characters, spaces or a line break is left out', async () => {
    const odd = new FakeDaemonView();
    const port = (pod: string, ofport: number) => ({ ofport, name: `veth-${ofport}`, pod });
    odd.groupsValue = [
      {
        group: '239.1.2.3',
        synced: true,
        members: [],
        ports: [
          port('default/ok', 5),
          port('default/\u001b[2Jclear', 6),
          port('default/two\nnames', 7),
          port('default/a b', 8),
          port('default/$(id)', 9),
        ],
      },
    ];
    const oddPath = join(root, 'odd.sock');
    const oddServer = await ControlServer.listen({ path: oddPath, view: odd });
    try {
      const result = await cli(['completion', '--list', 'pods', '--control-socket', oddPath]);
      assert.equal(result.code, 0, result.stderr);
      // What the shell may run stays a literal: the completion script never expands it.
      assert.equal(result.stdout, 'default/$(id)\ndefault/ok\ndefault/pod-a\ndefault/pod-b\n');
    } finally {
      await oddServer.close();
    }
  });

  it('no daemon: prints nothing at all and exits 0 (a TAB must never print errors)', async () => {
    const result = await cli(['completion', '--list', 'groups', '--control-socket', join(root, 'nothing.sock')]);
    assert.deepEqual([result.code, result.stdout, result.stderr], [0, '', '']);
  });

  it('an unknown shell is a usage error (64)', async () => {
    const result = await cli(['completion', 'fish']);
    assert.equal(result.code, 64);
    assert.match(result.stderr, /unknown shell "fish": give bash or zsh/);
  });
});

describe('mcastctl snoop --daemon', () => {
  it('--json prints each event as one NDJSON line, and stops after --count', async () => {
    const result = await cli(
      ['snoop', '--daemon', '--control-socket', path, '--json', '--count', String(EVENTS.length)],
      () => {
        void until(() => server.subscriberCount > 0, 'the subscription').then(() =>
          EVENTS.forEach((event) => view.emit(event)),
        );
      },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      result.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
      EVENTS,
    );
    assert.equal(result.stderr, '');
  });

  it('prints one human line per event; Ctrl-C exits 0 with no summary', async () => {
    let stdoutSoFar = '';
    const result = await cli(['snoop', '--daemon', '--control-socket', path], (child) => {
      child.stdout!.on('data', (chunk: string) => (stdoutSoFar += chunk));
      void (async () => {
        await until(() => server.subscriberCount > 0, 'the subscription');
        EVENTS.forEach((event) => view.emit(event));
        await until(() => stdoutSoFar.split('\n').length > EVENTS.length, 'the lines');
        child.kill('SIGINT');
      })();
    });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.length, EVENTS.length, result.stdout);
    assert.match(
      lines[0]!,
      /^12:00:00\.000000 igmp +veth-a \(5\) default\/pod-a {2}v3 report from 10\.0\.0\.5: 239\.1\.2\.3 TO_EX \{\}$/,
    );
    assert.match(lines[1]!, /join +veth-a \(5\) default\/pod-a {2}239\.1\.2\.3 host 10\.0\.0\.5$/);
    assert.match(lines[2]!, /sync +239\.1\.2\.3 ports 5,6 in 1\.3 ms: ok$/);
    assert.match(lines[3]!, /leave +veth-a \(5\) default\/pod-a {2}239\.1\.2\.3 host 10\.0\.0\.5 \(expired\)$/);
    assert.match(lines[4]!, /route +add \(10\.0\.0\.5, 239\.1\.2\.3\) iif gw0 oifs eth0$/);
    assert.match(lines[5]!, /replay openflow reconnected: 3 groups replayed$/);
    assert.match(result.stderr, /following the mcastctl daemon at .*; Ctrl-C to stop/);
  });

  it('--duration stops it (exit 0)', async () => {
    const result = await cli(['snoop', '--daemon', '--control-socket', path, '--json', '--duration', '300ms']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '');
  });

  it('exits 69 with a message when the daemon goes away mid-stream', async () => {
    const lostPath = join(root, 'lost', 'mcastctl.sock');
    const lostView = new FakeDaemonView();
    const lost = await ControlServer.listen({ path: lostPath, view: lostView });
    const result = await cli(['snoop', '--daemon', '--control-socket', lostPath, '--json'], () => {
      void (async () => {
        await until(() => lost.subscriberCount > 0, 'the subscription');
        lostView.emit(EVENTS[1]!);
        await new Promise((resolve) => setTimeout(resolve, 100));
        await lost.close();
      })();
    });
    assert.equal(result.code, 69);
    assert.deepEqual(JSON.parse(result.stdout), EVENTS[1]);
    assert.match(result.stderr, new RegExp(`lost the connection to the mcastctl daemon at ${lostPath}`));
  });

  it('--daemon with --read, or --control-socket without --daemon, is a usage error (64)', async () => {
    assert.equal((await cli(['snoop', '--daemon', '--read', 'x.pcap'])).code, 64);
    const alone = await cli(['snoop', '--iface', 'lo', '--control-socket', path]);
    assert.equal(alone.code, 64);
    assert.match(alone.stderr, /--control-socket goes with --daemon/);
  });
});

describe('docs match the code', () => {
  it('every flag of status, groups, snoop, trace and install-service is in its man page, and the commands are in mcastctl(1)', async () => {
    const main = await readFile(join(REPO_ROOT, 'man/mcastctl.1'), 'utf8');
    const commands = ['status', 'groups', 'snoop', 'trace', 'install-service'];
    const helps = await Promise.all(commands.map(async (command) => (await cli([command, '--help'])).stdout));
    for (const [index, command] of commands.entries()) {
      const page = await readFile(join(REPO_ROOT, `man/mcastctl-${command}.1`), 'utf8');
      const help = helps[index]!;
      for (const flag of new Set([...help.matchAll(/(--[a-z-]+)/g)].map((match) => match[1]!))) {
        if (flag === '--help') continue;
        assert.ok(
          page.includes(flag.replace(/-/g, '\\-')),
          `${flag} of ${command} is missing from mcastctl-${command}(1)`,
        );
      }
      assert.ok(main.includes(`.B ${command.replace(/-/g, '\\-')}`), `${command} in mcastctl(1)`);
    }
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { man: string[] };
    for (const command of commands)
      assert.ok(pkg.man.includes(`man/mcastctl-${command}.1`), `mcastctl-${command}(1) in package.json's man`);
  });
});
