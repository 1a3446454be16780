/**
 * Tests whose code must run inside a network namespace run it in a child process: the
 * test file again, started with `ip netns exec NS node --import tsx FILE` and a role in
 * its environment. The child reports what happens as JSON lines on stdout (emitEvent);
 * the test reads them through RoleChild.
 */
import type { ChildProcess } from 'node:child_process';
import type { Lab } from './lab.js';
import { createInterface } from 'node:readline';

/** Child side: one event, one JSON line on stdout. */
export function emitEvent(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** Test side: a role child's events, stderr, stdin lines and exit. */
export class RoleChild {
  readonly events: Array<Record<string, unknown>> = [];
  readonly exited: Promise<number | null>;
  #stderr = '';

  constructor(readonly process: ChildProcess) {
    createInterface({ input: process.stdout! }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.events.push({ event: 'garbage', line });
      }
    });
    process.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
    this.exited = new Promise((resolve) => process.on('close', (code) => resolve(code)));
    // A child that has already gone makes a late write fail with EPIPE: nothing to report.
    process.stdin!.on('error', () => {});
  }

  get stderr(): string {
    return this.#stderr;
  }

  send(line: string): void {
    if (this.process.exitCode !== null || this.process.signalCode !== null || this.process.stdin!.destroyed) return;
    this.process.stdin!.write(`${line}\n`);
  }

  /** Resolves with the first event matching; the deadline only keeps a broken path from hanging. */
  async waitFor(
    what: string,
    match: (event: Record<string, unknown>) => boolean,
    deadlineMs = 20_000,
  ): Promise<Record<string, unknown>> {
    const started = Date.now();
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      if (this.process.exitCode !== null && !this.events.some(match)) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const late = this.events.find(match);
        if (late) return late;
        throw new Error(
          `child exited (${this.process.exitCode}) before ${what}\nevents: ${JSON.stringify(this.events)}\nstderr: ${this.#stderr}`,
        );
      }
      if (Date.now() - started > deadlineMs)
        throw new Error(`gave up waiting for ${what}\nevents: ${JSON.stringify(this.events)}\nstderr: ${this.#stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async exit(deadlineMs = 30_000): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.process.kill('SIGKILL');
        reject(
          new Error(
            `child still running after ${deadlineMs} ms\nevents: ${JSON.stringify(this.events)}\nstderr: ${this.#stderr}`,
          ),
        );
      }, deadlineMs);
    });
    try {
      return await Promise.race([this.exited, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface RoleSpawnOptions {
  lab: Lab;
  ns: string;
  /** The test file to run again (import.meta.url's path). */
  file: string;
  /** The environment variable that carries the role, e.g. MCL_ROUTES_ROLE. */
  roleVariable: string;
  role: string;
  env?: Record<string, string>;
  /** Words before node (e.g. setpriv ...), after `ip netns exec NS`. */
  prefix?: readonly string[];
  cwd: string;
}

/** Runs `options.file` in namespace `ns` as a role child. */
export function spawnRole(options: RoleSpawnOptions): RoleChild {
  const env: NodeJS.ProcessEnv = { ...process.env, [options.roleVariable]: options.role, ...options.env };
  // Inherited, this would make the child report to the parent's test runner.
  delete env.NODE_TEST_CONTEXT;
  const argv = [...(options.prefix ?? []), process.execPath, '--import', 'tsx', options.file];
  return new RoleChild(options.lab.spawn(options.ns, argv, { cwd: options.cwd, env }));
}
