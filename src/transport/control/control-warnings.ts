/** Rate-limited warnings of the control socket: a flood of clients is one log line. */
export interface ControlLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Each kind of client warning is logged at most once in this long (a flood of clients is one line). */
const WARNING_INTERVAL_MS = 10_000;

/** Logs each kind of warning at most once per WARNING_INTERVAL_MS, with how many were left out before it. */
export class WarningLimiter {
  private readonly kinds = new Map<string, { loggedAt: number; suppressed: number }>();
  constructor(private readonly logger: ControlLogger | undefined) {}

  warn(kind: string, message: string, fields: Record<string, unknown> = {}): void {
    if (this.logger === undefined) return;
    const now = Date.now();
    const last = this.kinds.get(kind);
    if (last !== undefined && now - last.loggedAt < WARNING_INTERVAL_MS) {
      last.suppressed++;
      return;
    }
    this.kinds.set(kind, { loggedAt: now, suppressed: 0 });
    const suppressed = last?.suppressed ?? 0;
    this.logger.warn(message, suppressed > 0 ? { ...fields, suppressedBefore: suppressed } : fields);
  }
}
