/**
 * An OVSDB client (RFC 7047) over one connection at a time, with reconnection.
 *
 * Requests: list_dbs, get_schema, transact, monitor, monitor_cancel, lock, unlock, echo.
 * Each has a timeout (the client's `timeoutMs` unless the call gives its own) and may be
 * abandoned through an AbortSignal. A timed-out or aborted request is cancelled on the
 * server (`cancel`, §4.1.4) and settled here at once: ovsdb-server 3.1 sends no reply at
 * all to a cancelled request, not the RFC's "canceled" error.
 *
 * The server's requests are answered: `echo` (ovsdb-server's inactivity probe: a client
 * that ignores it is disconnected after two probe intervals) and, with "unknown method",
 * anything else, as ovsdb-server itself does.
 *
 * When the connection drops, requests in flight fail with UnavailableError (a transaction
 * may or may not have committed: the client cannot know, and never re-sends one). Unless
 * `reconnect: false`, the client then reconnects with exponential backoff, re-issues every
 * monitor, hands each monitor's callback the fresh initial state (reason `resync`: replace
 * what you had, since rows may have gone while disconnected), and then emits
 * `reconnected`. Requests made while disconnected fail at once with UnavailableError.
 * Locks belong to a connection and are not re-acquired.
 *
 * This class owns the connection and its state; requests.ts keeps the requests in flight,
 * monitors.ts the monitors and their callbacks.
 */
import { EventEmitter } from 'node:events';
import { UnavailableError } from '../../errors.js';
import type { BackoffOptions } from '../../runtime/backoff.js';
import { Reconnector } from '../../runtime/reconnector.js';
import { RpcConnection } from './connection.js';
import { isOvsdbId } from '../../protocol/ovsdb/datum.js';
import { lockedFromJson, lockIdError } from '../../protocol/ovsdb/lock.js';
import { parseEndpoint, type Endpoint as OvsdbEndpoint } from '../../wire/endpoint.js';
import { OvsdbDecodeError } from '../../protocol/ovsdb/errors.js';
import type { OvsdbClientEvents, OvsdbClientState } from './client-events.js';
import type { MonitorCallback, MonitorRequests, TableUpdates } from '../../protocol/ovsdb/monitor.js';
import {
  operationToJson,
  transactResultsFromJson,
  type Operation,
  type TransactResults,
} from '../../protocol/ovsdb/operations.js';
import type { JsonValue, RpcMessage, RpcNotification } from '../../protocol/ovsdb/rpc.js';
import { schemaFromJson, type DatabaseSchema } from '../../protocol/ovsdb/schema.js';
import { OvsdbMonitors } from './monitors.js';
import { OvsdbRequests, type RequestOptions } from './requests.js';

export const DEFAULT_TIMEOUT_MS = 30_000;

export type ReconnectOptions = BackoffOptions;

export interface OvsdbClientOptions {
  /** `unix:<path>`, `tcp:<host>:<port>`, or an absolute socket path. */
  readonly endpoint: string;
  /** Timeout of the connection attempt and default timeout of each request, in ms (0: none). Default 30 s. */
  readonly timeoutMs?: number;
  /** Reconnect when the connection drops (default: yes, 100 ms doubling to 5 s). */
  readonly reconnect?: boolean | ReconnectOptions;
  /** Refuse a single message longer than this (default 64 MiB). */
  readonly maxMessageBytes?: number;
}

export class OvsdbClient extends EventEmitter<OvsdbClientEvents> {
  readonly endpoint: OvsdbEndpoint;
  private readonly timeoutMs: number;
  private readonly maxMessageBytes: number | undefined;

  private connection: RpcConnection | undefined;
  private currentState: OvsdbClientState = 'connected';
  private readonly requests: OvsdbRequests;
  private readonly monitors: OvsdbMonitors;
  /** Dials again after a drop; undefined with `reconnect: false`. */
  private readonly reconnector: Reconnector<RpcConnection> | undefined;

