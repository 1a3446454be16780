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
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

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

/** Writes `text` to `path` whole or not at all: a temporary file beside it, renamed over it. */
function writeWhole(path: string, text: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  } catch (error) {
    throw fileError('create the directory of', path, error);
  }
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, text, { mode: 0o644, flag: 'wx' });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw fileError('write', path, error);
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
  const decided = wanted.map((file) => {
    const existing = readTarget(file.path);
    let action: FileAction;
    if (existing === undefined) action = 'write';
    else if (existing === file.text) action = 'unchanged';
    else if (file.kind === 'unit') action = 'update';
    else action = options.force ? 'replace' : 'keep';
    return { ...file, action };
  });
  if (!options.dryRun) {
    for (const file of decided)
      if (file.action === 'write' || file.action === 'update' || file.action === 'replace')
        writeWhole(file.path, file.text);
  }
  return { root, execStart, files: decided.map(({ kind, path, action }) => ({ kind, path, action })) };
}
