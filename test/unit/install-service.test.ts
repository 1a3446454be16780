/**
 * `mcastctl install-service --root DIR`, run through the CLI's own entry (run()) on
 * temporary roots: a fresh root, a configuration the operator changed (kept, or replaced
 * with --force), a unit that differs (replaced), --dry-run, --json, and what is refused
 * with its exit code (a bad or empty root, control characters, a symbolic link anywhere
 * below the root, something in a file's or a directory's place, no permission), each
 * leaving nothing written. Then the writing itself (root-files.ts) failing half-way,
 * which takes back all it did, and an installation whose own path has a line break.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from '../helpers/node-test.js';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { run } from '../../src/cli/main.js';
import { execStartWord, pointExecStart } from '../../src/controllers/service/install-service.js';
import { type TreeRoot, writeAllOrNone } from '../../src/controllers/service/root-files.js';
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

/** Every path below `directory`, sorted; links are listed, not followed. */
const tree = (directory: string) => (readdirSync(directory, { recursive: true }) as string[]).sort();

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
    for (const unit of UNITS) assert.equal(statSync(join(unitDir(), unit)).mode & 0o777, 0o644, unit);
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
    // No temporary file, and no kept copy of a replaced one, is left beside what was written.
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
    assert.match(missing.stderr, /^mcastctl: --root "[^"]+nope" does not exist \(ENOENT\)$/m);
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    const notDirectory = await mcastctl('--root', file);
    assert.equal(notDirectory.code, 64);
    assert.match(notDirectory.stderr, /^mcastctl: --root "[^"]+a-file" is not a directory$/m);
    rmSync(file);
    writeFileSync(join(root, 'etc'), 'not a directory');
    const inTheWay = await mcastctl('--root', root);
    assert.equal(inTheWay.code, 64, inTheWay.stderr);
    assert.match(inTheWay.stderr, /\/etc is in the way: not a directory \(ENOTDIR\)$/m);
    assert.deepEqual(tree(root), ['etc'], 'nothing written');
  });

  it('an empty root is refused (exit 64): it would be the working directory, which stays empty', async () => {
    const workingDirectory = mkdtempSync(join(scratch, 'cwd-'));
    const before = process.cwd();
    process.chdir(workingDirectory);
    try {
      const result = await mcastctl('--root', '');
      assert.equal(result.code, 64, result.stderr);
      assert.match(result.stderr, /^mcastctl: --root "" is empty: it would mean the working directory$/m);
    } finally {
      process.chdir(before);
    }
    assert.deepEqual(tree(workingDirectory), [], 'nothing written in the working directory');
  });

  it('a root with a line break or another control character is refused (exit 64), and nothing written', async () => {
    for (const name of ['a\nb', 'tab\there', 'del\u007f', 'esc\u001b[2J']) {
      const odd = join(root, name);
      mkdirSync(odd);
      const result = await mcastctl('--root', odd);
      assert.equal(result.code, 64, result.stderr);
      const quoted = JSON.stringify(name).slice(1, -1);
      // One line: the character shown escaped (JSON), not let loose on the terminal.
      assert.match(
        result.stderr,
        /^mcastctl: --root "[^\n]+ has a control character or line break: refused in a path to write to$/m,
        quoted,
      );
      assert.deepEqual(tree(odd), [], `${quoted}: nothing written`);
    }
  });

  it('a symbolic link out of the root is refused (exit 64), under --dry-run too; nothing written', async () => {
    const outside = mkdtempSync(join(scratch, 'outside-'));
    symlinkSync(outside, join(root, 'etc'));
    for (const dryRun of [[], ['--dry-run']]) {
      const result = await mcastctl('--root', root, ...dryRun);
      assert.equal(result.code, 64, result.stderr);
      assert.match(
        result.stderr,
        /^mcastctl: \S+\/etc, below --root "[^"]+", is a symbolic link: install-service writes through none/m,
      );
      assert.deepEqual(tree(outside), [], 'nothing written where the link points');
      assert.deepEqual(tree(root), ['etc'], 'nothing written in the root');
    }
  });

  it('no link is followed: not deeper down, not one that stays inside, not one in a file’s place', async () => {
    const outside = mkdtempSync(join(scratch, 'outside-'));
    mkdirSync(join(root, 'etc'));
    symlinkSync(outside, join(root, 'etc/systemd'));
    const deeper = await mcastctl('--root', root);
    assert.equal(deeper.code, 64, deeper.stderr);
    assert.match(deeper.stderr, /\/etc\/systemd, below --root "[^"]+", is a symbolic link/);
    assert.deepEqual(tree(outside), []);
    rmSync(join(root, 'etc/systemd'));

    mkdirSync(join(root, 'real-etc'));
    rmSync(join(root, 'etc'), { recursive: true });
    symlinkSync('real-etc', join(root, 'etc'));
    const inside = await mcastctl('--root', root);
    assert.equal(inside.code, 64, inside.stderr);
    assert.deepEqual(tree(join(root, 'real-etc')), []);
    rmSync(join(root, 'etc'));

    const file = join(outside, 'daemon.yaml');
    writeFileSync(file, 'theirs\n');
    mkdirSync(configDir(), { recursive: true });
    symlinkSync(file, join(configDir(), 'daemon.yaml'));
    const target = await mcastctl('--root', root, '--force');
    assert.equal(target.code, 64, target.stderr);
    assert.match(target.stderr, /\/etc\/mcastctl\/daemon\.yaml, below --root "[^"]+", is a symbolic link/);
    assert.equal(readFileSync(file, 'utf8'), 'theirs\n', 'the file the link points at is untouched');
    assert.deepEqual(tree(root), ['etc', 'etc/mcastctl', 'etc/mcastctl/daemon.yaml', 'real-etc']);
  });

  it('all or nothing: a file where a directory goes, a directory where a file goes: nothing written', async () => {
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc/mcastctl'), 'a file where the directory goes');
    const fileInTheWay = await mcastctl('--root', root);
    assert.equal(fileInTheWay.code, 64, fileInTheWay.stderr);
    assert.match(fileInTheWay.stderr, /\/etc\/mcastctl is in the way: not a directory \(ENOTDIR\)$/m);
    assert.deepEqual(tree(root), ['etc', 'etc/mcastctl'], 'no unit, no directory, no temporary file');

    rmSync(join(root, 'etc/mcastctl'));
    mkdirSync(join(configDir(), 'group-policy.yaml'), { recursive: true });
    const directoryInTheWay = await mcastctl('--root', root);
    assert.equal(directoryInTheWay.code, 64, directoryInTheWay.stderr);
    assert.match(directoryInTheWay.stderr, /group-policy\.yaml exists and is not a regular file/);
    assert.deepEqual(tree(root), ['etc', 'etc/mcastctl', 'etc/mcastctl/group-policy.yaml']);
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

describe('an installation under a path with a line break', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'mcl-install-service-package-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('is refused (exit 64) before anything is written: the path would start an ExecStartPre= line', () => {
    // A copy of the package whose own path holds the line break: ExecStart would run its
    // entry script, and the line after the break would be a directive of its own.
    const odd = join(scratch, 'pkg\nExecStartPre=/bin/sh -c id');
    for (const part of ['src', 'bin', 'contrib', 'package.json'])
      cpSync(join(REPO_ROOT, part), join(odd, part), { recursive: true });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(odd, 'node_modules'));
    const root = mkdtempSync(join(scratch, 'root-'));
    const main = pathToFileURL(join(odd, 'src/cli/main.ts')).href;
    const entry = `const { run } = await import(${JSON.stringify(main)});
      process.exitCode = await run(['install-service', '--root', ${JSON.stringify(root)}]);`;
    const args = ['--import', 'tsx', '--input-type=module', '-e', entry];
    const { status, stderr } = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8' });
    assert.equal(status, 64, stderr);
    // The line break shown escaped, within the one line of the message.
    assert.match(
      stderr,
      /^mcastctl: ExecStart would run the path "[^"\n]+pkg\\nExecStartPre=[^\n]+no systemd unit can hold it$/m,
    );
    assert.deepEqual(tree(root), [], 'nothing written');
  });
});

