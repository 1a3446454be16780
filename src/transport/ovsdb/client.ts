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
 */
import { EventEmitter } from 'node:events';
import { UnavailableError } from '../../errors.js';
import type { BackoffOptions } from '../../runtime/backoff.js';
import { Reconnector } from '../../runtime/reconnector.js';
import { RpcConnection } from './connection.js';
import { isOvsdbId } from '../../protocol/ovsdb/datum.js';
import { lockedFromJson, lockIdError } from '../../protocol/ovsdb/lock.js';
import { parseEndpoint, type Endpoint as OvsdbEndpoint } from '../../wire/endpoint.js';
import { OvsdbDecodeError, OvsdbError, OvsdbTimeoutError } from '../../protocol/ovsdb/errors.js';
import type { OvsdbClientEvents, OvsdbClientState } from './client-events.js';
import {
  monitorRequestsToJson,
  tableUpdatesFromJson,
  type MonitorCallback,
  type MonitorRequests,
  type MonitorUpdateReason,
  type TableUpdates,
} from '../../protocol/ovsdb/monitor.js';
import { RequestTable } from '../../runtime/request-table.js';
import { errorObjectFromJson } from '../../protocol/ovsdb/error-object.js';
import {
  operationToJson,
  transactResultsFromJson,
  type Operation,
  type TransactResults,
} from '../../protocol/ovsdb/operations.js';
import type { JsonValue, RpcErrorReply, RpcMessage, RpcNotification, RpcResult } from '../../protocol/ovsdb/rpc.js';
import { schemaFromJson, type DatabaseSchema } from '../../protocol/ovsdb/schema.js';

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

export interface RequestOptions {
  /** Overrides the client's timeout for this request (0: none). */
  readonly timeoutMs?: number;
  /** Abandons the request: it rejects with the signal's reason, and is cancelled on the server. */
  readonly signal?: AbortSignal;
}

interface ActiveMonitor {
  readonly db: string;
  readonly requests: MonitorRequests;
  readonly callback: MonitorCallback;
  /** The server accepted it once; only then is it re-issued after a reconnection. */
  established: boolean;
}

export class OvsdbClient extends EventEmitter<OvsdbClientEvents> {
  readonly endpoint: OvsdbEndpoint;
  private readonly timeoutMs: number;
  private readonly maxMessageBytes: number | undefined;

  private connection: RpcConnection | undefined;
  private currentState: OvsdbClientState = 'connected';
  /** Requests in flight, by JSON-RPC id; the meta is the method, named in the errors of a lost connection. */
  private readonly pending = new RequestTable<string, RpcResult | RpcErrorReply>();
  private readonly monitors = new Map<string, ActiveMonitor>();
  /** Dials again after a drop; undefined with `reconnect: false`. */
  private readonly reconnector: Reconnector<RpcConnection> | undefined;

  private constructor(options: OvsdbClientOptions) {
    super();
    this.endpoint = parseEndpoint(options.endpoint, 'OVSDB');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
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
    return this.request('list_dbs', [], options, undefined, (result) => {
      if (!Array.isArray(result) || !result.every((name) => typeof name === 'string')) {
        throw new OvsdbDecodeError('bad-datum', `list_dbs returned ${JSON.stringify(result)}, not an array of names`);
      }
      return result as string[];
    });
  }

  getSchema(db: string, options: RequestOptions = {}): Promise<DatabaseSchema> {
    return this.request('get_schema', [db], options, db, schemaFromJson);
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
    return this.request('transact', params, options, db, (result) => transactResultsFromJson(db, operations, result));
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
    if (this.monitors.has(monitorId))
      throw new RangeError(`OVSDB monitor id ${JSON.stringify(monitorId)} is already in use on this client`);
    const monitor: ActiveMonitor = { db, requests, callback: onUpdate, established: false };
    this.monitors.set(monitorId, monitor);
    try {
      return await this.startMonitor(monitorId, monitor, 'initial', options);
    } catch (error) {
      if (this.monitors.get(monitorId) === monitor) this.monitors.delete(monitorId);
      throw error;
    }
  }

  /** Stops a monitor: no callback after this is called. Unknown ids are ignored. */
  async monitorCancel(monitorId: string, options: RequestOptions = {}): Promise<void> {
    const monitor = this.monitors.get(monitorId);
    if (monitor === undefined) return;
    this.monitors.delete(monitorId);
    if (this.currentState !== 'connected' || !monitor.established) return;
    try {
      await this.request('monitor_cancel', [monitorId], options, monitor.db, () => undefined);
    } catch (error) {
      // Gone already (e.g. never re-established after a reconnection): that is the goal.
      if (!(error instanceof OvsdbError && error.error === 'unknown monitor')) throw error;
    }
  }

  /**
   * Asks for lock `lockId` (RFC 7047 §4.1.8; an <id>: letters, digits, `_`): true if
   * granted now; otherwise the server queues the request and a `locked` event follows
   * when it is granted.
   */
  lock(lockId: string, options: RequestOptions = {}): Promise<boolean> {
    if (!isOvsdbId(lockId)) return Promise.reject(lockIdError(lockId));
    return this.request('lock', [lockId], options, undefined, (result) => lockedFromJson('lock', result));
  }

