/**
 * Reloads one at a time: a reload asked for while one runs waits for it, the requests of
 * a burst merge into one run after it (reading the widest of what they asked for), and
 * the last run starts after the last request, so it reads what the files say last.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { ReloadQueue, type ReloadScope } from '../../src/controllers/daemon/host/reload-queue.js';

/** A reload that reads `file.value` when it starts and applies it when it is let go. */
function slowReloads() {
  const file = { value: 0 };
  const applied: number[] = [];
  const runs: Array<{ scope: ReloadScope; why: string }> = [];
  let running = 0;
  let most = 0;
  const waiting: Array<() => void> = [];
  const queue = new ReloadQueue(async (scope, why) => {
    runs.push({ scope, why });
    running += 1;
    most = Math.max(most, running);
    const read = file.value;
    await new Promise<void>((resolve) => waiting.push(resolve));
    applied.push(read);
    running -= 1;
  });
  const release = async () => {
    while (waiting.length > 0) {
      waiting.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { queue, file, applied, runs, release, most: () => most };
}

describe('ReloadQueue', () => {
  it('runs one reload at a time and merges a burst into one more, which reads the last value', async () => {
    const t = slowReloads();
    const done: Array<Promise<void>> = [];
    for (let value = 1; value <= 200; value += 1) {
      t.file.value = value;
      done.push(t.queue.request(value % 2 === 0 ? 'all' : 'peers', `request ${value}`));
    }
    await t.release();
    await Promise.all(done);
    await t.release();
    assert.equal(t.most(), 1, 'never two at once');
    assert.equal(t.runs.length, 2, 'the first request, then one for the other 199');
    assert.deepEqual(t.applied, [1, 200], 'the last run read the last value');
    assert.equal(t.runs[1]?.scope, 'all', 'the merged run reads everything one of them asked for');
    await t.queue.idle();
  });

  it('a request after the queue went idle starts at once', async () => {
    const t = slowReloads();
    const first = t.queue.request('peers', 'one');
    await t.release();
    await first;
    t.file.value = 7;
    const second = t.queue.request('peers', 'two');
    await t.release();
    await second;
    assert.deepEqual(t.applied, [0, 7]);
    assert.deepEqual(
      t.runs.map((run) => run.why),
      ['one', 'two'],
    );
  });

  it('a failed reload does not stop the next', async () => {
    let calls = 0;
    const queue = new ReloadQueue(async () => {
      calls += 1;
      if (calls === 1) throw new Error('unreadable');
    });
    await queue.request('all', 'one');
    await queue.request('all', 'two');
    assert.equal(calls, 2);
  });
});