  private constructor(options: OvsdbClientOptions) {
    super();
    this.endpoint = parseEndpoint(options.endpoint, 'OVSDB');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.requests = new OvsdbRequests({
      endpoint: this.endpoint,
      timeoutMs: this.timeoutMs,
      connection: () => this.connection,
      closed: () => this.currentState === 'closed',
    });
    this.monitors = new OvsdbMonitors({
      requests: this.requests,
      connected: () => this.currentState === 'connected',
      connection: () => this.connection,
      onMonitorError: (monitorId, error) => this.emit('monitorError', { monitorId, error }),
    });
    const backoff =
      options.reconnect === false
        ? undefined
        : options.reconnect === true || options.reconnect === undefined
          ? {}
          : options.reconnect;
    this.reconnector =
      backoff &&
      new Reconnector({
        backoff,
        connect: () => this.openConnection(),
        onAttempt: (attempt) => this.emit('reconnecting', attempt),
        discard: (connection) => connection.close(),
        onConnected: (connection, attempts) => this.onReconnected(connection, attempts),
      });
    this.maxMessageBytes = options.maxMessageBytes;
  }

  /**
   * Connects. Throws UsageError (`bad-address`) for a malformed endpoint and
   * UnavailableError when the server cannot be reached (no retry here: reconnection is
   * for connections that were up).
   */
  static async connect(options: OvsdbClientOptions): Promise<OvsdbClient> {
    const client = new OvsdbClient(options);
    client.connection = await client.openConnection();
    return client;
  }

  get state(): OvsdbClientState {
    return this.currentState;
  }

  // --- RFC 7047 methods --------------------------------------------------------------

  listDbs(options: RequestOptions = {}): Promise<string[]> {
    return this.requests.send('list_dbs', [], options, undefined, (result) => {
      if (!Array.isArray(result) || !result.every((name) => typeof name === 'string')) {
        throw new OvsdbDecodeError('bad-datum', `list_dbs returned ${JSON.stringify(result)}, not an array of names`);
      }
      return result as string[];
    });
  }

  getSchema(db: string, options: RequestOptions = {}): Promise<DatabaseSchema> {
    return this.requests.send('get_schema', [db], options, db, schemaFromJson);
  }

  /**
   * Runs `operations` as one transaction. Resolves with one typed result per operation;
   * rejects with OvsdbError when the server refuses the request, an operation, or the
   * commit (the error names which).
   */
  transact<const Ops extends readonly Operation[]>(
    db: string,
    operations: Ops,
    options: RequestOptions = {},
  ): Promise<TransactResults<Ops>> {
    let params: JsonValue[];
    try {
      // Encode first: a malformed operation (a NaN, a bad UUID) fails here and nothing is sent.
      params = [db, ...operations.map(operationToJson)];
    } catch (error) {
      return Promise.reject(error);
    }
    return this.requests.send('transact', params, options, db, (result) =>
      transactResultsFromJson(db, operations, result),
    );
  }

  /**
   * Starts monitor `monitorId` (unique on this client) and resolves with the initial
   * state. `onUpdate` gets that same initial state first (reason `initial`), then every
   * update, and the whole state again after each reconnection (`resync`). It is called
   * synchronously as messages arrive, so the initial state always comes before the
   * first update; an exception thrown from it is re-thrown asynchronously (a bug in the
   * consumer must not desynchronise the connection).
   */
  async monitor(
    db: string,
    monitorId: string,
    requests: MonitorRequests,
    onUpdate: MonitorCallback,
    options: RequestOptions = {},
  ): Promise<TableUpdates> {
    return this.monitors.start(db, monitorId, requests, onUpdate, options);
  }

  /** Stops a monitor: no callback after this is called. Unknown ids are ignored. */
  async monitorCancel(monitorId: string, options: RequestOptions = {}): Promise<void> {
    return this.monitors.cancel(monitorId, options);
  }

  /**
   * Asks for lock `lockId` (RFC 7047 §4.1.8; an <id>: letters, digits, `_`): true if
   * granted now; otherwise the server queues the request and a `locked` event follows
   * when it is granted.
   */
  lock(lockId: string, options: RequestOptions = {}): Promise<boolean> {
    if (!isOvsdbId(lockId)) return Promise.reject(lockIdError(lockId));
    return this.requests.send('lock', [lockId], options, undefined, (result) => lockedFromJson('lock', result));
  }

