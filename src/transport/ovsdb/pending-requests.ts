/**
 * Requests in flight on one client: ids, replies matched to them, timeouts and aborts.
 *
 * A request settles exactly once: with its reply (decoded by the caller's `decode`, which
 * runs synchronously as the reply is handled), with an error reply (OvsdbError), on its
 * timeout or abort (after `abandon` has told the server), or when the connection goes
 * (`failAll`). A reply that comes after the request settled finds nothing and is dropped.
 */
import { errorObjectFromJson } from '../../protocol/ovsdb/error-object.js';
import { OvsdbError } from '../../protocol/ovsdb/errors.js';
import type { JsonValue, RpcErrorReply, RpcResult } from '../../protocol/ovsdb/rpc.js';

export interface PendingRequestSpec<T> {
  readonly method: string;
  /** Named in OvsdbError messages. */
  readonly db: string | undefined;
  /** 0: no timeout. */
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** The error a timeout rejects with. */
  readonly timeoutError: () => Error;
  /** Turns the result into the promised value; throwing rejects the request instead. */
  readonly decode: (result: JsonValue) => T;
  /** Sends the request with this id. */
  readonly send: (id: number) => void;
  /** This side gave up on request `id` (timeout or abort): tell the server. */
  readonly abandon: (id: number) => void;
}

interface Entry {
  readonly method: string;
  readonly settle: (reply: RpcResult | RpcErrorReply) => void;
  readonly fail: (error: Error) => void;
}

export class PendingRequests {
  private readonly entries = new Map<number, Entry>();
  private nextId = 1;

  get size(): number {
    return this.entries.size;
  }

  start<T>(spec: PendingRequestSpec<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const { signal } = spec;
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const id = this.nextId++;
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        this.entries.delete(id);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (error: unknown) => {
        finish();
        spec.abandon(id);
        reject(error);
      };
      const onAbort = () => giveUp(signal?.reason);
      this.entries.set(id, {
        method: spec.method,
        settle: (reply) => {
          finish();
          if (reply.kind === 'error') {
            reject(new OvsdbError({ method: spec.method, db: spec.db, ...errorObjectFromJson(reply.error) }));
            return;
          }
          try {
            resolve(spec.decode(reply.result));
          } catch (error) {
            reject(error);
          }
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      });
      if (spec.timeoutMs > 0) timer = setTimeout(() => giveUp(spec.timeoutError()), spec.timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      spec.send(id);
    });
  }

  /** Hands a reply to its request; false if no request waits for it (ours timed out, or not ours). */
  settle(reply: RpcResult | RpcErrorReply): boolean {
    const entry = typeof reply.id === 'number' ? this.entries.get(reply.id) : undefined;
    entry?.settle(reply);
    return entry !== undefined;
  }

  /** Fails every request in flight, with an error made for its method. */
  failAll(errorFor: (method: string) => Error): void {
    for (const entry of [...this.entries.values()]) entry.fail(errorFor(entry.method));
  }
}
