/**
 * Hostile files given to the built CLI: install -f, reconcile -f --dry-run and daemon
 * --config on /dev/zero, a 50 MB file, a FIFO, 1,000 levels of nesting and a billion
 * laughs each exit 64 within 2 s of CPU time and under 200 MiB of peak RSS, naming the file (and the
 * line); no stack trace. Also the figures of a 5 MB file with one bad line and of a valid
 * 100,000-group file, and the flags that go with the files (--max-file-size, --lock-file).
 *
 * No OVS is needed, nor touched: each command points at an empty OVS run directory, and
 * the file is refused before anything else is looked at.
 */
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, MCASTCTL_BIN, REPO_ROOT } from '../lab/cli.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the hostile-file tests run the built CLI: ${missing}`);

/**
 * "At once" is judged by the CPU time the command used (user + system): a file parsed
 * whole, or read to its end, takes seconds of it. Its wall time on a loaded machine says
 * more of the machine than of the command (0.4 s alone, 5 s with both cores busy, seen
 * here), so the wall time only catches a command that hangs (the FIFO read blocking).
 */
const LIMIT_CPU_MS = 2_000;
const LIMIT_WALL_MS = 30_000;
const LIMIT_RSS_BYTES = 200 * 1024 * 1024;
/** GNU time gives the exact CPU time and peak RSS (from wait4); scripts/setup.sh installs it. */
const GNU_TIME = '/usr/bin/time';
if (!existsSync(GNU_TIME))
  throw new Error(
    `the hostile-file tests measure with GNU time: ${GNU_TIME} is missing (scripts/setup.sh installs it)`,
  );

interface Measured {
  code: number | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
  /** User plus system CPU time of the command. */
  cpuMs: number;
  peakRssBytes: number;
}

/** Runs `node bin/mcastctl.js ARGS` under GNU time: its wall time, CPU time and peak resident set. */
function measure(args: readonly string[], scratch: string): Promise<Measured> {
  const timeFile = join(scratch, `time-${process.hrtime.bigint()}.txt`);
  const argv = [GNU_TIME, '-f', '%U %S %M', '-o', timeFile, process.execPath, MCASTCTL_BIN, ...args];
  const started = performance.now();
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const elapsedMs = performance.now() - started;
      clearTimeout(killer);
      // The last line: "Command exited with non-zero status N" comes before it.
      const [user, system, peakKib] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
      rmSync(timeFile, { force: true });
      resolve({ code, stdout, stderr, elapsedMs, cpuMs: (user! + system!) * 1000, peakRssBytes: peakKib! * 1024 });
    });
  });
}

const show = (result: Measured) =>
  `exit ${result.code}, ${(result.elapsedMs / 1000).toFixed(2)} s (${(result.cpuMs / 1000).toFixed(2)} s of CPU), ${(result.peakRssBytes / 2 ** 20).toFixed(0)} MiB peak RSS`;

/** A file of `count` valid groups in block style (two lines each, from line 2), then `tail`. */
function groupsFile(count: number, tail = ''): string {
  const lines = ['groups:'];
  for (let index = 0; index < count; index++) {
    lines.push(
      `  - group: 239.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
      `    ports: [pod-a, pod-b, ${(index % 100) + 1}]`,
    );
  }
  return `${lines.join('\n')}\n${tail}`;
}

describe('hostile files: refused at once, in little memory', { timeout: 300_000 }, () => {
  let scratch: string;
  let files: Record<string, string>;
  const commands: Record<string, (file: string) => string[]> = {};

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'mcastctl-hostile-files-'));
    const rundir = join(scratch, 'ovs-run');
    mkdirSync(rundir);
    commands['install -f'] = (file) => ['install', '-f', file, '--ovs-rundir', rundir];
    commands['reconcile -f'] = (file) => ['reconcile', '-f', file, '--dry-run', '--no-daemon', '--ovs-rundir', rundir];
    const daemonPlaces = [
      '--state-dir',
      join(scratch, 'state'),
      '--control-socket',
      join(scratch, 'control.sock'),
      '--no-metrics',
    ];
    commands['daemon --config'] = (file) => ['daemon', '--config', file, '--ovs-rundir', rundir, ...daemonPlaces];
    const fifo = join(scratch, 'fifo.yaml');
    execFileSync('mkfifo', [fifo]);
    const laughs = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let level = 1; level < 9; level++) {
      const [name, previous] = [String.fromCharCode(97 + level), String.fromCharCode(96 + level)];
      laughs.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]`);
    }
    files = {
      '/dev/zero': '/dev/zero',
      'a FIFO': fifo,
      'a 50 MB file with one bad last entry': join(scratch, 'large.yaml'),
      '1,000 levels of nesting (2 KB)': join(scratch, 'deep.yaml'),
      'a billion laughs': join(scratch, 'laughs.yaml'),
    };
    // 1,040,000 valid groups (52 MB), then one that is not an address.
    writeFileSync(
      files['a 50 MB file with one bad last entry']!,
      groupsFile(1_040_000, '  - group: 239.1.1.300\n    ports: [x]\n'),
    );
    writeFileSync(files['1,000 levels of nesting (2 KB)']!, `groups: ${'['.repeat(1000)}${']'.repeat(1000)}\n`);
    writeFileSync(files['a billion laughs']!, `${laughs.join('\n')}\n`);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  const expected: Record<string, RegExp> = {
    '/dev/zero':
      /cannot read (declared state|config) \/dev\/zero: a character device: only a regular file is read here/,
    'a FIFO': /cannot read (declared state|config) .*fifo\.yaml: a FIFO \(named pipe\)/,
    'a 50 MB file with one bad last entry':
      /cannot read (declared state|config) .*large\.yaml: \d+ bytes, over the limit of (32|1) MiB/,
    '1,000 levels of nesting (2 KB)': /deep\.yaml(:| line )1: nested deeper than 64 levels/,
    'a billion laughs':
      /laughs\.yaml(:| line )1: an anchor \(&a\): anchors and aliases \(&name, \*name\) are not allowed here/,
  };
  for (const command of ['install -f', 'reconcile -f', 'daemon --config']) {
    for (const name of Object.keys(expected)) {
      it(`${command} ${name}: exit 64 within 2 s of CPU, under 200 MiB`, async (t) => {
        const result = await measure(commands[command]!(files[name]!), scratch);
        t.diagnostic(show(result));
        assert.equal(result.code, 64, result.stderr);
        assert.match(result.stderr, expected[name]!);
        assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
        assert.ok(result.cpuMs < LIMIT_CPU_MS, show(result));
        assert.ok(result.elapsedMs < LIMIT_WALL_MS, show(result));
        assert.ok(result.peakRssBytes < LIMIT_RSS_BYTES, show(result));
      });
    }
  }
});

