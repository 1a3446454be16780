/**
 * OvsdbClient against a scripted fake server on a unix socket in a temporary directory:
 * the behaviour a real ovsdb-server seldom shows on cue (its echo probe, replies that
 * never come, a reply and an update in one read, garbage, drops at chosen moments).
 * The same client is tested against the real ovsdb-server in test/e2e/ovsdb-client.test.ts.
 * Also: endpoint parsing and the backoff schedule.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from '../helpers/node-test.js';
import { ExitCode, UnavailableError, UsageError } from '../../src/errors.js';
import { backoffDelay } from '../../src/runtime/backoff.js';
import { OvsdbClient } from '../../src/transport/ovsdb/client.js';

import { OvsdbDecodeError, OvsdbError, OvsdbTimeoutError } from '../../src/protocol/ovsdb/errors.js';
import { JsonStreamSplitter } from '../../src/protocol/ovsdb/json-stream.js';
import type { MonitorUpdateReason, TableUpdates } from '../../src/protocol/ovsdb/monitor.js';

const scratch = mkdtempSync(join(tmpdir(), 'mcl-ovsdb-unit-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let socketCount = 0;

const UUID_A = '550e8400-e29b-41d4-a716-446655440000';

type Json = Record<string, unknown>;

/** One accepted connection: what the client sent, and a way to answer. */
class Peer {
  private readonly received: Json[] = [];
  private readonly waiters: Array<(message: Json) => void> = [];
  readonly closed: Promise<void>;

  constructor(readonly socket: Socket) {
    const splitter = new JsonStreamSplitter();
    socket.on('data', (chunk: Buffer) => {
      for (const value of splitter.push(chunk)) {
        const waiter = this.waiters.shift();
        if (waiter === undefined) this.received.push(value as Json);
        else waiter(value as Json);
      }
    });
    socket.on('error', () => {});
    // Not events.once: that rejects on 'error', and a reset at teardown is no failure here.
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  /** The next message from the client. */
  next(): Promise<Json> {
    const queued = this.received.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The next message with this method (skipping others). */
  async nextCall(method: string): Promise<Json> {
    for (;;) {
      const message = await this.next();
      if (message['method'] === method) return message;
    }
  }

  write(...messages: unknown[]): void {
    this.socket.write(
      messages.map((message) => (typeof message === 'string' ? message : JSON.stringify(message))).join(''),
    );
  }

  reply(request: Json, result: unknown): void {
    this.write({ id: request['id'], result, error: null });
  }
}

class FakeServer {
  readonly path = join(scratch, `fake-${++socketCount}.sock`);
  private readonly server: Server;
  private readonly peers: Peer[] = [];
  private readonly waiters: Array<(peer: Peer) => void> = [];

  private constructor() {
    this.server = createServer((socket) => {
      const peer = new Peer(socket);
      const waiter = this.waiters.shift();
      if (waiter === undefined) this.peers.push(peer);
      else waiter(peer);
    });
  }

  static async start(): Promise<FakeServer> {
    const fake = new FakeServer();
    fake.server.listen(fake.path);
    await once(fake.server, 'listening');
    servers.push(fake);
    return fake;
  }

  get endpoint(): string {
    return `unix:${this.path}`;
  }

  /** The next connection the client makes. */
  accept(): Promise<Peer> {
    const peer = this.peers.shift();
    if (peer !== undefined) return Promise.resolve(peer);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): void {
    this.server.close();
  }
}

const servers: FakeServer[] = [];
const clients: OvsdbClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  for (const server of servers.splice(0)) server.close();
});

async function connected(
  options: { reconnect?: boolean | { minDelayMs?: number; maxDelayMs?: number }; timeoutMs?: number } = {},
) {
  const server = await FakeServer.start();
  const [client, peer] = await Promise.all([
    OvsdbClient.connect({ endpoint: server.endpoint, ...options }),
    server.accept(),
  ]);
  clients.push(client);
  return { server, client, peer };
}

