/**
 * Runs the built CLI (`node bin/mcastctl.js ...`, i.e. dist/: `npm run build` first), on
 * this machine or inside a lab namespace, and parses its NDJSON output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deadline } from '../helpers/time-scale.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The CLI's entry point; env MCASTCTL_BIN runs the tests against another one. */
export const MCASTCTL_BIN =
  process.env.MCASTCTL_BIN ?? fileURLToPath(new URL('../../bin/mcastctl.js', import.meta.url));
const MAIN_JS = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** Why the built CLI cannot run, or undefined when it can. */
export function cliMissing(): string | undefined {
  if (!existsSync(MCASTCTL_BIN)) return `${MCASTCTL_BIN} does not exist`;
  if (process.env.MCASTCTL_BIN === undefined && !existsSync(MAIN_JS))
    return `${MAIN_JS} does not exist: run \`npm run build\` first`;
  return undefined;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall-clock time the command ran (ms). */
  elapsedMs: number;
}

export interface CliOptions {
  /** Run inside this network namespace (`ip netns exec`). */
  ns?: string;
  /** Prefix the command with these words (e.g. setpriv ...), after `ip netns exec NS`. */
  wrapper?: string[];
  /** SIGTERM after this long, SIGKILL 2 s later (default 60 s). */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Called with each stdout chunk as it arrives. */
  onStdout?: (chunk: string) => void;
  /**
   * Let the command write to this process's stdout and stderr (a terminal keeps its colours); the result's output is
   * then empty.
   */
  inherit?: boolean;
  /** Written to the command's standard input (otherwise it gets none). */
  input?: Buffer | string;
  /**
   * Run it in a process group of its own, so that Ctrl-C at a terminal does not reach it (the caller forwards signals).
   */
  detached?: boolean;
}

export interface RunningCli {
  child: ChildProcess;
  /** Resolves when the command has exited and its output is complete; never rejects for a non-zero exit. */
  done: Promise<CliResult>;
}

/** Starts `mcastctl <args>` (inside `options.ns` if given). */
export function startMcastctl(args: readonly string[], options: CliOptions = {}): RunningCli {
  const command = [...(options.wrapper ?? []), process.execPath, MCASTCTL_BIN, ...args];
  // `ip netns exec` execs the command: the child's pid is node's, so signals reach it.
  const argv = options.ns === undefined ? command : ['ip', 'netns', 'exec', options.ns, ...command];
  const started = Date.now();
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: REPO_ROOT,
    stdio: [
      options.input === undefined ? 'ignore' : 'pipe',
      ...(options.inherit ? (['inherit', 'inherit'] as const) : (['pipe', 'pipe'] as const)),
    ],
    detached: options.detached ?? false,
    // Captured output is compared as text: no colour in it.
    env: { ...process.env, ...(options.inherit ? {} : { NO_COLOR: '1' }), ...options.env },
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  const done = new Promise<CliResult>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      options.onStdout?.(chunk);
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(
      () => {
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      },
      deadline(options.timeoutMs ?? 60_000),
    );
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, elapsedMs: Date.now() - started });
    });
  });
  return { child, done };
}

/** Runs `mcastctl <args>` to the end; never rejects for a non-zero exit (the result carries it). */
export function mcastctl(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return startMcastctl(args, options).done;
}

/** Calls `onLine` with each complete line of a stream of chunks. */
export function lineSplitter(onLine: (line: string) => void): (chunk: string) => void {
  let rest = '';
  return (chunk) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) if (line.trim() !== '') onLine(line);
  };
}

/** Parses NDJSON; throws on a line that is not one JSON object, naming it. */
export function parseNdjson<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new Error(`stdout line ${index + 1} is not JSON: ${line.slice(0, 200)}`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new Error(`stdout line ${index + 1} is not a JSON object: ${line.slice(0, 200)}`);
      }
      return value as T;
    });
}