describe('hostile files: the figures of large files, and the flags that go with them', { timeout: 300_000 }, () => {
  let scratch: string;
  let rundir: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'mcastctl-large-files-'));
    rundir = join(scratch, 'ovs-run');
    mkdirSync(rundir);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a 5 MB file with one bad last line: the line is named, from one parse (the memory of one)', async (t) => {
    const count = 104_000;
    const file = join(scratch, 'bad-5mb.yaml');
    writeFileSync(file, groupsFile(count, '  - group: 239.1.1.300\n    ports: [x]\n'));
    for (const args of [
      ['install', '-f', file],
      ['reconcile', '-f', file, '--dry-run', '--no-daemon'],
    ]) {
      const result = await measure([...args, '--ovs-rundir', rundir], scratch);
      t.diagnostic(`${args[0]}: ${show(result)}`);
      assert.equal(result.code, 64, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(`bad-5mb\\.yaml:${2 + 2 * count}: "239\\.1\\.1\\.300" is not an IPv4 or IPv6 address`),
      );
      // A second, position-keeping parse of the whole file took 9 s and 850 MiB here; one
      // parse takes about 205 MiB. The memory tells the two apart on a busy machine too,
      // where the time of one parse doubles (the time is a figure: the diagnostic above).
      assert.ok(result.peakRssBytes < 500 * 2 ** 20, show(result));
    }
  });

  it('a valid 100,000-group file is read, and then OVS is wanted (exit 69: none here)', async (t) => {
    const file = join(scratch, 'good-100k.yaml');
    writeFileSync(file, groupsFile(100_000));
    const result = await measure(['install', '-f', file, '--ovs-rundir', rundir], scratch);
    t.diagnostic(`install: ${show(result)}`);
    assert.equal(result.code, 69, result.stderr);
    assert.match(result.stderr, /cannot connect to OVSDB/);
    assert.ok(result.peakRssBytes < 500 * 2 ** 20, show(result));
  });

  it('--max-file-size: a smaller limit refuses, a larger one reads; a bad size is a usage error', async () => {
    const file = join(scratch, 'groups.yaml');
    writeFileSync(file, groupsFile(2_000));
    for (const command of [
      ['install', '-f', file],
      ['reconcile', '-f', file, '--dry-run', '--no-daemon'],
    ]) {
      const small = await measure([...command, '--max-file-size', '16K', '--ovs-rundir', rundir], scratch);
      assert.equal(small.code, 64, small.stderr);
      assert.match(small.stderr, /over the limit of 16 KiB\nmcastctl: hint: raise the limit with --max-file-size/);
      const large = await measure([...command, '--max-file-size', '1MiB', '--ovs-rundir', rundir], scratch);
      assert.equal(large.code, 69, large.stderr);
      const bad = await measure([...command, '--max-file-size', 'lots', '--ovs-rundir', rundir], scratch);
      assert.equal(bad.code, 64, bad.stderr);
      assert.match(bad.stderr, /--max-file-size takes a size such as 32M, 64MiB or 1G, not "lots"/);
    }
    const alone = await measure(
      ['install', '239.1.2.3', '--ports', 'a', '--max-file-size', '1M', '--ovs-rundir', rundir],
      scratch,
    );
    assert.equal(alone.code, 64, alone.stderr);
    assert.match(alone.stderr, /--max-file-size goes with -f FILE/);
  });

  it("reconcile --lock-file '' is a usage error, before the file is read or a lock is taken", async () => {
    const file = join(scratch, 'one-group.yaml');
    writeFileSync(file, groupsFile(1));
    const result = await measure(
      ['reconcile', '-f', file, '--no-daemon', '--lock-file', '', '--ovs-rundir', rundir],
      scratch,
    );
    assert.equal(result.code, 64, result.stderr);
    assert.match(result.stderr, /--lock-file takes a path, not ""/);
  });
});
