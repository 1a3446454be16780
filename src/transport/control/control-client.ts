/**
 * The client side of the daemon's control socket (protocol: control-server.ts), for
 * `mcastctl status`, `groups` and `snoop --daemon`.
 */
import { createConnection, type Socket } from 'node:net';
import { parseControlSocket } from './socket-path.js';
import { isSystemError, McastError, messageOf, PermissionError, UnavailableError } from '../../errors.js';
import type { ControlMethod } from './control-server.js';
import type { DaemonEvent } from './daemon-view.js';
import { RequestTable } from '../../runtime/request-table.js';

/** Where the daemon listens unless --control-socket says otherwise. */
export const DEFAULT_CONTROL_SOCKET = '/run/mcastctl/mcastctl.sock';

export interface ControlClientOptions {
  /** How long connecting, and each request, may take (default 5 s). */
  timeoutMs?: number;
}

export interface EventsOptions {
  /** Aborting it ends the stream: `events()` then resolves. */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 5000;

export class ControlClient {
  /** Requests in flight, by id; the meta is the method. */
  private readonly pending = new RequestTable<ControlMethod, Record<string, unknown>>();
  private eventListener: ((event: DaemonEvent) => void) | undefined;
  private lineChunks: string[] = [];
  private ended = false;
  /** Why the connection ended, when it did not end because we closed it. */
  private endError: McastError | undefined;
  private readonly endWaiters: Array<() => void> = [];
  private closedByUs = false;

  private constructor(
    readonly path: string,
    private readonly socket: Socket,
    private readonly timeoutMs: number,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (error) => this.finish(connectionLost(path, error)));
    socket.on('close', () => this.finish(connectionLost(path)));
  }

