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
 * connection stays open.
 *
 * Limits, so that no client (buggy or hostile) costs the daemon more than a bounded
 * amount of memory, or a file descriptor for longer than it needs:
 * - at most MAX_CONTROL_CLIENTS connections at once; the next one gets an error line
 *   (`too-many-clients`) and is closed, and a warning is logged (rate-limited);
 * - a request line longer than MAX_REQUEST_BYTES gets an error line (`request-too-long`)
 *   and the connection is closed (destroyed: it does not wait for the client);
 * - requests are not read while a client's answers are not being read (the socket's
 *   buffer is full), and a client whose unread output passes MAX_CLIENT_BUFFER_BYTES is
 *   dropped (answers and events alike);
 * - a client that sends no request for CLIENT_IDLE_TIMEOUT_MS is closed (`idle-timeout`),
 *   except one subscribed to `events`, which may stay as long as it reads.
 */
import { mkdir, chmod, lstat, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { ExitCode, isSystemError, McastError, messageOf, PermissionError, quoteInput, UsageError } from '../../errors.js';
import type { DaemonEvent, DaemonView } from '../../domain/daemon-view.js';

/** The longest request line the server reads (a request is a few dozen bytes). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** A client whose unread output grows past this is dropped, whether it is answers or events. */
export const MAX_CLIENT_BUFFER_BYTES = 1024 * 1024;
/** Clients connected at once; `status`, `groups` and `snoop --daemon` each take one while they run. */
export const MAX_CONTROL_CLIENTS = 64;
/** A client that sends no request for this long is closed, unless it follows `events`. */
export const CLIENT_IDLE_TIMEOUT_MS = 30_000;
/** Requests of one client whose answers wait for the kernel (`routes`); its next requests wait for them. */
const MAX_PENDING_REQUESTS = 8;
/** How long a last error line may take to leave before the connection is destroyed anyway. */
const LAST_LINE_GRACE_MS = 1000;
/** Each kind of client warning is logged at most once in this long (a flood of clients is one line). */
const WARNING_INTERVAL_MS = 10_000;

export const CONTROL_METHODS = ['status', 'groups', 'routes', 'events'] as const;
export type ControlMethod = (typeof CONTROL_METHODS)[number];

/** Error codes of the protocol's error answers. */
export type ControlErrorCode = 'bad-json' | 'bad-request' | 'unknown-method' | 'request-too-long' | 'too-many-clients' | 'idle-timeout' | 'internal';

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
  /** Clients at once (default MAX_CONTROL_CLIENTS). */
  maxClients?: number;
  /** Closes a client that sends no request for this long (default CLIENT_IDLE_TIMEOUT_MS; 0: never). */
  idleTimeoutMs?: number;
}

/** How long the stale-socket probe waits for an answer before calling the socket busy. */
const PROBE_TIMEOUT_MS = 1000;

export class ControlServer {
  private readonly clients = new Set<ControlConnection>();
  private readonly subscribers = new Set<ControlConnection>();
  private unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private readonly warnings: WarningLimiter;
  private readonly maxClients: number;
  private readonly idleTimeoutMs: number;
  private refused = 0;
  /** Refused connections given a moment to read why (at most maxClients of them at once). */
  private readonly refusing = new Set<Socket>();

  private constructor(
    readonly path: string,
    private readonly view: DaemonView,
    private readonly server: Server,
    private readonly logger: ControlLogger | undefined,
    options: ControlServerOptions,
  ) {
    this.warnings = new WarningLimiter(logger);
    this.maxClients = options.maxClients ?? MAX_CONTROL_CLIENTS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? CLIENT_IDLE_TIMEOUT_MS;
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
    return new ControlServer(path, options.view, server, options.logger, options);
  }

  /** Connected clients (for tests and status). */
  get clientCount(): number {
    return this.clients.size;
  }

  /** Clients subscribed to the event stream. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Output written to clients that they have not read yet (nor the kernel taken), in bytes. */
  get bufferedBytes(): number {
    let total = 0;
    for (const client of this.clients) total += client.socket.writableLength;
    return total;
  }

  /** Clients refused since the server started, because as many as it serves at once were connected. */
  get refusedCount(): number {
    return this.refused;
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
      for (const socket of this.refusing) socket.destroy();
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
    if (this.clients.size >= this.maxClients) {
      this.refuse(socket);
      return;
    }
    const client = new ControlConnection(socket, this, this.idleTimeoutMs);
    this.clients.add(client);
    socket.once('close', () => {
      this.clients.delete(client);
      this.removeSubscriber(client);
    });
  }

