/**
 * Kernel (S,G) routes at scale, in a lab network namespace with four interfaces (two veth pairs):
 *
 * 1. a router (RouterSocket with MRT_INIT) adds `count` MFC entries, then deletes them,
 *    each phase timed (one setsockopt per entry);
 * 2. it adds `count` again and keeps its socket open, and `mcastctl routes --json >
 *    /dev/null` is timed inside the namespace (target: under 1 s for 10,000), after one
 *    untimed run that checks the output has every entry.
 *
 * The socket work runs in a child (this file, with MCL_BENCH_ROUTES_ROLE set) started
 * inside the namespace; the parent stays in the root namespace.
 *
 *   npx tsc -p tsconfig.build.json && node --import tsx bench/routes.ts [count]   (root)
 */
import { spawnSync } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { IPV4_KIT } from '../src/protocol/mroute/family-kits.js';
import { ifindexOf } from '../src/transport/interface-index.js';
import { RouterSocket } from '../src/transport/router-socket.js';
import { MCASTCTL_BIN } from '../test/lab/cli.js';
import { Lab } from '../test/lab/lab.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const PROJECT_ROOT = path.resolve(path.dirname(THIS_FILE), '..');
const SOURCE = '10.97.0.2';
const INTERFACES = ['d0', 'd1', 'd2', 'd3'];

export interface RoutesFigures {
  routes: number;
  addedPerSecond: number;
  deletedPerSecond: number;
  /** Wall-clock of `ip netns exec NS node bin/mcastctl.js routes --json > /dev/null` (median of `runs`). */
  routesJsonSeconds: number;
  /** Every timed run of it, in order. */
  routesJsonRuns: number[];
}

function groupAddress(index: number): string {
  return `239.${100 + (index >> 16)}.${(index >> 8) & 0xff}.${index & 0xff}`;
}

// ---------------------------------------------------------------------------------------
// The child: the router, inside the namespace

function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

async function routerRole(): Promise<void> {
  const count = Number(process.env.MCL_COUNT);
  const names = (process.env.MCL_IFACES ?? '').split(',');
  const socket = RouterSocket.open({ family: IPV4_KIT, init: true });
  names.forEach((name, index) => socket.addInterface({ index, ifindex: ifindexOf(name) }));
  const oifs = names.slice(1).map((_, index) => index + 1);
  const groups = Array.from({ length: count }, (_, i) => groupAddress(i));
  const add = (): number => {
    const started = process.hrtime.bigint();
    for (const group of groups) socket.addEntry({ source: SOURCE, group, iif: 0, oifs });
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  const addSeconds = add();
  const started = process.hrtime.bigint();
  for (const group of groups) socket.delEntry({ source: SOURCE, group });
  const deleteSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const readdSeconds = add();
  emit({ event: 'ready', addSeconds, deleteSeconds, readdSeconds });
  for await (const line of createInterface({ input: process.stdin })) if (line === 'quit') break;
  socket.close();
  process.stdin.destroy();
}

// ---------------------------------------------------------------------------------------
// The parent

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Runs the bench; prints nothing. Needs root and the built CLI (dist/). */
export async function benchRoutes(count = 10_000, runs = 3): Promise<RoutesFigures> {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`bad route count ${count}`);
  const lab = Lab.create();
  try {
    const ns = await lab.namespace('routes');
    const names = INTERFACES.map((suffix) => lab.ifname(suffix));
    // Veth pairs inside the namespace (the dummy driver is not in every kernel): d0-d1, d2-d3.
    for (let i = 0; i < names.length; i += 2) await lab.vethPair({ ns, name: names[i]! }, { ns, name: names[i + 1]! });
    await lab.ip(ns, 'addr', 'add', `${SOURCE.replace(/\.2$/, '.1')}/24`, 'dev', names[0]!);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MCL_BENCH_ROUTES_ROLE: 'router',
      MCL_COUNT: String(count),
      MCL_IFACES: names.join(','),
    };
    delete env.NODE_TEST_CONTEXT;
    const router = lab.spawn(ns, [process.execPath, '--import', 'tsx', THIS_FILE], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    router.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    router.stdin!.on('error', () => {});
    const ready = await new Promise<{ addSeconds: number; deleteSeconds: number }>((resolve, reject) => {
      createInterface({ input: router.stdout! }).on('line', (line) => {
        try {
          const event = JSON.parse(line) as { event: string; addSeconds: number; deleteSeconds: number };
          if (event.event === 'ready') resolve(event);
        } catch {
          // not ours
        }
      });
      router.once('exit', (code) =>
        reject(new Error(`the router child exited (${code}) before it was ready: ${stderr}`)),
      );
    });

    const argv = ['netns', 'exec', ns, process.execPath, MCASTCTL_BIN, 'routes', '--json'];
    // Untimed: the output has every entry.
    const check = spawnSync('ip', argv, { cwd: PROJECT_ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
    if (check.status !== 0) throw new Error(`mcastctl routes --json exited ${check.status}: ${check.stderr}`);
    const shown = JSON.parse(check.stdout) as { routes: unknown[]; routerActive: boolean };
    if (shown.routes.length !== count || !shown.routerActive)
      throw new Error(
        `routes --json shows ${shown.routes.length} routes (routerActive ${shown.routerActive}), expected ${count} and a router`,
      );

    const routesJsonRuns: number[] = [];
    const devNull = openSync('/dev/null', 'w');
    try {
      for (let i = 0; i < runs; i++) {
        const started = process.hrtime.bigint();
        const result = spawnSync('ip', argv, { cwd: PROJECT_ROOT, stdio: ['ignore', devNull, 'pipe'] });
        routesJsonRuns.push(Number(process.hrtime.bigint() - started) / 1e9);
        if (result.status !== 0)
          throw new Error(`mcastctl routes --json exited ${result.status}: ${result.stderr.toString()}`);
      }
    } finally {
      closeSync(devNull);
    }
    router.stdin!.write('quit\n');
    return {
      routes: count,
      addedPerSecond: count / ready.addSeconds,
      deletedPerSecond: count / ready.deleteSeconds,
      routesJsonSeconds: median(routesJsonRuns),
      routesJsonRuns,
    };
  } finally {
    await lab.destroy();
  }
}

const role = process.env.MCL_BENCH_ROUTES_ROLE;
if (role === 'router') await routerRole();
else if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await benchRoutes(Number(process.argv[2] ?? 10_000));
  console.log(figures);
}