  /**
   * Connects to the daemon; UnavailableError (exit 69) when nothing listens there, PermissionError (77) when not
   * allowed, UsageError (64) when `socketPath` cannot be a socket path. A relative path is resolved as the daemon
   * resolves it.
   */
  static connect(
    socketPath: string = DEFAULT_CONTROL_SOCKET,
    options: ControlClientOptions = {},
  ): Promise<ControlClient> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let path: string;
    try {
      path = parseControlSocket(socketPath);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      // `{ path }`, never a bare string: net reads a string of digits (or an empty one) as a TCP port.
      const socket = createConnection({ path });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new UnavailableError(`cannot reach the mcastctl daemon at ${path}: no answer within ${timeoutMs} ms`, {
            hint: 'is the daemon stuck? see its log (journalctl -u mcastctl)',
          }),
        );
      }, timeoutMs);
      socket.once('error', (error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(connectFailure(path, error));
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new ControlClient(path, socket, timeoutMs));
      });
    });
  }

  /** Sends one request and waits for its answer; an error answer becomes an McastError. */
  request<T>(method: ControlMethod, params?: Record<string, unknown>): Promise<T> {
    if (this.ended) return Promise.reject(this.endError ?? connectionLost(this.path));
    return this.pending.start({
      meta: method,
      // The event stream's answer comes when the daemon has subscribed us: no limit on it.
      timeoutMs: method === 'events' ? 0 : this.timeoutMs,
      timeoutError: () =>
        new UnavailableError(
          `the mcastctl daemon at ${this.path} did not answer ${method} within ${this.timeoutMs} ms`,
          {
            hint: 'is the daemon stuck? see its log',
          },
        ),
      accept: (message) => {
        if ('error' in message) throw this.refusal(method, message.error);
        return message.result as T;
      },
      send: (id) =>
        void this.socket.write(JSON.stringify({ id, method, ...(params === undefined ? {} : { params }) }) + '\n'),
    });
  }

  /**
   * Subscribes to the daemon's event stream and calls `listener` for each event. Resolves
   * when `signal` aborts (or close() is called); rejects with UnavailableError (exit 69)
   * when the daemon ends the stream (it stopped, or dropped this client for reading too
   * slowly).
   */
  async events(listener: (event: DaemonEvent) => void, options: EventsOptions = {}): Promise<void> {
    const { signal } = options;
    if (signal?.aborted) return;
    this.eventListener = listener;
    const onAbort = () => this.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await this.request<{ subscribed: boolean }>('events');
      if (!this.ended) await new Promise<void>((resolve) => this.endWaiters.push(resolve));
      if (signal?.aborted || this.closedByUs) return;
      throw this.endError ?? connectionLost(this.path);
    } catch (error) {
      if (signal?.aborted || this.closedByUs) return;
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.eventListener = undefined;
    }
  }

  close(): void {
    this.closedByUs = true;
    this.socket.destroy();
    this.finish(connectionLost(this.path));
  }

  private onData(chunk: string): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      if (newline === -1) break;
      const piece = chunk.slice(start, newline);
      start = newline + 1;
      const line = this.lineChunks.length === 0 ? piece : this.lineChunks.join('') + piece;
      this.lineChunks = [];
      this.onLine(line);
      if (this.ended) return;
    }
    if (start < chunk.length) this.lineChunks.push(chunk.slice(start));
  }

  private onLine(line: string): void {
    if (line.trim() === '') return;
    let message: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
      message = value as Record<string, unknown>;
    } catch (error) {
      this.protocolError(`the daemon sent a line that is not a JSON object (${messageOf(error)})`);
      return;
    }
    if ('event' in message) {
      const event = message.event;
      if (typeof event === 'object' && event !== null) this.eventListener?.(event as DaemonEvent);
      return;
    }
    const id = message.id;
    if (typeof id === 'number' && this.pending.settle(id, message)) return;
    // An error about no request in particular (the server could not read one of ours, or has no room for us).
    if (id === null && typeof message.error === 'object' && message.error !== null) {
      const error = message.error as { code?: unknown; message?: unknown };
      if (error.code === 'too-many-clients') {
        this.end(
          new UnavailableError(`the mcastctl daemon at ${this.path} refused the connection: ${String(error.message)}`, {
            hint: 'too many clients are connected to its control socket; try again shortly, and see its log',
          }),
        );
        return;
      }
      if (error.code === 'idle-timeout') {
        this.end(
          new UnavailableError(
            `the mcastctl daemon at ${this.path} closed an idle connection: ${String(error.message)}`,
            {
              hint: 'connect just before asking, or follow `events` to stay connected',
            },
          ),
        );
        return;
      }
      this.protocolError(`the daemon refused a request: ${String(error.message)}`);
    }
  }

  private refusal(method: string, answer: unknown): McastError {
    const error = (answer ?? {}) as { code?: unknown; message?: unknown };
    return new McastError(
      'internal',
      `the mcastctl daemon at ${this.path} refused ${method}: ${String(error.message ?? 'no message')} (${String(error.code ?? 'no code')})`,
      {
        hint: 'is this mcastctl the same version as the daemon? (mcastctl status shows its version)',
      },
    );
  }

  private protocolError(message: string): void {
    this.end(
      new McastError('internal', `control socket ${this.path}: ${message}`, {
        hint: 'is this mcastctl the same version as the daemon?',
      }),
    );
  }

  private end(error: McastError): void {
    this.finish(error);
    this.socket.destroy();
  }

  private finish(error: McastError): void {
    if (this.ended) return;
    this.ended = true;
    this.endError = error;
    this.pending.failAll(() => error);
    for (const resolve of this.endWaiters.splice(0)) resolve();
  }
}

function connectFailure(path: string, error: Error): McastError {
  const code = isSystemError(error) ? error.code : error.message;
  if (code === 'EACCES' || code === 'EPERM') {
    return new PermissionError(
      `cannot reach the mcastctl daemon at ${path}: ${code} (the control socket is root-only: run as root)`,
      { cause: error },
    );
  }
  if (code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'ENOTSOCK' || code === 'ENOTDIR') {
    return new UnavailableError(
      `cannot reach the mcastctl daemon at ${path}: ${code} (is \`mcastctl daemon\` running? set --control-socket)`,
      {
        cause: error,
      },
    );
  }
  return new UnavailableError(`cannot reach the mcastctl daemon at ${path}: ${code}`, {
    hint: 'check --control-socket',
    cause: error,
  });
}

function connectionLost(path: string, error?: Error): UnavailableError {
  const why = error === undefined ? '' : `: ${isSystemError(error) ? error.code : error.message}`;
  return new UnavailableError(`lost the connection to the mcastctl daemon at ${path}${why}`, {
    hint: 'the daemon stopped, or dropped this client for reading too slowly; see its log',
  });
}
