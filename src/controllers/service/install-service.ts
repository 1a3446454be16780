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
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { isSystemError, McastError, messageOf, PermissionError, quoteInput, UsageError } from '../../errors.js';
import { type TreeRoot, targetState, writeAllOrNone } from './root-files.js';

/** Where the units go and where the daemon reads its configuration, below the root. */
const UNIT_DIRECTORY = 'etc/systemd/system';
export const CONFIG_DIRECTORY = 'etc/mcastctl';

/** The units of contrib/systemd, and the example configuration of contrib/. */
const UNITS = ['mcastctl.service', 'mcastctl-reconcile.service', 'mcastctl-reconcile.timer'];
const CONFIGS = ['daemon.yaml', 'group-policy.yaml'];

/** What no path written to, or put into a unit, may hold: C0 controls (the line break among them) and DEL. */
const CONTROL = /[\u0000-\u001f\u007f]/;

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
  if (CONTROL.test(word))
    throw new UsageError(
      `ExecStart would run the path ${quoteInput(word)}, which has a control character or line break: ` +
        'no systemd unit can hold it',
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

/**
 * The root as an absolute path, checked as far as its text goes and that it is a
 * directory. What is below it is looked at file by file (root-files.ts).
 */
function checkRoot(root: string): TreeRoot {
  // resolve('') is the working directory: an empty --root would write there.
  if (root === '')
    throw new UsageError('--root "" is empty: it would mean the working directory', {
      hint: 'leave --root out for /, or give a directory',
    });
  const absolute = resolve(root);
  // A path with a line break makes every message and log line about it ambiguous, and no
  // staging tree needs one.
  if (CONTROL.test(absolute))
    throw new UsageError(
      `--root ${quoteInput(root)}${absolute === root ? '' : ` (${quoteInput(absolute)})`} ` +
        'has a control character or line break: refused in a path to write to',
      { hint: 'give the root by a path of printable characters' },
    );
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch (error) {
    if (isSystemError(error) && (error.code === 'EACCES' || error.code === 'EPERM')) {
      throw new PermissionError(`cannot look at --root ${quoteInput(root)}: ${error.code}`, {
        hint: 'run as root',
        cause: error,
      });
    }
    throw new UsageError(
      `--root ${quoteInput(root)} does not exist (${isSystemError(error) ? error.code : 'unreadable'})`,
      {
        code: 'bad-file',
        hint: 'give an existing directory with --root, or leave it out for /',
        cause: error,
      },
    );
  }
  if (!isDirectory) throw new UsageError(`--root ${quoteInput(root)} is not a directory`, { code: 'bad-file' });
  return { path: absolute, given: root };
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

export function installService(options: InstallServiceOptions): InstallServiceResult {
  const root = checkRoot(options.root);
  const execStart = options.command.map(execStartWord).join(' ');
  const wanted = [
    ...UNITS.map((name) => ({
      kind: 'unit' as const,
      path: join(root.path, UNIT_DIRECTORY, name),
      text: pointExecStart(readSource(join(options.packageRoot, 'contrib/systemd', name)), execStart),
    })),
    ...CONFIGS.map((name) => ({
      kind: 'config' as const,
      path: join(root.path, CONFIG_DIRECTORY, name),
      text: readSource(join(options.packageRoot, 'contrib', name)),
    })),
  ];
  // Every decision before any write: a refusal (a link on the way, a directory in a
  // file's place) changes nothing, under --dry-run too.
  const decided = wanted.map((file) => {
    const state = targetState(root, file.path, file.text);
    let action: FileAction;
    if (state === 'missing') action = 'write';
    else if (state === 'same') action = 'unchanged';
    else if (file.kind === 'unit') action = 'update';
    else action = options.force ? 'replace' : 'keep';
    return { ...file, action };
  });
  if (!options.dryRun) {
    writeAllOrNone(
      root,
      decided
        .filter((file) => file.action === 'write' || file.action === 'update' || file.action === 'replace')
        .map((file) => ({ path: file.path, text: file.text, replaces: file.action !== 'write' })),
    );
  }
  return {
    root: root.path,
    execStart,
    files: decided.map(({ kind, path, action }) => ({ kind, path, action })),
  };
}
