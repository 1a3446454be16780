/**
 * The daemon's state store on a shared machine: other users' symlinks, FIFOs and
 * directories they can write to. Each test plants what an unprivileged user could, then
 * checks that nothing is written through it, nothing blocks, and an unsafe --state-dir is
 * refused at start. The store defends itself the same way whoever runs it, so these tests
 * run as any user, who plays the daemon's. What needs root (files of another user, a
 * device node, a user refused a look) is in test/e2e/state-store-users.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from '../helpers/node-test.js';
import type { SavedState } from '../../src/controllers/daemon/state/state-format.js';
import { StateStore } from '../../src/controllers/daemon/state/state-store.js';
import { ExitCode, McastError } from '../../src/errors.js';
import { groupAddress, hostAddress } from '../../src/wire/ip-address.js';
import { PlantingGround, refused } from '../helpers/hostile-state-dir.js';

const VICTIM_TEXT = 'root:x:0:0:precious\n';

const ground = new PlantingGround();
before(() => ground.make('mcastctl-hostile-'));
after(() => ground.remove());

/** A file the attacker would like the daemon to overwrite. */
async function victim(): Promise<string> {
  const path = ground.fresh('victim');
  await writeFile(path, VICTIM_TEXT);
  await chmod(path, 0o644);
  return path;
}

function sample(savedAt = 1_767_225_600_000, extraGroups = 0): SavedState {
  return {
    version: 2,
    savedAt,
    bridge: 'br-int',
    groups: [
      {
        group: groupAddress('239.1.2.3'),
        members: [
          {
            portName: 'veth-a',
            host: hostAddress('10.0.0.5'),
            mode: 'exclude',
            sources: [],
            compatibility: 3,
            lastReportAt: savedAt - 1000,
          },
        ],
      },
      ...Array.from({ length: extraGroups }, (_, index) => ({
        group: groupAddress(`239.2.${index >> 8}.${index & 0xff}`),
        members: [
          {
            portName: `veth-${index}`,
            host: hostAddress('10.1.0.1'),
            mode: 'exclude' as const,
            sources: [],
            compatibility: 3 as const,
            lastReportAt: savedAt,
          },
        ],
      })),
    ],
  };
}

/**
 * Runs `action` on a path that is a FIFO, failing if it takes a second. Should it block
 * in open() (waiting for a writer), a writer opens and closes the FIFO after that
 * second, so that the test fails instead of hanging.
 */
