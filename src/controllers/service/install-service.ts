/**
 * `mcastctl install-service`: the package's systemd units and example configuration put
 * where systemd and the daemon look for them, below a root directory ("/" on the node
 * itself, or a staging tree). Plain file work, no systemctl: enabling a service is the
 * operator's decision, and the command must run in an image build where no systemd runs.
 *
 * The units are the package's: they are written whenever they differ, with ExecStart
 * pointing at this installation's Node.js and entry script (what the operator adapts
 * belongs in `systemctl edit` drop-ins, which a reinstall leaves alone). The configuration
 * files are the operator's as soon as they exist: kept unless asked to replace them.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

import {
  isSystemError,
  McastError,
  messageOf,
  PermissionError,
  quoteInput,
  systemCodeOf,
  UsageError,
} from '../../errors.js';

/** Where the units go and where the daemon reads its configuration, below the root. */
const UNIT_DIRECTORY = 'etc/systemd/system';
export const CONFIG_DIRECTORY = 'etc/mcastctl';

/** The units of contrib/systemd, and the example configuration of contrib/. */
const UNITS = ['mcastctl.service', 'mcastctl-reconcile.service', 'mcastctl-reconcile.timer'];
const CONFIGS = ['daemon.yaml', 'group-policy.yaml'];

/** The command the units of contrib/systemd start, as they are written there. */
const CONTRIB_COMMAND = '/usr/local/bin/mcastctl';

type FileKind = 'unit' | 'config';
/**
 * write: new; update: a unit that differed, replaced; replace: a configuration file that
 * differed, replaced (--force); keep: a configuration file that differs, left as it is;
 * unchanged: already what would be written.
 */
export type FileAction = 'write' | 'update' | 'replace' | 'keep' | 'unchanged';

interface PlacedFile {
  kind: FileKind;
  /** The file's path, the root included. */
  path: string;
  action: FileAction;
}

export interface InstallServiceOptions {
  /** The directory the system's tree starts at: "/" on the node. */
  root: string;
  /** The package's own directory (where contrib/ is). */
  packageRoot: string;
  /** What ExecStart runs instead of /usr/local/bin/mcastctl: absolute paths (Node.js, then the entry script). */
  command: readonly string[];
  /** Replace configuration files that exist. */
  force: boolean;
  /** Decide and report, write nothing. */
  dryRun: boolean;
}

export interface InstallServiceResult {
  root: string;
  /** ExecStart's command, as written into the units. */
  execStart: string;
  files: PlacedFile[];
}

/**
 * One word of an ExecStart line: systemd expands `%` specifiers and `$` variables in it,
 * and splits at whitespace unless quoted.
 */
export function execStartWord(word: string): string {
  // A line break would end the line and start another directive (an ExecStartPre= of
  // whatever follows); systemd has no way to quote one.
  if (/[\u0000-\u001f\u007f]/.test(word))
    throw new UsageError(
      `the path ${quoteInput(word)} has a control character or line break: no systemd unit can run it`,
      {
        code: 'bad-file',
        hint: 'install mcastctl, and Node.js, under a path of printable characters',
      },
    );
  const escaped = word.replaceAll('%', '%%').replaceAll('$', '$$$$');
  if (/^[A-Za-z0-9_./+@:=,%$-]+$/.test(escaped)) return escaped;
  return `"${escaped.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** `unit` with each ExecStart that runs contrib's /usr/local/bin/mcastctl running `command` instead. */
export function pointExecStart(unit: string, command: string): string {
  return unit
    .split('\n')
    .map((line) =>
      line.startsWith(`ExecStart=${CONTRIB_COMMAND} `)
        ? `ExecStart=${command}${line.slice(`ExecStart=${CONTRIB_COMMAND}`.length)}`
        : line,
    )
    .join('\n');
}

function checkRoot(root: string): string {
  // resolve('') is the working directory: an empty --root would write there.
  if (root === '')
    throw new UsageError('the root is empty', {
      code: 'bad-file',
      hint: 'leave --root out for /, or give a directory',
    });
  const absolute = resolve(root);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch (error) {
    if (isSystemError(error) && (error.code === 'EACCES' || error.code === 'EPERM')) {
      throw new PermissionError(`cannot look at the root ${quoteInput(root)}: ${error.code}`, {
        hint: 'run as root',
        cause: error,
      });
    }
    throw new UsageError(
      `the root ${quoteInput(root)} does not exist (${isSystemError(error) ? error.code : 'unreadable'})`,
      {
        code: 'bad-file',
        hint: 'give an existing directory with --root, or leave it out for /',
        cause: error,
      },
    );
  }
  if (!isDirectory) throw new UsageError(`the root ${quoteInput(root)} is not a directory`, { code: 'bad-file' });
  return absolute;
}

function readSource(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new McastError('internal', `the package's file ${path} is missing or unreadable: ${messageOf(error)}`, {
      hint: 'reinstall mcastctl: its contrib/ directory is incomplete',
      cause: error,
    });
  }
}

