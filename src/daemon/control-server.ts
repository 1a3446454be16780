/**
 * The daemon's control socket: a root-only unix stream socket through which `mcastctl
 * status`, `groups` and `snoop --daemon` read the running daemon (its DaemonView).
 *
 * Protocol (newline-delimited JSON, one object a line, UTF-8):
 *   request   {"id":1,"method":"status"|"groups"|"routes"|"events","params":{}}   (params optional)
 *   answer    {"id":1,"result":...}
 *   failure   {"id":1,"error":{"code":"unknown-method","message":"..."}}
 *   event     {"event":<DaemonEvent>}   (after `events` answered {"subscribed":true}, until the client closes)
 * A bad line (not JSON, no method) gets an error line with `"id":null` and the
 * connection stays open; only a request line longer than MAX_REQUEST_BYTES ends it.
 */
import { mkdir, chmod, lstat, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { ExitCode, isSystemError, McastError, PermissionError, UsageError } from '../errors.js';
import type { DaemonEvent, DaemonView } from './daemon-view.js';

/** The longest request line the server reads (a request is a few dozen bytes). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** A client whose unsent output grows past this is dropped (event stream) or no longer read from (requests). */
export const MAX_CLIENT_BUFFER_BYTES = 1024 * 1024;

export const CONTROL_METHODS = ['status', 'groups', 'routes', 'events'] as const;
export type ControlMethod = (typeof CONTROL_METHODS)[number];

/** Error codes of the protocol's error answers. */
export type ControlErrorCode = 'bad-json' | 'bad-request' | 'unknown-method' | 'request-too-long' | 'internal';

export interface ControlRequest {
  id: number | string | null;
  method: string;
  params?: Record<string, unknown>;
}

export type ControlResponse =
  | { id: number | string | null; result: unknown }
  | { id: number | string | null; error: { code: ControlErrorCode | string; message: string } };

export interface ControlLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface ControlServerOptions {
  path: string;
  view: DaemonView;
  logger?: ControlLogger;
}

/** How long the stale-socket probe waits for an answer before calling the socket busy. */
const PROBE_TIMEOUT_MS = 1000;

export class ControlServer {
  private readonly clients = new Set<ControlConnection>();
  private readonly subscribers = new Set<ControlConnection>();
  private unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly path: string,
    private readonly view: DaemonView,
    private readonly server: Server,
    private readonly logger: ControlLogger | undefined,
  ) {
    server.on('connection', (socket) => this.accept(socket));
    // After listening, a server error (EMFILE on accept) must not crash the daemon.
    server.on('error', (error) => this.logger?.warn(`control socket ${path}: ${error.message}`));
  }

  /** Creates the socket (and its directory, 0700), replacing a stale one; refuses when another daemon answers on it. */
  static async listen(options: ControlServerOptions): Promise<ControlServer> {
    const { path } = options;
    await ensureDirectory(path);
    await clearStaleSocket(path);
    const server = createServer({ allowHalfOpen: false });
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(listenFailure(error, path));
      server.once('error', onError);
      // The socket is created 0600 (umask 0177 for the bind alone), not chmod-ed after a
      // moment in which others could connect.
      const umask = process.umask(0o177);
      try {
        server.listen(path, () => {
          server.off('error', onError);
          resolve();
        });
      } finally {
        process.umask(umask);
      }
    });
    try {
      await chmod(path, 0o600);
    } catch (error) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw listenFailure(error, path);
    }
    return new ControlServer(path, options.view, server, options.logger);
  }

  /** Connected clients (for tests and status). */
  get clientCount(): number {
    return this.clients.size;
  }

  /** Clients subscribed to the event stream. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Ends every client, stops listening and removes the socket file. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.unsubscribe?.();
      this.unsubscribe = undefined;
      this.subscribers.clear();
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const client of this.clients) client.socket.destroy();
      this.clients.clear();
      await closed;
      // libuv removes the file as the server closes; this is for the odd case it did not.
      await unlink(this.path).catch(() => undefined);
    })();
    return this.closing;
  }

  private accept(socket: Socket): void {
    if (this.closing !== undefined) {
      socket.destroy();
      return;
    }
    const client = new ControlConnection(socket, this);
    this.clients.add(client);
    socket.once('close', () => {
      this.clients.delete(client);
      this.removeSubscriber(client);
    });
  }

  /** @internal Answers one request of `client`. */
  handle(client: ControlConnection, request: ControlRequest): void {
    let result: unknown;
    try {
      switch (request.method as ControlMethod) {
        case 'status':
          result = this.view.status();
          break;
        case 'groups':
          result = this.view.groups();
          break;
        case 'routes':
          result = this.view.routes(); // a promise: the counters are read from the kernel
          break;
        case 'events':
          this.addSubscriber(client);
          result = { subscribed: true };
          break;
        default:
          client.send({ id: request.id, error: { code: 'unknown-method', message: `unknown method ${JSON.stringify(request.method)}: the methods are ${CONTROL_METHODS.join(', ')}` } });
          return;
      }
    } catch (error) {
      this.fail(client, request, error);
      return;
    }
    // Answers go out in the order of the requests, except one that waits for the kernel.
    if (result instanceof Promise) {
      result.then(
        (value: unknown) => client.send({ id: request.id, result: value }),
        (error: unknown) => this.fail(client, request, error),
      );
      return;
    }
    client.send({ id: request.id, result });
  }

  private fail(client: ControlConnection, request: ControlRequest, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.logger?.warn(`control socket: ${request.method} failed: ${message}`);
    client.send({ id: request.id, error: { code: 'internal', message: `${request.method} failed in the daemon: ${message}` } });
  }

  private addSubscriber(client: ControlConnection): void {
    // One subscription to the view for all clients: each event is serialized once. The
    // client counts as subscribed only once that worked (a starting daemon refuses).
    this.unsubscribe ??= this.view.subscribe((event) => this.broadcast(event));
    this.subscribers.add(client);
  }

  private removeSubscriber(client: ControlConnection): void {
    if (!this.subscribers.delete(client)) return;
    if (this.subscribers.size === 0 && this.unsubscribe !== undefined) {
      this.unsubscribe();
      this.unsubscribe = undefined;
    }
  }

  /** Never throws: it runs inside the controller's event emission. */
  private broadcast(event: DaemonEvent): void {
    let line: string;
    try {
      line = JSON.stringify({ event }) + '\n';
    } catch (error) {
      this.logger?.warn(`control socket: cannot serialize a ${event.type} event: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    for (const client of [...this.subscribers]) {
      if (client.socket.writableLength + line.length > MAX_CLIENT_BUFFER_BYTES) {
        this.logger?.warn('control socket: dropped an event subscriber that reads too slowly', { bufferedBytes: client.socket.writableLength });
        this.removeSubscriber(client);
        client.socket.destroy();
        continue;
      }
      client.writeRaw(line);
    }
  }
}

/** One client connection: splits request lines, and stops reading while its answers are not being read. */
class ControlConnection {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(
    readonly socket: Socket,
    private readonly server: ControlServer,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy()); // a client going away is not the daemon's problem
    socket.on('drain', () => socket.resume());
  }

  send(response: ControlResponse): void {
    this.writeRaw(JSON.stringify(response) + '\n');
    // A client that sends requests without reading the answers: stop reading it until it does.
    if (this.socket.writableLength > MAX_CLIENT_BUFFER_BYTES) this.socket.pause();
  }

  writeRaw(line: string): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(line);
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) break;
      const piece = chunk.subarray(start, newline);
      start = newline + 1;
      if (this.buffered + piece.length > MAX_REQUEST_BYTES) return this.tooLong();
      const line = this.buffered === 0 ? piece : Buffer.concat([...this.chunks, piece]);
      this.chunks = [];
      this.buffered = 0;
      this.onLine(line.toString('utf8'));
      if (this.socket.destroyed) return;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.buffered + rest.length > MAX_REQUEST_BYTES) return this.tooLong();
    this.chunks.push(rest);
    this.buffered += rest.length;
  }

  private tooLong(): void {
    this.chunks = [];
    this.buffered = 0;
    this.send({ id: null, error: { code: 'request-too-long', message: `a request line is longer than ${MAX_REQUEST_BYTES} bytes; closing the connection` } });
    this.socket.end();
    this.socket.pause();
  }

  private onLine(text: string): void {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.send({ id: null, error: { code: 'bad-json', message: `a request line is not JSON: ${error instanceof Error ? error.message : String(error)}` } });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.send({ id: null, error: { code: 'bad-request', message: 'a request must be a JSON object {"id":..., "method":...}' } });
      return;
    }
    const fields = value as Record<string, unknown>;
    const id = typeof fields.id === 'number' || typeof fields.id === 'string' ? fields.id : null;
    if (typeof fields.method !== 'string') {
      this.send({ id, error: { code: 'bad-request', message: 'a request needs a "method" string' } });
      return;
    }
    if (fields.params !== undefined && (typeof fields.params !== 'object' || fields.params === null || Array.isArray(fields.params))) {
      this.send({ id, error: { code: 'bad-request', message: '"params", when given, must be an object' } });
      return;
    }
    this.server.handle(this, { id, method: fields.method, ...(fields.params === undefined ? {} : { params: fields.params as Record<string, unknown> }) });
  }
}

async function ensureDirectory(path: string): Promise<void> {
  const directory = dirname(path);
  try {
    await mkdir(directory, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw listenFailure(error, path, `cannot create the control socket's directory ${directory}`);
  }
}

/** A socket file left by a daemon that died is removed; one that answers belongs to a running daemon. */
async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return;
    throw listenFailure(error, path);
  }
  if (!isSocket) {
    throw new UsageError(`cannot use ${path} as the control socket: it exists and is not a socket`, { code: 'bad-file', hint: 'remove it, or set --control-socket to another path' });
  }
  const answer = await probe(path);
  if (answer === 'listening') {
    throw new McastError('busy', `another daemon is listening on ${path}`, ExitCode.Failure, {
      hint: 'stop it first (mcastctl status shows it), or give this one its own --control-socket',
    });
  }
  if (answer === 'stale') {
    try {
      await unlink(path);
    } catch (error) {
      if (!(isSystemError(error) && error.code === 'ENOENT')) throw listenFailure(error, path, `cannot remove the stale control socket ${path}`);
    }
  }
}

