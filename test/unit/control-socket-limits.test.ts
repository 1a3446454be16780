/**
 * The control socket's limits and the clients' --control-socket: real unix sockets in a
 * temporary directory, an in-memory DaemonView, hostile clients in this process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from '../helpers/node-test.js';
import { MAX_SOCKET_PATH_BYTES, parseControlSocket } from '../../src/transport/control/socket-path.js';
import { ControlClient } from '../../src/transport/control/control-client.js';
import {
  ControlServer,
  MAX_CLIENT_BUFFER_BYTES,
  MAX_CONTROL_CLIENTS,
  MAX_REQUEST_BYTES,
} from '../../src/transport/control/control-server.js';
import type { DaemonView, GroupView, RouteView } from '../../src/transport/control/daemon-view.js';
import { McastError, UsageError } from '../../src/errors.js';
import { FakeDaemonView, sampleGroups } from '../helpers/fake-daemon-view.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = 'import { run } from "./src/cli/main.js"; process.exitCode = await run(process.argv.slice(1));';

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-ctl-limits-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});
const socketPath = () => join(root, `d${++counter}`, 'mcastctl.sock');

async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** `promise`, or a failure naming `what` after `timeoutMs`: a test that fails does not hang. */
async function within<T>(promise: Promise<T>, what: string, timeoutMs = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function connect(path: string, options: { allowHalfOpen?: boolean } = {}): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ path, allowHalfOpen: options.allowHalfOpen ?? false }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Collects the lines `socket` reads; `closed` resolves when the server ended the connection (or it closed). */
function readLines(socket: Socket): { lines: Array<Record<string, unknown>>; closed: Promise<void> } {
  const lines: Array<Record<string, unknown>> = [];
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => {
    socket.once('end', () => resolve());
    socket.once('close', () => resolve());
  });
  return { lines, closed };
}

/** Groups whose JSON is about `bytes` long. */
function largeGroups(bytes: number): GroupView[] {
  const one = sampleGroups()[0]!;
  const size = JSON.stringify(one).length;
  return Array.from({ length: Math.ceil(bytes / size) }, (_, index) => ({
    ...one,
    group: `239.1.${index >> 8}.${index & 255}`,
  }));
}

const openFds = async () => (await readdir('/proc/self/fd')).length;

describe('--control-socket: a path, always', () => {
  it('parseControlSocket resolves like the daemon, and refuses empty, NUL and over-long values (exit 64)', () => {
    assert.equal(parseControlSocket('9815'), resolve('9815'));
    assert.equal(parseControlSocket('/run/x.sock'), '/run/x.sock');
    const longest = '/' + 'a'.repeat(MAX_SOCKET_PATH_BYTES - 1);
    assert.equal(parseControlSocket(longest), longest);
    for (const bad of ['', 'a\0b', longest + 'a', '/' + 'é'.repeat(60)]) {
      const isUsage = (error: unknown) =>
        error instanceof UsageError && error.exitCode === 64 && /--control-socket/.test(error.message);
      assert.throws(() => parseControlSocket(bad), isUsage);
    }
    assert.throws(() => parseControlSocket(''), {
      message: "--control-socket takes the path of the daemon's control socket, not an empty string",
    });
    // The value is quoted, and cut: a 5000-character argument does not come back whole.
    const isShort = (error: unknown) =>
      error instanceof Error && error.message.length < 400 && /5000 characters/.test(error.message);
    assert.throws(() => parseControlSocket('x'.repeat(5000)), isShort);
  });

  it('ControlClient.connect refuses an empty path as a usage error, not ERR_SOCKET_BAD_PORT', async () => {
    await assert.rejects(
      ControlClient.connect(''),
      (error: unknown) => error instanceof McastError && error.exitCode === 64,
    );
  });

  it('a numeric --control-socket is the file of that name, never a TCP port', async () => {
    const tcp: Server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const port = (tcp.address() as { port: number }).port;
    const directory = join(root, `numeric-${++counter}`);
    const server = await ControlServer.listen({ path: join(directory, String(port)), view: new FakeDaemonView() });
    const cwd = process.cwd();
    try {
      process.chdir(directory);
      const client = await ControlClient.connect(String(port));
      assert.equal(client.path, join(directory, String(port)));
      assert.equal((await client.request<{ pid: number }>('status')).pid, 4242);
      client.close();
    } finally {
      process.chdir(cwd);
      await server.close();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    }
  });

  it("status, groups, snoop --daemon and reconcile --daemon exit 64 on --control-socket '', with no stack trace", async () => {
    const commands = [
      ['status'],
      ['groups'],
      ['snoop', '--daemon'],
      ['reconcile', '--daemon', '-f', join(root, 'no-such-state.yaml')],
    ];
    const results = await Promise.all(commands.map((args) => cli([...args, '--control-socket', ''])));
    results.forEach((result, index) => {
      const what = commands[index]!.join(' ');
      assert.equal(result.code, 64, `${what}: ${result.stderr}`);
      assert.match(
        result.stderr,
        /^mcastctl: --control-socket takes the path of the daemon's control socket, not an empty string\n/,
        what,
      );
      assert.doesNotMatch(result.stderr, /internal error|ERR_SOCKET_BAD_PORT|\n {4}at /, what);
    });
  });
});

