/** The reconnection loop shared by the OVSDB client and the OpenFlow connection. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { Reconnector, type ReconnectAttempt } from '../../src/runtime/reconnector.js';

const backoff = { minDelayMs: 1, maxDelayMs: 4 };

describe('Reconnector', () => {
  it('retries with backoff until connect succeeds, reporting each attempt', async () => {
    const attempts: ReconnectAttempt[] = [];
    let calls = 0;
    const connected = new Promise<[string, number]>((resolve) => {
      new Reconnector<string>({
        backoff,
        connect: async () => {
          if (++calls < 3) throw new Error(`refused ${calls}`);
          return 'link';
        },
        onAttempt: (attempt) => attempts.push(attempt),
        onConnected: (link, count) => resolve([link, count]),
      }).start(new Error('dropped'));
    });
    assert.deepEqual(await connected, ['link', 3]);
    assert.deepEqual(
      attempts.map(({ attempt, delayMs, error }) => [attempt, delayMs, error.message]),
      [
        [1, 1, 'dropped'],
        [2, 2, 'refused 1'],
        [3, 4, 'refused 2'],
      ],
    );
  });

  it('gives up after maxAttempts with the last error', async () => {
    const gaveUp = new Promise<Error>((resolve) => {
      new Reconnector<string>({
        backoff,
        maxAttempts: 2,
        connect: () => Promise.reject(new Error('still down')),
        onConnected: () => assert.fail('connected'),
        onGiveUp: resolve,
      }).start(new Error('dropped'));
    });
    assert.equal((await gaveUp).message, 'still down');
  });

  it('cancel() ends the delay and discards a link that comes up afterwards', async () => {
    let dialled = 0;
    const idle = new Reconnector<string>({
      backoff: { minDelayMs: 60_000 },
      connect: async () => {
        dialled++;
        return 'x';
      },
      onConnected: () => assert.fail('connected'),
    });
    idle.start(new Error('dropped'));
    idle.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(dialled, 0);
    assert.equal(idle.active, false);

    let release: (link: string) => void = () => {};
    const discarded: string[] = [];
    const dialling = new Reconnector<string>({
      backoff,
      connect: () => new Promise<string>((resolve) => (release = resolve)),
      discard: (link) => discarded.push(link),
      onConnected: () => assert.fail('connected'),
    });
    dialling.start(new Error('dropped'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    dialling.cancel();
    release('late link');
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(discarded, ['late link']);
  });
});
