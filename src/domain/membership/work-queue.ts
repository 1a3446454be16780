/**
 * A work queue keyed by group, as the daemon's sync needs it: a key
 * added many times while it waits is synced once; a key added while it is being synced is
 * synced again afterwards, so no update is lost; at most `workers` keys sync at once (and
 * `expressWorkers` more, see below), never the same key twice at once; a failed sync is retried after an exponential
 * backoff (Antrea: 5 s doubling to 300 s; the same doubling as reconnects, runtime/backoff),
 * reset by a success.
 *
 * Keys wait in lanes (the daemon's: the pod port whose IGMP made the change), and the
 * lanes take turns: a port that dirties thousands of groups at once has one of them
 * synced in each turn, so another port's single join waits for a turn, not for them all.
 * A lane that had nothing waiting or running goes before the lanes that keep having work
 * (the new flows of fair queueing, as in FQ-CoDel), for its first key: a quiet pod's join waits
 * for a free worker, not for a turn of every flooding port. With `expressWorkers`, not even
 * for that: so many workers beyond `workers` are kept for such first keys. Their sync is
 * told it is expedited (the daemon's goes ahead of the OpenFlow batches waiting for the
 * switch).
 */
import { backoffDelay } from '../../runtime/backoff.js';

export interface WorkQueueTimers {
  /** Runs `run` after `ms`; returns a function that cancels it. */
  after(ms: number, run: () => void): () => void;
}

export const systemTimers: WorkQueueTimers = {
  after(ms, run) {
    // 0 is "once the current work is done": setImmediate, where setTimeout would wait at
    // least 1 ms (what a report batched for the peers would add to every cross-node join).
    if (ms <= 0) {
      const immediate = setImmediate(run);
      return () => clearImmediate(immediate);
    }
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  },
};

const DEFAULT_LANE = Symbol('default lane');

/** How a sync was started. */
export interface SyncTurn {
  /** The first key of a lane that had nothing waiting (see the class): worth hurrying. */
  expedited: boolean;
}

export interface WorkQueueOptions<Key> {
  /** Syncs one key; a rejection schedules a retry. */
  sync: (key: Key, turn: SyncTurn) => Promise<void>;
  /** Keys synced at once. */
  workers: number;
  /** More keys at once, only for the first key of a lane that had nothing waiting (default 0). */
  expressWorkers?: number;
  /** First retry delay, doubled per failure in a row up to `maxBackoffMs`. */
  minBackoffMs: number;
  maxBackoffMs: number;
  timers?: WorkQueueTimers;
  /** Told of each failure, with the delay before the retry. */
  onError?: (key: Key, error: unknown, retryInMs: number) => void;
}

export class WorkQueue<Key> {
  /** Ready keys by lane, each first in first out; the first lane is the next to give one. */
  private readonly lanes = new Map<unknown, Key[]>();
  /** Lanes that had nothing waiting or running when their first key came: they give one key before the others. */
  private readonly newLanes = new Map<unknown, Key[]>();
  /** Keys running, by the lane they were added in. */
  private readonly runningIn = new Map<unknown, number>();
  private readyCount = 0;
  private readonly queued = new Set<Key>();
  private readonly running = new Set<Key>();
  /** Added again while running: queue once more when done, in the lane of that add. */
  private readonly dirty = new Map<Key, unknown>();
  /** The lane each queued or running key was added in (a retry goes back to it). */
  private readonly laneOf = new Map<Key, unknown>();
  private readonly failures = new Map<Key, number>();
  private readonly retries = new Map<Key, () => void>();
  private readonly timers: WorkQueueTimers;
  private idleWaiters: Array<() => void> = [];
  private backoff: { minDelayMs: number; maxDelayMs: number };
  private stopped = false;

  constructor(private readonly options: WorkQueueOptions<Key>) {
    if (!Number.isInteger(options.workers) || options.workers < 1)
      throw new RangeError(`workers must be a whole number of 1 or more, not ${options.workers}`);
    const express = options.expressWorkers ?? 0;
    if (!Number.isInteger(express) || express < 0)
      throw new RangeError(`expressWorkers must be a whole number of 0 or more, not ${express}`);
    this.timers = options.timers ?? systemTimers;
    this.backoff = { minDelayMs: options.minBackoffMs, maxDelayMs: options.maxBackoffMs };
  }

