/**
 * `mcastctl install-service --root DIR`, run through the CLI's own entry (run()) on
 * temporary roots: a fresh root, a configuration the operator changed (kept, or replaced
 * with --force), a unit that differs (replaced), --dry-run, --json, and the bad roots and
 * the missing permission with their exit codes.
 */
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { run } from '../../src/cli/main.js';
import { execStartWord, pointExecStart } from '../../src/controllers/service/install-service.js';
import { UsageError } from '../../src/errors.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UNITS = ['mcastctl-reconcile.service', 'mcastctl-reconcile.timer', 'mcastctl.service'];
const CONFIGS = ['daemon.yaml', 'group-policy.yaml'];
const EXEC_START = `${realpathSync(process.execPath)} ${realpathSync(join(REPO_ROOT, 'bin/mcastctl.js'))}`;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** run() with stdout and stderr captured (the CLI writes to the process's own). */
async function mcastctl(...args: string[]): Promise<Ran> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const writeOut = process.stdout.write;
  const writeErr = process.stderr.write;
  process.stdout.write = ((chunk: string | Uint8Array) =>
    stdout.push(String(chunk)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) =>
    stderr.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    const code = await run(['install-service', ...args]);
    return { code, stdout: stdout.join(''), stderr: stderr.join('') };
  } finally {
    process.stdout.write = writeOut;
    process.stderr.write = writeErr;
  }
}

const contrib = (path: string) => readFileSync(join(REPO_ROOT, 'contrib', path), 'utf8');

describe('mcastctl install-service --root', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'mcl-install-service-'));
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(scratch, 'root-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  const unitDir = () => join(root, 'etc/systemd/system');
  const configDir = () => join(root, 'etc/mcastctl');

  it('fresh: the three units with ExecStart running this installation, the two configuration files as shipped, and the next step', async () => {
    const result = await mcastctl('--root', root);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(readdirSync(unitDir()).sort(), UNITS);
    assert.deepEqual(readdirSync(configDir()).sort(), CONFIGS);
    const daemonUnit = readFileSync(join(unitDir(), 'mcastctl.service'), 'utf8');
    assert.match(
      daemonUnit,
      new RegExp(
        `^ExecStart=${EXEC_START.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&')} daemon --config /etc/mcastctl/daemon.yaml$`,
        'm',
      ),
    );
    assert.equal(daemonUnit, pointExecStart(contrib('systemd/mcastctl.service'), EXEC_START));
    assert.match(
      readFileSync(join(unitDir(), 'mcastctl-reconcile.service'), 'utf8'),
      /^ExecStart=\S+ \S+mcastctl\.js reconcile -f \/etc\/mcastctl\/state\.yaml$/m,
    );
    assert.equal(
      readFileSync(join(unitDir(), 'mcastctl-reconcile.timer'), 'utf8'),
      contrib('systemd/mcastctl-reconcile.timer'),
    );
    for (const unit of UNITS)
      assert.doesNotMatch(readFileSync(join(unitDir(), unit), 'utf8'), /^ExecStart=\/usr\/local\/bin/m);
    for (const name of CONFIGS) assert.equal(readFileSync(join(configDir(), name), 'utf8'), contrib(name));
    assert.equal(result.stdout.match(/^wrote +/gm)?.length, 5, result.stdout);
    assert.match(result.stdout, /next: .*systemctl daemon-reload && systemctl enable --now mcastctl$/m);
    assert.equal(result.stderr, '');
  });

  it('again: everything unchanged; a configuration the operator changed is kept, and said so', async () => {
    assert.equal((await mcastctl('--root', root)).code, 0);
    writeFileSync(join(configDir(), 'daemon.yaml'), 'bridge: br-ex\n');
    const result = await mcastctl('--root', root);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(readFileSync(join(configDir(), 'daemon.yaml'), 'utf8'), 'bridge: br-ex\n');
    assert.match(
      result.stdout,
      /^kept +\S+\/etc\/mcastctl\/daemon\.yaml \(exists and differs; --force replaces it\)$/m,
    );
    assert.equal(result.stdout.match(/^unchanged +/gm)?.length, 4, result.stdout);
  });

  it('--force replaces a changed configuration; a unit that differs is replaced without it', async () => {
    assert.equal((await mcastctl('--root', root)).code, 0);
    writeFileSync(join(configDir(), 'group-policy.yaml'), 'rules: []\n');
    writeFileSync(join(unitDir(), 'mcastctl.service'), '[Service]\nExecStart=/old/mcastctl daemon\n');
    const kept = await mcastctl('--root', root);
    assert.match(kept.stdout, /^updated +\S+mcastctl\.service$/m);
    assert.equal(readFileSync(join(configDir(), 'group-policy.yaml'), 'utf8'), 'rules: []\n');
    const forced = await mcastctl('--root', root, '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /^replaced +\S+group-policy\.yaml$/m);
    assert.equal(readFileSync(join(configDir(), 'group-policy.yaml'), 'utf8'), contrib('group-policy.yaml'));
    assert.equal(
      readFileSync(join(unitDir(), 'mcastctl.service'), 'utf8'),
      pointExecStart(contrib('systemd/mcastctl.service'), EXEC_START),
    );
    // No temporary file is left beside what was written.
    assert.deepEqual(readdirSync(configDir()).sort(), CONFIGS);
    assert.deepEqual(readdirSync(unitDir()).sort(), UNITS);
  });

  it('--dry-run says what it would write and writes nothing', async () => {
    const result = await mcastctl('--root', root, '--dry-run');
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(readdirSync(root), []);
    assert.equal(result.stdout.match(/^would write +/gm)?.length, 5, result.stdout);
    assert.match(result.stdout, /nothing was written/);
  });

  it('--json: one document of every file and its action, and the next step', async () => {
    const result = await mcastctl('--root', root, '--json');
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(result.stdout) as {
      root: string;
      execStart: string;
      files: { kind: string; path: string; action: string }[];
      next: string;
    };
    assert.equal(document.execStart, EXEC_START);
    assert.deepEqual(
      document.files.map((file) => [file.kind, file.path.slice(root.length), file.action]),
      [
        ['unit', '/etc/systemd/system/mcastctl.service', 'write'],
        ['unit', '/etc/systemd/system/mcastctl-reconcile.service', 'write'],
        ['unit', '/etc/systemd/system/mcastctl-reconcile.timer', 'write'],
        ['config', '/etc/mcastctl/daemon.yaml', 'write'],
        ['config', '/etc/mcastctl/group-policy.yaml', 'write'],
      ],
    );
    assert.match(document.next, /systemctl enable --now mcastctl/);
  });

  it('a bad root is a usage error (exit 64): missing, a file, a file in the way of a directory', async () => {
    const missing = await mcastctl('--root', join(root, 'nope'));
    assert.equal(missing.code, 64);
    assert.match(missing.stderr, /^mcastctl: the root "[^"]+nope" does not exist \(ENOENT\)$/m);
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    const notDirectory = await mcastctl('--root', file);
    assert.equal(notDirectory.code, 64);
    assert.match(notDirectory.stderr, /is not a directory/);
    writeFileSync(join(root, 'etc'), 'not a directory');
    const inTheWay = await mcastctl('--root', root);
    assert.equal(inTheWay.code, 64, inTheWay.stderr);
    assert.match(inTheWay.stderr, /ENOTDIR|EEXIST/);
  });

  it('an empty root is refused (exit 64): it would be the working directory', async () => {
    const before = readdirSync(process.cwd());
    const result = await mcastctl('--root', '');
    assert.equal(result.code, 64, result.stderr);
    assert.match(result.stderr, /^mcastctl: the root is empty$/m);
    assert.deepEqual(readdirSync(process.cwd()), before, 'nothing written in the working directory');
  });

  it('a symbolic link that leads out of the root is refused (exit 64), and nothing is written there', async () => {
    const outside = mkdtempSync(join(scratch, 'outside-'));
    symlinkSync(outside, join(root, 'etc'));
    const result = await mcastctl('--root', root);
    assert.equal(result.code, 64, result.stderr);
    assert.match(result.stderr, /leads out of the root .*: a symbolic link on its way goes to /);
    assert.deepEqual(readdirSync(outside), [], 'nothing written where the link points');
    // A link that stays inside the root is followed.
    rmSync(join(root, 'etc'));
    mkdirSync(join(root, 'real-etc'));
    symlinkSync('real-etc', join(root, 'etc'));
    const inside = await mcastctl('--root', root);
    assert.equal(inside.code, 0, inside.stderr);
    assert.deepEqual(readdirSync(join(root, 'real-etc/systemd/system')).sort(), UNITS);
  });

  it('all or nothing: a configuration file that cannot be written leaves no unit written either', async () => {
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc/mcastctl'), 'a file where the directory goes');
    const result = await mcastctl('--root', root);
    assert.equal(result.code, 64, result.stderr);
    assert.match(result.stderr, /cannot create the directory of .*etc\/mcastctl\/daemon\.yaml: (ENOTDIR|EEXIST)/);
    assert.deepEqual(readdirSync(unitDir()), [], 'no unit, and no temporary file, left behind');
  });

  it('a root it may not write in is a permission error (exit 77)', async () => {
    // sysfs refuses every mkdir, even root's, with EPERM. Any other user is stopped
    // before that by the mode of /sys/kernel (0755, root's) with EACCES, as in /etc.
    const refusal = process.geteuid?.() === 0 ? 'EPERM' : 'EACCES';
    const result = await mcastctl('--root', '/sys/kernel');
    assert.equal(result.code, 77, result.stderr);
    assert.match(result.stderr, new RegExp(`: ${refusal}$`, 'm'));
  });
});

