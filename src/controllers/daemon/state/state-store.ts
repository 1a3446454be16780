/**
 * The daemon's learned membership on disk (`<state dir>/state.json`), so that a restart
 * resumes forwarding at once instead of waiting a query interval for every member to
 * report again.
 *
 * Saving is atomic (a temporary file, fsync, rename over the old one, fsync of the
 * directory): a crash leaves the old state or the new one, never half of either. Saves
 * are serialised; saves that arrive while one is being written are merged into one
 * write of the latest state. Loading never fails for bad content: an unusable file is
 * moved aside (`state.json.corrupt-<epoch ms>`) and reported as a warning.
 *
 * The daemon runs as root, and --state-dir may name a place others can reach, so no
 * path in the directory is trusted: the temporary file has an unpredictable name and is
 * created exclusively without following a symlink, state.json is read without following
 * one and without blocking, and `StateStore.prepare()` (called at start, before the
 * daemon connects to anything) refuses a directory that anyone but the daemon's user
 * could change, and a state.json that is not a regular file.
 *
 * What the file holds, and which of its format versions are read, is ./state-format.ts's;
 * this store reads, writes and moves aside the file whole.
 */
import { constants } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { isSystemError, McastError, messageOf, quoteInput, systemCodeOf } from '../../../errors.js';
import { checkStateDirectory, notRegularStateFile, STATE_FILE } from './state-directory.js';

export { STATE_FILE } from './state-directory.js';
import { FileRefusedError, readRegularFile, showBytes } from '../../../runtime/regular-file.js';
import { parseSavedState, refuseNewerFormat, type SavedState } from './state-format.js';
import { saveSlices } from './save-slices.js';

export interface StateStoreOptions {
  dir: string;
  /** The largest state.json read or written (default `MAX_STATE_BYTES`). */
  maxBytes?: number;
}

/** Far above any real node's state (about 150 octets a member), far below what would exhaust memory. */
export const MAX_STATE_BYTES = 64 * 1024 * 1024;
/** `state.json.tmp-<32 hex digits>`, and the `state.json.tmp-<pid>` of releases before the random names. */
const TEMPORARY_NAME = /^state\.json\.tmp-(?:[0-9a-f]{32}|[0-9]+)$/;

interface QueuedSave {
  state: SavedState;
  done: Promise<void>;
}

export class StateStore {
  readonly dir: string;
  readonly file: string;
  readonly maxBytes: number;
  /** The write under way (or the last one), resolved or not. */
  private writing: Promise<void> = Promise.resolve();
  /** The save waiting for `writing` to finish; later saves replace its state. */
  private queued: QueuedSave | undefined;
  /** The temporary file of the write under way: not a leftover, whatever its name says. */
  private temporary: string | undefined;
  /** The `savedAt` of the last state written. */
  private savedAt: number | undefined;

  constructor(options: StateStoreOptions) {
    this.dir = options.dir;
    this.file = join(options.dir, STATE_FILE);
    this.maxBytes = options.maxBytes ?? MAX_STATE_BYTES;
  }

  /**
   * The store of a daemon about to start: `checkStateDirectory(options.dir)` first, so
   * that an unsafe --state-dir stops the daemon before it connects to anything.
   */
  static async prepare(options: StateStoreOptions): Promise<StateStore> {
    await checkStateDirectory(options.dir);
    const store = new StateStore(options);
    await store.refuseNewerStateFile();
    return store;
  }

  /**
   * Throws a UsageError 'bad-file' (exit 64) when state.json is of a format newer than this
   * release reads. Anything else wrong with the file is load()'s to handle.
   */
  private async refuseNewerStateFile(): Promise<void> {
    let root: unknown;
    try {
      root = JSON.parse(
        await readRegularFile(this.file, { what: 'the daemon state', maxBytes: this.maxBytes, noFollow: true }),
      );
    } catch {
      return;
    }
    refuseNewerFormat(root, this.file);
  }

