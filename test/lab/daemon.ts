/**
 * Runs the built `mcastctl daemon` (dist/: `npm run build` first; env MCASTCTL_BIN runs
 * another binary) inside a lab node's namespace, with the node's OVS environment
 * (OVS_RUNDIR and friends), and collects its JSON log lines from stderr.
 *
 * The daemon is a lab child: `lab.destroy()` stops it (SIGTERM, SIGKILL 2 s later) also
 * when a test fails. Its state directory and control socket live in the lab's scratch
 * directory, one pair per node (`<lab dir>/daemon-<node>/`), so a daemon restarted on the
 * same node finds its predecessor's state.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { deadline } from '../helpers/time-scale.js';
import { MCASTCTL_BIN, mcastctl, REPO_ROOT } from './cli.js';
import { sleep } from './lab.js';
import type { OvsNode } from './ovs.js';

/** sun_path is 108 octets, NUL included. */
const MAX_UNIX_PATH = 107;
/** Lines of stderr (and stdout) kept. */
const MAX_LINES = 20_000;

export interface DaemonOptions {
  /** Extra arguments, after the defaults (a repeated flag given here wins where the CLI takes the last one). */
  args?: string[];
  /** --gateway (default: the node's gateway port, else `gw0`). */
  gateway?: string;
  /**
   * --multicast-interfaces (default: none, so the daemon routes nothing and runs on any
   * kernel). A test of routing names them, usually routedUplinks(node); on a kernel without
   * multicast routing that daemon then refuses to start (exit 69), as it should.
   */
  multicastInterfaces?: readonly string[];
  /** --state-dir (default `<lab dir>/daemon-<node>/state`; not created here: the daemon makes it). */
  stateDir?: string;
  /** --control-socket (default `<lab dir>/daemon-<node>/ctl.sock`; its directory is created). */
  controlSocket?: string;
  /** On top of this process's environment and the node's OVS environment (NO_COLOR=1 is set too). */
  env?: Record<string, string>;
  /** Words before `node <bin>` (inside the namespace), e.g. a shell that mounts something and execs the rest. */
  wrapper?: string[];
  /** The mcastctl entry script run (default: this tree's bin/mcastctl.js), e.g. one installed from the package. */
  bin?: string;
}

/** One log line of the daemon: its JSON object, or `{ msg: <line> }` for a line that is not one. */
export type LogEntry = Record<string, unknown>;

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningDaemon {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The full argv after `node <bin>`: `daemon --bridge ...`. */
  readonly args: readonly string[];
  readonly controlSocket: string;
  readonly stateDir: string;
  /** Stderr lines so far (the log, one JSON object a line with --log-format json). */
  logs(): string[];
  /** logs(), parsed. */
  entries(): LogEntry[];
  /** Stdout lines so far. */
  stdout(): string[];
  /**
   * Resolves with the first log entry (past or future) for which `predicate` holds; rejects
   * after `timeoutMs` (default 10 s) or when the daemon exits first, with the log's tail.
   */
  waitForLog(predicate: (entry: LogEntry, line: string) => boolean, timeoutMs?: number): Promise<LogEntry>;
  /** Resolves with the daemon's 'listening' log entry (it serves its control socket): default 20 s. */
  ready(timeoutMs?: number): Promise<LogEntry>;
  /** Resolves when the daemon has exited (never rejects). */
  readonly exited: Promise<ExitStatus>;
  /** Whether it still runs. */
  running(): boolean;
  /**
   * Sends `signal` (default SIGTERM) and resolves with the exit status; SIGKILL if it has
   * not exited after `timeoutMs` (default 10 s; the status then says SIGKILL).
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
  /** SIGKILL (a crash: no cleanup); resolves once it is gone. */
  kill9(): Promise<void>;
}

function parseEntry(line: string): LogEntry {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as LogEntry;
  } catch {
    // not JSON: a plain line (e.g. a Node warning or a crash trace)
  }
  return { msg: line };
}

/** The error lines of the daemons' logs, for a suite's after() hook to show. */
export function errorEntries(daemons: readonly (RunningDaemon | undefined)[]): LogEntry[] {
  return daemons.flatMap((daemon) => daemon?.entries().filter((entry) => entry['level'] === 'error') ?? []);
}

/** The node's uplinks, by name: the multicast interfaces of a daemon that routes to the outside. */
export function routedUplinks(node: OvsNode): string[] {
  return node.uplinks.map((uplink) => uplink.name);
}

/**
 * Starts `mcastctl daemon --bridge <bridge> --gateway <gw> [--multicast-interfaces <ifs>]
 * --state-dir <dir> --control-socket <sock> --metrics-address 127.0.0.1:0 --log-format json
 * ...args` in `node`'s namespace. Resolves at once (the process is spawned); wait for
 * readiness with ready().
 */