describe('ControlServer limits', () => {
  it('an over-long request line: the error line, then the connection is destroyed, even while the client keeps it open', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      // allowHalfOpen: this client would never close its side by itself.
      const socket = await connect(path, { allowHalfOpen: true });
      const { lines, closed } = readLines(socket);
      socket.write('{"id":1,"method":"' + 'x'.repeat(MAX_REQUEST_BYTES + 10));
      await within(closed, 'the server to end the connection');
      assert.equal(lines[0]?.id, null);
      assert.equal((lines[0]?.error as { code: string } | undefined)?.code, 'request-too-long');
      await until(() => server.clientCount === 0, 'the server to let the connection go');
    } finally {
      await server.close();
    }
  });

  it('hostile clients that send an over-long line, keep sending, then close leave no connection and no fd behind', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      const fdsBefore = await openFds();
      const hostile = await Promise.all(Array.from({ length: 5 }, () => connect(path)));
      for (const socket of hostile) {
        socket.on('error', () => undefined);
        socket.pause(); // reads nothing
        socket.write('{"id":1,"method":"' + 'x'.repeat(MAX_REQUEST_BYTES + 10));
        for (let index = 0; index < 16; index++) socket.write('y'.repeat(16 * 1024));
      }
      await sleep(100); // the server reads the long lines (and, fixed, closes at once)
      for (const socket of hostile) socket.destroy();
      await until(() => server.clientCount === 0, 'every hostile connection to be closed on the server side');
      let fdsAfter = await openFds();
      for (let tries = 0; tries < 100 && fdsAfter > fdsBefore; tries++) {
        await sleep(10);
        fdsAfter = await openFds();
      }
      assert.ok(fdsAfter <= fdsBefore, `open fds: ${fdsBefore} before, ${fdsAfter} after`);
    } finally {
      await server.close();
    }
  });

  it(`200 clients that send requests and never read: at most ${MAX_CONTROL_CLIENTS} served, the rest refused, output bounded`, async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    view.groupsValue = largeGroups(64 * 1024);
    const answerBytes = JSON.stringify({ id: 1, result: view.groupsValue }).length + 1;
    const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
    const logger = {
      warn: (message: string, fields?: Record<string, unknown>) =>
        void warnings.push({ message, ...(fields === undefined ? {} : { fields }) }),
    };
    const server = await ControlServer.listen({ path, view, logger });
    const sockets: Socket[] = [];
    try {
      const memory = () => {
        const usage = process.memoryUsage();
        return usage.heapUsed + usage.external + usage.arrayBuffers;
      };
      const memoryBefore = memory();
      const requests = Array.from({ length: 24 }, (_, index) => `{"id":${index},"method":"groups"}\n`).join('');
      for (let index = 0; index < 200; index++) {
        const socket = await connect(path);
        socket.on('error', () => undefined);
        socket.pause();
        socket.write(requests);
        sockets.push(socket);
      }
      await until(() => server.clientCount + server.refusedCount === 200, 'every client accepted or refused');
      await sleep(300); // let the served clients' answers pile up as far as they can
      assert.equal(server.clientCount, MAX_CONTROL_CLIENTS);
      assert.equal(server.refusedCount, 200 - MAX_CONTROL_CLIENTS);
      // Each served client holds at most about one answer beyond what the kernel took.
      const buffered = server.bufferedBytes;
      const bound = server.clientCount * (answerBytes + 64 * 1024);
      assert.ok(
        buffered <= bound,
        `${buffered} bytes buffered for ${server.clientCount} clients (answers of ${answerBytes})`,
      );
      assert.ok(buffered < server.clientCount * MAX_CLIENT_BUFFER_BYTES);
      const grown = memory() - memoryBefore;
      assert.ok(grown < 96 * 1024 * 1024, `memory grew by ${Math.round(grown / 1048576)} MiB`);
      // One warning for the whole flood, not one a client.
      const refusals = warnings.filter((warning) => /refused a client/.test(warning.message));
      assert.equal(refusals.length, 1, JSON.stringify(refusals));
      // A served client that reads again gets every one of its answers.
      const reader = sockets[0]!;
      const { lines } = readLines(reader);
      reader.resume();
      await until(() => lines.length === 24, 'the first client to get its 24 answers');
      assert.deepEqual(
        lines.map((line) => line.id),
        Array.from({ length: 24 }, (_, index) => index),
      );
      // Clients that close while their answers are backed up are let go too.
      for (const socket of sockets) socket.destroy();
      await until(() => server.clientCount === 0, 'every connection to be closed on the server side');
    } finally {
      for (const socket of sockets) socket.destroy();
      await server.close();
    }
  });

  it('a client refused for too many clients is told so: ControlClient rejects with exit 69', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({
      path,
      view: new FakeDaemonView(),
      maxClients: 2,
      logger: { warn: () => undefined },
    });
    try {
      const first = await ControlClient.connect(path);
      const second = await ControlClient.connect(path);
      await until(() => server.clientCount === 2, 'two clients');
      const third = await ControlClient.connect(path);
      await assert.rejects(third.request('status'), (error: unknown) => {
        assert.ok(error instanceof McastError);
        assert.equal(error.exitCode, 69);
        assert.match(
          error.message,
          /refused the connection: the daemon serves at most 2 control-socket clients at once/,
        );
        return true;
      });
      third.close();
      assert.equal(server.refusedCount, 1);
      // The two served go on, and a slot that frees is taken again.
      assert.equal((await first.request<{ pid: number }>('status')).pid, 4242);
      second.close();
      await until(() => server.clientCount === 1, 'the second to be gone');
      const fourth = await ControlClient.connect(path);
      assert.equal((await fourth.request<{ pid: number }>('status')).pid, 4242);
      first.close();
      fourth.close();
    } finally {
      await server.close();
    }
  });

  it('drops a client whose unread answers pass the per-client limit (answers that waited for the kernel)', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const route = view.routesValue[0]!;
    const bigRoutes: RouteView[] = Array.from(
      { length: Math.ceil((400 * 1024) / JSON.stringify(route).length) },
      () => route,
    );
    (view as DaemonView).routes = () => new Promise<RouteView[]>((resolve) => setTimeout(() => resolve(bigRoutes), 20));
    const warnings: string[] = [];
    const server = await ControlServer.listen({ path, view, logger: { warn: (message) => warnings.push(message) } });
    try {
      const socket = await connect(path);
      socket.on('error', () => undefined);
      socket.pause();
      socket.write(Array.from({ length: 8 }, (_, index) => `{"id":${index},"method":"routes"}\n`).join(''));
      await until(() => server.clientCount === 1, 'the client');
      await until(() => server.clientCount === 0, 'the client to be dropped');
      assert.match(warnings.join('\n'), /dropped a client that does not read its answers/);
      socket.destroy();
    } finally {
      await server.close();
    }
  });

  it('closes a client that sends no request (nor a whole line) within the idle timeout, but keeps an events subscriber', async () => {
    const path = socketPath();
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path, view, idleTimeoutMs: 300 });
    try {
      const silent = readLines(await connect(path));
      const trickle = await connect(path);
      const trickled = readLines(trickle);
      const timer = setInterval(() => trickle.write(' '), 20); // never a newline
      const subscriber = await connect(path);
      const subscribed = readLines(subscriber);
      subscriber.write('{"id":1,"method":"events"}\n');
      const idleClient = await ControlClient.connect(path);
      const busy = await connect(path);
      const answered = readLines(busy);
      const asking = setInterval(() => busy.write('{"id":2,"method":"status"}\n'), 50);
      try {
        await within(silent.closed, 'the silent client to be closed');
        await within(trickled.closed, 'the client trickling a partial line to be closed');
        assert.equal((silent.lines[0]?.error as { code: string } | undefined)?.code, 'idle-timeout');
        await sleep(700);
        assert.equal(server.subscriberCount, 1);
        assert.ok(!subscriber.destroyed && !busy.destroyed);
        view.emit({ type: 'replay', time: '2026-01-01T00:00:00.000Z', what: 'openflow', groups: 1 });
        await until(() => subscribed.lines.length === 2, 'the event');
        assert.ok(
          answered.lines.length >= 10 && answered.lines.every((line) => line.id === 2),
          `${answered.lines.length} answers`,
        );
        const closedIdle = (error: unknown) =>
          error instanceof McastError &&
          error.exitCode === 69 &&
          /closed an idle connection: no request in 300 ms/.test(error.message);
        await assert.rejects(idleClient.request('status'), closedIdle);
      } finally {
        clearInterval(timer);
        clearInterval(asking);
        subscriber.destroy();
        busy.destroy();
      }
    } finally {
      await server.close();
    }
  });

  it('an unknown method is quoted and cut in the error line', async () => {
    const path = socketPath();
    const server = await ControlServer.listen({ path, view: new FakeDaemonView() });
    try {
      const socket = await connect(path);
      const { lines } = readLines(socket);
      socket.write(JSON.stringify({ id: 1, method: 'm'.repeat(20_000) }) + '\n');
      await until(() => lines.length === 1, 'the answer');
      const message = (lines[0]!.error as { message: string }).message;
      assert.ok(message.length < 300, `${message.length} characters`);
      assert.match(
        message,
        /^unknown method "m+"… \(20000 characters\): the methods are status, groups, routes, events, port, stats$/,
      );
      socket.destroy();
    } finally {
      await server.close();
    }
  });
});

/** Runs the CLI from source (through tsx) and collects its output. */
function cli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ENTRY, '--', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
