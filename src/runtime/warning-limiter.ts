/**
 * Rate-limited warnings: a flood of the same trouble (clients hammering the control
 * socket, a pod flooding IGMP) is one log line per interval, not one per event. Each
 * key is logged at most once per interval; the next line of that key says how many
 * were held back since the last one (`suppressed`).
 */

/** Where the warnings go: the daemon's logger, or anything with its warn(). */
export interface WarningLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface WarningLimiterOptions {
  /** Milliseconds; monotonic is best (a wall-clock step back only delays the next line). */
  now: () => number;
  /** Each key is logged at most once in this long. */
  intervalMs: number;
}

export class WarningLimiter {
  private readonly keys = new Map<string, { loggedAt: number; suppressed: number }>();

  constructor(private readonly options: WarningLimiterOptions) {}

  /**
   * Logs `message` unless `key` was logged less than the interval ago (then counts it as
   * suppressed). Returns whether it logged. Without a logger nothing is logged or counted.
   * `fields` may be a function, called only when the line is written: a flood's held-back
   * events then cost a count, not the building of fields nobody reads.
   */
  warn(
    logger: WarningLogger | undefined,
    key: string,
    message: string,
    fields: Record<string, unknown> | (() => Record<string, unknown>) = {},
  ): boolean {
    if (logger === undefined) return false;
    const now = this.options.now();
    const last = this.keys.get(key);
    if (last !== undefined && now - last.loggedAt < this.options.intervalMs) {
      last.suppressed++;
      return false;
    }
    this.keys.set(key, { loggedAt: now, suppressed: 0 });
    const suppressed = last?.suppressed ?? 0;
    const written = typeof fields === 'function' ? fields() : fields;
    logger.warn(message, suppressed > 0 ? { ...written, suppressed } : written);
    return true;
  }

  /** Forgets a key that will not come again (a port that went away), with what it held back. */
  forget(key: string): void {
    this.keys.delete(key);
  }
}
