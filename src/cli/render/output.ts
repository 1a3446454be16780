/**
 * The one output layer every subcommand writes through.
 *
 * - JSON mode: stdout carries only JSON (one document, or NDJSON records for streams);
 *   records are buffered and written in large chunks, so a million lines cost little.
 * - Human mode: lines and cli-table3 tables on stdout, coloured only when stdout is a
 *   terminal (or FORCE_COLOR says so) and NO_COLOR is not set.
 * - Logs, progress and warnings always go to stderr, in both modes.
 */
import { Chalk, type ChalkInstance } from 'chalk';
import Table from 'cli-table3';

export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  /** A terminal's size. */
  columns?: number;
  rows?: number;
}

export interface OutputOptions {
  json: boolean;
  stdout?: OutputStream;
  stderr?: OutputStream;
  env?: NodeJS.ProcessEnv;
}

export interface TableSpec {
  head: string[];
  rows: string[][];
  /** Column indexes to right-align (numbers). */
  alignRight?: number[];
}

/** Tables longer than this are printed as plain aligned columns. */
const BOXED_TABLE_ROWS = 200;

/** Buffered NDJSON output is flushed when it grows past this. */
const RECORD_BUFFER_CHARS = 1 << 16;

export class Output {
  readonly json: boolean;
  /** Styles for stdout (no-ops when colour is off). */
  readonly style: ChalkInstance;
  /** Styles for stderr. */
  readonly errStyle: ChalkInstance;
  private readonly stdout: OutputStream;
  private readonly stderr: OutputStream;
  private pending: string[] = [];
  private pendingChars = 0;
  private flushScheduled = false;

  constructor(options: OutputOptions) {
    const env = options.env ?? process.env;
    this.json = options.json;
    this.stdout = options.stdout ?? process.stdout;
    this.stderr = options.stderr ?? process.stderr;
    this.style = new Chalk({ level: this.json ? 0 : colorLevel(this.stdout, env) });
    this.errStyle = new Chalk({ level: colorLevel(this.stderr, env) });
  }

  /** One NDJSON line (JSON mode only). Buffered: call `flush()` when a batch ends. */
  record(value: unknown): void {
    this.assertMode(true, 'record');
    this.append(JSON.stringify(value) + '\n');
  }

  /** One NDJSON line already serialized (JSON mode only): for hot streams with their own serializer. */
  recordLine(json: string): void {
    this.assertMode(true, 'recordLine');
    this.append(json + '\n');
  }

  /** A whole JSON document (JSON mode only), pretty-printed. */
  document(value: unknown): void {
    this.assertMode(true, 'document');
    this.flush();
    this.stdout.write(JSON.stringify(value, null, 2) + '\n');
  }

  /** A line of human output on stdout (human mode only). */
  line(text = ''): void {
    this.assertMode(false, 'line');
    this.append(text + '\n');
  }

  table(spec: TableSpec): void {
    this.assertMode(false, 'table');
    if (spec.rows.length > BOXED_TABLE_ROWS) {
      this.plainTable(spec);
      return;
    }
    const table = new Table({
      head: spec.head.map((title) => this.style.bold(title)),
      style: { head: [], border: [] },
      colAligns: spec.head.map((_, index) => (spec.alignRight?.includes(index) ? 'right' : 'left')),
    });
    table.push(...spec.rows);
    this.line(table.toString());
  }

  /**
   * Aligned columns without borders, one line per row (multi-line cells joined by ", "):
   * linear in the rows, where cli-table3 takes seconds for thousands of them.
   */
  private plainTable(spec: TableSpec): void {
    const rows = spec.rows.map((row) => row.map((cell) => cell.split('\n').join(', ')));
    const widths = spec.head.map((title, column) =>
      Math.max(title.length, ...rows.map((row) => visibleLength(row[column] ?? ''))),
    );
    const format = (cells: readonly string[]) =>
      cells
        .map((cell, column) => {
          const pad = ' '.repeat(Math.max(0, widths[column]! - visibleLength(cell)));
          return spec.alignRight?.includes(column) ? pad + cell : cell + pad;
        })
        .join('  ')
        .trimEnd();
    this.line(this.style.bold(format(spec.head)));
    for (const row of rows) this.line(format(row));
  }

  /**
   * `lines` as the whole screen of a live view: on a terminal the screen is cleared first,
   * the lines drawn from its top; elsewhere they are lines like any others.
   */
  screen(lines: readonly string[]): void {
    this.assertMode(false, 'screen');
    this.append(`${this.stdout.isTTY === true ? '\x1b[H\x1b[2J' : ''}${lines.join('\n')}\n`);
    this.flush();
  }

  /** The terminal's size where stdout is one; undefined elsewhere. */
  terminalSize(): { columns: number; rows: number } | undefined {
    const { isTTY, columns, rows } = this.stdout;
    return isTTY === true && columns !== undefined && rows !== undefined ? { columns, rows } : undefined;
  }

  /** Progress and information for people, on stderr. */
  info(text: string): void {
    this.flush();
    this.stderr.write(text + '\n');
  }

  warn(text: string): void {
    this.flush();
    this.stderr.write(`${this.errStyle.yellow('warning:')} ${text}\n`);
  }

  /**
   * Flushes once the current batch of synchronous work is done (one write per batch of
   * frames from a socket or a pipe, rather than one per line), so a stream shows lines
   * as they happen without paying a write per line.
   */
  flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  flush(): void {
    if (this.pending.length === 0) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    this.stdout.write(chunk);
  }

  private append(text: string): void {
    this.pending.push(text);
    this.pendingChars += text.length;
    if (this.pendingChars >= RECORD_BUFFER_CHARS) this.flush();
  }

  private assertMode(json: boolean, what: string): void {
    if (this.json !== json) throw new Error(`internal: Output.${what}() in ${this.json ? 'JSON' : 'human'} mode`);
  }
}

function colorLevel(stream: OutputStream, env: NodeJS.ProcessEnv): 0 | 1 | 2 | 3 {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return 0;
  const forced = env.FORCE_COLOR;
  if (forced !== undefined) {
    if (forced === '0' || forced === 'false') return 0;
    const level = Number(forced);
    return level === 2 || level === 3 ? level : 1;
  }
  if (!stream.isTTY) return 0;
  if (env.TERM === 'dumb') return 0;
  return env.COLORTERM === 'truecolor' ? 3 : /-256(color)?$/.test(env.TERM ?? '') ? 2 : 1;
}

/** Length as shown: without the ANSI colour sequences chalk adds. */
function visibleLength(text: string): number {
  return text.replace(/\x1b\[[0-9;]*m/g, '').length;
}
