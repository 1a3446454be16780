/**
 * Files put below a root directory and nowhere else, all of them or none. The root may be
 * a staging tree that someone else prepared, where a symbolic link (`<root>/etc` to the
 * node's own /etc) would carry a write out of it: no link below the root is followed, one
 * on the way is refused. Node.js has no openat(), so the next best is done: every
 * component below the root is looked at with lstat just before it is used, each file is
 * created under a fresh name with O_EXCL | O_NOFOLLOW, and moved into place by rename or
 * link, which replace or refuse a link at the target but never follow it.
 *
 * All or nothing: every file is first written whole to a temporary name beside its
 * target, and only then are they moved into place. A failure at any step takes back what
 * was done so far: temporaries removed, replaced files put back (the very file, kept by a
 * hard link), new files and the directories made for them removed.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

import {
  isSystemError,
  McastError,
  messageOf,
  PermissionError,
  quoteInput,
  systemCodeOf,
  UsageError,
} from '../../errors.js';

export interface TreeRoot {
  /** The root's absolute path: every path written starts with it. */
  path: string;
  /** --root as the user gave it, for messages. */
  given: string;
}

export interface FileToWrite {
  /** The target's path, the root included. */
  path: string;
  text: string;
  /** Whether a regular file was there when the plan was made (it is replaced, and put back on a failure). */
  replaces: boolean;
}

/** What is at a target now, compared with what would be written there. */
export type TargetState = 'missing' | 'same' | 'different';

function fileError(doing: string, path: string, error: unknown): McastError {
  if (isSystemError(error) && (error.code === 'EACCES' || error.code === 'EPERM' || error.code === 'EROFS')) {
    return new PermissionError(`cannot ${doing} ${path}: ${error.code}`, {
      hint:
        error.code === 'EROFS'
          ? 'the file system is read-only'
          : 'run as root (the units and /etc/mcastctl belong to root)',
      cause: error,
    });
  }
  if (isSystemError(error) && (error.code === 'ENOTDIR' || error.code === 'EEXIST' || error.code === 'EISDIR')) {
    return new UsageError(`cannot ${doing} ${path}: ${error.code} (something else is in its way)`, {
      code: 'bad-file',
      cause: error,
    });
  }
  return new McastError('io', `cannot ${doing} ${path}: ${systemCodeOf(error)}`, { cause: error });
}

function linkRefused(root: TreeRoot, path: string): UsageError {
  return new UsageError(
    `${path}, below --root ${quoteInput(root.given)}, is a symbolic link: ` +
      'install-service writes through none, as it may lead out of the root',
    {
      code: 'bad-file',
      hint: 'replace the link by a directory, or give the tree it points into as --root',
    },
  );
}

/**
 * Looks at each component of `directory` below the root with lstat: a link or anything
 * but a directory is refused. Returns the directories still to be made, parents first.
 */
function walkBelowRoot(root: TreeRoot, directory: string): string[] {
  const inside = relative(root.path, directory);
  if (inside.startsWith('..') || isAbsolute(inside))
    throw new McastError('internal', `${directory} is not below the root ${root.path}`);
  const missing: string[] = [];
  let path = root.path;
  for (const part of inside.split(sep).filter((name) => name !== '')) {
    path = join(path, part);
    if (missing.length > 0) {
      missing.push(path);
      continue;
    }
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(path);
    } catch (error) {
      if (isSystemError(error) && error.code === 'ENOENT') {
        missing.push(path);
        continue;
      }
      throw fileError('look at', path, error);
    }
    if (stats.isSymbolicLink()) throw linkRefused(root, path);
    if (!stats.isDirectory())
      throw new UsageError(`${path} is in the way: not a directory (ENOTDIR)`, {
        code: 'bad-file',
        hint: 'move it away: install-service makes the directory there',
      });
  }
  return missing;
}

/** What is at `path` compared with `text`; a link, or anything but a regular file, is refused. */
export function targetState(root: TreeRoot, path: string, text: string): TargetState {
  if (walkBelowRoot(root, dirname(path)).length > 0) return 'missing';
  let descriptor: number;
  try {
    // Non-blocking, so that a FIFO in the target's place is refused rather than waited on.
    descriptor = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return 'missing';
    if (isSystemError(error) && error.code === 'ELOOP') throw linkRefused(root, path);
    throw fileError('read', path, error);
  }
  try {
    const stats = fstatSync(descriptor);
    if (!stats.isFile())
      throw new UsageError(`${path} exists and is not a regular file: move it away first`, { code: 'bad-file' });
    // A file of another size differs, however large it is: no need to read it.
    if (stats.size !== Buffer.byteLength(text)) return 'different';
    return readFileSync(descriptor, 'utf8') === text ? 'same' : 'different';
  } catch (error) {
    if (error instanceof McastError) throw error;
    throw fileError('read', path, error);
  } finally {
    closeSync(descriptor);
  }
}

