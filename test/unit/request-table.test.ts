/** The request/response correlation table shared by the OpenFlow, OVSDB and control clients. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { RequestTable } from '../../src/runtime/request-table.js';

function table() {
  return new RequestTable<string, { value: number }>();
}

describe('RequestTable', () => {
  it('settles a request with its accepted reply, and ignores a late one', async () => {
    const requests = table();
    const sent: number[] = [];
    const answer = requests.start({
      meta: 'get',
      timeoutMs: 1000,
      accept: (reply) => reply.value * 2,
      send: (id) => sent.push(id),
    });
    assert.equal(requests.get(sent[0]!), 'get');
    assert.equal(requests.settle(sent[0]!, { value: 21 }), true);
    assert.equal(await answer, 42);
    assert.equal(requests.settle(sent[0]!, { value: 1 }), false);
    assert.equal(requests.size, 0);
  });

  it('rejects when accept throws', async () => {
    const requests = table();
    let id = 0;
    const answer = requests.start({
      meta: 'x',
      timeoutMs: 0,
      accept: () => {
        throw new RangeError('bad reply');
      },
      send: (sent) => (id = sent),
    });
    requests.settle(id, { value: 0 });
    await assert.rejects(answer, RangeError);
  });

  it('times out with the given error, tells abandon, and drops the reply that comes after', async () => {
    const requests = table();
    const abandoned: number[] = [];
    let id = 0;
    const answer = requests.start({
      meta: 'slow',
      timeoutMs: 20,
      timeoutError: (xid, meta) => new Error(`${meta} ${xid} timed out`),
      accept: (reply) => reply.value,
      send: (sent) => (id = sent),
      abandon: (xid) => abandoned.push(xid),
    });
    await assert.rejects(answer, new RegExp(`slow ${id} timed out`));
    assert.deepEqual(abandoned, [id]);
    assert.equal(requests.settle(id, { value: 1 }), false);
  });

  it('restartTimer() postpones the timeout', async () => {
    const requests = table();
    let id = 0;
    const answer = requests.start({
      meta: 'parts',
      timeoutMs: 40,
      accept: (reply) => reply.value,
      send: (sent) => (id = sent),
    });
    await new Promise((resolve) => setTimeout(resolve, 25));
    requests.restartTimer(id);
    await new Promise((resolve) => setTimeout(resolve, 25));
    requests.settle(id, { value: 7 });
    assert.equal(await answer, 7);
  });

  it('aborts with the signal reason (and at once when already aborted)', async () => {
    const requests = table();
    const controller = new AbortController();
    const abandoned: string[] = [];
    const answer = requests.start({
      meta: 'a',
      timeoutMs: 0,
      signal: controller.signal,
      accept: () => 1,
      send: () => undefined,
      abandon: (_id, meta) => abandoned.push(meta),
    });
    controller.abort(new Error('stop'));
    await assert.rejects(answer, /stop/);
    assert.deepEqual(abandoned, ['a']);
    let sent = false;
    await assert.rejects(
      requests.start({
        meta: 'b',
        timeoutMs: 0,
        signal: controller.signal,
        accept: () => 1,
        send: () => (sent = true),
      }),
      /stop/,
    );
    assert.equal(sent, false);
    assert.equal(requests.size, 0);
  });

  it('failAll rejects everything in flight with an error made for each', async () => {
    const requests = table();
    const first = requests.start({ meta: 'one', timeoutMs: 0, accept: () => 1, send: () => undefined });
    const second = requests.start({ meta: 'two', timeoutMs: 1000, accept: () => 2, send: () => undefined });
    requests.failAll((meta) => new Error(`lost before ${meta}`));
    await assert.rejects(first, /lost before one/);
    await assert.rejects(second, /lost before two/);
    assert.equal(requests.size, 0);
  });

  it('a send that throws rejects and leaves nothing in flight', async () => {
    const requests = table();
    await assert.rejects(
      requests.start({
        meta: 'x',
        timeoutMs: 1000,
        accept: () => 1,
        send: () => {
          throw new Error('no link');
        },
      }),
      /no link/,
    );
    assert.equal(requests.size, 0);
  });

  it('wraps ids after maxId, skipping ids in flight', () => {
    const requests = new RequestTable<string, number>({ maxId: 3 });
    const ids: number[] = [];
    void requests.start({ meta: 'held', timeoutMs: 0, accept: () => 0, send: (id) => ids.push(id) });
    assert.deepEqual([requests.allocateId(), requests.allocateId(), requests.allocateId()], [2, 3, 2]);
    assert.deepEqual(ids, [1]);
  });
});