describe('writing below the root, all or nothing', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'mcl-root-files-'));
  let root: TreeRoot;

  beforeEach(() => {
    const path = mkdtempSync(join(scratch, 'root-'));
    root = { path, given: path };
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a failure moving the third file into place takes back the first two and the directories made', () => {
    const configs = join(root.path, 'etc/mcastctl');
    mkdirSync(configs, { recursive: true });
    writeFileSync(join(configs, 'daemon.yaml'), 'the operator’s\n');
    const before = statSync(join(configs, 'daemon.yaml')).ino;
    // Planned as missing; a directory put there after the plan (another hand, a race)
    // makes the last step fail, when the other files are already in place.
    const late = join(configs, 'group-policy.yaml');
    const files = [
      { path: join(root.path, 'etc/systemd/system/mcastctl.service'), text: 'unit\n', replaces: false },
      { path: join(configs, 'daemon.yaml'), text: 'new\n', replaces: true },
      { path: late, text: 'policy\n', replaces: false },
    ];
    mkdirSync(late);
    assert.throws(() => writeAllOrNone(root, files), /cannot write \S+group-policy\.yaml: EEXIST/);
    const left = 'etc etc/mcastctl etc/mcastctl/daemon.yaml etc/mcastctl/group-policy.yaml';
    assert.equal(tree(root.path).join(' '), left);
    assert.equal(readFileSync(join(configs, 'daemon.yaml'), 'utf8'), 'the operator’s\n');
    assert.equal(statSync(join(configs, 'daemon.yaml')).ino, before, 'the very file put back');
  });

  it('a failure while making the second directory takes back the first', () => {
    mkdirSync(join(root.path, 'etc'));
    writeFileSync(join(root.path, 'etc/mcastctl'), 'in the way');
    const files = [
      { path: join(root.path, 'etc/systemd/system/mcastctl.service'), text: 'unit\n', replaces: false },
      { path: join(root.path, 'etc/mcastctl/daemon.yaml'), text: 'config\n', replaces: false },
    ];
    assert.throws(() => writeAllOrNone(root, files), /etc\/mcastctl is in the way: not a directory/);
    assert.deepEqual(tree(root.path), ['etc', 'etc/mcastctl']);
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
