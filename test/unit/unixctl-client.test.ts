/** UnixctlClient against a real Unix socket speaking unixctl's JSON-RPC 1.0, as ovs-vswitchd does. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { UnavailableError } from '../../src/errors.js';
import { UnixctlClient, UnixctlCommandError } from '../../src/transport/unixctl/unixctl-client.js';

interface Request {
  id: unknown;
  method: string;
  params: unknown;
}

/** Splits concatenated JSON objects (no separator needed) as OVS's JSON-RPC reader does. */
class ObjectSplitter {
  private buffer = '';
  push(chunk: string): unknown[] {
    this.buffer += chunk;
    const out: unknown[] = [];
    let depth = 0;
    let inString = false;
    let escaped = false;
    let start = -1;
    let consumed = 0;
    for (let index = 0; index < this.buffer.length; index++) {
      const char = this.buffer[index]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (char === '\\') escaped = true;
        else if (char === '"') inString = false;
        continue;
      }
      if (char === '"') inString = true;
      else if (char === '{') {
        if (depth === 0) start = index;
        depth++;
      } else if (char === '}') {
        depth--;
        if (depth === 0) {
          out.push(JSON.parse(this.buffer.slice(start, index + 1)));
          consumed = index + 1;
        }
      }
    }
    this.buffer = this.buffer.slice(consumed);
    return out;
  }
}

/** A unixctl server: `answer` decides each reply (undefined: no reply). */
async function unixctlServer(
  path: string,
  answer: (request: Request, socket: Socket) => object | undefined,
): Promise<{ server: Server; requests: Request[] }> {
  const requests: Request[] = [];
  const server = createServer((socket) => {
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    const splitter = new ObjectSplitter();
    socket.on('data', (chunk: string) => {
      for (const message of splitter.push(chunk)) {
        const request = message as Request;
        requests.push(request);
        const reply = answer(request, socket);
        if (reply !== undefined) socket.write(JSON.stringify(reply));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return { server, requests };
}

const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-unixctl-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});
const socketPath = () => join(root, `ovs-vswitchd.${++counter}.ctl`);

describe('UnixctlClient', () => {
  it('call sends the method and params as given and resolves with the text', async () => {
    const path = socketPath();
    const { server, requests } = await unixctlServer(path, (request) => ({
      id: request.id,
      result: `text of ${request.method} ${JSON.stringify(request.params)}`,
      error: null,
    }));
    const client = await UnixctlClient.connect({ path, timeoutMs: 2000 });
    try {
      const flow = 'udp,in_port=1,nw_dst=239.1.2.3';
      assert.equal(
        await client.call('ofproto/trace', ['br-int', flow]),
        `text of ofproto/trace ${JSON.stringify(['br-int', flow])}`,
      );
      assert.equal(await client.call('dpif/show', []), 'text of dpif/show []');
      assert.equal(requests.length, 2);
      assert.equal(requests[0]!.method, 'ofproto/trace');
      assert.deepEqual(requests[0]!.params, ['br-int', flow]);
      assert.equal(requests[1]!.method, 'dpif/show');
      assert.deepEqual(requests[1]!.params, []);
      assert.notEqual(requests[0]!.id, requests[1]!.id);
    } finally {
      client.close();
      await closeServer(server);
    }
  });

  it('answers are matched by id, even out of order', async () => {
    const path = socketPath();
    const held: Request[] = [];
    const { server } = await unixctlServer(path, (request, socket) => {
      held.push(request);
      if (held.length === 2) {
        for (const waiting of [...held].reverse())
          socket.write(JSON.stringify({ id: waiting.id, result: `answer ${waiting.method}`, error: null }));
      }
      return undefined;
    });
    const client = await UnixctlClient.connect({ path, timeoutMs: 2000 });
    try {
      const [first, second] = await Promise.all([client.call('a/one', []), client.call('b/two', [])]);
      assert.equal(first, 'answer a/one');
      assert.equal(second, 'answer b/two');
    } finally {
      client.close();
      await closeServer(server);
    }
  });

  it('an error answer rejects with UnixctlCommandError naming the command', async () => {
    const path = socketPath();
    const { server } = await unixctlServer(path, (request) => ({
      id: request.id,
      result: null,
      error: 'unknown command\n',
    }));
    const client = await UnixctlClient.connect({ path, timeoutMs: 2000 });
    try {
      await assert.rejects(
        client.call('no/such', ['x']),
        (error: unknown) =>
          error instanceof UnixctlCommandError &&
          error.command === 'no/such' &&
          error.reply === 'unknown command\n' &&
          error.message === 'no/such: unknown command',
      );
    } finally {
      client.close();
      await closeServer(server);
    }
  });

  it('the server closing mid-call rejects with UnavailableError', async () => {
    const path = socketPath();
    const { server } = await unixctlServer(path, (_request, socket) => {
      socket.destroy();
      return undefined;
    });
    const client = await UnixctlClient.connect({ path, timeoutMs: 5000 });
    try {
      await assert.rejects(
        client.call('ofproto/trace', ['br-int', 'in_port=1']),
        (error: unknown) => error instanceof UnavailableError && /ofproto\/trace/.test(error.message),
      );
      // And a call after that is refused at once.
      await assert.rejects(client.call('dpif/show', []), UnavailableError);
    } finally {
      client.close();
      await closeServer(server);
    }
  });

  it('connecting to a missing path rejects with UnavailableError', async () => {
    await assert.rejects(
      UnixctlClient.connect({ path: join(root, 'nothing-here.ctl'), timeoutMs: 2000 }),
      (error: unknown) => error instanceof UnavailableError && error.exitCode === 69,
    );
  });
});
