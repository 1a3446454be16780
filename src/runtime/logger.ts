/**
 * The daemon's structured log, on stderr: one line per entry, as text (logfmt-style
 * `key=value`) or as JSON (one object a line), with a level filter and an injected clock.
 *
 *   2026-11-30T12:00:00.000Z info  group joined group=239.1.2.3 port=pod-a
 *   {"time":"2026-11-30T12:00:00.000Z","level":"info","msg":"group joined","group":"239.1.2.3","port":"pod-a"}
 *
 * An Error in the fields is written as its message, plus `<key>_code` when it carries a
 * string code (McastError, DecodeError, Node's system errors): never as a stack.
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Record<string, unknown>;

export interface LoggerOptions {
  format: LogFormat;
  /** The lowest level written. */
  level: LogLevel;
  /** Default process.stderr. */
  stream?: { write(text: string): unknown };
  /** Default `() => new Date()`. */
  clock?: () => Date;
}

const RANK: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3 };
/** The keys every JSON entry starts with; a field of that name is written as `field_<name>`. */
const RESERVED_JSON_KEYS = new Set(['time', 'level', 'msg']);

export class Logger {
  private readonly format: LogFormat;
  private readonly stream: { write(text: string): unknown };
  private readonly clock: () => Date;

  constructor(
    private readonly options: LoggerOptions,
    /** Fields of every entry (from child()). */
    private readonly bound: LogFields = {},
    /** Shared with every child, so that a new level (a reload) reaches them all. */
    private readonly threshold: { rank: number } = { rank: RANK[options.level] },
  ) {
    this.format = options.format;
    this.stream = options.stream ?? process.stderr;
    this.clock = options.clock ?? (() => new Date());
  }

  /** Whether entries of `level` are written (skip building costly fields when not). */
  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.threshold.rank;
  }

  /** The lowest level written, for this logger and every child of it. */
  get level(): LogLevel {
    return LOG_LEVELS.find((level) => RANK[level] === this.threshold.rank) ?? 'info';
  }

  set level(level: LogLevel) {
    this.threshold.rank = RANK[level];
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

  /** A logger that adds `fields` to every entry (the entry's own fields win on a clash). */
  child(fields: LogFields): Logger {
    return new Logger(this.options, { ...this.bound, ...fields }, this.threshold);
  }

  log(level: LogLevel, message: string, fields?: LogFields): void {
    if (!this.enabled(level)) return;
    const entries = flatten(fields === undefined ? this.bound : { ...this.bound, ...fields });
    const time = this.clock().toISOString();
    const line =
      this.format === 'json' ? jsonLine(time, level, message, entries) : textLine(time, level, message, entries);
    try {
      this.stream.write(line);
    } catch {
      // A log that cannot be written (stderr closed) must not take the daemon down.
    }
  }
}

/** Fields as [key, value] pairs, undefined ones dropped and errors expanded. */
function flatten(fields: LogFields): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
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

function jsonLine(time: string, level: LogLevel, message: string, entries: Array<[string, unknown]>): string {
  const object: Record<string, unknown> = { time, level, msg: message };
  for (const [key, value] of entries) object[RESERVED_JSON_KEYS.has(key) ? `field_${key}` : key] = jsonValue(value);
  return `${safeStringify(object)}\n`;
}

function jsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  return value;
}

function textLine(time: string, level: LogLevel, message: string, entries: Array<[string, unknown]>): string {
  let line = `${time} ${level.padEnd(5)} ${oneLine(message)}`;
  for (const [key, value] of entries) line += ` ${textKey(key)}=${textValue(value)}`;
  return `${line}\n`;
}

/** A message stays on its line: control characters are escaped as JSON escapes them. */
export function oneLine(text: string): string {
  return /[\u0000-\u001f\u007f]/.test(text) ? JSON.stringify(text).slice(1, -1) : text;
}

/** A field name as a logfmt key: no spaces, '=', quotes or control characters. */
export function textKey(key: string): string {
  const cleaned = key.replace(/[\s="\u0000-\u001f\u007f]/g, '_');
  return cleaned === '' ? '_' : cleaned;
}

/** A field value as logfmt: quoted when it is empty or holds spaces, '=', quotes, backslashes or control characters. */
export function textValue(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value === null) return 'null';
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  else if (value instanceof Date) return value.toISOString();
  else text = safeStringify(value);
  return text === '' || /[\s="\\\u0000-\u001f\u007f]/.test(text) ? JSON.stringify(text) : text;
}

/** JSON.stringify that survives cycles and bigints (a log line must never throw). */
function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return (
      JSON.stringify(value, (_key, item: unknown) => {
        if (typeof item === 'bigint') return item.toString();
        if (item instanceof Error) return item.message;
        if (typeof item === 'object' && item !== null) {
          if (seen.has(item)) return '[circular]';
          seen.add(item);
        }
        return item;
      }) ?? String(value)
    );
  } catch {
    return String(value);
  }
}
