/**
 * The reconnection loop of a client whose connection dropped (the OVSDB client and the
 * OpenFlow connection): wait (backoff.ts's doubling delays), dial, and again on failure,
 * until a link is up, the attempts run out, or the client is closed (cancel()).
 *
 * The reconnector only dials; its owner says what the events are: `onAttempt` before each
 * delay, `onConnected` with the new link, `onGiveUp` when the attempts ran out.
 */
import { backoffDelay, type BackoffOptions } from './backoff.js';

export interface ReconnectAttempt {
  /** 1 for the first attempt after a drop. */
  readonly attempt: number;
  readonly delayMs: number;
  /** Why the connection dropped, or why the previous attempt failed. */
  readonly error: Error;
}

export interface ReconnectorOptions<Link> {
  readonly backoff?: BackoffOptions | undefined;
  /** Give up after this many failed attempts in a row (default: never). */
  readonly maxAttempts?: number | undefined;
  /** Dials and does whatever makes the link usable (a handshake); rejects when it is not. */
  readonly connect: () => Promise<Link>;
  /** Before each attempt's delay. */
  readonly onAttempt?: (attempt: ReconnectAttempt) => void;
  /** A link that came up after cancel(): close it. */
  readonly discard?: (link: Link) => void;
  /** The link is up, after `attempts` attempts. A new drop may start() the next round from here on. */
  readonly onConnected: (link: Link, attempts: number) => void | Promise<void>;
  /** The attempts ran out; `error` is why the last one failed. */
  readonly onGiveUp?: (error: Error) => void;
}

export class Reconnector<Link> {
  private running = false;
  private cancelled = false;
  /** Ends the current delay early (cancel()). */
  private wake: (() => void) | undefined;

  constructor(private readonly options: ReconnectorOptions<Link>) {}

  /** Whether a round is under way (waiting or dialling). */
  get active(): boolean {
    return this.running;
  }

  /** Starts a round of attempts after a drop for `reason`; nothing if one is under way or after cancel(). */
  start(reason: Error): void {
    if (this.running || this.cancelled) return;
    this.running = true;
    void this.run(reason);
  }

  /** Stops for good: the delay ends, and a link that comes up after this is discarded. */
  cancel(): void {
    this.cancelled = true;
    this.wake?.();
  }

  private async run(reason: Error): Promise<void> {
    const maxAttempts = this.options.maxAttempts ?? Number.POSITIVE_INFINITY;
    let lastError = reason;
    for (let attempt = 0; !this.cancelled; attempt++) {
      if (attempt >= maxAttempts) {
        this.running = false;
        this.options.onGiveUp?.(lastError);
        return;
      }
      const delayMs = backoffDelay(attempt, this.options.backoff);
      this.options.onAttempt?.({ attempt: attempt + 1, delayMs, error: lastError });
      await this.sleep(delayMs);
      if (this.cancelled) break;
      let link: Link;
      try {
        link = await this.options.connect();
      } catch (error) {
        lastError = error instanceof Error ? error : new Error(String(error));
        continue;
      }
      if (this.cancelled) {
        this.options.discard?.(link);
        break;
      }
      this.running = false;
      await this.options.onConnected(link, attempt + 1);
      return;
    }
    this.running = false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
