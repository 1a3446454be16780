/**
 * One socket to ovsdb-server carrying JSON-RPC messages: connect (with a timeout), frame
 * incoming bytes into JSON values, validate them as messages, write messages. It knows
 * nothing of requests, ids or reconnection: that is the client's business.
 *
 * A protocol violation by the server (bad JSON, a non-message, an oversized value)
 * closes the socket, and the reason reaches `onClose`.
 */
import { createConnection, type Socket } from 'node:net';
import { isSystemError, type McastError } from '../../errors.js';
import { connectFailure, type Endpoint as OvsdbEndpoint } from '../../wire/endpoint.js';
import { JsonStreamSplitter } from '../../protocol/ovsdb/json-stream.js';
import { encode, fromJson, type RpcMessage } from '../../protocol/ovsdb/rpc.js';

export interface RpcConnectionOptions {
  readonly endpoint: OvsdbEndpoint;
  /** Give up connecting after this long. */
  readonly connectTimeoutMs: number;
  readonly maxMessageBytes?: number;
  /** Who listens there, for the errors of a failed connect (default ovsdb-server's name and hint). */
  readonly service?: { name: string; unavailableHint: string };
  /** Each message, in order. Exceptions thrown here close the connection. */
  readonly onMessage: (message: RpcMessage, connection: RpcConnection) => void;
  /** Once, when the socket has closed: `error` is why, undefined if the peer just closed it or close() was called. */
  readonly onClose: (error: Error | undefined, connection: RpcConnection) => void;
}

export class RpcConnection {
  private closing = false;
  private closeReason: Error | undefined;
  /** Settles when the socket has closed (after onClose ran). */
  readonly closed: Promise<void>;
  private markClosed: () => void = () => {};

  private constructor(
    private readonly socket: Socket,
    readonly endpoint: OvsdbEndpoint,
  ) {
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
  }

  /**
   * Connects; rejects with UnavailableError naming the endpoint, the errno and what to do
   * (PermissionError, exit 77, when the socket's permissions refuse this user; UsageError,
   * exit 64, for a host name that does not exist).
   */
  static open(options: RpcConnectionOptions): Promise<RpcConnection> {
    const { endpoint } = options;
    return new Promise((resolve, reject) => {
      const socket =
        endpoint.kind === 'unix'
          ? createConnection({ path: endpoint.path })
          : createConnection({ host: endpoint.host, port: endpoint.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(connectError(endpoint, `timed out after ${options.connectTimeoutMs} ms`, options.service));
      }, options.connectTimeoutMs);
      const onError = (error: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(connectError(endpoint, isSystemError(error) ? error.code : error.message, options.service, error));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        const connection = new RpcConnection(socket, endpoint);
        connection.attach(options);
        resolve(connection);
      });
    });
  }

  get isOpen(): boolean {
    return !this.closing && !this.socket.destroyed;
  }

  /** Queues `message` for writing. Silently dropped once the connection is closing: onClose reports that. */
  send(message: RpcMessage): void {
    if (!this.isOpen) return;
    this.socket.write(encode(message));
  }

  /** Closes the socket; onClose follows (with `reason`, if given). */
  close(reason?: Error): void {
    if (this.closing) return;
    this.closing = true;
    this.closeReason = reason;
    this.socket.destroy();
  }

  private attach(options: RpcConnectionOptions): void {
    const splitter = new JsonStreamSplitter(
      options.maxMessageBytes === undefined ? {} : { maxValueBytes: options.maxMessageBytes },
    );
    // Nagle would hold back small requests behind unacknowledged ones.
    if (options.endpoint.kind === 'tcp') this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => {
      try {
        for (const value of splitter.push(chunk)) {
          if (this.closing) return;
          options.onMessage(fromJson(value), this);
        }
      } catch (error) {
        this.close(error instanceof Error ? error : new Error(String(error)));
      }
    });
    this.socket.on('error', (error) => {
      this.closeReason ??= error;
    });
    this.socket.once('close', () => {
      this.closing = true;
      try {
        options.onClose(this.closeReason, this);
      } finally {
        this.markClosed();
      }
    });
  }
}

/** As the OpenFlow client's (connectFailure): the same errno gives the same exit code. */
function connectError(
  endpoint: OvsdbEndpoint,
  reason: string,
  service: RpcConnectionOptions['service'],
  cause?: unknown,
): McastError {
  const unavailableHint =
    service?.unavailableHint ??
    (endpoint.kind === 'unix'
      ? 'is ovsdb-server running? set OVS_RUNDIR or --db'
      : 'is ovsdb-server listening there (a ptcp: remote)? set --db');
  return connectFailure(endpoint, service?.name ?? 'OVSDB', reason, {
    unavailableHint,
    ...(cause === undefined ? {} : { cause }),
  });
}
