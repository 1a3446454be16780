/** The loop's event stream: handed over after the turn, in order, built only for listeners. */
import assert from 'node:assert/strict';
import { setImmediate as afterTurn } from 'node:timers/promises';
import { describe, it } from '../helpers/node-test.js';
import { EventStream } from '../../src/controllers/daemon/loop/event-stream.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';

const replay = (groups: number): DaemonEvent => ({
  type: 'replay',
  time: '2026-01-01T00:00:00.000Z',
  what: 'ovsdb',
  groups,
});

describe('event stream', () => {
  it('hands events over after the turn, in the order published, built ones among plain ones', async () => {
    const stream = new EventStream();
    const seen: number[] = [];
    stream.subscribe((event) => seen.push(event.type === 'replay' ? event.groups : -1));
    stream.publish(replay(1));
    stream.publish(() => replay(2));
    stream.publish(replay(3));
    assert.deepEqual(seen, [], 'nothing during the turn');
    await afterTurn();
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('builds nothing while nobody listens, and nothing for a listener that left before the turn ended', async () => {
    const stream = new EventStream();
    let built = 0;
    const build = () => {
      built++;
      return replay(1);
    };
    assert.equal(stream.listened, false);
    stream.publish(build);
    const leave = stream.subscribe(() => assert.fail('the listener left'));
    assert.equal(stream.listened, true);
    stream.publish(build);
    leave();
    await afterTurn();
    assert.equal(built, 0);
  });

  it('builds each event once for every listener, and forgets what waits when cleared', async () => {
    const turns: Array<() => void> = [];
    const stream = new EventStream((run) => turns.push(run));
    const a: DaemonEvent[] = [];
    const b: DaemonEvent[] = [];
    stream.subscribe((event) => a.push(event));
    stream.subscribe((event) => b.push(event));
    let built = 0;
    stream.publish(() => {
      built++;
      return replay(7);
    });
    assert.equal(turns.length, 1, 'one turn asked for');
    turns[0]!();
    assert.equal(built, 1);
    assert.equal(a[0], b[0], 'the same object to both');
    stream.publish(replay(8));
    stream.clear();
    turns[1]!();
    assert.equal(a.length, 1);
    assert.equal(stream.listened, false);
  });
});
