/**
 * The OpenFlow connection against a scripted fake switch on a unix socket: handshake and
 * version negotiation, xid correlation, errors, timeouts, echo both ways, batches with
 * backpressure, multipart replies in several parts, packet-ins, loss and reconnection,
 * close. (The same behaviour against a real ovs-vswitchd: test/e2e/openflow-client.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ExitCode, UnavailableError } from '../../src/errors.js';
import { output } from '../../src/protocol/openflow/action.js';
import { bucket } from '../../src/protocol/openflow/bucket.js';
import { OpenFlowConnection } from '../../src/transport/openflow/connection.js';
import { OpenFlowError } from '../../src/protocol/openflow/errors.js';
import { flowMod } from '../../src/protocol/openflow/flow-mod.js';
import { OpenFlowFramer } from '../../src/protocol/openflow/framer.js';
import { groupMod } from '../../src/protocol/openflow/group-mod.js';
import * as openflow from '../../src/protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { MULTIPART_MORE } from '../../src/protocol/openflow/multipart-type.js';

const DATAPATH_ID = 0xabcdef0123n;

type Handler = (link: FakeLink, message: OpenFlowMessage) => boolean | undefined;

interface FakeSwitchOptions {
  /** The HELLO the switch sends first (default: version 6, no bitmap, as OVS does); null: none. */
  hello?: OpenFlowMessage | null;
  /** Runs first for every message; return true when it answered. */
  handler?: Handler;
}

/** One accepted connection: every message received, and a way to send. */
class FakeLink {
  readonly received: OpenFlowMessage[] = [];
  constructor(readonly socket: net.Socket) {}
  send(message: OpenFlowMessage): void {
    this.socket.write(openflow.encode(message));
  }
  of<T extends OpenFlowMessage['type']>(type: T): OpenFlowMessage[] {
    return this.received.filter((message) => message.type === type);
  }
}

/** Answers like OVS: HELLO first, then FEATURES, BARRIER, ECHO, GET_ASYNC and GET_CONFIG requests. */
class FakeSwitch {
  readonly links: FakeLink[] = [];
  handler: Handler | undefined;
  private constructor(
    readonly server: net.Server,
    readonly path: string,
  ) {}

  static async start(dir: string, name: string, options: FakeSwitchOptions = {}): Promise<FakeSwitch> {
    const path = join(dir, `${name}.mgmt`);
    let fake: FakeSwitch | undefined;
    const server = net.createServer((socket) => fake!.accept(socket, options));
    fake = new FakeSwitch(server, path);
    fake.handler = options.handler;
    await new Promise<void>((resolve) => server.listen(path, resolve));
    return fake;
  }

  get endpoint(): string {
    return `unix:${this.path}`;
  }

  get last(): FakeLink {
    return this.links.at(-1)!;
  }

  private accept(socket: net.Socket, options: FakeSwitchOptions): void {
    const link = new FakeLink(socket);
    this.links.push(link);
    socket.on('error', () => undefined);
    const hello = options.hello === undefined ? ({ type: 'HELLO', xid: 1, version: 6 } as const) : options.hello;
    if (hello) link.send(hello);
    const framer = new OpenFlowFramer((bytes) => {
      const message = openflow.decode(bytes);
      link.received.push(message);
      if (this.handler?.(link, message)) return;
      this.answer(link, message);
    });
    socket.on('data', (chunk) => framer.push(chunk));
  }

  private answer(link: FakeLink, message: OpenFlowMessage): void {
    const xid = message.xid;
    switch (message.type) {
      case 'FEATURES_REQUEST':
        link.send({
          type: 'FEATURES_REPLY',
          xid,
          datapathId: DATAPATH_ID,
          nBuffers: 0,
          nTables: 254,
          auxiliaryId: 0,
          capabilities: 0x4f,
          reserved: 0,
        });
        return;
      case 'BARRIER_REQUEST':
        link.send({ type: 'BARRIER_REPLY', xid });
        return;
      case 'ECHO_REQUEST':
        link.send({ type: 'ECHO_REPLY', xid, data: message.data });
        return;
      case 'GET_ASYNC_REQUEST':
        link.send({ type: 'GET_ASYNC_REPLY', xid, packetIn: [3, 0], portStatus: [7, 7], flowRemoved: [15, 0] });
        return;
      case 'GET_CONFIG_REQUEST':
        link.send({ type: 'GET_CONFIG_REPLY', xid, flags: 0, missSendLen: 0 });
        return;
    }
  }

