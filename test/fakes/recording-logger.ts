/** A logger that keeps its lines, for assertions on what the daemon said. */
import type { ControllerLogger } from '../../src/controllers/daemon/loop/ports.js';
import type { LogLevel } from '../../src/runtime/logger.js';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

export class RecordingLogger implements ControllerLogger {
  readonly lines: LogLine[] = [];
  /** The lowest level the daemon asks for (a reload sets it); every line is kept whatever it is. */
  level: LogLevel = 'debug';

  debug(message: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'debug', message, fields });
  }

  info(message: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'info', message, fields });
  }

  warn(message: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'warn', message, fields });
  }

  error(message: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'error', message, fields });
  }

  /** The lines with this message. */
  find(message: string): LogLine[] {
    return this.lines.filter((line) => line.message === message);
  }
}