async function withinASecond<T>(
  fifo: string,
  action: () => Promise<T>,
): Promise<{ result: PromiseSettledResult<T>; ms: number }> {
  const started = performance.now();
  const rescue = setTimeout(() => {
    void open(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
      .then((handle) => handle.close())
      .catch(() => undefined);
  }, 1000);
  const [result] = await Promise.allSettled([action()]);
  clearTimeout(rescue);
  return { result: result!, ms: performance.now() - started };
}

describe('StateStore against other users', () => {
  for (const mode of [0o777, 0o1777]) {
    it(`save() in a ${mode.toString(8)} directory does not write through a symlink planted at state.json.tmp-<pid>`, async () => {
      const dir = await ground.directory(mode);
      const target = await victim();
      await symlink(target, join(dir, `state.json.tmp-${process.pid}`));
      await new StateStore({ dir }).save(sample());
      assert.equal(await readFile(target, 'utf8'), VICTIM_TEXT, 'the symlink was written through');
      assert.equal((await stat(target)).mode & 0o777, 0o644);
      const file = await lstat(join(dir, 'state.json'));
      assert.ok(file.isFile(), 'state.json is a regular file, not the planted link');
      assert.equal(file.mode & 0o777, 0o600);
      assert.deepEqual(JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')), sample());
      // The next start removes the planted link as a leftover; what it points to stays.
      assert.deepEqual(await new StateStore({ dir }).load(), { state: sample() });
      assert.deepEqual(await readdir(dir), ['state.json']);
      assert.equal(await readFile(target, 'utf8'), VICTIM_TEXT);
    });
  }

  it('temporary files have unpredictable names: 32 random hex digits, a new one each save, no pid', async () => {
    const dir = await ground.directory(0o700);
    const store = new StateStore({ dir });
    const names = new Set<string>();
    const { watch } = await import('node:fs');
    const watcher = watch(dir, (_event, name) => {
      if (name?.startsWith('state.json.tmp-')) names.add(name);
    });
    try {
      for (let round = 0; round < 5; round++) await store.save(sample(1_767_225_600_000 + round));
      await new Promise((resolve) => setTimeout(resolve, 50)); // the last events
    } finally {
      watcher.close();
    }
    assert.equal(names.size, 5, `one name per save: ${[...names].join(', ')}`);
    for (const name of names) {
      assert.match(name, /^state\.json\.tmp-[0-9a-f]{32}$/);
      assert.ok(!name.includes(String(process.pid)), `${name} holds the pid`);
    }
    assert.deepEqual(await readdir(dir), ['state.json']);
  });

  it('load() removes leftovers of both name patterns, a planted symlink only as a link, and keeps other files', async () => {
    const dir = await ground.directory(0o700);
    const target = await victim();
    await new StateStore({ dir }).save(sample());
    await writeFile(join(dir, `state.json.tmp-${'0123456789abcdef'.repeat(2)}`), '{"half');
    await writeFile(join(dir, 'state.json.tmp-4242'), '{"half');
    await symlink(target, join(dir, `state.json.tmp-${'f'.repeat(32)}`));
    await writeFile(join(dir, 'state.json.tmp-notes.txt'), 'not ours');
    assert.deepEqual(await new StateStore({ dir }).load(), { state: sample() });
    assert.deepEqual((await readdir(dir)).sort(), ['state.json', 'state.json.tmp-notes.txt']);
    assert.equal(await readFile(target, 'utf8'), VICTIM_TEXT);
  });

  it('load() does not follow a symlink at state.json, even to a valid state: refused, the link left for the operator', async () => {
    const dir = await ground.directory(0o700);
    const elsewhere = join(await ground.directory(0o700), 'state.json');
    await writeFile(elsewhere, JSON.stringify(sample()));
    await symlink(elsewhere, join(dir, 'state.json'));
    await refused(
      new StateStore({ dir }).load(),
      /state\.json" is a symbolic link, not a regular file/,
      /^remove it \(rm ".*state\.json"\)/,
    );
    assert.ok((await lstat(join(dir, 'state.json'))).isSymbolicLink());
    // A save replaces the link itself, and never writes where it points.
    await new StateStore({ dir }).save(sample(1_767_225_600_001));
    assert.ok((await lstat(join(dir, 'state.json'))).isFile());
    assert.deepEqual(JSON.parse(await readFile(elsewhere, 'utf8')), sample());
  });

  it('load() of a FIFO at state.json is refused at once, never waits for a writer', async () => {
    const dir = await ground.directory(0o700);
    const fifo = join(dir, 'state.json');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    const { result, ms } = await withinASecond(fifo, () => new StateStore({ dir }).load());
    assert.ok(ms < 1000, `took ${Math.round(ms)} ms`);
    assert.equal(result.status, 'rejected', 'a FIFO was read as a state');
    await refused(
      Promise.reject((result as PromiseRejectedResult).reason),
      /state\.json" is a FIFO \(named pipe\), not a regular file/,
    );
    assert.ok((await lstat(fifo)).isFIFO(), 'left for the operator to see');
  });

  it('load() moves aside a file over the size limit, and one that is not UTF-8, with a warning saying which', async () => {
    const dir = await ground.directory(0o700);
    await writeFile(join(dir, 'state.json'), JSON.stringify(sample(1_767_225_600_000, 100)));
    const large = await new StateStore({ dir, maxBytes: 1024 }).load();
    assert.equal(large.state, undefined);
    assert.match(
      large.warning ?? '',
      /is unusable \(larger than 1 KiB\): moved to state\.json\.corrupt-\d+ in the same directory/,
    );
    await rm(dir, { recursive: true });
    await mkdir(dir, { mode: 0o700 });
    await writeFile(join(dir, 'state.json'), Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    const binary = await new StateStore({ dir }).load();
    assert.match(binary.warning ?? '', /is unusable \(not UTF-8 text\): moved to state\.json\.corrupt-\d+/);
    assert.match((await readdir(dir)).join(), /^state\.json\.corrupt-\d+$/);
  });

  it("save() of a state over the size limit is refused ('io'), keeping the state saved before", async () => {
    const dir = await ground.directory(0o700);
    const store = new StateStore({ dir, maxBytes: 4096 });
    await store.save(sample());
    await assert.rejects(store.save(sample(1_767_225_600_000, 200)), (error: unknown) => {
      assert.ok(error instanceof McastError);
      assert.equal(error.code, 'io');
      assert.match(
        error.message,
        /the daemon state is \d+ bytes, over the limit of 4 KiB that a start reads: not saved/,
      );
      return true;
    });
    assert.deepEqual(await store.load(), { state: sample() });
  });

  it("a save whose write fails half-way (EFBIG: the file size limit) rejects with McastError 'io', the old state whole, no temporary file", async () => {
    // A full file system (ENOSPC) cannot be made without mounting one; a write refused by
    // RLIMIT_FSIZE fails the same way, half-way through the file, through the same code.
    const dir = ground.fresh('d');
    const script = `${ground.fresh('fsize')}.mjs`;
    const storeUrl = new URL('../../src/controllers/daemon/state/state-store.ts', import.meta.url).href;
    const child = `
      import { execFileSync } from 'node:child_process';
      const { StateStore } = await import(${JSON.stringify(storeUrl)});
      const state = (groups) => ({ version: 1, savedAt: 1767225600000, bridge: 'br-int', groups: Array.from({ length: groups }, (_, index) => ({
        group: '239.2.' + (index >> 8) + '.' + (index & 255),
        members: [{ portName: 'veth-' + index, host: '10.1.0.1', mode: 'exclude', sources: [], compatibility: 3, lastReportAt: 1767225600000 }],
      })) });
      const store = new StateStore({ dir: ${JSON.stringify(dir)} });
      await store.save(state(1));
      execFileSync('prlimit', ['--pid', String(process.pid), '--fsize=65536:65536']);
      try {
        await store.save(state(3000));
        console.log(JSON.stringify({ saved: true }));
      } catch (error) {
        console.log(JSON.stringify({ name: error.name, code: error.code, exitCode: error.exitCode, message: error.message, hint: error.hint }));
      }`;
    await writeFile(script, child);
    // In a child: the limit stays on a process for good (prlimit(1) sets it from outside).
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    const outcome = JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    assert.equal(outcome.name, 'McastError');
    assert.equal(outcome.code, 'io');
    assert.equal(outcome.exitCode, ExitCode.Failure);
    assert.match(String(outcome.message), /cannot save the daemon state to ".*state\.json": EFBIG/);
    assert.match(String(outcome.hint), /file size limit/);
    assert.deepEqual(await readdir(dir), ['state.json'], 'the half-written temporary file is removed');
    assert.equal(
      JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')).groups.length,
      1,
      'the old state is whole',
    );
  });
});

describe('StateStore.prepare(): the check at start', () => {
  it('creates a missing state directory (and its parents) with mode 0700, and returns a store of it', async () => {
    const dir = join(await ground.directory(0o755), 'a', 'state');
    const store = await StateStore.prepare({ dir });
    assert.equal(store.dir, dir);
    assert.equal((await stat(dir)).mode & 0o7777, 0o700);
    assert.deepEqual(await store.load(), {});
  });

  it("accepts a 0700 directory of the daemon's user with a regular state.json, and a symlink of theirs to one", async () => {
    const dir = await ground.directory(0o700);
    await new StateStore({ dir }).save(sample());
    await StateStore.prepare({ dir });
    const link = ground.fresh('link');
    await symlink(dir, link);
    await StateStore.prepare({ dir: link });
    // Under a sticky, world-writable directory (as /tmp): others cannot rename an entry of the daemon's user there.
    await StateStore.prepare({ dir: await ground.directory(0o700, undefined, await ground.directory(0o1777)) });
  });

  for (const [mode, who] of [
    [0o777, 'its group and others'],
    [0o1777, 'its group and others'],
    [0o703, 'others'],
    [0o770, 'its group'],
  ] as const) {
    it(`refuses a state directory of mode ${mode.toString(8).padStart(4, '0')} (writable by ${who}), naming it and what to do`, async () => {
      const dir = await ground.directory(mode);
      const shown = mode.toString(8).padStart(4, '0');
      const error = await refused(
        StateStore.prepare({ dir }),
        new RegExp(`state directory ".*${dir.slice(-4)}" is writable by ${who} \\(mode ${shown}\\)`),
      );
      assert.match(error.hint ?? '', /^chmod 700 "/);
    });
  }

  it('refuses a state directory under a world-writable directory without the sticky bit', async () => {
    const parent = await ground.directory(0o777);
    const dir = await ground.directory(0o700, undefined, parent);
    await refused(
      StateStore.prepare({ dir }),
      /is reached through ".*", writable by its group and others without the sticky bit \(mode 0777\)/,
    );
  });

  it("refuses a symlink of the daemon's user to a directory that is unsafe, and one to nothing", async () => {
    const link = ground.fresh('link');
    await symlink(await ground.directory(0o777), link);
    await refused(StateStore.prepare({ dir: link }), /writable by its group and others/);
    const dangling = ground.fresh('link');
    await symlink(join(ground.root, 'nothing-here'), dangling);
    await refused(StateStore.prepare({ dir: dangling }), /is a symbolic link to nothing/);
  });

  it('refuses a state directory whose place is taken by a file', async () => {
    const path = ground.fresh('file');
    await writeFile(path, '');
    await refused(StateStore.prepare({ dir: path }), /is a regular file, not a directory/);
    await refused(
      StateStore.prepare({ dir: join(path, 'state') }),
      /ENOTDIR \(a part of the path is not a directory\)/,
    );
  });

  it('refuses a state.json that is a FIFO at once (a daemon used to stay "starting" on it), or a symlink', async () => {
    const dir = await ground.directory(0o700);
    const fifo = join(dir, 'state.json');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    const { result, ms } = await withinASecond(fifo, () => StateStore.prepare({ dir }));
    assert.ok(ms < 1000, `took ${Math.round(ms)} ms`);
    assert.equal(result.status, 'rejected');
    await refused(
      Promise.reject((result as PromiseRejectedResult).reason),
      /state\.json" is a FIFO \(named pipe\), not a regular file/,
      /^remove it \(rm "/,
    );
    const other = await ground.directory(0o700);
    await symlink(await victim(), join(other, 'state.json'));
    await refused(StateStore.prepare({ dir: other }), /state\.json" is a symbolic link, not a regular file/);
  });
});