  /**
   * The saved state: `{}` when there is none, `{ warning }` when the file was unusable
   * (over `maxBytes`, not UTF-8, not JSON, not a valid state: it has been moved aside).
   * Throws a UsageError 'bad-file' (exit 64) when state.json is a symlink, a FIFO, a
   * device or a directory (never followed, never waited on: someone put it there, and
   * the operator must look), McastError 'io' when the file cannot be read.
   */
  async load(): Promise<{ state?: SavedState; warning?: string }> {
    const unreadable = (error: unknown) => ioFailure(`cannot read the daemon state ${quoteInput(this.file)}`, error);
    let text: string;
    try {
      text = await readRegularFile(this.file, { what: 'the daemon state', maxBytes: this.maxBytes, noFollow: true });
    } catch (error) {
      if (!(error instanceof FileRefusedError)) throw unreadable(error);
      if (error.reason === 'too-large' || error.reason === 'not-text') {
        await this.removeLeftovers();
        return this.moveAside(
          error.reason === 'too-large' ? `larger than ${showBytes(this.maxBytes)}` : 'not UTF-8 text',
        );
      }
      if (error.reason !== 'not-found' && error.reason !== 'symlink' && error.reason !== 'not-regular') {
        throw new McastError('io', error.message, {
          hint: hintFor(error.reason === 'permission' ? 'EACCES' : ''),
          cause: error,
        });
      }
      // Told apart by what is there: nothing (no saved state), a file where the directory
      // should be (ENOTDIR: an I/O failure), or a FIFO, device, directory or symlink.
      const stats = await lstat(this.file).catch((lstatError: unknown) => {
        if (isSystemError(lstatError) && lstatError.code === 'ENOENT') return undefined;
        throw unreadable(lstatError);
      });
      if (stats !== undefined && !stats.isFile()) throw notRegularStateFile(this.file, stats);
      if (stats === undefined) await this.removeLeftovers();
      return {}; // or a file came after the open: someone else writes here; not read this time
    }
    await this.removeLeftovers();
    let root: unknown;
    try {
      root = JSON.parse(text);
    } catch (error) {
      return this.moveAside(messageOf(error));
    }
    refuseNewerFormat(root, this.file);
    try {
      return { state: parseSavedState(root) };
    } catch (error) {
      return this.moveAside(messageOf(error));
    }
  }

  private async moveAside(problem: string): Promise<{ warning: string }> {
    // Named by its file name alone: quoteInput may cut a long directory, and this name must be whole.
    const aside = `${STATE_FILE}.corrupt-${Date.now()}`;
    try {
      // rename never follows a symlink, at either end.
      await rename(this.file, join(this.dir, aside));
    } catch (error) {
      throw ioFailure(
        `the daemon state ${quoteInput(this.file)} is unusable (${problem}) and cannot be moved aside`,
        error,
      );
    }
    const file = quoteInput(this.file);
    return {
      warning: `the daemon state ${file} is unusable (${problem}): moved to ${aside} in the same directory; starting with no learned memberships`,
    };
  }

  /**
   * Writes `state` atomically. Concurrent calls are serialised; the last state given wins.
   * Rejects with McastError 'io' (exit status 1) when it cannot be written, a full file
   * system (ENOSPC) included, leaving the old state.json whole: the daemon's save at
   * start lets it end the daemon (exit 1, before anything is programmed); later saves
   * are the controller's to report. What is written is first checked as a start would
   * read it: a state it would refuse rejects with McastError 'internal' and is not written
   * (a state replaced by a later one while queued is never written, so never checked).
   */
  save(state: SavedState): Promise<void> {
    if (this.queued !== undefined) {
      this.queued.state = state;
      return this.queued.done;
    }
    const entry: QueuedSave = { state, done: Promise.resolve() };
    entry.done = this.writing
      .catch(() => undefined)
      .then(() => {
        if (this.queued === entry) this.queued = undefined;
        return this.write(entry.state);
      });
    this.queued = entry;
    this.writing = entry.done;
    return entry.done;
  }