  /** Drops every connection (like a crashed ovs-vswitchd). */
  dropAll(): void {
    for (const link of this.links) link.socket.destroy();
  }

  close(): Promise<void> {
    this.dropAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function errorReply(request: OpenFlowMessage, errorType: number, code: number): OpenFlowMessage {
  return { type: 'ERROR', xid: request.xid, errorType, code, data: openflow.encode(request).subarray(0, 64) };
}

function waitFor<T>(
  emitter: OpenFlowConnection,
  event: 'disconnected' | 'reconnected' | 'closed' | 'packet-in' | 'message' | 'switch-error',
): Promise<T> {
  return new Promise((resolve) => emitter.once(event, (...args: unknown[]) => resolve(args[0] as T)));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('OpenFlow connection (fake switch)', () => {
  let dir: string;
  let count = 0;
  const fakes: FakeSwitch[] = [];
  const connections: OpenFlowConnection[] = [];
  const fake = async (options: FakeSwitchOptions = {}) => {
    const created = await FakeSwitch.start(dir, `sw${count++}`, options);
    fakes.push(created);
    return created;
  };
  const connect = async (
    options: Omit<Parameters<typeof OpenFlowConnection.connect>[0], 'endpoint'> & { endpoint: string },
  ) => {
    const connection = await OpenFlowConnection.connect({ timeoutMs: 2000, ...options });
    connections.push(connection);
    return connection;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'mcl-of-'));
  });
  after(async () => {
    await Promise.all(connections.map((connection) => connection.close()));
    await Promise.all(fakes.map((created) => created.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('handshake: HELLO offering 1.3 by bitmap, then FEATURES_REQUEST; the datapath id', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    assert.equal(connection.datapathId, DATAPATH_ID);
    assert.ok(connection.connected);
    const [hello, features] = sw.last.received;
    assert.deepEqual(hello, { type: 'HELLO', xid: hello!.xid, version: 4, versions: [4] });
    assert.equal(features!.type, 'FEATURES_REQUEST');
  });

  it('version negotiation: a bitmap with 1.3 is fine, whatever the header says', async () => {
    const sw = await fake({ hello: { type: 'HELLO', xid: 1, version: 6, versions: [1, 4, 6] } });
    await connect({ endpoint: sw.endpoint });
  });

  const incompatible: [string, OpenFlowMessage, string][] = [
    ['a 1.0-only switch', { type: 'HELLO', xid: 1, version: 1 }, 'up to 1.0'],
    ['a bitmap without 1.3', { type: 'HELLO', xid: 1, version: 6, versions: [1, 5, 6] }, '1.0, 1.4, 1.5'],
  ];
  for (const [name, hello, offered] of incompatible) {
    it(`version negotiation fails clearly with ${name}, and says so to the switch`, async () => {
      const sw = await fake({ hello });
      await assert.rejects(
        OpenFlowConnection.connect({ endpoint: sw.endpoint, timeoutMs: 2000 }),
        (error: unknown) =>
          error instanceof UnavailableError &&
          error.exitCode === ExitCode.Unavailable &&
          error.message === `OpenFlow switch at ${sw.endpoint} does not speak OpenFlow 1.3 (it offers ${offered})` &&
          /protocols=OpenFlow13/.test(error.hint ?? ''),
      );
      await sleep(50);
      const sent = sw.last.of('ERROR')[0];
      assert.ok(sent?.type === 'ERROR' && sent.errorType === 0 && sent.code === 0, 'HELLO_FAILED/INCOMPATIBLE');
    });
  }

  it("a switch's HELLO_FAILED fails the handshake with its text", async () => {
    const text = new TextEncoder().encode('version negotiation failed');
    const sw = await fake({ hello: null });
    sw.handler = (link, message) => {
      if (message.type === 'HELLO') link.send({ type: 'ERROR', xid: 0, errorType: 0, code: 0, data: text });
      return true;
    };
    await assert.rejects(
      OpenFlowConnection.connect({ endpoint: sw.endpoint, timeoutMs: 2000 }),
      /refused the handshake: HELLO_FAILED\/INCOMPATIBLE \(version negotiation failed\)/,
    );
  });

  it('cannot connect: UnavailableError (69) naming the endpoint, the errno and what to do', async () => {
    const endpoint = `unix:${join(dir, 'nothing.mgmt')}`;
    await assert.rejects(
      OpenFlowConnection.connect({ endpoint }),
      (error: unknown) =>
        error instanceof UnavailableError &&
        error.exitCode === 69 &&
        error.message === `cannot connect to OpenFlow ${endpoint}: ENOENT` &&
        error.hint === 'is ovs-vswitchd running? set --openflow',
    );
  });

  it('a switch that never says HELLO: UnavailableError after timeoutMs', async () => {
    const sw = await fake({ hello: null, handler: () => true });
    const started = Date.now();
    await assert.rejects(
      OpenFlowConnection.connect({ endpoint: sw.endpoint, timeoutMs: 300 }),
      /sent no HELLO within 300 ms/,
    );
    assert.ok(Date.now() - started < 2000);
  });

  it('xid correlation: replies in any order reach their requests', async () => {
    const held: OpenFlowMessage[] = [];
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    sw.handler = (link, message) => {
      if (message.type !== 'ECHO_REQUEST') return false;
      held.push(message);
      if (held.length === 3)
        for (const request of held.reverse())
          link.send({ type: 'ECHO_REPLY', xid: request.xid, data: new Uint8Array(0) });
      return true;
    };
    const rtts = await Promise.all([connection.echo(), connection.echo(), connection.echo()]);
    assert.equal(rtts.length, 3);
    assert.equal(new Set(held.map((message) => message.xid)).size, 3);
  });

  it('an OFPT_ERROR becomes an OpenFlowError naming the error and the request', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    sw.handler = (link, message) => {
      if (message.type === 'GROUP_MOD') link.send(errorReply(message, 6, 0));
      return false;
    };
    await assert.rejects(
      connection.sendGroupMod(groupMod({ groupId: 7, buckets: [bucket([output(1)]), bucket([output(2)])] })),
      (error: unknown) => {
        assert.ok(error instanceof OpenFlowError);
        assert.equal(error.errorName, 'GROUP_MOD_FAILED/GROUP_EXISTS');
        assert.equal(error.exitCode, 1);
        assert.match(
          error.message,
          /^switch at unix:.* refused GROUP_MOD ADD group 7 \(xid \d+, ALL, 2 buckets\): GROUP_MOD_FAILED\/GROUP_EXISTS$/,
        );
        assert.equal(error.request.type, 'GROUP_MOD');
        assert.ok(error.hint);
        return true;
      },
    );
  });

  it('a request without a reply times out as UnavailableError; the connection stays', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    sw.handler = (_link, message) => message.type === 'ECHO_REQUEST';
    await assert.rejects(
      connection.echo(new Uint8Array(0), { timeoutMs: 100 }),
      /no reply from OpenFlow switch .* to ECHO_REQUEST \(xid \d+\) within 100 ms/,
    );
    sw.handler = undefined;
    await connection.barrier();
  });

  it("answers the switch's ECHO_REQUEST with its xid and data", async () => {
    const sw = await fake();
    await connect({ endpoint: sw.endpoint });
    sw.last.send({ type: 'ECHO_REQUEST', xid: 0x77, data: Uint8Array.of(1, 2, 3) });
    await sleep(50);
    assert.deepEqual(sw.last.of('ECHO_REPLY'), [{ type: 'ECHO_REPLY', xid: 0x77, data: Uint8Array.of(1, 2, 3) }]);
  });

  it('keepalive: probes a silent switch, and a switch that does not answer is lost', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint, echoIntervalMs: 50, timeoutMs: 200 });
    await sleep(200);
    assert.ok(sw.last.of('ECHO_REQUEST').length >= 1, 'probed');
    assert.ok(connection.connected, 'answered probes keep it up');
    sw.handler = (_link, message) => message.type === 'ECHO_REQUEST';
    const lost = await waitFor<UnavailableError>(connection, 'disconnected');
    assert.match(lost.message, /lost: no reply to ECHO_REQUEST within 200 ms/);
    assert.ok(!connection.connected);
  });

  it('batch: pipelined with consecutive xids, one barrier, errors by index', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const mods = Array.from({ length: 1000 }, (_, i) =>
      flowMod({ cookie: BigInt(i), priority: 100, match: [{ field: 'IN_PORT', value: i + 1 }] }),
    );
    let seen = 0;
    sw.handler = (link, message) => {
      if (message.type !== 'FLOW_MOD') return false;
      if (seen === 3 || seen === 500) link.send(errorReply(message, 5, 1)); // FLOW_MOD_FAILED/TABLE_FULL
      seen++;
      return true;
    };
    const { errors } = await connection.batch(mods);
    assert.deepEqual([...errors.keys()], [3, 500]);
    assert.equal(errors.get(500)!.errorName, 'FLOW_MOD_FAILED/TABLE_FULL');
    assert.match(errors.get(500)!.message, /FLOW_MOD ADD \(xid \d+, table 0, priority 100, cookie 0x1f4\)/);
    const received = sw.last.received.filter(
      (message) => message.type === 'FLOW_MOD' || message.type === 'BARRIER_REQUEST',
    );
    assert.equal(received.length, 1001);
    assert.equal(received.at(-1)!.type, 'BARRIER_REQUEST');
    const xids = received.map((message) => message.xid);
    assert.ok(
      xids.every((xid, i) => i === 0 || xid === xids[i - 1]! + 1),
      'consecutive xids, in order',
    );
    assert.deepEqual(
      received.slice(0, 3).map((message) => (message.type === 'FLOW_MOD' ? message.cookie : -1n)),
      [0n, 1n, 2n],
    );
  });

  it('batch: batches asked for while two barriers are unanswered share the next barrier, each whole and in order, errors by their own index', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const held: OpenFlowMessage[] = [];
    sw.handler = (link, message) => {
      if (message.type === 'FLOW_MOD' && message.cookie === 31n) link.send(errorReply(message, 5, 1));
      if (message.type !== 'BARRIER_REQUEST') return message.type === 'FLOW_MOD';
      held.push(message); // answered below, once every batch is asked for
      return true;
    };
    const batchOf = (n: number) =>
      [0, 1].map((i) =>
        flowMod({ cookie: BigInt(n * 10 + i), priority: 100, match: [{ field: 'IN_PORT', value: n * 10 + i + 1 }] }),
      );
    const results = [1, 2, 3, 4, 5].map((n) => connection.batch(batchOf(n)));
    await sleep(50);
    assert.equal(held.length, 2, 'the first two went at once, each with its barrier; the others wait');
    for (const barrier of held.splice(0)) sw.last.send({ type: 'BARRIER_REPLY', xid: barrier.xid });
    await sleep(50);
    assert.equal(held.length, 1, 'the three that waited went together, behind one barrier');
    sw.last.send({ type: 'BARRIER_REPLY', xid: held[0]!.xid });
    const settled = await Promise.all(results);
    assert.deepEqual(
      settled.map(({ errors }) => [...errors.keys()]),
      [[], [], [1], [], []],
      'the error is the third batch’s second message',
    );
    const cookies = sw.last.received.flatMap((message) => (message.type === 'FLOW_MOD' ? [message.cookie] : []));
    assert.deepEqual(cookies, [10n, 11n, 20n, 21n, 30n, 31n, 40n, 41n, 50n, 51n]);
  });

  it('batch: an expedited batch does not wait for a barrier slot: it goes at once behind its own barrier, ahead of those waiting', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const held: OpenFlowMessage[] = [];
    sw.handler = (_link, message) => {
      if (message.type !== 'BARRIER_REQUEST') return message.type === 'FLOW_MOD';
      held.push(message);
      return true;
    };
    const batchOf = (n: number) => [
      flowMod({ cookie: BigInt(n), priority: 100, match: [{ field: 'IN_PORT', value: n }] }),
    ];
    const bulk = [1, 2, 3, 4].map((n) => connection.batch(batchOf(n)));
    const urgent = connection.batch(batchOf(9), { expedite: true });
    await sleep(50);
    assert.equal(held.length, 3, 'two barriers for the bulk, a third for the expedited batch');
    const cookies = () => sw.last.received.flatMap((message) => (message.type === 'FLOW_MOD' ? [message.cookie] : []));
    assert.deepEqual(cookies(), [1n, 2n, 9n], 'the expedited batch went before the two waiting');
    sw.last.send({ type: 'BARRIER_REPLY', xid: held[2]!.xid });
    assert.deepEqual((await urgent).errors.size, 0, 'answered by its own barrier, the others still unanswered');
    for (const barrier of held.splice(0)) sw.last.send({ type: 'BARRIER_REPLY', xid: barrier.xid });
    await sleep(50);
    for (const barrier of held.splice(0)) sw.last.send({ type: 'BARRIER_REPLY', xid: barrier.xid });
    await Promise.all(bulk);
    assert.deepEqual(cookies(), [1n, 2n, 9n, 3n, 4n]);
  });

  it('batch: a small batch and its barrier leave in one write', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const reads: number[] = [];
    sw.last.socket.on('data', (data: Buffer) => reads.push(data.length));
    const mod = flowMod({ cookie: 8n, priority: 100, match: [{ field: 'IN_PORT', value: 8 }] });
    assert.equal((await connection.batch([mod, mod])).errors.size, 0);
    const length = openflow.encodingLength(mod);
    assert.deepEqual(reads, [2 * length + 8], 'the two FLOW_MODs and the barrier in one read');
  });

  it('batch: onWritten is told once the batch is on the socket, before the switch answers its barrier', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const held: OpenFlowMessage[] = [];
    sw.handler = (_link, message) => {
      if (message.type === 'BARRIER_REQUEST') held.push(message);
      return true;
    };
    let written = 0;
    const batch = connection.batch([flowMod({ cookie: 7n, priority: 100, match: [{ field: 'IN_PORT', value: 7 }] })], {
      onWritten: () => void written++,
    });
    for (let i = 0; i < 100 && held.length === 0; i++) await sleep(5);
    assert.equal(written, 1, 'written, the barrier still unanswered');
    sw.last.send({ type: 'BARRIER_REPLY', xid: held[0]!.xid });
    assert.equal((await batch).errors.size, 0);
    assert.equal(written, 1, 'told once');
  });

  it('batch: a lone small batch and its barrier are on the socket before batch() returns', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    let written = 0;
    const batch = connection.batch([flowMod({ cookie: 8n, priority: 100, match: [{ field: 'IN_PORT', value: 8 }] })], {
      onWritten: () => void written++,
    });
    assert.equal(written, 1, 'written in the same turn: the caller does not wait a microtask for it');
    assert.equal((await batch).errors.size, 0);
  });

  it('batch: waits for the socket to drain (backpressure) and still delivers everything in order', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const big = (id: number) =>
      groupMod({ groupId: id, buckets: Array.from({ length: 2047 }, (_, i) => bucket([output(i + 1)])) });
    sw.last.socket.pause(); // the switch stops reading: our writes back up
    // 10 MB to encode, write and decode: a limit well above what a loaded machine needs, as the
    // limit itself is the next test's.
    const batch = connection.batch(
      Array.from({ length: 300 }, (_, i) => big(i)),
      { timeoutMs: 30_000 },
    );
    await sleep(200);
    assert.ok(sw.last.of('GROUP_MOD').length === 0);
    sw.last.socket.resume();
    const { errors } = await batch;
    assert.equal(errors.size, 0);
    assert.deepEqual(
      sw.last.of('GROUP_MOD').map((message) => (message.type === 'GROUP_MOD' ? message.groupId : -1)),
      Array.from({ length: 300 }, (_, i) => i),
    );
  });

  it('batch: a switch that stops reading for good fails the batch within its time limit', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint, echoIntervalMs: 0 });
    const big = (id: number) =>
      groupMod({ groupId: id, buckets: Array.from({ length: 2047 }, (_, i) => bucket([output(i + 1)])) });
    sw.last.socket.pause(); // and never resumes
    const started = Date.now();
    await assert.rejects(
      connection.batch(
        Array.from({ length: 300 }, (_, i) => big(i)),
        { timeoutMs: 500 },
      ),
      (error: unknown) => {
        return (
          error instanceof UnavailableError && /stopped reading: a batch was not sent within 500 ms/.test(error.message)
        );
      },
    );
    assert.ok(Date.now() - started < 5000, 'it did not wait for ever');
  });

  it('batch: nothing is sent when one message cannot be encoded', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    const before = sw.last.received.length;
    await assert.rejects(connection.batch([flowMod({ priority: 1 }), flowMod({ priority: 70_000 })]), RangeError);
    await connection.barrier();
    assert.deepEqual(
      sw.last.received.slice(before).map((message) => message.type),
      ['BARRIER_REQUEST'],
    );
  });

  it('multipart: a reply in several parts (MORE flag) is joined', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    sw.handler = (link, message) => {
      if (message.type !== 'MULTIPART_REQUEST') return false;
      for (const [part, more] of [
        [1, true],
        [2, true],
        [3, false],
      ] as const) {
        const groups = [{ groupType: 0, groupId: part, buckets: [bucket([output(part)])] }];
        link.send({
          type: 'MULTIPART_REPLY',
          xid: message.xid,
          flags: more ? MULTIPART_MORE : 0,
          body: { kind: 'GROUP_DESC', groups },
        });
      }
      return true;
    };
    const groups = await connection.dumpGroups();
    assert.deepEqual(
      groups.map((entry) => entry.groupId),
      [1, 2, 3],
    );
  });

  it('dumpFlows: a cookie alone matches exactly; cookie and mask go as given', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    sw.handler = (link, message) => {
      if (message.type !== 'MULTIPART_REQUEST') return false;
      link.send({ type: 'MULTIPART_REPLY', xid: message.xid, flags: 0, body: { kind: 'FLOW', flows: [] } });
      return true;
    };
    await connection.dumpFlows({ cookie: 0x5n });
    await connection.dumpFlows({ cookie: 0x500n, cookieMask: 0xf00n, tableId: 3 });
    const bodies = sw.last
      .of('MULTIPART_REQUEST')
      .map((message) => (message.type === 'MULTIPART_REQUEST' ? message.body : undefined));
    assert.deepEqual(
      bodies.map((body) => (body?.kind === 'FLOW' ? [body.cookie, body.cookieMask, body.tableId] : [])),
      [
        [0x5n, 0xffffffffffffffffn, 0xff],
        [0x500n, 0xf00n, 3],
      ],
    );
  });

  it('packet-ins and other unsolicited messages become events; errors for no request become switch-error', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint });
    await connection.enablePacketIn();
    const setAsync = sw.last.of('SET_ASYNC')[0];
    assert.ok(setAsync?.type === 'SET_ASYNC');
    assert.deepEqual(setAsync.packetIn, [3, 0]);
    assert.deepEqual(
      sw.last.of('SET_CONFIG').map((m) => (m.type === 'SET_CONFIG' ? m.missSendLen : 0)),
      [0xffff],
    );
    const packetIn = waitFor<OpenFlowMessage>(connection, 'packet-in');
    const other = waitFor<OpenFlowMessage>(connection, 'message');
    const switchError = waitFor<OpenFlowError>(connection, 'switch-error');
    sw.last.send({
      type: 'PACKET_IN',
      xid: 0,
      bufferId: 0xffffffff,
      totalLen: 4,
      reason: 1,
      tableId: 0,
      cookie: 1n,
      match: [{ field: 'IN_PORT', value: 3 }],
      data: Uint8Array.of(1, 2, 3, 4),
    });
    sw.last.send({ type: 'OTHER', xid: 0, messageType: 12, body: new Uint8Array(72) });
    sw.last.send({ type: 'ERROR', xid: 0x999, errorType: 2, code: 4, data: openflow.encode(flowMod({ xid: 0x999 })) });
    assert.equal((await packetIn).type, 'PACKET_IN');
    assert.deepEqual(await other, { type: 'OTHER', xid: 0, messageType: 12, body: new Uint8Array(72) });
    const error = await switchError;
    assert.equal(error.errorName, 'BAD_ACTION/BAD_OUT_PORT');
    assert.equal(error.request.type, 'FLOW_MOD');
  });

  it('loss and reconnection: pending requests fail, disconnected, then reconnected with packet-ins re-enabled', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint, reconnect: { minDelayMs: 20 } });
    await connection.enablePacketIn({ missSendLen: 128 });
    sw.handler = (_link, message) => message.type === 'ECHO_REQUEST'; // hold an echo: pending at the drop
    const pending = connection.echo();
    await sleep(30);
    sw.handler = undefined;
    const disconnected = waitFor<UnavailableError>(connection, 'disconnected');
    const reconnected = waitFor<{ datapathId: bigint }>(connection, 'reconnected');
    sw.dropAll();
    await assert.rejects(
      pending,
      (error: unknown) => error instanceof UnavailableError && /lost: closed by the switch/.test(error.message),
    );
    assert.match((await disconnected).message, /lost/);
    await assert.rejects(connection.barrier(), /not connected \(reconnecting\)/);
    assert.equal((await reconnected).datapathId, DATAPATH_ID);
    assert.ok(connection.connected);
    const relink = sw.last;
    assert.notEqual(relink, sw.links[0]);
    assert.deepEqual(relink.received.map((message) => message.type).slice(0, 2), ['HELLO', 'FEATURES_REQUEST']);
    assert.deepEqual(
      relink.of('SET_CONFIG').map((m) => (m.type === 'SET_CONFIG' ? m.missSendLen : 0)),
      [128],
    );
    await connection.barrier();
  });

  it('reconnect backs off while the switch is away, and gives up after maxAttempts', async () => {
    const sw = await fake();
    const connection = await connect({
      endpoint: sw.endpoint,
      reconnect: { minDelayMs: 10, maxDelayMs: 40, maxAttempts: 4 },
    });
    const closed = waitFor<void>(connection, 'closed');
    await sw.close(); // gone for good: no listener
    const started = Date.now();
    await closed;
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 10 + 20 + 40 + 40 - 15 && elapsed < 2000, `gave up after ${elapsed} ms`);
    assert.ok(!connection.connected);
  });

  it('close(): pending requests fail, closed is emitted once, later requests fail at once', async () => {
    const sw = await fake();
    const connection = await connect({ endpoint: sw.endpoint, reconnect: true });
    sw.handler = (_link, message) => message.type === 'BARRIER_REQUEST';
    const pending = assert.rejects(connection.barrier(), /was closed/);
    let closedEvents = 0;
    connection.on('closed', () => closedEvents++);
    await connection.close();
    await connection.close();
    await pending;
    await assert.rejects(connection.barrier(), /not connected \(closed\)/);
    await sleep(50);
    assert.equal(closedEvents, 1);
    assert.equal(sw.links.length, 1, 'no reconnect after close()');
  });
});
