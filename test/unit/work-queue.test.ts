/** The keyed work queue: dedupe, no lost update, worker bound, backoff, on fake timers. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs';
import { describe, it } from '../helpers/node-test.js';
import { systemTimers, WorkQueue, type WorkQueueTimers } from '../../src/domain/membership/work-queue.js';

/** Timers that fire only when the test says so. */
class FakeTimers implements WorkQueueTimers {
  pending: Array<{ ms: number; run: () => void; cancelled: boolean }> = [];
  after(ms: number, run: () => void): () => void {
    const entry = { ms, run, cancelled: false };
    this.pending.push(entry);
    return () => (entry.cancelled = true);
  }
  fire(): number[] {
    const due = this.pending.filter((entry) => !entry.cancelled);
    this.pending = [];
    due.forEach((entry) => entry.run());
    return due.map((entry) => entry.ms);
  }
}

/** A sync whose calls the test resolves or rejects one by one. */
function controllableSync() {
  const calls: Array<{ key: string; resolve: () => void; reject: (error: Error) => void }> = [];
  const sync = (key: string) => new Promise<void>((resolve, reject) => calls.push({ key, resolve, reject }));
  return { calls, sync };
}
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('WorkQueue', () => {
  it('a key added many times while it waits is synced once', async () => {
    const synced: string[] = [];
    const queue = new WorkQueue<string>({
      sync: async (key) => void synced.push(key),
      workers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    queue.add('a'); // starts at once
    queue.add('b');
    queue.add('b');
    queue.add('b');
    await queue.whenIdle();
    assert.deepEqual(synced, ['a', 'b']);
  });

  it("lanes take turns: one lane's thousand keys do not hold back another lane's one", async () => {
    const synced: string[] = [];
    const queue = new WorkQueue<string>({
      sync: async (key) => void synced.push(key),
      workers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    for (let index = 0; index < 1000; index++) queue.add(`flood-${index}`, 'attacker');
    queue.add('join', 'victim');
    queue.add('expired'); // the default lane: nobody's in particular
    queue.add('flood-1', 'victim'); // already waiting in its first lane: not twice
    await queue.whenIdle();
    // flood-1 came while its lane's flood-0 ran: a busy lane's, after the idle lanes' first keys.
    assert.deepEqual(synced.slice(0, 4), ['flood-0', 'join', 'expired', 'flood-1']);
    assert.equal(synced.length, 1002);
    assert.equal(new Set(synced).size, 1002);
  });

  it('a lane that had nothing waiting gives its key before the lanes that keep having work', async () => {
    const { calls, sync } = controllableSync();
    const queue = new WorkQueue<string>({
      sync,
      workers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    for (let index = 0; index < 1000; index++) queue.add(`flood-${index}`, 'attacker');
    const next = async () => {
      calls.at(-1)!.resolve();
      await tick();
      return calls.at(-1)!.key;
    };
    assert.equal(await next(), 'flood-1');
    for (let index = 0; index < 10; index++) queue.add(`expired-${index}`);
    assert.equal(await next(), 'expired-0', 'the default lane was idle');
    assert.equal(await next(), 'flood-2', 'then the lanes take turns');
    queue.add('join', 'victim');
    assert.equal(await next(), 'join', 'before expired-1 and flood-3: its lane was idle');
    assert.equal(await next(), 'expired-1');
    assert.equal(await next(), 'flood-3');
    queue.stop();
  });

  it('a key synced again, after a change while it ran or after a failure, waits in its lane, not behind the default lane', async () => {
    const { calls, sync } = controllableSync();
    const timers = new FakeTimers();
    const queue = new WorkQueue<string>({ sync, workers: 1, minBackoffMs: 5000, maxBackoffMs: 300_000, timers });
    queue.add('join', 'victim');
    for (let index = 0; index < 100; index++) queue.add(`expired-${index}`);
    queue.add('join', 'victim'); // a leave and a join again while its sync runs
    calls[0]!.resolve();
    await tick();
    calls[1]!.resolve(); // expired-0
    await tick();
    assert.equal(calls[2]?.key, 'join', 'its turn comes next, not after 99 expired groups');
    calls[2]!.reject(new Error('OVS refused it'));
    await tick();
    timers.fire(); // the backoff is over: the retry waits in the victim's lane again
    calls[3]!.resolve(); // expired-1
    await tick();
    assert.equal(calls[4]?.key, 'join', 'its lane had nothing waiting: it goes first');
    queue.stop();
  });

  it('a key added while it is syncing is synced again afterwards (no lost update), never twice at once', async () => {
    const { calls, sync } = controllableSync();
    const queue = new WorkQueue<string>({
      sync,
      workers: 4,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    queue.add('g');
    queue.add('g');
    assert.equal(calls.length, 1, 'not twice at once');
    calls[0]!.resolve();
    await tick();
    assert.deepEqual(
      calls.map((call) => call.key),
      ['g', 'g'],
    );
    calls[1]!.resolve();
    await queue.whenIdle();
    assert.equal(calls.length, 2);
  });

  it('at most `workers` keys sync at once', async () => {
    const { calls, sync } = controllableSync();
    const queue = new WorkQueue<string>({
      sync,
      workers: 2,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    for (const key of ['a', 'b', 'c', 'd']) queue.add(key);
    assert.deepEqual(
      calls.map((call) => call.key),
      ['a', 'b'],
    );
    calls[0]!.resolve();
    await tick();
    assert.deepEqual(
      calls.map((call) => call.key),
      ['a', 'b', 'c'],
    );
    calls[1]!.resolve();
    calls[2]!.resolve();
    await tick();
    calls[3]!.resolve();
    await queue.whenIdle();
    assert.equal(queue.size, 0);
  });

  it('expressWorkers: the first key of an idle lane starts at once, all workers busy, and is told it is expedited; the bulk is not', async () => {
    const turns: Array<{ key: string; expedited: boolean; resolve: () => void }> = [];
    const sync = (key: string, { expedited }: { expedited: boolean }) =>
      new Promise<void>((resolve) => turns.push({ key, expedited, resolve }));
    const queue = new WorkQueue<string>({
      sync,
      workers: 2,
      expressWorkers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers: new FakeTimers(),
    });
    for (let index = 0; index < 100; index++) queue.add(`flood-${index}`, 'attacker');
    assert.deepEqual(
      turns.map(({ key, expedited }) => [key, expedited]),
      [
        ['flood-0', true],
        ['flood-1', false],
      ],
      'two workers; the attacker lane was idle for its first key only (flood-1 came while flood-0 ran)',
    );
    queue.add('join', 'victim');
    assert.deepEqual(turns.at(-1)?.key, 'join', 'started beside two busy workers');
    assert.equal(turns.at(-1)?.expedited, true);
    queue.add('other-join', 'other-victim');
    assert.equal(turns.length, 3, 'one express worker: the second quiet key waits for it');
    turns[2]!.resolve(); // the join is done: its worker goes to the next idle lane's key
    await tick();
    assert.deepEqual(
      turns.slice(3).map(({ key, expedited }) => [key, expedited]),
      [['other-join', true]],
    );
    turns[0]!.resolve();
    turns[3]!.resolve();
    await tick();
    assert.deepEqual(
      turns.slice(4).map(({ key, expedited }) => [key, expedited]),
      [['flood-2', false]],
      'back to two: the attacker goes on, not expedited',
    );
    queue.stop();
    assert.throws(
      () => new WorkQueue<string>({ sync, workers: 1, expressWorkers: -1, minBackoffMs: 1, maxBackoffMs: 1 }),
      /expressWorkers/,
    );
  });

  it('failures retry after 5 s, 10 s, 20 s ... up to 300 s; a success resets the count', async () => {
    const timers = new FakeTimers();
    let failing = true;
    const delays: number[] = [];
    const queue = new WorkQueue<string>({
      sync: async () => {
        if (failing) throw new Error('switch said no');
      },
      workers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers,
      onError: (_key, _error, retryInMs) => delays.push(retryInMs),
    });
    queue.add('g');
    for (let i = 0; i < 8; i++) {
      await queue.whenIdle();
      timers.fire();
    }
    assert.deepEqual(delays, [5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    failing = false;
    await queue.whenIdle();
    timers.fire();
    await queue.whenIdle();
    assert.equal(queue.size, 0);
    failing = true;
    queue.add('g');
    await queue.whenIdle();
    assert.equal(delays.at(-1), 5000, 'back to the first delay after a success');
  });

  it('fresh work overtakes a pending retry; stop() drops what waits', async () => {
    const timers = new FakeTimers();
    const synced: string[] = [];
    let fail = true;
    const queue = new WorkQueue<string>({
      sync: async (key) => {
        synced.push(key);
        if (fail) throw new Error('no');
      },
      workers: 1,
      minBackoffMs: 5000,
      maxBackoffMs: 300_000,
      timers,
    });
    queue.add('g');
    await queue.whenIdle();
    fail = false;
    queue.add('g'); // before the retry timer
    await queue.whenIdle();
    assert.deepEqual(synced, ['g', 'g']);
    assert.deepEqual(timers.fire(), [], 'the retry was cancelled');
    queue.stop();
    queue.add('h');
    await queue.whenIdle();
    assert.deepEqual(synced, ['g', 'g']);
  });
});

describe('systemTimers', () => {
  it('after(0) runs once the current work is done, without the 1 ms of a timer; each can be cancelled', async () => {
    const order: string[] = [];
    // Inside an I/O callback the loop runs immediates before timers (Node's event loop):
    // a 0 that became a 1 ms timer would come after the timer set before it.
    await new Promise<void>((resolve, reject) =>
      readFile(import.meta.filename, (error) => {
        if (error !== null) return reject(error);
        setTimeout(() => order.push('a 1 ms timer set first'), 1);
        systemTimers.after(0, () => order.push('after 0'));
        const cancelZero = systemTimers.after(0, () => order.push('cancelled 0'));
        const cancelLater = systemTimers.after(5, () => order.push('cancelled 5'));
        cancelZero();
        cancelLater();
        order.push('now');
        setTimeout(resolve, 20);
      }),
    );
    assert.deepEqual(order, ['now', 'after 0', 'a 1 ms timer set first']);
  });
});
