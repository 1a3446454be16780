/**
 * The package as a node gets it: `npm pack`, then `npm install -g` of the tarball into a
 * fresh prefix with no compiler to be had (cc, gcc, g++, c++ and make on PATH are stand-ins
 * that write down that they were called and fail), its dependencies from npm's cache. The
 * installed program must then run from that prefix alone: its version, decoding a
 * capture, its manual pages, `install-service`, and a live capture inside a lab namespace
 * with the prebuilt native addon, seeing the IGMP report a lab host sends.
 *
 * The pack does not build again what is built already (prepack runs scripts/build.sh,
 * which builds only what changed). Needs root (the lab), npm's cache filled by `npm ci`
 * (what the cache lacks is fetched), man (man-db), python3, and a built tree (`npm run build`).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import * as igmp from '../../src/packet/igmp/index.js';
import { control, startDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import { OvsNode } from '../lab/ovs.js';
import { ovsGroupPorts, waitForOvsMembers } from '../lab/switch-checks.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const FIXTURE = join(REPO_ROOT, 'test/fixtures/ethernet-micro.pcap');
const COMPILERS = ['cc', 'gcc', 'g++', 'c++', 'make'];
const GROUP = '239.43.0.9';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a node's shell: none of npm's or the test runner's variables, `path` first on PATH. */
function cleanEnv(path: string[]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|NODE_OPTIONS$|NODE_TEST_CONTEXT$|MCASTCTL_BIN$)/i.test(key)) env[key] = value;
  }
  env.PATH = [...path, process.env.PATH ?? '/usr/bin:/bin'].join(':');
  env.NO_COLOR = '1';
  return env;
}

function exec(
  argv: readonly string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 << 20,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr: stderr || (error?.message ?? '') });
      },
    );
  });
}

/** An IGMPv2 report for `group`, by the project's own codec. */
const v2Report = (group: string): Uint8Array => igmp.encode({ kind: 'report', version: 2, group });

