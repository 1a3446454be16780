/**
 * The pace of the answers to the peers' general queries: at most one full state to each
 * peer per interval. A query within the interval is left to the one answer due at its end,
 * with the state as it is then (as a host with an answer pending to a general query
 * schedules no other, RFC 3376 §5.2).
 *
 * The bound: whoever can put a frame into the tunnel can give it a peer's outer source, and
 * one query frame asks for ⌈groups / R⌉ reports (47 for 8,192 IPv4 groups on a 1,500-octet
 * path); paced, queries at any rate cost at most one full state an interval toward each
 * configured peer. A real peer asks when it starts or is added: a second delays it little.
 */
import type { HostAddress } from '../../../wire/ip-address.js';
import type { DaemonClock } from '../loop/ports.js';

export interface QueryAnswersOptions {
  intervalMs: number;
  clock: Pick<DaemonClock, 'after' | 'monotonicMs'>;
  /** Sends the full state to `peer`. */
  answer(peer: HostAddress): void;
}

export class QueryAnswers {
  /** peer → when its query was last answered, and the cancel of the answer due next, when one waits. */
  private readonly answers = new Map<HostAddress, { at: number; cancel?: () => void }>();
  private stopped = false;

  constructor(private readonly options: QueryAnswersOptions) {}

  /** A query from `peer` at `now`: true when answered at once, false when left to the answer due next. */
  ask(peer: HostAddress, now: number): boolean {
    const { intervalMs, clock, answer } = this.options;
    const last = this.answers.get(peer);
    if (last === undefined || now - last.at >= intervalMs) {
      last?.cancel?.();
      this.answers.set(peer, { at: now });
      answer(peer);
      return true;
    }
    if (last.cancel !== undefined) return false;
    last.cancel = clock.after(last.at + intervalMs - now, () => {
      if (this.stopped || this.answers.get(peer) !== last) return;
      this.answers.set(peer, { at: clock.monotonicMs() });
      answer(peer);
    });
    return false;
  }

  /** A peer left the list: an answer due to it is not sent. */
  forget(peer: HostAddress): void {
    this.answers.get(peer)?.cancel?.();
    this.answers.delete(peer);
  }

  stop(): void {
    this.stopped = true;
    for (const answer of this.answers.values()) answer.cancel?.();
    this.answers.clear();
  }
}
