/**
 * Requests in flight on one connection, by id: the one correlation engine behind the
 * OpenFlow connection (xids), the OVSDB client (JSON-RPC ids) and the control client.
 *
 * A request settles exactly once: with its reply (turned into the promised value by the
 * caller's `accept`, which runs synchronously as the reply is handled), with an error
 * (`fail`), on its timeout or abort (after `abandon` has been told), or when the
 * connection goes (`failAll`). A reply that comes after the request settled finds nothing
 * and is dropped: `settle` returns false.
 */

export interface RequestTableOptions {
  /** The highest id handed out; after it, ids start again at 1, skipping those in flight (default 2^53 - 1). */
  readonly maxId?: number;
}

export interface RequestSpec<Meta, Reply, T> {
  /** What the owner wants to know about the request while it is in flight (its method, its message, ...). */
  readonly meta: Meta;
  /** 0: no timeout. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** The error a timeout rejects with. */
  readonly timeoutError?: (id: number, meta: Meta) => Error;
  /** Turns the reply into the promised value; throwing rejects the request instead. */
  readonly accept: (reply: Reply, meta: Meta) => T;
  /** Sends the request with this id; throwing rejects the request (and nothing stays in flight). */
  readonly send: (id: number) => void;
  /** This side gave up on request `id` (timeout or abort): e.g. tell the peer. */
  readonly abandon?: (id: number, meta: Meta) => void;
  /** Use this id (from allocateId()) instead of a fresh one. */
  readonly id?: number;
}

interface Entry<Meta, Reply> {
  readonly meta: Meta;
  readonly settle: (reply: Reply) => void;
  readonly fail: (error: unknown) => void;
  readonly restartTimer: () => void;
}

export class RequestTable<Meta, Reply> {
  private readonly entries = new Map<number, Entry<Meta, Reply>>();
  private readonly maxId: number;
  private nextId = 1;

  constructor(options: RequestTableOptions = {}) {
    this.maxId = options.maxId ?? Number.MAX_SAFE_INTEGER;
  }

  get size(): number {
    return this.entries.size;
  }

  /** A fresh id, for a message sent without waiting for a reply (or for start()'s `id`). */
  allocateId(): number {
    for (;;) {
      const id = this.nextId;
      this.nextId = id >= this.maxId ? 1 : id + 1;
      if (!this.entries.has(id)) return id;
    }
  }

  /** The meta of request `id`, while it is in flight. */
  get(id: number): Meta | undefined {
    return this.entries.get(id)?.meta;
  }

  start<T>(spec: RequestSpec<Meta, Reply, T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const { signal, meta } = spec;
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const id = spec.id ?? this.allocateId();
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        this.entries.delete(id);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (error: unknown) => {
        finish();
        spec.abandon?.(id, meta);
        reject(error);
      };
      const onAbort = () => giveUp(signal?.reason);
      const restartTimer = () => {
        if (spec.timeoutMs <= 0) return;
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(
          () =>
            giveUp(spec.timeoutError?.(id, meta) ?? new Error(`no reply to request ${id} within ${spec.timeoutMs} ms`)),
          spec.timeoutMs,
        );
      };
      this.entries.set(id, {
        meta,
        settle: (reply) => {
          finish();
          try {
            resolve(spec.accept(reply, meta));
          } catch (error) {
            reject(error);
          }
        },
        fail: (error) => {
          finish();
          reject(error);
        },
        restartTimer,
      });
      restartTimer();
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        spec.send(id);
      } catch (error) {
        finish();
        reject(error);
      }
    });
  }

  /** Hands a reply to request `id`; false if none waits for it (it timed out, or it is not ours). */
  settle(id: number, reply: Reply): boolean {
    const entry = this.entries.get(id);
    entry?.settle(reply);
    return entry !== undefined;
  }

  /** Rejects request `id` with `error`; false if none waits. */
  fail(id: number, error: unknown): boolean {
    const entry = this.entries.get(id);
    entry?.fail(error);
    return entry !== undefined;
  }

  /** Starts request `id`'s timeout again (a reply in several parts: each part shows the peer is working). */
  restartTimer(id: number): void {
    this.entries.get(id)?.restartTimer();
  }

  /** Rejects every request in flight, with an error made for each. */
  failAll(errorFor: (meta: Meta) => unknown): void {
    for (const entry of [...this.entries.values()]) entry.fail(errorFor(entry.meta));
  }
}