describe('ExecStart words', () => {
  it('plain paths stay as they are; spaces, quotes, % and $ are quoted and escaped for systemd', () => {
    assert.equal(
      execStartWord('/usr/lib/node_modules/mcastctl/bin/mcastctl.js'),
      '/usr/lib/node_modules/mcastctl/bin/mcastctl.js',
    );
    assert.equal(execStartWord('/opt/my tools/node'), '"/opt/my tools/node"');
    assert.equal(execStartWord('/opt/100%/node'), '/opt/100%%/node');
    assert.equal(execStartWord('/opt/$HOME/"x"'), '"/opt/$$HOME/\\"x\\""');
  });

  it('a path with a line break or a control character is refused: it would start another directive', () => {
    for (const word of ['/opt/x\nExecStartPre=/bin/sh -c id', '/opt/tab\there', '/opt/\u001b[2J']) {
      assert.throws(
        () => execStartWord(word),
        (error: unknown) =>
          error instanceof UsageError && error.exitCode === 64 && /control character or line break/.test(error.message),
      );
    }
  });

  it("only contrib's ExecStart of /usr/local/bin/mcastctl is pointed elsewhere", () => {
    const unit =
      '# ExecStart=/usr/local/bin/mcastctl in a comment\nExecStart=/usr/local/bin/mcastctl daemon\nExecReload=/bin/kill -HUP $MAINPID\n';
    assert.equal(
      pointExecStart(unit, '/n /s'),
      '# ExecStart=/usr/local/bin/mcastctl in a comment\nExecStart=/n /s daemon\nExecReload=/bin/kill -HUP $MAINPID\n',
    );
  });
});