describe('the package installed from its tarball on a node without a compiler', () => {
  let scratch: string;
  let prefix: string;
  let calls: string;
  let env: NodeJS.ProcessEnv;
  let installed: string;
  let lab: Lab | undefined;
  let tarballPath: string;

  const mcastctl = (...args: string[]) => exec([join(prefix, 'bin/mcastctl'), ...args], { env, cwd: scratch });

  before(async () => {
    if (process.getuid?.() !== 0) throw new Error('the package test needs root (the lab namespaces): run it with sudo');
    scratch = mkdtempSync(join(tmpdir(), 'mcl-package-'));
    prefix = join(scratch, 'prefix');
    const shims = join(scratch, 'no-compiler');
    calls = join(scratch, 'compiler-calls');
    mkdirSync(shims);
    for (const name of COMPILERS) {
      writeFileSync(join(shims, name), `#!/bin/sh\necho "${name} $*" >> '${calls}'\nexit 127\n`);
      chmodSync(join(shims, name), 0o755);
    }
    env = cleanEnv([shims]);

    const started = Date.now();
    const pack = await exec(['npm', 'pack', '--pack-destination', scratch, '--loglevel=error'], {
      cwd: REPO_ROOT,
      env: cleanEnv([]),
      timeoutMs: 300_000,
    });
    assert.equal(pack.code, 0, `npm pack: ${pack.stderr}`);
    const tarball = readdirSync(scratch).find((name) => name === `mcastctl-${VERSION}.tgz`);
    assert.ok(tarball, `npm pack left no mcastctl-${VERSION}.tgz: ${pack.stdout}`);
    const packedAt = Date.now();

    // --prefer-offline: every tarball from npm's cache, which npm ci filled; only
    // registry metadata the cache lacks is fetched.
    const install = await exec(
      [
        'npm',
        'install',
        '--global',
        '--prefix',
        prefix,
        `./${tarball}`,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
      ],
      {
        cwd: scratch,
        env: { ...env, npm_config_foreground_scripts: 'true' },
        timeoutMs: 300_000,
      },
    );
    assert.equal(install.code, 0, `npm install -g: ${install.stderr}`);
    // The install script ran (and found the prebuilt addon): the check below means something.
    assert.match(install.stdout, /node-gyp-build/, 'the install script did not run');
    tarballPath = join(scratch, tarball);
    installed = join(prefix, 'lib/node_modules/mcastctl');
    process.stderr.write(`# packed in ${packedAt - started} ms, installed in ${Date.now() - packedAt} ms\n`);
  });

  after(async () => {
    await lab?.destroy();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it('installs without asking for a compiler: the prebuilt addon is there, nothing was built', () => {
    assert.equal(existsSync(calls) ? readFileSync(calls, 'utf8') : '', '', 'a compiler or make was called');
    assert.ok(readdirSync(join(installed, 'prebuilds/linux-x64')).some((name) => name.endsWith('.node')));
    assert.equal(existsSync(join(installed, 'build')), false, 'the install built the addon');
    assert.equal(existsSync(join(installed, 'node_modules/raw-socket')), false);
  });

  it('where no prebuilt copy fits, the install script builds the addon: without a compiler that fails, asking for make', async () => {
    // The same package less its prebuilds/: what a machine of another architecture gets.
    const unpacked = join(scratch, 'unpacked');
    mkdirSync(unpacked);
    assert.equal((await exec(['tar', '-xzf', tarballPath, '-C', unpacked], { env })).code, 0);
    rmSync(join(unpacked, 'package/prebuilds'), { recursive: true });
    const bare = join(scratch, 'mcastctl-bare.tgz');
    assert.equal((await exec(['tar', '-czf', bare, '-C', unpacked, 'package'], { env })).code, 0);
    const install = await exec(
      [
        'npm',
        'install',
        '--global',
        '--prefix',
        join(scratch, 'bare-prefix'),
        bare,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
      ],
      {
        cwd: scratch,
        env,
        timeoutMs: 300_000,
      },
    );
    assert.notEqual(install.code, 0, 'the install succeeded without a prebuilt addon and without a compiler');
    assert.match(existsSync(calls) ? readFileSync(calls, 'utf8') : '', /^make /m);
    rmSync(calls, { force: true });
  });

  it('mcastctl --version is the package version', async () => {
    const result = await mcastctl('--version');
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), VERSION);
  });

  it('snoop --read decodes a capture', async () => {
    const result = await mcastctl('snoop', '--read', FIXTURE, '--json');
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { frame: number; type: string; group?: string });
    assert.ok(lines.length > 0);
    assert.deepEqual(lines[1], { ...lines[1], frame: 2, type: 'report', group: '239.4.5.6' });
  });

  it('daemon --help, and its manual page from the prefix', async () => {
    const help = await mcastctl('daemon', '--help');
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: mcastctl daemon/);
    const man = await exec(['man', '-M', join(prefix, 'share/man'), 'mcastctl-daemon'], {
      env: { ...env, MANPAGER: 'cat', MANWIDTH: '80' },
    });
    assert.equal(man.code, 0, `man: ${man.stderr} (scripts/setup.sh installs man-db)`);
    assert.match(man.stdout, /MCASTCTL-DAEMON\(1\)/);
    assert.match(man.stdout, /^NAME$/m);
  });

  it('every command has its --help, and every manual page opens from the prefix: mcastctl and each mcastctl-<command>', async () => {
    const pages = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { man: string[] }).man.map(
      (path) => /([^/]+)\.1$/.exec(path)![1]!,
    );
    const commands = pages.filter((page) => page !== 'mcastctl').map((page) => page.replace(/^mcastctl-/, ''));
    // Every subcommand the program lists has its page, and every page is installed.
    const listed = (await mcastctl('--help')).stdout;
    for (const command of commands)
      assert.match(listed, new RegExp(`^  ${command}\\b`, 'm'), `mcastctl --help does not list ${command}`);
    for (const page of pages) {
      const man = await exec(['man', '-M', join(prefix, 'share/man'), page], {
        env: { ...env, MANPAGER: 'cat', MANWIDTH: '80' },
      });
      assert.equal(man.code, 0, `man ${page}: ${man.stderr}`);
      assert.match(man.stdout, new RegExp(`${page.toUpperCase()}\\(1\\)`), `man ${page}`);
    }
    for (const command of commands) {
      const help = await mcastctl(command, '--help');
      assert.equal(help.code, 0, `${command} --help: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`^Usage: mcastctl ${command}\\b`), `${command} --help`);
    }
  });

  it('install-service places the units, ExecStart running the installed program', async () => {
    const root = join(scratch, 'root');
    mkdirSync(root);
    const result = await mcastctl('install-service', '--root', root);
    assert.equal(result.code, 0, result.stderr);
    const unit = readFileSync(join(root, 'etc/systemd/system/mcastctl.service'), 'utf8');
    const entry = realpathSync(join(installed, 'bin/mcastctl.js'));
    assert.ok(
      unit.includes(
        `\nExecStart=${realpathSync(process.execPath)} ${entry} daemon --config /etc/mcastctl/daemon.yaml\n`,
      ),
      unit,
    );
    assert.ok(existsSync(join(root, 'etc/systemd/system/mcastctl-reconcile.timer')));
    assert.ok(existsSync(join(root, 'etc/mcastctl/daemon.yaml')));
    assert.match(result.stdout, /systemctl daemon-reload && systemctl enable --now mcastctl/);
  });

  it('an upgrade keeps the learned state: a daemon of this release, stopped, the next release installed over it, started: its groups are back before any report', async () => {
    // The next release: this package with the next patch version.
    const next = VERSION.replace(
      /^(\d+)\.(\d+)\.(\d+).*$/,
      (_, major: string, minor: string, patch: string) => `${major}.${minor}.${Number(patch) + 1}`,
    );
    const unpacked = join(scratch, 'next');
    mkdirSync(unpacked);
    assert.equal((await exec(['tar', '-xzf', tarballPath, '-C', unpacked], { env })).code, 0);
    const manifest = join(unpacked, 'package/package.json');
    writeFileSync(manifest, JSON.stringify({ ...JSON.parse(readFileSync(manifest, 'utf8')), version: next }, null, 2));
    const nextTarball = join(scratch, `mcastctl-${next}.tgz`);
    assert.equal((await exec(['tar', '-czf', nextTarball, '-C', unpacked, 'package'], { env })).code, 0);

    const upgradeLab = Lab.create();
    try {
      const node = await OvsNode.start(upgradeLab, 'up');
      const gateway = await node.addGateway({ address: '10.64.1.1/24' });
      const pod = await node.addPod('p1', { address: '10.64.1.11/24' });
      const bin = join(prefix, 'bin/mcastctl');
      const stateDir = upgradeLab.file('upgrade-state');
      const group = '239.64.0.1';

      let daemon = startDaemon(node, { bin, stateDir, multicastInterfaces: [] });
      await daemon.ready();
      assert.equal((await control<DaemonStatus>(daemon, ['status'])).version, VERSION);
      const receiver = await pod.listen(group, 5640);
      try {
        await waitForOvsMembers(node, group, [pod]);
        const stateFile = join(stateDir, 'state.json');
        await waitUntil(
          'state.json with the group',
          async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(group),
          5000,
          100,
        );
        assert.deepEqual(await daemon.stop('SIGTERM'), { code: 0, signal: null });
        const saved = JSON.parse(readFileSync(stateFile, 'utf8')) as { version: number; writtenBy: string };
        assert.deepEqual({ version: saved.version, writtenBy: saved.writtenBy }, { version: 2, writtenBy: VERSION });

        // From now on no report of the member reaches the daemon: only the state file can bring the group back.
        await upgradeLab.exec(pod.ns, ['nft', '-f', '-'], {
          input:
            'table ip mclupgrade {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    ip protocol igmp counter drop\n  }\n}\n',
        });
        const install = await exec(
          [
            'npm',
            'install',
            '--global',
            '--prefix',
            prefix,
            nextTarball,
            '--prefer-offline',
            '--no-audit',
            '--no-fund',
            '--loglevel=error',
          ],
          {
            cwd: scratch,
            env,
            timeoutMs: 300_000,
          },
        );
        assert.equal(install.code, 0, `npm install -g of the next release: ${install.stderr}`);
        assert.equal((await mcastctl('--version')).stdout.trim(), next);

        daemon = startDaemon(node, { bin, stateDir, multicastInterfaces: [] });
        await daemon.ready();
        const restored = await daemon.waitForLog((entry) => entry['msg'] === 'state restored', 2000);
        assert.equal(restored['members'], 1);
        const status = await control<DaemonStatus>(daemon, ['status']);
        assert.equal(status.version, next);
        assert.equal(status.groups, 1);
        const reports = Object.entries(status.counters.igmpMessages).filter(
          ([type, count]) => type.endsWith('_report') && count > 0,
        );
        assert.deepEqual(reports, [], 'the new daemon heard a report: the state was not what restored the member');
        const groups = await control<GroupView[]>(daemon, ['groups']);
        assert.deepEqual(
          groups.map((view) => [view.group, view.members.map((member) => member.port.name)]),
          [[group, [pod.port]]],
        );
        // The group's OVS bucket for the pod (and the gateway's, which every group has) is the restored member's.
        assert.deepEqual(((await ovsGroupPorts(node, group)) ?? []).sort(), [gateway.ofport, pod.ofport].sort());
        assert.deepEqual(await daemon.stop('SIGTERM'), { code: 0, signal: null });

        // Back to a release that cannot read the file: refused, exit 64, the file left as it was.
        const newer = JSON.stringify({
          ...JSON.parse(readFileSync(stateFile, 'utf8')),
          version: 3,
          writtenBy: '9.0.0',
        });
        writeFileSync(stateFile, newer);
        daemon = startDaemon(node, { bin, stateDir, multicastInterfaces: [] });
        assert.deepEqual(await daemon.exited, { code: 64, signal: null });
        assert.match(
          daemon.logs().join('\n'),
          /is of format 3 \(written by mcastctl 9\.0\.0\), newer than this mcastctl \S+ reads \(formats 1 to 2\)/,
        );
        assert.equal(readFileSync(stateFile, 'utf8'), newer);
      } finally {
        await receiver.stop();
        await daemon.stop('SIGTERM').catch(() => undefined);
      }
    } finally {
      await upgradeLab.destroy();
    }
  });

  it('snoop --iface in a lab namespace sees the IGMP report a lab host sends', async () => {
    lab = Lab.create();
    const ns = await lab.namespace('sw');
    const bridge = await lab.linuxBridge(ns, 'br', { address: '10.63.0.1/24', snooping: false });
    const observer = await lab.host('obs', { bridge });
    const sender = await Member.start(lab, await lab.host('tx', { bridge }));
    const snoop = spawnInNamespace(
      lab,
      observer.ns,
      [join(prefix, 'bin/mcastctl'), 'snoop', '--iface', observer.iface, '--count', '1', '--json'],
      env,
    );
    // Sent until snoop has one: it listens only once it has started.
    for (let attempt = 0; attempt < 60 && snoop.exitCode() === null; attempt++) {
      await sender.sendIgmp(GROUP, v2Report(GROUP));
      await sleep(250);
    }
    const result = await snoop.done;
    assert.equal(result.code, 0, result.stderr);
    const line = JSON.parse(result.stdout.trim()) as {
      src: string;
      dst: string;
      type: string;
      version: number;
      group: string;
    };
    assert.deepEqual(
      { src: line.src, dst: line.dst, type: line.type, version: line.version, group: line.group },
      { src: sender.host.address, dst: GROUP, type: 'report', version: 2, group: GROUP },
    );
  });
});

/** Runs argv inside `ns` with `env`; `done` resolves with its output when it exits (killed after 20 s). */
function spawnInNamespace(
  lab: Lab,
  ns: string,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { done: Promise<Ran>; exitCode(): number | null } {
  const child = lab.spawn(ns, argv, { env });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const done = new Promise<Ran>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
  return { done, exitCode: () => child.exitCode ?? (child.signalCode === null ? null : -1) };
}
