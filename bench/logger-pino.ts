/**
 * The pino-backed candidate for `src/runtime/logger.ts`, kept beside the logger benchmark
 * so that the figures that decided against it can be measured again. Same public shape
 * and same two formats; it writes synchronously to `options.stream`.
 *
 * What pino could not be configured to do, and this wrapper does around it:
 * - pino writes `{"level":…,"time":…,<fields>,"msg":…}`: level before time and the
 *   message last. The formats start with time, level, msg, so pino's own level output is
 *   turned off (a level formatter of `{}`), the time is written without its leading comma,
 *   and the level label and message go in as the first fields of the merging object.
 * - pino's child bindings are written before the entry's fields, so a clash writes the key
 *   twice; children here merge their fields into each entry instead.
 * - pino's fallback serializer writes `[Circular]`, sorts keys, cuts nesting at 5 levels
 *   and writes nested bigints as bare numbers; values are normalized here first so that
 *   pino's JSON.stringify never falls back.
 * - pino has no synchronous text output (pino-pretty's layout is not logfmt): the text
 *   format is written from the entry object pino hands its destination, with the same
 *   logfmt rules as the own logger, and pino's JSON line is thrown away.
 */
import { pino, type DestinationStream, type Logger as PinoCore } from 'pino';
// The logfmt rules are the project's own logger's, so that both write the same text.
import { oneLine, textKey, textValue } from '../src/runtime/logger.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export type LogFields = Record<string, unknown>;

export interface LoggerOptions {
  format: LogFormat;
  level: LogLevel;
  stream?: { write(text: string): unknown };
  clock?: () => Date;
}

const RESERVED_JSON_KEYS = new Set(['time', 'level', 'msg']);

interface TextDestination extends DestinationStream {
  lastObj?: Record<string, unknown>;
}

function createCore(options: LoggerOptions): PinoCore {
  const stream = options.stream ?? process.stderr;
  const clock = options.clock ?? (() => new Date());
  const safeWrite = (text: string) => {
    try {
      stream.write(text);
    } catch {
      // A log that cannot be written (stderr closed) must not take the daemon down.
    }
  };
  const json: DestinationStream = { write: safeWrite };
  const text: TextDestination = {
    write(_jsonLine: string) {
      const entry = this.lastObj ?? {};
      safeWrite(textLine(clock().toISOString(), entry));
    },
  };
  // pino reads this symbol to hand the destination the entry object before write().
  (text as unknown as Record<symbol, boolean>)[pino.symbols.needsMetadataGsym] = true;
  return pino(
    {
      level: options.level,
      base: null,
      serializers: {},
      timestamp: options.format === 'json' ? () => `"time":"${clock().toISOString()}"` : false,
      formatters: {
        level: () => ({}),
        ...(options.format === 'json' ? { log: jsonFields } : {}),
      },
    },
    options.format === 'json' ? json : text,
  );
}

export class Logger {
  private readonly core: PinoCore;

  constructor(
    options: LoggerOptions,
    private readonly bound: LogFields = {},
    core?: PinoCore,
  ) {
    this.core = core ?? createCore(options);
  }

  enabled(level: LogLevel): boolean {
    return this.core.isLevelEnabled(level);
  }

  get level(): LogLevel {
    return this.core.level as LogLevel;
  }

  set level(level: LogLevel) {
    this.core.level = level;
  }

  debug(message: string, fields?: LogFields): void {
    this.log('debug', message, fields);
  }

  info(message: string, fields?: LogFields): void {
    this.log('info', message, fields);
  }

  warn(message: string, fields?: LogFields): void {
    this.log('warn', message, fields);
  }

  error(message: string, fields?: LogFields): void {
    this.log('error', message, fields);
  }

  child(fields: LogFields): Logger {
    return new Logger({ format: 'text', level: 'info' }, { ...this.bound, ...fields }, this.core);
  }

  log(level: LogLevel, message: string, fields?: LogFields): void {
    if (!this.core.isLevelEnabled(level)) return;
    // Level and message as the first keys: pino would write them after the time and last.
    this.core[level]({ '\u0000level': level, '\u0000msg': message, ...this.bound, ...fields });
  }
}

/** The JSON fields: level and msg first, reserved names renamed, errors, bigints, cycles. */
function jsonFields(entry: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { level: entry['\u0000level'], msg: entry['\u0000msg'] };
  for (const [key, value] of flatten(entry))
    out[RESERVED_JSON_KEYS.has(key) ? `field_${key}` : key] = normalize(value, new WeakSet());
  return out;
}

function flatten(entry: Record<string, unknown>): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(entry)) {
    if (value === undefined || key === '\u0000level' || key === '\u0000msg') continue;
    if (value instanceof Error) {
      entries.push([key, value.message]);
      const code = (value as { code?: unknown }).code;
      if (typeof code === 'string') entries.push([`${key}_code`, code]);
      continue;
    }
    entries.push([key, value]);
  }
  return entries;
}

/** A copy that JSON.stringify writes as the own logger did (bigints, errors, cycles). */
function normalize(value: unknown, seen: WeakSet<object>): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return value.message;
  if (value instanceof Date) return value.toISOString();
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => normalize(item, seen));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = normalize(item, seen);
  return copy;
}

function textLine(time: string, entry: Record<string, unknown>): string {
  const level = String(entry['\u0000level']);
  let line = `${time} ${level.padEnd(5)} ${oneLine(String(entry['\u0000msg']))}`;
  for (const [key, value] of flatten(entry)) line += ` ${textKey(key)}=${textValue(value)}`;
  return `${line}\n`;
}