export function startDaemon(node: OvsNode, options: DaemonOptions = {}): RunningDaemon {
  const base = node.lab.file(`daemon-${node.name}`);
  const stateDir = options.stateDir ?? `${base}/state`;
  const controlSocket = options.controlSocket ?? `${base}/ctl.sock`;
  if (controlSocket.length > MAX_UNIX_PATH) throw new RangeError(`${controlSocket} is too long for a unix socket path`);
  mkdirSync(dirname(controlSocket), { recursive: true });
  const gateway = options.gateway ?? node.gateway?.name ?? 'gw0';
  const multicastInterfaces = options.multicastInterfaces ?? [];
  const args = [
    'daemon',
    '--bridge',
    node.bridge,
    '--gateway',
    gateway,
    ...(multicastInterfaces.length > 0 ? ['--multicast-interfaces', multicastInterfaces.join(',')] : []),
    '--state-dir',
    stateDir,
    '--control-socket',
    controlSocket,
    '--metrics-address',
    '127.0.0.1:0',
    '--log-format',
    'json',
    ...(options.args ?? []),
  ];
  // `ip netns exec` execs the command: the child's pid is node's, so signals reach it.
  const child = node.spawn([...(options.wrapper ?? []), process.execPath, options.bin ?? MCASTCTL_BIN, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { NO_COLOR: '1', ...options.env },
  });
  if (child.pid === undefined) throw new Error(`could not start mcastctl daemon in ${node.ns}`);
  const pid = child.pid;

  const stderrLines: string[] = [];
  const stdoutLines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  const keep = (lines: string[], line: string) => {
    lines.push(line);
    if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
  };
  createInterface({ input: child.stderr! }).on('line', (line) => {
    keep(stderrLines, line);
    for (const waiter of [...waiters]) waiter(line);
  });
  createInterface({ input: child.stdout! }).on('line', (line) => keep(stdoutLines, line));

  let status: ExitStatus | undefined;
  // 'close', not 'exit': the last log lines are in by then.
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('close', (code, signal) => resolve((status = { code, signal })));
    child.once('error', () => resolve((status = { code: null, signal: null })));
  });
  const tail = () => stderrLines.slice(-30).join('\n');

  const waitForLog = (predicate: (entry: LogEntry, line: string) => boolean, timeoutMs = 10_000): Promise<LogEntry> => {
    for (const line of stderrLines) {
      const entry = parseEntry(line);
      if (predicate(entry, line)) return Promise.resolve(entry);
    }
    return new Promise<LogEntry>((resolve, reject) => {
      const finish = (error: Error | undefined, entry?: LogEntry) => {
        clearTimeout(timer);
        waiters.delete(onLine);
        if (error) reject(error);
        else resolve(entry!);
      };
      const onLine = (line: string) => {
        const entry = parseEntry(line);
        let matched: boolean;
        try {
          matched = predicate(entry, line);
        } catch (error) {
          finish(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        if (matched) finish(undefined, entry);
      };
      const timer = setTimeout(
        () =>
          finish(
            new Error(
              `no matching daemon log line in ${node.ns} within ${deadline(timeoutMs)} ms; log tail:\n${tail()}`,
            ),
          ),
        deadline(timeoutMs),
      );
      waiters.add(onLine);
      void exited.then((s) => {
        if (waiters.has(onLine))
          finish(
            new Error(
              `the daemon in ${node.ns} exited (${s.signal ?? s.code}) before a matching log line; log tail:\n${tail()}`,
            ),
          );
      });
    });
  };

  const running = () => status === undefined && child.exitCode === null && child.signalCode === null;

  return {
    child,
    pid,
    args,
    controlSocket,
    stateDir,
    logs: () => [...stderrLines],
    entries: () => stderrLines.map(parseEntry),
    stdout: () => [...stdoutLines],
    waitForLog,
    ready: (timeoutMs = 20_000) => waitForLog((entry) => entry['msg'] === 'listening', timeoutMs),
    exited,
    running,
    async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<ExitStatus> {
      if (running()) {
        child.kill(signal);
        if (!(await Promise.race([exited.then(() => true), sleep(deadline(timeoutMs)).then(() => false)])))
          child.kill('SIGKILL');
      }
      return exited;
    },
    async kill9(): Promise<void> {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * `mcastctl ARGS --json` against the daemon's control socket: its document, or an assertion error with stderr when it
 * exits other than 0.
 */
export async function control<T>(daemon: Pick<RunningDaemon, 'controlSocket'>, args: readonly string[]): Promise<T> {
  const result = await mcastctl([...args, '--json', '--control-socket', daemon.controlSocket], { timeoutMs: 15_000 });
  if (result.code !== 0)
    throw new Error(`mcastctl ${args.join(' ')} --json exited ${result.code}: ${result.stderr.trim()}`);
  return JSON.parse(result.stdout) as T;
}