  /** Retry delays from the next failure on (a retry already waiting keeps its time). */
  setBackoff(minBackoffMs: number, maxBackoffMs: number): void {
    this.backoff = { minDelayMs: minBackoffMs, maxDelayMs: maxBackoffMs };
  }

  /** Asks for `key` to be synced (again); `lane` says on whose behalf (the default lane: nobody's in particular). */
  add(key: Key, lane: unknown = DEFAULT_LANE): void {
    if (this.stopped) return;
    // A pending retry is overtaken by fresh work: sync now, keep the failure count.
    this.retries.get(key)?.();
    this.retries.delete(key);
    if (this.running.has(key)) this.dirty.set(key, lane);
    else if (!this.queued.has(key)) {
      this.queued.add(key);
      this.laneOf.set(key, lane);
      const waiting = this.lanes.get(lane) ?? this.newLanes.get(lane);
      // A lane whose last key still runs is busy, not new: a port adding a key at a time
      // keeps its turns with the others.
      if (waiting === undefined) (this.runningIn.has(lane) ? this.lanes : this.newLanes).set(lane, [key]);
      else waiting.push(key);
      this.readyCount++;
    }
    this.pump();
  }

  /** Keys waiting, running or waiting for a retry. */
  get size(): number {
    return new Set([...this.queued, ...this.running, ...this.retries.keys()]).size;
  }

  /** Resolves when nothing is queued or running (retries may still be pending). */
  whenIdle(): Promise<void> {
    if (this.readyCount === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops queued work and pending retries; running syncs finish. */
  stop(): void {
    this.stopped = true;
    this.lanes.clear();
    this.newLanes.clear();
    this.readyCount = 0;
    this.queued.clear();
    this.dirty.clear();
    this.laneOf.clear();
    for (const cancel of this.retries.values()) cancel();
    this.retries.clear();
    this.settleIdle();
  }

  private pump(): void {
    while (!this.stopped && this.readyCount > 0) {
      const expedited = this.newLanes.size > 0;
      if (this.running.size >= this.options.workers + (expedited ? (this.options.expressWorkers ?? 0) : 0)) break;
      const key = this.nextReady();
      this.queued.delete(key);
      this.running.add(key);
      void this.runOne(key, { expedited });
    }
    this.settleIdle();
  }

  private async runOne(key: Key, turn: SyncTurn): Promise<void> {
    const lane = this.laneOf.get(key) ?? DEFAULT_LANE;
    this.runningIn.set(lane, (this.runningIn.get(lane) ?? 0) + 1);
    try {
      await this.options.sync(key, turn);
      this.failures.delete(key);
    } catch (error) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const delay = backoffDelay(attempt - 1, this.backoff);
      this.options.onError?.(key, error, delay);
      // New work that arrived meanwhile goes first; otherwise retry after the backoff.
      if (!this.dirty.has(key) && !this.stopped) {
        this.retries.set(
          key,
          this.timers.after(delay, () => {
            this.retries.delete(key);
            this.add(key, lane);
          }),
        );
      }
    } finally {
      this.running.delete(key);
      this.laneOf.delete(key);
      const stillRunning = (this.runningIn.get(lane) ?? 1) - 1;
      if (stillRunning === 0) this.runningIn.delete(lane);
      else this.runningIn.set(lane, stillRunning);
      const again = this.dirty.get(key);
      if (this.dirty.delete(key)) this.add(key, again);
      this.pump();
    }
  }

  /** The first key of the first new lane, else of the first lane; a lane with more goes to the back of the turns. */
  private nextReady(): Key {
    const from = this.newLanes.size > 0 ? this.newLanes : this.lanes;
    const [lane, waiting] = from.entries().next().value as [unknown, Key[]];
    const key = waiting.shift()!;
    from.delete(lane);
    if (waiting.length > 0) this.lanes.set(lane, waiting);
    this.readyCount--;
    return key;
  }

  private settleIdle(): void {
    if (this.readyCount > 0 || this.running.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