function probe(path: string): Promise<'listening' | 'stale' | 'gone'> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    const done = (result: 'listening' | 'stale' | 'gone' | Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    // A daemon so stuck that it does not accept within a second still owns the socket.
    const timer = setTimeout(() => done('listening'), PROBE_TIMEOUT_MS);
    socket.once('connect', () => done('listening'));
    socket.once('error', (error) => {
      if (isSystemError(error) && error.code === 'ECONNREFUSED') done('stale');
      else if (isSystemError(error) && error.code === 'ENOENT') done('gone');
      else done(listenFailure(error, path));
    });
  });
}

function listenFailure(error: unknown, path: string, what = `cannot listen on the control socket ${path}`): McastError {
  if (error instanceof McastError) return error;
  const code = isSystemError(error) ? error.code : error instanceof Error ? error.message : String(error);
  if (code === 'EACCES' || code === 'EPERM') return new PermissionError(`${what}: ${code}`, { hint: 'the daemon runs as root; or set --control-socket to a path it may create', cause: error });
  if (code === 'EADDRINUSE') return new McastError('busy', `another daemon is listening on ${path}`, ExitCode.Failure, { hint: 'stop it first, or give this one its own --control-socket', cause: error });
  return new McastError('io', `${what}: ${code}`, ExitCode.Failure, { hint: 'check --control-socket', cause: error });
}
