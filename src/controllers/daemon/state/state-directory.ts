/**
 * The daemon's state directory, checked at start before the daemon connects to anything.
 * The daemon runs as root and writes there, so a directory that anyone but the daemon's
 * user could change is refused, and so is a state.json that is not a regular file.
 */
import type { Stats } from 'node:fs';
import { lstat, mkdir, realpath, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isSystemError, McastError, PermissionError, quoteInput, systemCodeOf, UsageError } from '../../../errors.js';

/** The file the daemon keeps its learned state in, inside the state directory. */
export const STATE_FILE = 'state.json';

/** The sticky bit: in such a directory only an entry's owner can rename or remove it. */
const STICKY = 0o1000;
const ANOTHER_DIR = 'choose another --state-dir (stateDir)';

/**
 * Run by the daemon at start, before it connects to anything. Makes the state directory
 * (mode 0700) if it is missing, then refuses a --state-dir that anyone but the daemon's
 * user could change, since the daemon (root) writes there:
 * - it is not a directory, or is a symlink owned by another user (who can repoint it);
 * - it is not owned by the daemon's user, or is writable by its group or others;
 * - a directory on the way to it is owned by another user than root or the daemon's, or
 *   is writable by group or others without the sticky bit (as /tmp has): whoever can
 *   write there can rename the state directory away and put another in its place; a
 *   symlink on the way must be root's or the daemon's user's too;
 * - state.json is there and is not a regular file: a FIFO would block the start (the
 *   open waits for a writer), a symlink or a device is never read or written through.
 * Those are a UsageError 'bad-file' (exit 64): a setting to correct, which a restart
 * would not fix (the systemd unit does not restart on 64). A permission denied while
 * looking is a PermissionError (exit 77): the daemon lacks a privilege there.
 */
export async function checkStateDirectory(dir: string): Promise<void> {
  const euid = process.geteuid?.();
  const user = euid === 0 ? 'root' : String(euid);
  const shown = quoteInput(dir);
  let entry = await inspect(dir, lstat);
  if (entry === undefined) {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw lookFailure(`cannot create the state directory ${shown}`, error);
    }
    entry = await inspect(dir, lstat);
    if (entry === undefined)
      throw new McastError('io', `the state directory ${shown} disappeared as soon as it was created`);
  }
  const checked = new Set<string>();
  await checkWay(dirname(resolve(dir)), dir, euid, checked);
  let target = entry;
  if (entry.isSymbolicLink()) {
    if (euid !== undefined && entry.uid !== euid) {
      throw unsafe(
        `the state directory ${shown} is a symbolic link owned by uid ${entry.uid}, not by the daemon's user (${user}): its owner can point it anywhere`,
        `remove the link, or make it the daemon's user's: chown -h ${user} ${shown}`,
      );
    }
    const followed = await inspect(dir, stat);
    if (followed === undefined) {
      const hint = 'create what it points to (mode 0700), or remove the link: the daemon then creates the directory';
      throw unsafe(`the state directory ${shown} is a symbolic link to nothing`, hint);
    }
    target = followed;
    await checkWay(dirname(await realPath(dir)), dir, euid, checked);
  }
  if (!target.isDirectory())
    throw unsafe(`the state directory ${shown} is ${kindOf(target)}, not a directory`, `remove it, or ${ANOTHER_DIR}`);
  if (euid !== undefined && target.uid !== euid) {
    throw unsafe(
      `the state directory ${shown} is owned by uid ${target.uid}, not by the daemon's user (${user})`,
      `chown ${user} ${shown}, or ${ANOTHER_DIR}`,
    );
  }
  if ((target.mode & 0o022) !== 0) {
    const writable = `writable by ${writers(target.mode)} (mode ${octal(target.mode)})`;
    throw unsafe(
      `the state directory ${shown} is ${writable}: they could plant files the daemon would write through`,
      `chmod 700 ${shown}`,
    );
  }
  const file = join(dir, STATE_FILE);
  const stateFile = await inspect(file, lstat);
  if (stateFile !== undefined && !stateFile.isFile()) throw notRegularStateFile(file, stateFile);
}

