/**
 * The daemon's logger against the pino-backed candidate (`bench/logger-pino.ts`): lines/s
 * of each format to a stream that drops its input, and the cost of importing each cold in a
 * fresh `node` process (median of several): the built logger (`npm run bench` builds dist/),
 * and for the candidate the pino package alone (its wrapper costs what the own logger does).
 * Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { UnavailableError } from '../src/errors.js';
import { Logger as OwnLogger, type LogFormat } from '../src/runtime/logger.js';
import { Logger as PinoLogger } from './logger-pino.js';

export interface LoggerFigures {
  name: string;
  format: LogFormat;
  linesPerSecond: number;
}

export interface ImportFigures {
  name: string;
  milliseconds: number;
}

interface AnyLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): AnyLogger;
}
type LoggerClass = new (options: {
  format: LogFormat;
  level: 'info';
  stream: { write(text: string): unknown };
}) => AnyLogger;

const CANDIDATES: Array<{ name: string; module: string; make: LoggerClass }> = [
  { name: 'own (src/runtime/logger.ts)', module: './dist/runtime/logger.js', make: OwnLogger },
  { name: 'pino (bench/logger-pino.ts)', module: 'pino', make: PinoLogger },
];

/** A daemon-like entry: a child's bound fields, a few strings and numbers, sometimes an error. */
function measure(make: LoggerClass, format: LogFormat, seconds = 1): number {
  let bytes = 0;
  const logger = new make({ format, level: 'info', stream: { write: (text: string) => (bytes += text.length) } }).child(
    { component: 'sync' },
  );
  const error = new UnavailableError('cannot reach OVSDB unix:/run/openvswitch/db.sock: ENOENT');
  const entry = (i: number) =>
    logger.info('group joined', {
      group: `239.1.${i & 0xff}.1`,
      port: 'pod-a',
      ports: 3,
      error: i % 8 === 0 ? error : undefined,
    });
  for (let i = 0; i < 20_000; i++) entry(i);
  let lines = 0;
  const start = performance.now();
  let now = start;
  while (now - start < seconds * 1000) {
    for (let i = 0; i < 5_000; i++) entry(i);
    lines += 5_000;
    now = performance.now();
  }
  if (bytes < 0) console.log('');
  return lines / ((now - start) / 1000);
}

/**
 * Milliseconds to import `module` in a fresh plain `node` process (the daemon runs the built
 * JavaScript), less importing an empty module there, which is the loader's own start.
 */
function importMilliseconds(module: string, runs = 9): number {
  const time = (specifier: string) => {
    const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(child.stderr);
    return Number(child.stdout.trim());
  };
  const median = (specifier: string) =>
    Array.from({ length: runs }, () => time(specifier)).sort((a, b) => a - b)[runs >> 1]!;
  return median(module) - median('data:text/javascript,export {}');
}

export function benchLogger(): { throughput: LoggerFigures[]; imports: ImportFigures[] } {
  const throughput: LoggerFigures[] = [];
  for (const { name, make } of CANDIDATES) {
    for (const format of ['text', 'json'] as const)
      throughput.push({ name, format, linesPerSecond: measure(make, format) });
  }
  const imports = CANDIDATES.map(({ name, module }) => ({ name, milliseconds: importMilliseconds(module) }));
  return { throughput, imports };
}