  unlock(lockId: string, options: RequestOptions = {}): Promise<void> {
    if (!isOvsdbId(lockId)) return Promise.reject(lockIdError(lockId));
    return this.request('unlock', [lockId], options, undefined, () => undefined);
  }

  /** Round trip to the server; resolves with the params it echoed. */
  echo(params: readonly JsonValue[] = [], options: RequestOptions = {}): Promise<JsonValue[]> {
    return this.request('echo', params, options, undefined, (result) => {
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
    this.pending.failAll(
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

  // --- Requests ----------------------------------------------------------------------

  private request<T>(
    method: string,
    params: readonly JsonValue[],
    options: RequestOptions,
    db: string | undefined,
    decode: (result: JsonValue) => T,
  ): Promise<T> {
    const connection = this.connection;
    if (this.currentState === 'closed') {
      return Promise.reject(new UnavailableError(`the OVSDB client for ${this.endpoint.text} is closed (${method})`));
    }
    if (connection === undefined || !connection.isOpen) {
      return Promise.reject(
        new UnavailableError(`OVSDB connection ${this.endpoint.text} is down (${method})`, {
          hint: 'the client is reconnecting; retry after its "reconnected" event',
        }),
      );
    }
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    return this.pending.start({
      meta: method,
      timeoutMs,
      signal: options.signal,
      timeoutError: () => new OvsdbTimeoutError(method, this.endpoint.text, timeoutMs),
      accept: (reply) => {
        if (reply.kind === 'error') throw new OvsdbError({ method, db, ...errorObjectFromJson(reply.error) });
        return decode(reply.result);
      },
      send: (id) => connection.send({ kind: 'request', method, params, id }),
      // Tell the server, so that a transaction blocked in "wait" stops too.
      abandon: (id) => {
        if (this.connection === connection) connection.send({ kind: 'notification', method: 'cancel', params: [id] });
      },
    });
  }

  // --- Incoming messages -------------------------------------------------------------

  private onMessage(message: RpcMessage, connection: RpcConnection): void {
    switch (message.kind) {
      case 'result':
      case 'error':
        if (typeof message.id === 'number') this.pending.settle(message.id, message);
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
      case 'update': {
        if (typeof first !== 'string') return; // not one of ours: every id this client uses is a string
        const monitor = this.monitors.get(first);
        if (monitor === undefined) return; // cancelled while the update was on its way
        this.deliver(monitor, tableUpdatesFromJson(second, `monitor ${first} update`), 'update');
        return;
      }
      case 'locked':
      case 'stolen':
        if (typeof first === 'string') this.emit(message.method, first);
        return;
      default:
        return;
    }
  }

  private deliver(monitor: ActiveMonitor, updates: TableUpdates, reason: MonitorUpdateReason): void {
    try {
      monitor.callback(updates, reason);
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }

  private startMonitor(
    monitorId: string,
    monitor: ActiveMonitor,
    reason: MonitorUpdateReason,
    options: RequestOptions,
  ): Promise<TableUpdates> {
    const params = [monitor.db, monitorId, monitorRequestsToJson(monitor.requests)];
    return this.request('monitor', params, options, monitor.db, (result) => {
      const initial = tableUpdatesFromJson(result, `monitor ${monitorId} initial state`);
      // Delivered here, while handling the reply, so that no update can overtake it.
      if (this.monitors.get(monitorId) === monitor) {
        monitor.established = true;
        this.deliver(monitor, initial, reason);
      } else {
        // monitorCancel() came while the server was setting it up: cancel it there too.
        this.request('monitor_cancel', [monitorId], {}, monitor.db, () => undefined).catch(() => {});
      }
      return initial;
    });
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
    this.pending.failAll(
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
    const monitors = await this.resyncMonitors(connection);
    // Dropped again while resyncing: the close handler has started the next round.
    if (this.connection !== connection) return;
    this.emit('reconnected', { attempts, monitors });
  }

  /** Re-issues every established monitor; returns the ids that are back. */
  private async resyncMonitors(connection: RpcConnection): Promise<string[]> {
    const resynced: string[] = [];
    const monitors = [...this.monitors].filter(([, monitor]) => monitor.established);
    await Promise.all(
      monitors.map(async ([monitorId, monitor]) => {
        try {
          await this.startMonitor(monitorId, monitor, 'resync', {});
          resynced.push(monitorId);
        } catch (error) {
          if (this.connection !== connection) return; // lost again: the next round retries
          const failure = error instanceof Error ? error : new Error(String(error));
          if (error instanceof OvsdbError) {
            // The server refuses it now (a table gone from the schema?): retrying cannot help.
            if (this.monitors.get(monitorId) === monitor) this.monitors.delete(monitorId);
            this.emit('monitorError', { monitorId, error: failure });
          } else {
            // A timeout or a bad reply: start over on a fresh connection.
            connection.close(failure);
          }
        }
      }),
    );
    return resynced;
  }
}
