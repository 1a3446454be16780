/**
 * What the state store's tests on a shared machine have in common, as any user
 * (test/unit/state-store-hostile.test.ts) or as root (test/e2e/state-store-users.test.ts):
 * a temporary directory to plant in, and the check that a plant is refused.
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitCode, UsageError } from '../../src/errors.js';

/** A temporary directory of one test file, made in its `before` hook and removed in its `after`. */
export class PlantingGround {
  private made: string | undefined;
  private counter = 0;

  /** The directory itself, once made. */
  get root(): string {
    if (this.made === undefined) throw new Error('the planting ground is not made yet: make() it in a before hook');
    return this.made;
  }

  async make(prefix: string): Promise<void> {
    this.made = await mkdtemp(join(tmpdir(), prefix));
  }

  /** Removes the directory; nothing to do if a failed `before` never made it. */
  async remove(): Promise<void> {
    if (this.made !== undefined) await rm(this.made, { recursive: true, force: true });
  }

  /** `<root>/<prefix><n>`: a path that nothing of this ground has had, and that does not exist yet. */
  fresh(prefix: string): string {
    return join(this.root, `${prefix}${++this.counter}`);
  }

  /**
   * A fresh directory of `mode` (chmod, not masked by the umask), owned by the user running the tests unless `uid` is
   * given.
   */
  async directory(mode: number, uid?: number, parent = this.root): Promise<string> {
    const dir = join(parent, `d${++this.counter}`);
    await mkdir(dir);
    await chmod(dir, mode);
    if (uid !== undefined) await chown(dir, uid, uid);
    return dir;
  }
}

/** Asserts `promise` rejects with a UsageError 'bad-file' (exit 64) whose message matches `message`; returns it. */
export async function refused(promise: Promise<unknown>, message: RegExp, hint?: RegExp): Promise<UsageError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof UsageError, `not a UsageError: ${String(caught)}`);
  assert.equal(caught.code, 'bad-file');
  assert.equal(caught.exitCode, ExitCode.Usage);
  assert.match(caught.message, message);
  if (hint !== undefined) assert.match(caught.hint ?? '', hint);
  return caught;
}