describe('OvsdbClient against a scripted server', () => {
  it('answers the server\'s echo probe with its params and id, and unknown methods with "unknown method"', async () => {
    const { peer } = await connected();
    peer.write({ id: 'echo', method: 'echo', params: [] }, { id: [7], method: 'echo', params: ['x', 1] });
    assert.deepEqual(await peer.next(), { result: [], error: null, id: 'echo' });
    assert.deepEqual(await peer.next(), { result: ['x', 1], error: null, id: [7] });
    peer.write({ id: 9, method: 'frobnicate', params: [] });
    assert.deepEqual(await peer.next(), { result: null, error: 'unknown method', id: 9 });
  });

  it('correlates replies by id, in any order', async () => {
    const { client, peer } = await connected();
    const first = client.echo(['one']);
    const second = client.listDbs();
    const echo = await peer.nextCall('echo');
    const listDbs = await peer.nextCall('list_dbs');
    peer.reply(listDbs, ['Open_vSwitch']);
    peer.reply(echo, ['one']);
    assert.deepEqual(await second, ['Open_vSwitch']);
    assert.deepEqual(await first, ['one']);
  });

  it('turns an error reply into OvsdbError', async () => {
    const { client, peer } = await connected();
    const pending = client.getSchema('Nope');
    const request = await peer.nextCall('get_schema');
    peer.write({
      id: request['id'],
      error: { error: 'unknown database', details: 'get_schema asked for database Nope' },
    });
    await assert.rejects(pending, (error) => {
      assert.ok(error instanceof OvsdbError);
      assert.equal(error.error, 'unknown database');
      assert.equal(error.method, 'get_schema');
      assert.equal(
        error.message,
        'OVSDB get_schema on Nope failed: unknown database: get_schema asked for database Nope',
      );
      assert.match(error.hint ?? '', /list-dbs/);
      return true;
    });
    const lock = client.lock('x');
    peer.write({ id: (await peer.nextCall('lock'))['id'], error: 'unknown method' });
    await assert.rejects(
      lock,
      (error) => error instanceof OvsdbError && error.error === 'unknown method' && error.details === undefined,
    );
  });

  it("delivers a monitor's initial state before an update that arrives in the same read", async () => {
    const { client, peer } = await connected();
    const calls: Array<[MonitorUpdateReason, TableUpdates]> = [];
    const monitor = client.monitor('Open_vSwitch', 'm1', { Interface: { columns: ['name'] } }, (updates, reason) =>
      calls.push([reason, updates]),
    );
    const request = await peer.nextCall('monitor');
    assert.deepEqual(request['params'], ['Open_vSwitch', 'm1', { Interface: { columns: ['name'] } }]);
    peer.write(
      { id: request['id'], result: { Interface: { [UUID_A]: { new: { name: 'p1' } } } }, error: null },
      {
        id: null,
        method: 'update',
        params: ['m1', { Interface: { [UUID_A]: { old: { name: 'p1' }, new: { name: 'p2' } } } }],
      },
      { id: null, method: 'update', params: ['other', { Interface: {} }] },
    );
    assert.deepEqual(await monitor, { Interface: { [UUID_A]: { new: { name: 'p1' } } } });
    await waitFor(() => calls.length === 2);
    assert.deepEqual(
      calls.map(([reason, updates]) => [reason, updates['Interface']?.[UUID_A]?.new?.['name']]),
      [
        ['initial', 'p1'],
        ['update', 'p2'],
      ],
    );
    await assert.rejects(
      client.monitor('Open_vSwitch', 'm1', {}, () => {}),
      RangeError,
    );
    const cancelled = client.monitorCancel('m1');
    peer.reply(await peer.nextCall('monitor_cancel'), {});
    await cancelled;
    peer.write({ id: null, method: 'update', params: ['m1', { Interface: { [UUID_A]: { new: { name: 'p3' } } } }] });
    const echo = client.echo(); // a round trip later, still no third call
    peer.reply(await peer.nextCall('echo'), []);
    await echo;
    assert.equal(calls.length, 2);
  });

  it('a monitor cancelled before the server accepted it gets no callback, and is cancelled there too', async () => {
    const { client, peer } = await connected();
    const calls: MonitorUpdateReason[] = [];
    const monitor = client.monitor('Open_vSwitch', 'early', { Bridge: {} }, (_, reason) => calls.push(reason));
    const request = await peer.nextCall('monitor');
    await client.monitorCancel('early'); // nothing to tell the server yet
    peer.reply(request, {});
    await monitor;
    const cancel = await peer.nextCall('monitor_cancel');
    assert.deepEqual(cancel['params'], ['early']);
    peer.reply(cancel, {});
    assert.deepEqual(calls, []);
  });

  it('times a request out, cancels it on the server (§4.1.4), and ignores the late reply', async () => {
    const { client, peer } = await connected();
    // Handlers are attached at once: the rejection may come before the test awaits it.
    const timedOut = assert.rejects(
      client.transact('Open_vSwitch', [{ op: 'comment', comment: 'slow' }], { timeoutMs: 50 }),
      (error) => {
        assert.ok(error instanceof OvsdbTimeoutError);
        assert.equal(error.exitCode, ExitCode.Unavailable);
        assert.match(error.message, /did not answer transact within 50 ms/);
        return true;
      },
    );
    const request = await peer.nextCall('transact');
    await timedOut;
    assert.deepEqual(await peer.nextCall('cancel'), { method: 'cancel', params: [request['id']], id: null });
    peer.reply(request, [{}]);
    const echo = client.echo(['still fine']);
    peer.reply(await peer.nextCall('echo'), ['still fine']);
    assert.deepEqual(await echo, ['still fine']);
  });

  it('abandons a request when its signal aborts, and cancels it on the server', async () => {
    const { client, peer } = await connected();
    const controller = new AbortController();
    const aborted = assert.rejects(
      client.transact('Open_vSwitch', [{ op: 'comment', comment: 'x' }], { signal: controller.signal }),
      /user gave up/,
    );
    const request = await peer.nextCall('transact');
    controller.abort(new Error('user gave up'));
    await aborted;
    assert.deepEqual((await peer.nextCall('cancel'))['params'], [request['id']]);
    await assert.rejects(client.echo([], { signal: AbortSignal.abort(new Error('already')) }), /already/);
  });

  it('validates operations before sending anything', async () => {
    const { client } = await connected();
    await assert.rejects(
      client.transact('Open_vSwitch', [{ op: 'insert', table: 'T', row: { n: Number.NaN } }]),
      RangeError,
    );
  });

  it('fails requests in flight when the connection drops, then reconnects and resyncs monitors', async () => {
    const { server, client, peer } = await connected({ reconnect: { minDelayMs: 10, maxDelayMs: 40 } });
    const calls: MonitorUpdateReason[] = [];
    const rows: string[] = [];
    const monitor = client.monitor('Open_vSwitch', 'm', { Bridge: {} }, (updates, reason) => {
      calls.push(reason);
      rows.push(...Object.keys(updates['Bridge'] ?? {}));
    });
    peer.reply(await peer.nextCall('monitor'), { Bridge: { [UUID_A]: { new: { name: 'br0' } } } });
    await monitor;
    const events: string[] = [];
    client.on('disconnected', (event) => events.push(`disconnected ${event.willReconnect}`));
    client.on('reconnecting', (event) => events.push(`reconnecting ${event.attempt}`));
    const reconnected = once(client, 'reconnected');

    const lost = assert.rejects(client.transact('Open_vSwitch', [{ op: 'comment', comment: 'x' }]), (error) => {
      assert.ok(error instanceof UnavailableError);
      assert.match(error.message, /was lost before the reply to transact/);
      assert.match(error.hint ?? '', /may or may not have been committed/);
      return true;
    });
    await peer.nextCall('transact');
    peer.socket.destroy();
    await lost;
    // While it is down, requests fail at once rather than queue.
    if (client.state === 'reconnecting') await assert.rejects(client.echo(), UnavailableError);

    const second = await server.accept();
    const again = await second.nextCall('monitor');
    assert.deepEqual(again['params'], ['Open_vSwitch', 'm', { Bridge: {} }]);
    second.reply(again, {}); // the bridge is gone now
    const [event] = (await reconnected) as [{ attempts: number; monitors: string[] }];
    assert.deepEqual(event.monitors, ['m']);
    assert.deepEqual(calls, ['initial', 'resync']);
    assert.deepEqual(events.slice(0, 2), ['disconnected true', 'reconnecting 1']);
    assert.equal(client.state, 'connected');
  });

  it('keeps trying while the server is away, with growing delays', async () => {
    const { server, client, peer } = await connected({ reconnect: { minDelayMs: 5, maxDelayMs: 20 } });
    const delays: number[] = [];
    client.on('reconnecting', (event) => delays.push(event.delayMs));
    server.close(); // no listener: every attempt fails with ENOENT or ECONNREFUSED
    peer.socket.destroy();
    await waitFor(() => delays.length >= 5);
    assert.deepEqual(delays.slice(0, 5), [5, 10, 20, 20, 20]);
    await client.close();
    assert.equal(client.state, 'closed');
  });

  it('with reconnect: false, a drop closes the client', async () => {
    const { client, peer } = await connected({ reconnect: false });
    const closed = once(client, 'closed');
    peer.socket.destroy();
    await closed;
    assert.equal(client.state, 'closed');
    await assert.rejects(
      client.listDbs(),
      (error) => error instanceof UnavailableError && /is closed/.test(error.message),
    );
  });

  it('drops the connection when the server breaks the protocol', async () => {
    const { client, peer } = await connected({ reconnect: false });
    const disconnected = once(client, 'disconnected');
    peer.write('{"id":1,"result":[]}  nonsense');
    const [event] = (await disconnected) as [{ error: Error }];
    assert.ok(event.error instanceof OvsdbDecodeError);
    assert.equal(event.error.code, 'bad-json');
  });

  it('close() fails what is pending and emits closed', async () => {
    const { client, peer } = await connected();
    const pending = assert.rejects(
      client.listDbs(),
      (error) => error instanceof UnavailableError && /was closed before the reply to list_dbs/.test(error.message),
    );
    await peer.nextCall('list_dbs');
    const closed = once(client, 'closed');
    await client.close();
    await closed;
    await pending;
    await peer.closed;
    await client.close(); // idempotent
  });
});

