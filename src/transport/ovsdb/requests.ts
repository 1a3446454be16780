/**
 * The OVSDB client's requests in flight, by JSON-RPC id (runtime/request-table.ts): sending
 * one on the current connection, its timeout and abort, and settling it with its reply.
 * Apart from the client so that the monitors (monitors.ts) send their requests the same way
 * as every other method, without reaching into the client.
 */
import { UnavailableError } from '../../errors.js';
import { errorObjectFromJson } from '../../protocol/ovsdb/error-object.js';
import { OvsdbError, OvsdbTimeoutError } from '../../protocol/ovsdb/errors.js';
import type { JsonValue, RpcErrorReply, RpcResult } from '../../protocol/ovsdb/rpc.js';
import { RequestTable } from '../../runtime/request-table.js';
import type { Endpoint as OvsdbEndpoint } from '../../wire/endpoint.js';
import type { RpcConnection } from './connection.js';

export interface RequestOptions {
  /** Overrides the client's timeout for this request (0: none). */
  readonly timeoutMs?: number;
  /** Abandons the request: it rejects with the signal's reason, and is cancelled on the server. */
  readonly signal?: AbortSignal;
}

export interface OvsdbRequestsContext {
  readonly endpoint: OvsdbEndpoint;
  /** The default timeout of a request (0: none). */
  readonly timeoutMs: number;
  /** The client's connection now; undefined while there is none. */
  readonly connection: () => RpcConnection | undefined;
  /** The client was closed for good. */
  readonly closed: () => boolean;
}

export class OvsdbRequests {
  /** Requests in flight, by JSON-RPC id; the meta is the method, named in the errors of a lost connection. */
  private readonly pending = new RequestTable<string, RpcResult | RpcErrorReply>();

  constructor(private readonly context: OvsdbRequestsContext) {}

  /** Sends `method` on the current connection; resolves with its result as `decode` reads it. */
  send<T>(
    method: string,
    params: readonly JsonValue[],
    options: RequestOptions,
    db: string | undefined,
    decode: (result: JsonValue) => T,
  ): Promise<T> {
    const { endpoint } = this.context;
    const connection = this.context.connection();
    if (this.context.closed()) {
      return Promise.reject(new UnavailableError(`the OVSDB client for ${endpoint.text} is closed (${method})`));
    }
    if (connection === undefined || !connection.isOpen) {
      return Promise.reject(
        new UnavailableError(`OVSDB connection ${endpoint.text} is down (${method})`, {
          hint: 'the client is reconnecting; retry after its "reconnected" event',
        }),
      );
    }
    const timeoutMs = options.timeoutMs ?? this.context.timeoutMs;
    return this.pending.start({
      meta: method,
      timeoutMs,
      signal: options.signal,
      timeoutError: () => new OvsdbTimeoutError(method, endpoint.text, timeoutMs),
      accept: (reply) => {
        if (reply.kind === 'error') throw new OvsdbError({ method, db, ...errorObjectFromJson(reply.error) });
        return decode(reply.result);
      },
      send: (id) => connection.send({ kind: 'request', method, params, id }),
      // Tell the server, so that a transaction blocked in "wait" stops too.
      abandon: (id) => {
        if (this.context.connection() === connection)
          connection.send({ kind: 'notification', method: 'cancel', params: [id] });
      },
    });
  }

  /** A reply from the server: it settles the request with its id, if one still waits. */
  onReply(message: RpcResult | RpcErrorReply): void {
    if (typeof message.id === 'number') this.pending.settle(message.id, message);
  }

  /** Rejects every request in flight, with the error `errorFor` makes from its method. */
  failAll(errorFor: (method: string) => Error): void {
    this.pending.failAll(errorFor);
  }
}
