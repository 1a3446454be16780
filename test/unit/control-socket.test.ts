/** The daemon's control socket: a real unix socket in a temporary directory, an in-memory DaemonView. */
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ControlClient } from '../../src/transport/control/control-client.js';
import { ControlServer, MAX_REQUEST_BYTES } from '../../src/transport/control/control-server.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { McastError } from '../../src/errors.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-ctl-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});
/** A fresh socket path in a directory that does not exist yet. */
const socketPath = () => join(root, `d${++counter}`, 'mcastctl.sock');

const joinEvent = (host: string): DaemonEvent => ({
  type: 'join',
  time: '2026-01-01T00:00:00.000Z',
  group: '239.1.2.3',
  port: { ofport: 5, name: 'veth-a', pod: 'default/pod-a' },
  host,
});

/** A raw protocol client: send lines, read lines. */
class RawClient {
  readonly lines: unknown[] = [];
  private rest = '';
  private waiters: Array<() => void> = [];
  closed = false;
  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      const parts = (this.rest + chunk).split('\n');
      this.rest = parts.pop() ?? '';
      for (const part of parts) this.lines.push(JSON.parse(part));
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }
  static connect(path: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(path, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }
  send(text: string): void {
    this.socket.write(text);
  }
  async next(count = 1): Promise<unknown[]> {
    while (this.lines.length < count && !this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.lines.splice(0, count);
  }
  async whenClosed(): Promise<void> {
    while (!this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('ControlServer and ControlClient', () => {
  it('answers status, groups and routes with what the view says', async () => {
    const view = new FakeDaemonView();
    const path = socketPath();
    const server = await ControlServer.listen({ path, view });
    try {
      const client = await ControlClient.connect(path);
      assert.deepEqual(await client.request('status'), view.statusValue);
      assert.deepEqual(await client.request('groups'), view.groupsValue);
      assert.deepEqual(await client.request('routes'), view.routesValue);
      // Several at once on one connection, answered by id.
      const [a, b] = await Promise.all([client.request('routes'), client.request('status')]);
      assert.deepEqual([a, b], [view.routesValue, view.statusValue]);
      client.close();
    } finally {
      await server.close();
    }
  });

  it('creates the directory 0700 and the socket 0600; close() removes the socket', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    const socketStat = await stat(path);
    assert.ok(socketStat.isSocket());
    assert.equal(socketStat.mode & 0o777, 0o600);
    assert.equal((await stat(join(path, '..'))).mode & 0o777, 0o700);
    await server.close();
    await assert.rejects(stat(path), { code: 'ENOENT' });
  });

  it('an unknown method, a bad JSON line or a request without a method gets an error line, and the connection stays', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      const raw = await RawClient.connect(path);
      raw.send('{"id":1,"method":"reboot"}\n');
      const [unknown] = (await raw.next()) as Array<{ id: number; error: { code: string; message: string } }>;
      assert.equal(unknown!.id, 1);
      assert.equal(unknown!.error.code, 'unknown-method');
      assert.match(unknown!.error.message, /reboot.*status, groups, routes, events/);
      raw.send('{not json\n');
      assert.deepEqual(((await raw.next()) as Array<{ id: null; error: { code: string } }>)[0]!.error.code, 'bad-json');
      raw.send('{"id":7}\n[1]\n{"id":8,"method":"status","params":3}\n');
      const errors = (await raw.next(3)) as Array<{ id: unknown; error: { code: string } }>;
      assert.deepEqual(
        errors.map((line) => [line.id, line.error.code]),
        [
          [7, 'bad-request'],
          [null, 'bad-request'],
          [8, 'bad-request'],
        ],
      );
      // A request split across writes, and two in one write.
      raw.send('{"id":2,"met');
      raw.send('hod":"routes"}\n{"id":"x","method":"status","params":{}}\n');
      const answers = (await raw.next(2)) as Array<{ id: unknown; result: unknown }>;
      assert.deepEqual(
        answers.map((line) => line.id),
        [2, 'x'],
      );
      assert.ok(answers.every((line) => line.result !== undefined));
      assert.equal(raw.closed, false);
      raw.socket.destroy();
    } finally {
      await server.close();
    }
  });

  it('the client turns an error answer into an McastError naming the method', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    view.status = () => {
      throw new Error('view exploded');
    };
    const server = await ControlServer.listen({ path, view, logger: { warn: () => undefined } });
    try {
      const client = await ControlClient.connect(path);
      await assert.rejects(
        client.request('status'),
        (error: unknown) =>
          error instanceof McastError && error.exitCode === 1 && /refused status: .*view exploded/.test(error.message),
      );
      // The connection still serves.
      assert.deepEqual(await client.request('routes'), view.routesValue);
      client.close();
    } finally {
      await server.close();
    }
  });

  it('a request line longer than 64 KiB ends the connection with an error', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      const raw = await RawClient.connect(path);
      raw.send('{"id":1,"method":"' + 'x'.repeat(MAX_REQUEST_BYTES + 10));
      const [line] = (await raw.next()) as Array<{ error: { code: string } }>;
      assert.equal(line!.error.code, 'request-too-long');
      await raw.whenClosed();
    } finally {
      await server.close();
    }
  });

  it('fans events out to every subscriber, and unsubscribes from the view when the last one leaves', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path, view });
    try {
      const one = await RawClient.connect(path);
      const two = await RawClient.connect(path);
      one.send('{"id":1,"method":"events"}\n');
      two.send('{"id":1,"method":"events"}\n');
      assert.deepEqual(await one.next(), [{ id: 1, result: { subscribed: true } }]);
      assert.deepEqual(await two.next(), [{ id: 1, result: { subscribed: true } }]);
      assert.equal(view.listeners.size, 1, 'one subscription to the view for all clients');
      view.emit(joinEvent('10.0.0.5'));
      view.emit(joinEvent('10.0.0.6'));
      assert.deepEqual(await one.next(2), [{ event: joinEvent('10.0.0.5') }, { event: joinEvent('10.0.0.6') }]);
      assert.deepEqual(await two.next(2), [{ event: joinEvent('10.0.0.5') }, { event: joinEvent('10.0.0.6') }]);
      one.socket.destroy();
      await until(() => server.subscriberCount === 1, 'the first client to be unsubscribed');
      view.emit(joinEvent('10.0.0.7'));
      assert.deepEqual(await two.next(), [{ event: joinEvent('10.0.0.7') }]);
      assert.equal(view.listeners.size, 1);
      two.socket.destroy();
      await until(() => view.listeners.size === 0, 'the view subscription to end');
      assert.equal(server.clientCount, 0);
    } finally {
      await server.close();
    }
  });

  it('writes the events of one turn after it, together and in order, not while the daemon works', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path, view });
    try {
      const client = await RawClient.connect(path);
      client.send('{"id":1,"method":"events"}\n');
      assert.deepEqual(await client.next(), [{ id: 1, result: { subscribed: true } }]);
      const writes: unknown[] = [];
      const [subscriber] = [...(server as unknown as { subscribers: Set<{ write(line: string): void }> }).subscribers];
      const write = subscriber!.write.bind(subscriber);
      subscriber!.write = (line) => {
        writes.push(line);
        write(line);
      };
      view.emit(joinEvent('10.0.0.1'));
      view.emit(joinEvent('10.0.0.2'));
      view.emit(joinEvent('10.0.0.3'));
      assert.equal(writes.length, 0, 'nothing written while the turn runs');
      assert.deepEqual(await client.next(3), [
        { event: joinEvent('10.0.0.1') },
        { event: joinEvent('10.0.0.2') },
        { event: joinEvent('10.0.0.3') },
      ]);
      assert.equal(writes.length, 1, 'one write for the turn');
    } finally {
      await server.close();
    }
  });

  it('ControlClient.events delivers events and resolves when its signal aborts', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path, view });
    try {
      const client = await ControlClient.connect(path);
      const controller = new AbortController();
      const seen: DaemonEvent[] = [];
      const streaming = client.events(
        (event) => {
          seen.push(event);
          if (seen.length === 2) controller.abort();
        },
        { signal: controller.signal },
      );
      await until(() => view.listeners.size === 1, 'the subscription');
      view.emit(joinEvent('10.0.0.1'));
      view.emit(joinEvent('10.0.0.2'));
      await streaming;
      assert.deepEqual(
        seen.map((event) => (event.type === 'join' ? event.host : '')),
        ['10.0.0.1', '10.0.0.2'],
      );
      await until(() => view.listeners.size === 0, 'the unsubscription');
    } finally {
      await server.close();
    }
  });

  it('ControlClient.events rejects with exit 69 when the daemon goes away mid-stream', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path, view });
    const client = await ControlClient.connect(path);
    const streaming = client.events(() => undefined);
    streaming.catch(() => undefined); // checked below, after the close
    await until(() => view.listeners.size === 1, 'the subscription');
    await server.close();
    await assert.rejects(
      streaming,
      (error: unknown) =>
        error instanceof McastError &&
        error.exitCode === 69 &&
        /lost the connection to the mcastctl daemon at /.test(error.message),
    );
    assert.equal(view.listeners.size, 0);
  });

  it('drops a subscriber that does not read once its buffer passes 1 MiB, and keeps serving the others', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const warnings: string[] = [];
    const server = await ControlServer.listen({ path, view, logger: { warn: (message) => warnings.push(message) } });
    try {
      const slow = await RawClient.connect(path);
      const fast = await ControlClient.connect(path);
      let fastSeen = 0;
      const streaming = fast.events(() => void fastSeen++);
      slow.send('{"id":1,"method":"events"}\n');
      await slow.next();
      slow.socket.pause(); // reads nothing more
      await until(() => server.subscriberCount === 2, 'two subscribers');
      const big: DaemonEvent = {
        type: 'sync',
        time: '2026-01-01T00:00:00.000Z',
        group: '239.1.2.3',
        ports: [1],
        latencyMs: 1,
        clockMs: 1,
        ok: false,
        error: 'e'.repeat(4096),
      };
      // Emitted in batches, letting the fast client read between them.
      for (let batch = 0; batch < 100 && server.subscriberCount === 2; batch++) {
        for (let index = 0; index < 50; index++) view.emit(big);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      assert.equal(server.subscriberCount, 1, 'the slow client was dropped');
      assert.match(warnings.join('\n'), /dropped an event subscriber that reads too slowly/);
      slow.socket.resume(); // reads what was sent before the drop, then sees the end
      await slow.whenClosed();
      const before = fastSeen;
      view.emit(joinEvent('10.0.0.9'));
      await until(() => fastSeen > before, 'the fast client to go on receiving');
      fast.close();
      await streaming;
    } finally {
      await server.close();
    }
  });

  it('replaces a stale socket (nothing listening)', async () => {
    const path = socketPath();
    // A socket file whose server is gone: bound elsewhere, moved into place, then closed.
    const first = await ControlServer.listen({ path: path + '.old', view: new FakeDaemonView() });
    await rename(path + '.old', path);
    await first.close();
    assert.ok((await stat(path)).isSocket());
    await assert.rejects(
      ControlClient.connect(path),
      (error: unknown) => error instanceof McastError && error.exitCode === 69 && /ECONNREFUSED/.test(error.message),
    );
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      const client = await ControlClient.connect(path);
      assert.equal((await client.request<{ bridge: string }>('status')).bridge, 'br-int');
      client.close();
    } finally {
      await server.close();
    }
  });

  it("refuses a socket another daemon answers on with 'busy' (exit 1), and leaves that daemon serving", async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      await assert.rejects(ControlServer.listen({ path, view: new FakeDaemonView() }), (error: unknown) => {
        assert.ok(error instanceof McastError);
        assert.equal(error.code, 'busy');
        assert.equal(error.exitCode, 1);
        assert.equal(error.message, `another daemon is listening on ${path}`);
        return true;
      });
      const client = await ControlClient.connect(path);
      assert.equal((await client.request<{ pid: number }>('status')).pid, 4242);
      client.close();
    } finally {
      await server.close();
    }
  });

  it('refuses a path that is not a socket (exit 64), without touching it', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    await server.close();
    await writeFile(path, 'precious');
    await assert.rejects(
      ControlServer.listen({ path, view: new FakeDaemonView() }),
      (error: unknown) => error instanceof McastError && error.exitCode === 64 && /not a socket/.test(error.message),
    );
    assert.equal((await stat(path)).size, 8);
  });

  it('the client reports a missing socket as exit 69 with what to do', async () => {
    const path = socketPath();
    await assert.rejects(ControlClient.connect(path), (error: unknown) => {
      assert.ok(error instanceof McastError);
      assert.equal(error.exitCode, 69);
      assert.equal(
        error.message,
        `cannot reach the mcastctl daemon at ${path}: ENOENT (is \`mcastctl daemon\` running? set --control-socket)`,
      );
      return true;
    });
  });

  it('a request times out (exit 69) when the daemon never answers', async () => {
    const path = join(root, `mute-${++counter}.sock`);
    const mute = createServer((socket) => socket.resume()); // reads, never answers
    await new Promise<void>((resolve) => mute.listen(path, resolve));
    try {
      const client = await ControlClient.connect(path, { timeoutMs: 100 });
      await assert.rejects(
        client.request('status'),
        (error: unknown) =>
          error instanceof McastError &&
          error.exitCode === 69 &&
          /did not answer status within 100 ms/.test(error.message),
      );
      client.close();
    } finally {
      await new Promise<void>((resolve) => mute.close(() => resolve()));
    }
  });
});
