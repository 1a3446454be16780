/**
 * How much IGMP each pod port may have the daemon look at: a token bucket per port, so
 * that a port that floods loses its excess before anything is decoded, and the other
 * ports' reports are handled as soon as they come. A port may send `burst` messages at
 * once (a pod answering a general query for hundreds of groups), then `ratePerSecond`.
 */

export interface PacketBudgetSettings {
  /** Messages a second a port may send, on average. */
  ratePerSecond: number;
  /** Messages a port may send at once after a quiet spell. */
  burst: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date, on the budget's clock. */
  at: number;
}

export class PortPacketBudget {
  private readonly buckets = new Map<number, Bucket>();

  constructor(
    private settings: Readonly<PacketBudgetSettings>,
    /** Milliseconds, monotonic. */
    private readonly now: () => number,
  ) {}

  /** New rate and burst (a reload): buckets keep what they hold, up to the new burst. */
  reconfigure(settings: Readonly<PacketBudgetSettings>): void {
    this.settings = settings;
  }

  /** Whether `port` may send one more message now; takes it from the port's budget if so. */
  take(port: number): boolean {
    const now = this.now();
    const bucket = this.buckets.get(port);
    if (bucket === undefined) {
      this.buckets.set(port, { tokens: this.settings.burst - 1, at: now });
      return true;
    }
    bucket.tokens = Math.min(
      this.settings.burst,
      bucket.tokens + ((now - bucket.at) * this.settings.ratePerSecond) / 1000,
    );
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** The port is gone. */
  forget(port: number): void {
    this.buckets.delete(port);
  }
}
