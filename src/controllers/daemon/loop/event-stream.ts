/**
 * The loop's events for whoever subscribed (`snoop --daemon`, the control socket): built
 * and handed over once the turn's work is done, in the order they were published, so that
 * a join's OpenFlow leaves for the switch before any of its events is built (timed inside
 * the daemon on these machines, a report's event took about a tenth of a millisecond to
 * build); nothing is kept or built while nobody listens.
 */
import type { DaemonEvent } from '../../../transport/control/daemon-view.js';

/** Builds an event after the turn: what it reads must be taken when it is published. */
export type EventBuilder = () => DaemonEvent;

export type EventListener = (event: DaemonEvent) => void;

export class EventStream {
  private readonly listeners = new Set<EventListener>();
  private pending: EventBuilder[] = [];

  /** `defer`: runs its argument once the current work is done (setImmediate, or a test's own). */
  constructor(private readonly defer: (run: () => void) => void = (run) => setImmediate(run)) {}

  /** Whether anyone listens (a costly event is published only then). */
  get listened(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hands `event` (or what `event` builds) to every listener after the turn. */
  publish(event: DaemonEvent | EventBuilder): void {
    if (this.listeners.size === 0) return;
    this.pending.push(typeof event === 'function' ? event : () => event);
    if (this.pending.length === 1) this.defer(() => this.flush());
  }

  /** Forgets the listeners and what waits for them (the loop stops). */
  clear(): void {
    this.listeners.clear();
    this.pending = [];
  }

  private flush(): void {
    const builders = this.pending;
    this.pending = [];
    for (const build of builders) {
      if (this.listeners.size === 0) return;
      const event = build();
      for (const listener of [...this.listeners]) listener(event);
    }
  }
}
