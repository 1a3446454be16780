/**
 * node:test as every test file of this project imports it: the same `describe`, `it`,
 * `test` and hooks, with a deadline on each test and hook. A test or hook that hangs
 * fails when its deadline passes, naming itself, and the rest of the run goes on (the
 * runner's own --test-timeout would name only the file, and cut a whole file short).
 *
 * - A test or hook without a `timeout` of its own gets five minutes.
 * - Every deadline, given or default, is stretched by the machine's time scale
 *   (test/helpers/time-scale.ts): the kernel lab runs the tests several times slower.
 *   Deadlines keep a hang from stalling the run; they measure nothing.
 *
 * Suites keep the timeout they are given (scaled), and have none otherwise: their tests
 * and hooks are bounded one by one.
 *
 * A test that timed out may leave behind what keeps its file's process alive (a child
 * process, a socket): once every test of the file is done, the process gets a grace period
 * to end by itself, and is then ended, so that the run goes on to the next file. The
 * runner's own --test-force-exit would do it at once, but it also cuts the last summary
 * line from the report.
 */
import * as nodeTest from 'node:test';
import { deadline } from './time-scale.js';

export type { TestContext } from 'node:test';

/** A test's or hook's deadline when it sets none: long past any test's normal time. */
const TEST_DEADLINE_MS = deadline(300_000);

/** How long a file's process may linger after its last test before it is ended. */
const LINGER_MS = deadline(10_000);

let lingerBounded = false;

/**
 * Bounds the process's life after its last test. Armed by the first test or suite the
 * process declares, never at import: a file's role children import it too, and a hook
 * alone would make them test runs that print a report on their stdout.
 */
function boundLinger(): void {
  if (lingerBounded) return;
  lingerBounded = true;
  nodeTest.after(() => {
    setTimeout(() => {
      console.error(
        `the test process still ran ${LINGER_MS} ms after its last test (something a test started was left open): ending it`,
      );
      process.exit();
    }, LINGER_MS).unref();
  });
}

type TestFn = nodeTest.TestFn;
type SuiteFn = nodeTest.SuiteFn;
type HookFn = nodeTest.HookFn;

/** Options with the deadline this file's rules give: their own scaled, or the default. */
function withDeadline<T extends { timeout?: number }>(options: T | undefined, fallback: number | undefined): T {
  const timeout = options?.timeout === undefined ? fallback : deadline(options.timeout);
  return { ...(options ?? ({} as T)), ...(timeout === undefined ? {} : { timeout }) };
}

export function describe(name: string, fn: SuiteFn): Promise<void>;
export function describe(name: string, options: nodeTest.TestOptions, fn: SuiteFn): Promise<void>;
export function describe(name: string, second: nodeTest.TestOptions | SuiteFn, third?: SuiteFn): Promise<void> {
  const [options, fn] = typeof second === 'function' ? [undefined, second] : [second, third!];
  boundLinger();
  return nodeTest.describe(name, withDeadline(options, undefined), fn);
}

export function it(name: string, fn: TestFn): Promise<void>;
export function it(name: string, options: nodeTest.TestOptions, fn: TestFn): Promise<void>;
export function it(name: string, second: nodeTest.TestOptions | TestFn, third?: TestFn): Promise<void> {
  const [options, fn] = typeof second === 'function' ? [undefined, second] : [second, third!];
  boundLinger();
  return nodeTest.it(name, withDeadline(options, TEST_DEADLINE_MS), fn);
}

export const test = it;

function hook(register: (fn: HookFn, options: nodeTest.HookOptions) => void) {
  return (fn: HookFn, options?: nodeTest.HookOptions): void => register(fn, withDeadline(options, TEST_DEADLINE_MS));
}

export const before = hook(nodeTest.before);
export const after = hook(nodeTest.after);
export const beforeEach = hook(nodeTest.beforeEach);
export const afterEach = hook(nodeTest.afterEach);
