/**
 * Reloads one at a time, each ending in what the sources say when it starts. A reload
 * reads files and waits on them; two at once could finish in the other order and leave
 * the daemon with what a file said before its last change. So a reload asked for while
 * one runs waits for it, and the requests that come meanwhile are merged into one run
 * after it, which reads everything they asked for: a burst of signals costs two reloads,
 * and the last one starts after the last signal.
 */

/** What one reload reads: everything (SIGHUP) or only the peers (their source changed). */
export type ReloadScope = 'all' | 'peers';

export class ReloadQueue {
  #running: Promise<void> | undefined;
  /** The run merged from the requests that came while one ran, and what it reads. */
  #next: { scope: ReloadScope; why: string; done: Promise<void> } | undefined;

  constructor(private readonly reload: (scope: ReloadScope, why: string) => Promise<void>) {}

  /** Resolves once a reload that started after this call has ended. */
  request(scope: ReloadScope, why: string): Promise<void> {
    if (this.#running === undefined) return this.#start(scope, why);
    if (this.#next !== undefined) {
      // 'all' reads the peers too: the merged run reads the widest of what was asked.
      if (scope === 'all') this.#next.scope = 'all';
      return this.#next.done;
    }
    const next: { scope: ReloadScope; why: string; done: Promise<void> } = { scope, why, done: Promise.resolve() };
    next.done = this.#running.then(() => {
      this.#next = undefined;
      return this.#start(next.scope, next.why);
    });
    this.#next = next;
    return next.done;
  }

  /** Resolves once no reload runs or waits. */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  #start(scope: ReloadScope, why: string): Promise<void> {
    const running = this.reload(scope, why)
      .catch(() => undefined)
      .finally(() => {
        if (this.#running === running) this.#running = undefined;
      });
    this.#running = running;
    return running;
  }
}