/**
 * Every directory the kernel goes through to reach `path`, `path` included, from the
 * root down, symlinks followed: each must be root's or the daemon's user's and writable
 * by nobody else unless sticky, and each symlink root's or the daemon's user's.
 */
async function checkWay(path: string, dir: string, euid: number | undefined, checked: Set<string>): Promise<void> {
  const refuse = (at: string, what: string, why: string): never => {
    throw unsafe(
      `the state directory ${quoteInput(dir)} is reached through ${quoteInput(at)}, ${what}: ${why}`,
      `${ANOTHER_DIR} whose every parent directory is owned by root and writable only by it, or sticky (as /tmp)`,
    );
  };
  const another = (uid: number) => euid !== undefined && uid !== 0 && uid !== euid;
  let current = '/';
  for (const part of [
    '',
    ...resolve(path)
      .split('/')
      .filter((name) => name !== ''),
  ]) {
    const next = join(current, part);
    if (checked.has(next)) {
      current = next;
      continue;
    }
    const stats = await inspect(next, lstat);
    if (stats === undefined) return; // gone since the mkdir: the lstat of the directory itself says so
    if (stats.isSymbolicLink()) {
      if (another(stats.uid))
        refuse(next, `a symbolic link owned by uid ${stats.uid}`, 'its owner can point it anywhere');
      current = await realPath(next);
      await checkWay(current, dir, euid, checked);
      continue;
    }
    checked.add(next);
    current = next;
    if (!stats.isDirectory()) return; // ENOTDIR, which the lstat of the directory itself reported
    if (another(stats.uid))
      refuse(next, `owned by uid ${stats.uid}`, 'its owner can put another directory in its place');
    if ((stats.mode & 0o022) !== 0 && (stats.mode & STICKY) === 0) {
      refuse(
        next,
        `writable by ${writers(stats.mode)} without the sticky bit (mode ${octal(stats.mode)})`,
        'they can put another directory in its place',
      );
    }
  }
}

async function realPath(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    throw lookFailure(`cannot resolve ${quoteInput(path)}`, error);
  }
}

/** The stats of `path`, undefined if there is nothing there. */
async function inspect(path: string, how: typeof lstat | typeof stat): Promise<Stats | undefined> {
  try {
    return await how(path);
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined;
    throw lookFailure(`cannot inspect ${quoteInput(path)}`, error);
  }
}

function lookFailure(what: string, error: unknown): McastError {
  const code = systemCodeOf(error);
  if (code === 'EACCES' || code === 'EPERM') {
    const hint = 'run the daemon as root, or choose a --state-dir its user can use';
    return new PermissionError(`${what}: ${code} (permission denied)`, { hint, cause: error });
  }
  if (code === 'ENOTDIR') return unsafe(`${what}: ENOTDIR (a part of the path is not a directory)`, ANOTHER_DIR);
  if (code === 'ELOOP') return unsafe(`${what}: ELOOP (too many symbolic links)`, ANOTHER_DIR);
  return new McastError('io', `${what}: ${code}`, { hint: 'check --state-dir', cause: error });
}

function unsafe(message: string, hint: string): UsageError {
  return new UsageError(message, { code: 'bad-file', hint });
}

/** state.json is a FIFO, a device, a directory, a socket or a symlink: never read, never written through. */
export function notRegularStateFile(file: string, stats: Stats): UsageError {
  return unsafe(
    `the daemon state ${quoteInput(file)} is ${kindOf(stats)}, not a regular file: the daemon neither reads it nor writes through it`,
    `remove it (rm ${stats.isDirectory() ? '-r ' : ''}${quoteInput(file)}); the daemon writes a new one`,
  );
}

function kindOf(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return stats.isFile() ? 'a regular file' : 'not a regular file';
}

function writers(mode: number): string {
  if ((mode & 0o022) === 0o022) return 'its group and others';
  return (mode & 0o002) !== 0 ? 'others' : 'its group';
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}
