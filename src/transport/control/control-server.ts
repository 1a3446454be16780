/**
 * The daemon's control socket: a root-only unix stream socket through which `mcastctl
 * status`, `groups` and `snoop --daemon` read the running daemon (its DaemonView).
 *
 * Protocol: control-protocol.ts (a bad line gets an error line and the connection stays
 * open). Listening and stale sockets: control-listen.ts. One client: control-connection.ts.
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
 *
 * Events are written once the loop's current work is done (setImmediate), all those of
 * one turn in one write: a join's OpenFlow goes to the switch before its events are
 * serialized for the subscribers, who cost the join nothing but the objects.
 */
import type { Server, Socket } from 'node:net';
import { unlink } from 'node:fs/promises';
import { messageOf, quoteInput } from '../../errors.js';
import type { DaemonEvent, DaemonView, PortQuery } from './daemon-view.js';
import { parseGroupAddress } from '../../wire/ip-address.js';
import {
  CLIENT_IDLE_TIMEOUT_MS,
  ControlConnection,
  LAST_LINE_GRACE_MS,
  MAX_CLIENT_BUFFER_BYTES,
  sendLastLine,
  type ConnectionOwner,
} from './control-connection.js';
import { listenOn } from './control-listen.js';
import { CONTROL_METHODS, type ControlMethod, type ControlRequest, type ControlResponse } from './control-protocol.js';
import { WarningLimiter, type WarningLogger } from '../../runtime/warning-limiter.js';

/** Where the control server's warnings go. */
export type ControlLogger = WarningLogger;

/** Each kind of client warning is logged at most once in this long (a flood of clients is one line). */
const WARNING_INTERVAL_MS = 10_000;

export { MAX_CLIENT_BUFFER_BYTES, MAX_REQUEST_BYTES } from './control-connection.js';
export type { ControlMethod, ControlRequest } from './control-protocol.js';

/** Clients connected at once; `status`, `groups` and `snoop --daemon` each take one while they run. */
export const MAX_CONTROL_CLIENTS = 64;

export interface ControlServerOptions {
  path: string;
  view: DaemonView;
  logger?: ControlLogger;
  /** Clients at once (default MAX_CONTROL_CLIENTS). */
  maxClients?: number;
  /** Closes a client that sends no request for this long (default CLIENT_IDLE_TIMEOUT_MS; 0: never). */
  idleTimeoutMs?: number;
}

export class ControlServer implements ConnectionOwner {
  private readonly clients = new Set<ControlConnection>();
  private readonly subscribers = new Set<ControlConnection>();
  private unsubscribe: (() => void) | undefined;
  /** Events published since the last write to the subscribers. */
  private readonly pendingEvents: DaemonEvent[] = [];
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
    this.warnings = new WarningLimiter({ now: Date.now, intervalMs: WARNING_INTERVAL_MS });
    this.maxClients = options.maxClients ?? MAX_CONTROL_CLIENTS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? CLIENT_IDLE_TIMEOUT_MS;
    server.on('connection', (socket) => this.accept(socket));
    // After listening, a server error (EMFILE on accept) must not crash the daemon.
    server.on('error', (error) => this.logger?.warn(`control socket ${path}: ${error.message}`));
  }

  /** Creates the socket (and its directory, 0700), replacing a stale one; refuses when another daemon answers on it. */
  static async listen(options: ControlServerOptions): Promise<ControlServer> {
    const server = await listenOn(options.path);
    return new ControlServer(options.path, options.view, server, options.logger, options);
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
    this.warnings.warn(
      this.logger,
      'too-many-clients',
      `control socket: refused a client: ${this.maxClients} are connected already`,
      {
        refusedSinceStart: this.refused,
      },
    );
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
        case 'stats':
          result = this.view.stats(); // a promise: the counters are read from the switch
          break;
        case 'port': {
          const query = portQueryOf(request.params);
          if (typeof query === 'string') {
            client.send({ id: request.id, error: { code: 'bad-request', message: query } });
            return;
          }
          result = this.view.port(query) ?? null;
          break;
        }
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
    if (what === 'events')
      this.warnings.warn(
        this.logger,
        'slow-subscriber',
        'control socket: dropped an event subscriber that reads too slowly',
        { bufferedBytes },
      );
    else
      this.warnings.warn(
        this.logger,
        'slow-client',
        'control socket: dropped a client that does not read its answers',
        { bufferedBytes },
      );
    this.removeSubscriber(client);
    client.socket.destroy();
  }

  private fail(client: ControlConnection, request: ControlRequest, error: unknown): void {
    const message = messageOf(error);
    this.logger?.warn(`control socket: ${request.method} failed: ${message}`);
    client.send({
      id: request.id,
      error: { code: 'internal', message: `${request.method} failed in the daemon: ${message}` },
    });
  }

  private addSubscriber(client: ControlConnection): void {
    // One subscription to the view for all clients: each event is serialized once. The
    // client counts as subscribed only once that worked (a view may refuse).
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

  /** Never throws: it runs inside the controller's event emission. Keeps the event for the turn's write. */
  private broadcast(event: DaemonEvent): void {
    this.pendingEvents.push(event);
    if (this.pendingEvents.length === 1) setImmediate(() => this.flushEvents());
  }

  /** Writes the events kept since the last turn to every subscriber, each serialized once. */
  private flushEvents(): void {
    const events = this.pendingEvents.splice(0);
    if (this.subscribers.size === 0) return;
    let text = '';
    for (const event of events) {
      try {
        text += JSON.stringify({ event }) + '\n';
      } catch (error) {
        this.logger?.warn(`control socket: cannot serialize a ${event.type} event: ${messageOf(error)}`);
      }
    }
    if (text.length === 0) return;
    this.writeToSubscribers(text);
  }

  private writeToSubscribers(line: string): void {
    for (const client of [...this.subscribers]) {
      if (client.socket.writableLength + line.length > MAX_CLIENT_BUFFER_BYTES) {
        this.dropSlowClient(client, 'events');
        continue;
      }
      client.write(line);
    }
  }
}

/** The longest pod name a query may give: a namespace and a name of 253 characters each. */
const MAX_POD_TEXT = 507;

/** The `port` request's params, or why they are refused. */
function portQueryOf(params: Record<string, unknown> | undefined): PortQuery | string {
  const { pod, name, group } = params ?? {};
  const text = (value: unknown, max: number) => typeof value === 'string' && value.length > 0 && value.length <= max;
  if (pod !== undefined && !text(pod, MAX_POD_TEXT)) return '"pod" must be the text namespace/name';
  if (name !== undefined && !text(name, 15)) return '"name" must be an interface name';
  if ((pod === undefined) === (name === undefined)) return 'a port request names one of "pod" or "name"';
  let canonical: string | undefined;
  if (group !== undefined) {
    canonical = typeof group === 'string' ? parseGroupAddress(group) : undefined;
    if (canonical === undefined) return '"group" must be a multicast address';
  }
  return {
    ...(pod === undefined ? {} : { pod: pod as string }),
    ...(name === undefined ? {} : { name: name as string }),
    ...(canonical === undefined ? {} : { group: canonical }),
  };
}
