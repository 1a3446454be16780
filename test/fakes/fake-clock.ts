/**
 * A clock whose time moves only when a test says so: `advance(ms)` runs the timers that
 * fall due, in order of their time (then of their arming), each at its own time.
 */
import type { DaemonClock } from '../../src/controllers/daemon/loop/ports.js';

interface PendingTimer {
  at: number;
  id: number;
  run: () => void;
}

export class FakeClock implements DaemonClock {
  private now = 0;
  private nextId = 0;
  private pending: PendingTimer[] = [];

  /** @param wallStart the wall clock (epoch milliseconds) at monotonic 0 */
  constructor(private readonly wallStart = Date.UTC(2026, 0, 1)) {}

  monotonicMs(): number {
    return this.now;
  }

  wallMs(): number {
    return this.wallStart + this.now;
  }

  after(ms: number, run: () => void): () => void {
    const timer = { at: this.now + Math.max(0, ms), id: this.nextId++, run };
    this.pending.push(timer);
    return () => {
      this.pending = this.pending.filter((entry) => entry !== timer);
    };
  }

  /** Moves time on by `ms`, running every timer due meanwhile (also ones they arm). */
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const next = this.pending.filter((entry) => entry.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (next === undefined) break;
      this.pending = this.pending.filter((entry) => entry !== next);
      this.now = next.at;
      next.run();
    }
    this.now = end;
  }

  /** When the timers armed now are due, soonest first. */
  get dueTimes(): number[] {
    return this.pending.map((entry) => entry.at).sort((a, b) => a - b);
  }
}
