/** Runs the built CLI (bin/mcastctl.js, after `npm run build`) as a user would. */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MCASTCTL = fileURLToPath(new URL('../../bin/mcastctl.js', import.meta.url));

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  input?: Buffer | string;
  env?: NodeJS.ProcessEnv;
  /** Run inside this network namespace (ip netns exec). */
  netns?: string;
  timeoutMs?: number;
}

function commandLine(args: readonly string[], options: CliOptions): [string, string[]] {
  const node = [process.execPath, MCASTCTL, ...args];
  return options.netns === undefined ? [node[0]!, node.slice(1)] : ['ip', ['netns', 'exec', options.netns, ...node]];
}

export function runCli(args: readonly string[], options: CliOptions = {}): CliResult {
  const [command, argv] = commandLine(args, options);
  const result = spawnSync(command, argv, {
    input: options.input,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    timeout: options.timeoutMs ?? 60_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** Starts the CLI without waiting: for live commands stopped by a signal. */
export function startCli(args: readonly string[], options: CliOptions = {}) {
  const [command, argv] = commandLine(args, options);
  const child = spawn(command, argv, { env: { ...process.env, NO_COLOR: '1', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<CliResult>((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
  return { child, done, output: () => ({ stdout, stderr }) };
}

export function parseNdjson(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