  unlock(lockId: string, options: RequestOptions = {}): Promise<void> {
    if (!isOvsdbId(lockId)) return Promise.reject(lockIdError(lockId));
    return this.requests.send('unlock', [lockId], options, undefined, () => undefined);
  }

  /** Round trip to the server; resolves with the params it echoed. */
  echo(params: readonly JsonValue[] = [], options: RequestOptions = {}): Promise<JsonValue[]> {
    return this.requests.send('echo', params, options, undefined, (result) => {
      if (!Array.isArray(result))
        throw new OvsdbDecodeError('bad-datum', `echo returned ${JSON.stringify(result)}, not an array`);
      return result as JsonValue[];
    });
  }

  /** Closes the connection and stops reconnecting. Pending requests fail with UnavailableError. */
  async close(): Promise<void> {
    if (this.currentState === 'closed') return;
    this.currentState = 'closed';
    this.reconnector?.cancel();
    const connection = this.connection;
    this.connection = undefined;
    this.requests.failAll(
      (method) =>
        new UnavailableError(`the OVSDB client for ${this.endpoint.text} was closed before the reply to ${method}`),
    );
    this.monitors.clear();
    if (connection !== undefined) {
      connection.close();
      await connection.closed;
    }
    this.emit('closed');
  }

  // --- Incoming messages -------------------------------------------------------------

  private onMessage(message: RpcMessage, connection: RpcConnection): void {
    switch (message.kind) {
      case 'result':
      case 'error':
        this.requests.onReply(message);
        return;
      case 'request':
        if (message.method === 'echo') connection.send({ kind: 'result', result: message.params, id: message.id });
        else connection.send({ kind: 'error', error: 'unknown method', id: message.id });
        return;
      case 'notification':
        this.onNotification(message);
        return;
    }
  }

  /** Throws OvsdbDecodeError for a malformed update: the connection closes and the reconnection resyncs. */
  private onNotification(message: RpcNotification): void {
    const [first, second] = message.params;
    switch (message.method) {
      case 'update':
        this.monitors.onUpdate(first, second);
        return;
      case 'locked':
      case 'stolen':
        if (typeof first === 'string') this.emit(message.method, first);
        return;
      default:
        return;
    }
  }

  // --- Connection and reconnection ---------------------------------------------------

  private openConnection(): Promise<RpcConnection> {
    return RpcConnection.open({
      endpoint: this.endpoint,
      connectTimeoutMs: this.timeoutMs > 0 ? this.timeoutMs : DEFAULT_TIMEOUT_MS,
      ...(this.maxMessageBytes === undefined ? {} : { maxMessageBytes: this.maxMessageBytes }),
      onMessage: (message, connection) => this.onMessage(message, connection),
      onClose: (error, connection) => this.onConnectionClosed(connection, error),
    });
  }

  private onConnectionClosed(connection: RpcConnection, error: Error | undefined): void {
    if (connection !== this.connection) return; // close(), or an old connection
    this.connection = undefined;
    const reason = error ?? new UnavailableError(`OVSDB ${this.endpoint.text} closed the connection`);
    this.requests.failAll(
      (method) =>
        new UnavailableError(
          `OVSDB connection ${this.endpoint.text} was lost before the reply to ${method}: ${reason.message}`,
          {
            hint:
              method === 'transact'
                ? 'the transaction may or may not have been committed; read the state again before retrying'
                : 'is ovsdb-server running?',
            cause: reason,
          },
        ),
    );
    const willReconnect = this.reconnector !== undefined;
    this.currentState = willReconnect ? 'reconnecting' : 'closed';
    this.emit('disconnected', { error: reason, willReconnect });
    if (willReconnect) this.reconnector?.start(reason);
    else {
      this.monitors.clear();
      this.emit('closed');
    }
  }

  private async onReconnected(connection: RpcConnection, attempts: number): Promise<void> {
    this.connection = connection;
    this.currentState = 'connected';
    const monitors = await this.monitors.resync(connection);
    // Dropped again while resyncing: the close handler has started the next round.
    if (this.connection !== connection) return;
    this.emit('reconnected', { attempts, monitors });
  }
}
