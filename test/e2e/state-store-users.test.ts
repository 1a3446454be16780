/**
 * The daemon's state store against what only other users and privileges can make: a
 * device node at state.json, a state directory or symlink that another user owns, and a
 * state directory its user may not look into.
 *
 * Needs root: making a device node needs CAP_MKNOD, giving a file to another user needs
 * CAP_CHOWN, and root passes every permission check, so the refused look runs as nobody
 * (uid 65534, through setpriv of util-linux), which only root can become. The daemon's
 * user is root here, as in production. What any user can plant is tested in
 * test/unit/state-store-hostile.test.ts.
 *
 * Run: node --import tsx --test test/e2e/state-store-users.test.ts
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, lchown, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { StateStore } from '../../src/controllers/daemon/state/state-store.js';
import { ExitCode, PermissionError } from '../../src/errors.js';
import { PlantingGround, refused } from '../helpers/hostile-state-dir.js';

/** The uid of nobody: another user than the daemon's (root). */
const OTHER_UID = 65534;

const ground = new PlantingGround();
before(async () => {
  assert.equal(
    process.geteuid?.(),
    0,
    'these tests make what only root can (device nodes, files of another user), and play the daemon as root',
  );
  await ground.make('mcastctl-state-users-');
});
after(() => ground.remove());

describe('StateStore against other users', () => {
  it('load() of a character device at state.json is refused (never read: /dev/zero would never end)', async () => {
    const dir = await ground.directory(0o700);
    execFileSync('mknod', ['-m', '600', join(dir, 'state.json'), 'c', '1', '5']); // /dev/zero
    await refused(new StateStore({ dir }).load(), /is a character device, not a regular file/);
  });
});

describe('StateStore.prepare(): the check at start', () => {
  it("refuses a state directory that is not the daemon user's (chown to 65534), or under one", async () => {
    const dir = await ground.directory(0o700, OTHER_UID);
    const error = await refused(
      StateStore.prepare({ dir }),
      /is owned by uid 65534, not by the daemon's user \(root\)/,
    );
    assert.match(error.hint ?? '', /^chown root "/);
    const under = join(await ground.directory(0o755, OTHER_UID), 'state');
    await refused(
      StateStore.prepare({ dir: under }),
      /is reached through ".*", owned by uid 65534: its owner can put another directory in its place/,
    );
  });

  it("refuses a state directory that is another user's symlink, even to a good directory, and a symlink of theirs on the way", async () => {
    const good = await ground.directory(0o700);
    const link = ground.fresh('link');
    await symlink(good, link);
    await lchown(link, OTHER_UID, OTHER_UID);
    const message =
      /is a symbolic link owned by uid 65534, not by the daemon's user \(root\): its owner can point it anywhere/;
    await refused(StateStore.prepare({ dir: link }), message, /chown -h root/);
    await refused(
      StateStore.prepare({ dir: join(link, 'state') }),
      /is reached through ".*", a symbolic link owned by uid 65534/,
    );
  });

  it('a state directory the daemon may not look into is a PermissionError (exit 77)', async () => {
    // Root passes every permission check, so the check runs as nobody, in a child.
    const parent = await ground.directory(0o700);
    const storeUrl = new URL('../../src/controllers/daemon/state/state-store.ts', import.meta.url).href;
    const script = `${ground.fresh('nobody')}.mjs`;
    await writeFile(
      script,
      `const { StateStore } = await import(${JSON.stringify(storeUrl)});
       try { await StateStore.prepare({ dir: ${JSON.stringify(join(parent, 'state'))} }); console.log('{}'); }
       catch (error) { console.log(JSON.stringify({ name: error.name, exitCode: error.exitCode, message: error.message })); }`,
    );
    await chmod(script, 0o644);
    // Nobody's TMPDIR: tsx keeps its cache there, removed with the rest.
    const scratch = await ground.directory(0o700, OTHER_UID);
    await chmod(ground.root, 0o711); // nobody may reach the script, not the parent (0700 root)
    try {
      const asNobody = ['--reuid', String(OTHER_UID), '--regid', String(OTHER_UID), '--clear-groups'];
      const run = spawnSync('setpriv', [...asNobody, process.execPath, '--import', 'tsx', script], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, TMPDIR: scratch },
      });
      assert.equal(run.status, 0, run.stderr);
      const outcome = JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
      assert.equal(outcome.name, new PermissionError('x').name);
      assert.equal(outcome.exitCode, ExitCode.NoPermission);
      assert.match(String(outcome.message), /EACCES \(permission denied\)/);
    } finally {
      await chmod(ground.root, 0o700);
    }
  });
});