/** One step to take back, newest first, on a failure. */
interface Undo {
  path: string;
  run: () => void;
}

/** Removes a file, which may already be gone. */
function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!(isSystemError(error) && error.code === 'ENOENT')) throw error;
  }
}

function makeDirectories(root: TreeRoot, directory: string, undo: Undo[]): void {
  for (const path of walkBelowRoot(root, directory)) {
    try {
      mkdirSync(path, { mode: 0o755 });
    } catch (error) {
      // Made by another hand meanwhile: the walk below looks at what it is.
      if (isSystemError(error) && error.code === 'EEXIST') continue;
      throw fileError('create the directory', path, error);
    }
    undo.push({
      path,
      run: () => {
        try {
          rmdirSync(path);
        } catch (error) {
          // Something another hand put in it since: no longer only ours to remove.
          if (!(isSystemError(error) && error.code === 'ENOTEMPTY')) throw error;
        }
      },
    });
  }
  if (walkBelowRoot(root, directory).length > 0)
    throw new McastError('io', `cannot create the directory ${directory}: it went away while being made`);
}

/** Writes `text` whole to a new file beside `path`; returns the temporary file's name. */
function writeTemporary(root: TreeRoot, file: FileToWrite, undo: Undo[]): string {
  walkBelowRoot(root, dirname(file.path));
  const temporary = `${file.path}.${randomBytes(4).toString('hex')}.tmp`;
  let descriptor: number;
  try {
    descriptor = openSync(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o644,
    );
  } catch (error) {
    throw fileError('write', file.path, error);
  }
  undo.push({ path: temporary, run: () => unlinkIfThere(temporary) });
  try {
    writeFileSync(descriptor, file.text);
    // The mode the units need, whatever the umask took away from the open's.
    fchmodSync(descriptor, 0o644);
    fsyncSync(descriptor);
  } catch (error) {
    throw fileError('write', file.path, error);
  } finally {
    closeSync(descriptor);
  }
  return temporary;
}

/**
 * Moves a written temporary into place. A new file is linked, not renamed, so that one
 * another hand put there since the plan is refused (EEXIST) rather than replaced; a file
 * that is replaced is first kept under another name, to be put back on a failure.
 * Returns that name, to be removed once everything is in place.
 */
function moveIntoPlace(root: TreeRoot, file: FileToWrite, temporary: string, undo: Undo[]): string | undefined {
  walkBelowRoot(root, dirname(file.path));
  if (!file.replaces) {
    try {
      linkSync(temporary, file.path);
    } catch (error) {
      throw fileError('write', file.path, error);
    }
    undo.push({ path: file.path, run: () => unlinkIfThere(file.path) });
    unlinkIfThere(temporary);
    return undefined;
  }
  const kept = `${file.path}.${randomBytes(4).toString('hex')}.old`;
  try {
    linkSync(file.path, kept);
  } catch (error) {
    throw fileError('keep a copy of', file.path, error);
  }
  undo.push({ path: kept, run: () => unlinkIfThere(kept) });
  try {
    renameSync(temporary, file.path);
  } catch (error) {
    throw fileError('write', file.path, error);
  }
  undo.push({ path: file.path, run: () => renameSync(kept, file.path) });
  return kept;
}

/** Takes back every step, newest first; returns the paths it could not put right. */
function takeBack(undo: readonly Undo[]): string[] {
  const left: string[] = [];
  for (const step of [...undo].reverse()) {
    try {
      step.run();
    } catch {
      left.push(step.path);
    }
  }
  return left;
}

/** Writes every file below the root, whole, or none of them (see the top of this file). */
export function writeAllOrNone(root: TreeRoot, files: readonly FileToWrite[]): void {
  const undo: Undo[] = [];
  const kept: string[] = [];
  try {
    for (const file of files) makeDirectories(root, dirname(file.path), undo);
    const temporaries = files.map((file) => writeTemporary(root, file, undo));
    for (const [index, file] of files.entries()) {
      const copy = moveIntoPlace(root, file, temporaries[index]!, undo);
      if (copy !== undefined) kept.push(copy);
    }
  } catch (error) {
    const left = takeBack(undo);
    if (left.length === 0) throw error;
    throw new McastError('io', `${messageOf(error)}; and could not take back: ${left.join(', ')}`, {
      hint: 'remove or restore those paths by hand',
      cause: error,
    });
  }
  // Everything is in place: the copies of the replaced files are no longer needed. One
  // that cannot be removed is left, rather than failing what is done.
  for (const copy of kept) {
    try {
      unlinkIfThere(copy);
    } catch {}
  }
}
