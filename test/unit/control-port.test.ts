/**
 * The control socket's `port` method (`mcastctl trace`): a real unix socket in a temporary directory, an in-memory
 * DaemonView.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ControlClient } from '../../src/transport/control/control-client.js';
import { ControlServer } from '../../src/transport/control/control-server.js';
import type { PortActivityView } from '../../src/transport/control/daemon-view.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-ctl-port-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});
const socketPath = () => join(root, `d${++counter}`, 'mcastctl.sock');

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
  send(request: object): void {
    this.socket.write(JSON.stringify(request) + '\n');
  }
  async next(): Promise<Record<string, unknown>> {
    while (this.lines.length === 0 && !this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
    const line = this.lines.shift();
    assert.ok(line !== undefined, 'the connection closed without an answer');
    return line as Record<string, unknown>;
  }
  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

const activity: PortActivityView = {
  port: { ofport: 5, name: 'veth-a', pod: 'default/pod-a' },
  addresses: ['10.0.0.5'],
  since: '2026-01-01T00:00:00.000Z',
  messages: 12,
  lastMessageAt: '2026-01-01T00:05:00.000Z',
  queryIntervalMs: 125_000,
  reportedGroups: ['239.9.9.9'],
  group: {
    group: '239.1.2.3',
    reports: 4,
    lastReportAt: '2026-01-01T00:05:00.000Z',
    refusals: { policy: 1 },
    lastRefusal: { reason: 'policy', at: '2026-01-01T00:04:00.000Z', rule: 3 },
    policy: { join: { allowed: true }, send: { allowed: false, rule: 5 } },
  },
  refusals: { policy: 1 },
  meterDropped: 7,
};

async function withServer(run: (view: FakeDaemonView, path: string) => Promise<void>): Promise<void> {
  const view = new FakeDaemonView();
  view.portValues.set('default/pod-a', activity);
  view.portValues.set('veth-a', activity);
  const path = socketPath();
  const server = await ControlServer.listen({ path, view });
  try {
    await run(view, path);
  } finally {
    await server.close();
  }
}

describe('control socket: port', () => {
  it("answers the view's port activity, by pod or by interface name, and passes the query on", async () => {
    await withServer(async (view, path) => {
      const client = await ControlClient.connect(path);
      try {
        assert.deepEqual(await client.request('port', { pod: 'default/pod-a', group: '239.1.2.3' }), activity);
        assert.deepEqual(await client.request('port', { name: 'veth-a' }), activity);
        assert.deepEqual(view.portQueries, [{ pod: 'default/pod-a', group: '239.1.2.3' }, { name: 'veth-a' }]);
      } finally {
        client.close();
      }
    });
  });

  it('null for an unknown pod', async () => {
    await withServer(async (view, path) => {
      const raw = await RawClient.connect(path);
      raw.send({ id: 1, method: 'port', params: { pod: 'default/nope' } });
      const answer = await raw.next();
      assert.equal(answer['id'], 1);
      assert.equal(answer['result'], null);
      assert.equal('error' in answer, false);
      assert.deepEqual(view.portQueries, [{ pod: 'default/nope' }]);
      raw.socket.destroy();
    });
  });

  it('passes the group on in canonical form', async () => {
    await withServer(async (view, path) => {
      const client = await ControlClient.connect(path);
      try {
        await client.request('port', { pod: 'default/pod-a', group: 'FF3E:0000:0000::0001' });
        assert.deepEqual(view.portQueries, [{ pod: 'default/pod-a', group: 'ff3e::1' }]);
      } finally {
        client.close();
      }
    });
  });

  const refused: Array<[string, Record<string, unknown> | undefined]> = [
    ['no params', undefined],
    ['neither pod nor name', { group: '239.1.2.3' }],
    ['both pod and name', { pod: 'default/pod-a', name: 'veth-a' }],
    ['a pod that is not a string', { pod: 42 }],
    ['an empty pod', { pod: '' }],
    ['a pod too long', { pod: 'x'.repeat(508) }],
    ['a name too long for an interface', { name: 'x'.repeat(16) }],
    ['a group that is not multicast', { pod: 'default/pod-a', group: '10.0.0.1' }],
    ['a group that is not an address', { pod: 'default/pod-a', group: 'nope' }],
    ['a group that is not a string', { pod: 'default/pod-a', group: 239 }],
  ];
  for (const [what, params] of refused) {
    it(`refuses ${what} with bad-request, without asking the view, and keeps the connection`, async () => {
      await withServer(async (view, path) => {
        const raw = await RawClient.connect(path);
        raw.send({ id: 9, method: 'port', ...(params === undefined ? {} : { params }) });
        const answer = (await raw.next()) as { id: unknown; error?: { code: string; message: string } };
        assert.equal(answer.id, 9);
        assert.equal(answer.error?.code, 'bad-request');
        assert.equal(typeof answer.error?.message, 'string');
        assert.equal(view.portQueries.length, 0);
        raw.send({ id: 10, method: 'port', params: { pod: 'default/pod-a' } });
        assert.deepEqual((await raw.next())['result'], activity);
        raw.socket.destroy();
      });
    });
  }

  it('the client rejects a refused port request with an McastError', async () => {
    await withServer(async (_view, path) => {
      const client = await ControlClient.connect(path);
      try {
        await assert.rejects(client.request('port', { pod: 'default/pod-a', name: 'veth-a' }), /pod.*name|name.*pod/);
      } finally {
        client.close();
      }
    });
  });
});