describe('connecting', () => {
  it('a missing socket is UnavailableError (exit 69) naming the endpoint and errno, with a hint', async () => {
    const endpoint = `unix:${join(scratch, 'no-such.sock')}`;
    await assert.rejects(OvsdbClient.connect({ endpoint }), (error) => {
      assert.ok(error instanceof UnavailableError);
      assert.equal(error.exitCode, ExitCode.Unavailable);
      assert.equal(error.message, `cannot connect to OVSDB ${endpoint}: ENOENT`);
      assert.equal(error.hint, 'is ovsdb-server running? set OVS_RUNDIR or --db');
      return true;
    });
  });

  it('a refused TCP connection is UnavailableError', async () => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as { port: number };
    probe.close();
    await assert.rejects(OvsdbClient.connect({ endpoint: `tcp:127.0.0.1:${port}` }), (error) => {
      return (
        error instanceof UnavailableError &&
        error.message === `cannot connect to OVSDB tcp:127.0.0.1:${port}: ECONNREFUSED`
      );
    });
  });

  it('a malformed endpoint is UsageError (exit 64) before anything is tried', async () => {
    await assert.rejects(
      OvsdbClient.connect({ endpoint: 'ssl:1.2.3.4:6640' }),
      (error) => error instanceof UsageError && error.exitCode === ExitCode.Usage,
    );
  });
});

describe('backoff', () => {
  it('doubles from the minimum to the cap (default 100 ms to 5 s)', () => {
    assert.deepEqual(
      Array.from({ length: 8 }, (_, attempt) => backoffDelay(attempt)),
      [100, 200, 400, 800, 1600, 3200, 5000, 5000],
    );
    assert.equal(backoffDelay(10_000), 5000);
    assert.deepEqual(
      [0, 1, 2].map((attempt) => backoffDelay(attempt, { minDelayMs: 300, maxDelayMs: 100 })),
      [300, 300, 300],
    );
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