  /**
   * Tells a client over the limit why it is refused and closes it. The line goes out with
   * a half-close, reading on, so that a client whose request is on its way reads the line
   * instead of EPIPE; the socket is destroyed when the client closes, or after
   * LAST_LINE_GRACE_MS. Past maxClients such sockets at once, it is destroyed as soon as
   * the kernel has the line.
   */
  private refuse(socket: Socket): void {
    this.refused++;
    this.warnings.warn('too-many-clients', `control socket: refused a client: ${this.maxClients} are connected already`, { refusedSinceStart: this.refused });
    socket.on('error', () => socket.destroy());
    const message = `the daemon serves at most ${this.maxClients} control-socket clients at once`;
    const refusal: ControlResponse = { id: null, error: { code: 'too-many-clients', message } };
    if (this.refusing.size >= this.maxClients) {
      sendLastLine(socket, refusal);
      return;
    }
    this.refusing.add(socket);
    const timer = setTimeout(() => socket.destroy(), LAST_LINE_GRACE_MS);
    timer.unref();
    socket.once('close', () => {
      clearTimeout(timer);
      this.refusing.delete(socket);
    });
    socket.on('data', () => undefined); // what it sends is not read as requests
    socket.end(JSON.stringify(refusal) + '\n');
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
        default: {
          const message = `unknown method ${quoteInput(request.method)}: the methods are ${CONTROL_METHODS.join(', ')}`;
          client.send({ id: request.id, error: { code: 'unknown-method', message } });
          return;
        }
      }
    } catch (error) {
      this.fail(client, request, error);
      return;
    }
    // Answers go out in the order of the requests, except one that waits for the kernel.
    if (result instanceof Promise) {
      client.pendingRequests++;
      result
        .then(
          (value: unknown) => client.send({ id: request.id, result: value }),
          (error: unknown) => this.fail(client, request, error),
        )
        .finally(() => {
          client.pendingRequests--;
          client.readMore();
        });
      return;
    }
    client.send({ id: request.id, result });
  }

  /** @internal Drops a client whose unread output passed MAX_CLIENT_BUFFER_BYTES. */
  dropSlowClient(client: ControlConnection, what: 'answers' | 'events'): void {
    const bufferedBytes = client.socket.writableLength;
    if (what === 'events') this.warnings.warn('slow-subscriber', 'control socket: dropped an event subscriber that reads too slowly', { bufferedBytes });
    else this.warnings.warn('slow-client', 'control socket: dropped a client that does not read its answers', { bufferedBytes });
    this.removeSubscriber(client);
    client.socket.destroy();
  }

  private fail(client: ControlConnection, request: ControlRequest, error: unknown): void {
    const message = messageOf(error);
    this.logger?.warn(`control socket: ${request.method} failed: ${message}`);
    client.send({ id: request.id, error: { code: 'internal', message: `${request.method} failed in the daemon: ${message}` } });
  }

  private addSubscriber(client: ControlConnection): void {
    // One subscription to the view for all clients: each event is serialized once. The
    // client counts as subscribed only once that worked (a starting daemon refuses).
    this.unsubscribe ??= this.view.subscribe((event) => this.broadcast(event));
    this.subscribers.add(client);
    client.subscribed();
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
      this.logger?.warn(`control socket: cannot serialize a ${event.type} event: ${messageOf(error)}`);
      return;
    }
    for (const client of [...this.subscribers]) {
      if (client.socket.writableLength + line.length > MAX_CLIENT_BUFFER_BYTES) {
        this.dropSlowClient(client, 'events');
        continue;
      }
      client.write(line);
    }
  }
}

/**
 * One client connection: splits request lines and answers them in order. It stops reading
 * while its answers are not being read (the socket's buffer is full) or while too many wait
 * for the kernel, and resumes on 'drain'; while it reads, a client that closes is seen at once.
 */
class ControlConnection {
  /** Received bytes not yet taken as request lines: a partial line, or lines held while blocked. */
  private input: Buffer = Buffer.alloc(0);
  private backedUp = false;
  /** A last line was sent: what the client sends now is ignored until the socket is destroyed. */
  private finished = false;
  private readonly idleTimer: NodeJS.Timeout | undefined;
  /** @internal Requests whose answers wait for the kernel. */
  pendingRequests = 0;