  private async write(state: SavedState): Promise<void> {
    const text = await savedText(state);
    const size = Buffer.byteLength(text);
    if (size > this.maxBytes) {
      const over = `the daemon state is ${showBytes(size)}, over the limit of ${showBytes(this.maxBytes)} that a start reads`;
      throw new McastError('io', `${over}: not saved to ${quoteInput(this.file)}`, {
        hint: 'the state saved before is kept',
      });
    }
    // A name nobody can know in advance, created only if nothing has it (O_EXCL) and never
    // through a symlink (O_NOFOLLOW): with a predictable name, a symlink planted in a
    // directory others can write to would make the daemon (root) write where it points.
    const temporary = join(this.dir, `${STATE_FILE}.tmp-${randomBytes(16).toString('hex')}`);
    let created = false;
    this.temporary = temporary;
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const handle = await open(
        temporary,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      );
      created = true;
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      // rename replaces state.json itself, never what a symlink there points to.
      await rename(temporary, this.file);
      created = false;
      this.savedAt = state.savedAt;
    } catch (error) {
      // Only a file this save created: EEXIST means the name was someone else's.
      if (created) await unlink(temporary).catch(() => undefined);
      throw ioFailure(`cannot save the daemon state to ${quoteInput(this.file)}`, error);
    } finally {
      this.temporary = undefined;
    }
    // The rename is durable once the directory is: without this a power cut can lose it.
    try {
      const directory = await open(this.dir, 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    } catch (error) {
      // Some file systems refuse fsync on a directory (EINVAL); the file itself is complete.
      if (isSystemError(error) && (error.code === 'EINVAL' || error.code === 'EISDIR')) return;
      throw ioFailure(`cannot sync the state directory ${quoteInput(this.dir)}`, error);
    }
  }

  /** The `savedAt` (epoch milliseconds) of the last state written; undefined before the first. */
  lastSaved(): number | undefined {
    return this.savedAt;
  }

  /**
   * Temporary files of a daemon that died while saving (never the one a save of this
   * store is writing). unlink removes a symlink, not what it points to.
   */
  private async removeLeftovers(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(this.dir, name);
      if (TEMPORARY_NAME.test(name) && path !== this.temporary) await unlink(path).catch(() => undefined);
    }
  }
}

/**
 * An I/O failure: McastError 'io', exit status 1. A save that fails (a full file system,
 * ENOSPC, included) rejects with it and leaves the old state.json as it was.
 */
function ioFailure(what: string, error: unknown): McastError {
  const code = systemCodeOf(error);
  return new McastError('io', `${what}: ${code}`, { hint: hintFor(code), cause: error });
}

function hintFor(code: string): string {
  if (code === 'EACCES' || code === 'EPERM') return 'the daemon runs as root; check the owner and mode of --state-dir';
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'the file system is full';
  if (code === 'EFBIG') return "the file is over the daemon's file size limit (ulimit -f, LimitFSIZE=)";
  return 'check --state-dir';
}

/**
 * `state` as the file's text, checked and serialized a slice of groups a turn of the loop.
 * A bug upstream must not write a file the next start would throw away: the state is read
 * back as a start would, slice by slice, and no group may appear in two slices (McastError
 * 'internal' when a start would refuse it).
 */
async function savedText(state: SavedState): Promise<string> {
  const { groups, ...head } = state;
  const members = groups.reduce((count, group) => count + group.members.length, 0);
  const refused = (error: unknown) =>
    new McastError('internal', `refusing to save an invalid daemon state: ${messageOf(error)}`);
  const parts: string[] = [];
  const seen = new Set<string>();
  let turns = 0;
  try {
    parseSavedState({ ...head, groups: [] });
  } catch (error) {
    throw refused(error);
  }
  for (const slice of saveSlices(groups, members)) {
    if (turns++ > 0) await setImmediate();
    try {
      parseSavedState({ ...head, groups: slice });
      for (const { group } of slice) {
        if (seen.has(group)) throw new Error(`group ${group} appears twice`);
        seen.add(group);
      }
    } catch (error) {
      throw refused(error);
    }
    for (const group of slice) parts.push(JSON.stringify(group));
  }
  const text = JSON.stringify(head);
  return `${text.slice(0, -1)}${text === '{}' ? '' : ','}"groups":[${parts.join(',')}]}\n`;
}