/** The target's text, or undefined when there is none; a directory or the like in its place is a usage error. */
function readTarget(path: string): string | undefined {
  try {
    if (!statSync(path).isFile())
      throw new UsageError(`${path} exists and is not a regular file: move it away first`, { code: 'bad-file' });
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof McastError) throw error;
    if (isSystemError(error) && (error.code === 'ENOENT' || error.code === 'ENOTDIR')) return undefined;
    throw fileError('read', path, error);
  }
}

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
    return new UsageError(`cannot ${doing} ${path}: ${error.code} (something other than a directory is in its way)`, {
      code: 'bad-file',
      cause: error,
    });
  }
  return new McastError('io', `cannot ${doing} ${path}: ${systemCodeOf(error)}`, { cause: error });
}

/**
 * Refuses a target whose directory, as far as it exists, leads out of the root (a
 * symbolic link on the way, such as `<root>/etc` to the node's own /etc): what is written
 * below --root stays below it.
 */
function checkInsideRoot(root: string, path: string): void {
  let existing = dirname(path);
  for (;;) {
    try {
      existing = realpathSync(existing);
      break;
    } catch {
      if (existing === root || dirname(existing) === existing) return;
      existing = dirname(existing);
    }
  }
  const realRoot = realpathSync(root);
  const inside = relative(realRoot, existing);
  if (inside.startsWith('..') || resolve(realRoot, inside) !== existing)
    throw new UsageError(
      `${path} leads out of the root ${quoteInput(root)}: a symbolic link on its way goes to ${existing}`,
      {
        code: 'bad-file',
        hint: 'replace the link by a directory, or give the tree it points into as --root',
      },
    );
}

/**
 * Writes every file whole or none of them: each to a temporary file beside it first (a
 * failure removes them all, nothing replaced), then each renamed over its target (a
 * rename that fails puts back what the earlier ones replaced).
 */
function writeAllOrNone(files: ReadonlyArray<{ path: string; text: string; previous: string | undefined }>): void {
  const staged: Array<{ path: string; temporary: string; previous: string | undefined }> = [];
  const removeStaged = () => {
    for (const file of staged) rmSync(file.temporary, { force: true });
  };
  for (const file of files) {
    try {
      mkdirSync(dirname(file.path), { recursive: true, mode: 0o755 });
    } catch (error) {
      removeStaged();
      throw fileError('create the directory of', file.path, error);
    }
    const temporary = `${file.path}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      writeFileSync(temporary, file.text, { mode: 0o644, flag: 'wx' });
    } catch (error) {
      rmSync(temporary, { force: true });
      removeStaged();
      throw fileError('write', file.path, error);
    }
    staged.push({ path: file.path, temporary, previous: file.previous });
  }
  for (const [index, file] of staged.entries()) {
    try {
      renameSync(file.temporary, file.path);
    } catch (error) {
      for (const done of staged.slice(0, index).reverse()) {
        if (done.previous === undefined) rmSync(done.path, { force: true });
        else writeFileSync(done.path, done.previous, { mode: 0o644 });
      }
      for (const rest of staged.slice(index)) rmSync(rest.temporary, { force: true });
      throw fileError('write', file.path, error);
    }
  }
}

export function installService(options: InstallServiceOptions): InstallServiceResult {
  const root = checkRoot(options.root);
  const execStart = options.command.map(execStartWord).join(' ');
  const wanted = [
    ...UNITS.map((name) => ({
      kind: 'unit' as const,
      path: join(root, UNIT_DIRECTORY, name),
      text: pointExecStart(readSource(join(options.packageRoot, 'contrib/systemd', name)), execStart),
    })),
    ...CONFIGS.map((name) => ({
      kind: 'config' as const,
      path: join(root, CONFIG_DIRECTORY, name),
      text: readSource(join(options.packageRoot, 'contrib', name)),
    })),
  ];
  // Every decision before any write: a refusal (a directory in a file's place) changes nothing.
  for (const file of wanted) checkInsideRoot(root, file.path);
  const decided = wanted.map((file) => {
    const existing = readTarget(file.path);
    let action: FileAction;
    if (existing === undefined) action = 'write';
    else if (existing === file.text) action = 'unchanged';
    else if (file.kind === 'unit') action = 'update';
    else action = options.force ? 'replace' : 'keep';
    return { ...file, action, previous: existing };
  });
  if (!options.dryRun) {
    writeAllOrNone(
      decided.filter((file) => file.action === 'write' || file.action === 'update' || file.action === 'replace'),
    );
  }
  return { root, execStart, files: decided.map(({ kind, path, action }) => ({ kind, path, action })) };
}