  constructor(
    readonly socket: Socket,
    private readonly server: ControlServer,
    private readonly idleTimeoutMs: number,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy()); // a client going away is not the daemon's problem
    socket.on('drain', () => {
      this.backedUp = false;
      this.idleTimer?.refresh(); // the client is reading: not idle
      this.readMore();
    });
    if (idleTimeoutMs > 0) {
      this.idleTimer = setTimeout(() => this.onIdle(), idleTimeoutMs);
      this.idleTimer.unref();
      socket.once('close', () => clearTimeout(this.idleTimer));
    }
  }

  /** Sends an answer; drops the client when what it has not read already passes MAX_CLIENT_BUFFER_BYTES. */
  send(response: ControlResponse): void {
    if (this.socket.destroyed || this.finished) return;
    if (this.socket.writableLength > MAX_CLIENT_BUFFER_BYTES) {
      this.server.dropSlowClient(this, 'answers');
      return;
    }
    this.write(JSON.stringify(response) + '\n');
  }

  write(line: string): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    if (!this.socket.write(line)) this.backedUp = true;
  }

  /** Subscribed to `events`: it may stay connected without sending requests. */
  subscribed(): void {
    clearTimeout(this.idleTimer);
  }

  /** Takes the request lines received so far while the client is not blocked, then reads on or pauses. */
  readMore(): void {
    while (!this.blocked()) {
      const newline = this.input.indexOf(0x0a);
      if (newline === -1 ? this.input.length > MAX_REQUEST_BYTES : newline > MAX_REQUEST_BYTES) return this.tooLong();
      if (newline === -1) break;
      const line = this.input.subarray(0, newline);
      this.input = this.input.subarray(newline + 1);
      this.onLine(line.toString('utf8'));
    }
    if (this.socket.destroyed || this.finished) return;
    if (this.blocked()) this.socket.pause();
    else this.socket.resume();
  }

  private blocked(): boolean {
    return this.socket.destroyed || this.finished || this.backedUp || this.pendingRequests >= MAX_PENDING_REQUESTS;
  }

  private onData(chunk: Buffer): void {
    if (this.finished) return;
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    this.readMore();
  }

  private tooLong(): void {
    this.finish({ id: null, error: { code: 'request-too-long', message: `a request line is longer than ${MAX_REQUEST_BYTES} bytes; closing the connection` } });
  }

  private onIdle(): void {
    if (this.pendingRequests > 0) {
      this.idleTimer?.refresh(); // waiting for our answer is not idleness
      return;
    }
    this.finish({ id: null, error: { code: 'idle-timeout', message: `no request in ${this.idleTimeoutMs} ms; closing the connection` } });
  }

  /** Sends a last line and destroys the connection, reading (and ignoring) what the client sends meanwhile. */
  private finish(response: ControlResponse): void {
    this.finished = true;
    this.input = Buffer.alloc(0);
    clearTimeout(this.idleTimer);
    this.socket.resume();
    sendLastLine(this.socket, response);
  }

  private onLine(text: string): void {
    if (text.trim() === '') return;
    this.idleTimer?.refresh(); // any line but a blank one counts as a request, even a bad one
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.send({ id: null, error: { code: 'bad-json', message: `a request line is not JSON: ${messageOf(error)}` } });
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

/**
 * Writes one last line and destroys the socket once the kernel has it, or after
 * LAST_LINE_GRACE_MS when it cannot take it (a client that does not read): never a
 * half-close that waits for the client to close its side.
 */
function sendLastLine(socket: Socket, response: ControlResponse): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), LAST_LINE_GRACE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.write(JSON.stringify(response) + '\n', () => socket.destroy());
}

/** Logs each kind of warning at most once per WARNING_INTERVAL_MS, with how many were left out before it. */
class WarningLimiter {
  private readonly kinds = new Map<string, { loggedAt: number; suppressed: number }>();
  constructor(private readonly logger: ControlLogger | undefined) {}

  warn(kind: string, message: string, fields: Record<string, unknown> = {}): void {
    if (this.logger === undefined) return;
    const now = Date.now();
    const last = this.kinds.get(kind);
    if (last !== undefined && now - last.loggedAt < WARNING_INTERVAL_MS) {
      last.suppressed++;
      return;
    }
    this.kinds.set(kind, { loggedAt: now, suppressed: 0 });
    const suppressed = last?.suppressed ?? 0;
    this.logger.warn(message, suppressed > 0 ? { ...fields, suppressedBefore: suppressed } : fields);
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

/** Errors of a path that cannot hold a socket: a setting to correct (exit 64), not a failure. */
const UNUSABLE_PATH: Readonly<Record<string, string>> = {
  EEXIST: 'a part of the path is a file, not a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'too many symbolic links',
};

function listenFailure(error: unknown, path: string, what = `cannot listen on the control socket ${path}`): McastError {
  if (error instanceof McastError) return error;
  const code = isSystemError(error) ? error.code : error instanceof Error ? error.message : String(error);
  if (code === 'EACCES' || code === 'EPERM') return new PermissionError(`${what}: ${code}`, { hint: 'the daemon runs as root; or set --control-socket to a path it may create', cause: error });
  if (code === 'EADDRINUSE') return new McastError('busy', `another daemon is listening on ${path}`, ExitCode.Failure, { hint: 'stop it first, or give this one its own --control-socket', cause: error });
  // A path that cannot be a socket's (a file where a directory must be): a setting to correct.
  const unusable = UNUSABLE_PATH[code];
  if (unusable !== undefined) return new UsageError(`${what}: ${code} (${unusable})`, { code: 'bad-file', hint: 'set --control-socket to a path in a directory', cause: error });
  return new McastError('io', `${what}: ${code}`, ExitCode.Failure, { hint: 'check --control-socket', cause: error });
}
