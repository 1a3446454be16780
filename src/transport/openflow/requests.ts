/**
 * OpenFlow requests in flight, by xid (runtime/request-table.ts): a reply or OFPT_ERROR
 * with a request's xid settles it. An error becomes an `OpenFlowError` naming the error
 * and the request; a multipart reply settles with its last part (each part restarts the
 * timeout). Batch members (requests without a reply) are settled only by an error.
 */
import { UnavailableError } from '../../errors.js';
import { summarize } from '../../protocol/openflow/describe.js';
import type { ErrorMessage } from '../../protocol/openflow/error-message.js';
import { OpenFlowError, type FailedRequest } from '../../protocol/openflow/errors.js';
import * as codec from '../../protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { describeOfpType, type OfpTypeName } from '../../protocol/openflow/message-type.js';
import type { MultipartReply } from '../../protocol/openflow/multipart.js';
import { MULTIPART_MORE } from '../../protocol/openflow/multipart-type.js';
import { readU32BE } from '../../wire/bytes.js';
import { RequestTable } from '../../runtime/request-table.js';
import { replySpec, type ReplyFor, type RequestMessage, type RequestType } from './reply-types.js';

export interface RequestOptions {
  /** Overrides the connection's timeoutMs for this request. */
  timeoutMs?: number;
  /**
   * A batch: written at once with a barrier of its own, ahead of the batches waiting for a
   * barrier slot (a quiet pod's join must not wait behind a flood's syncs). The switch still
   * applies it after what is already on the wire.
   */
  expedite?: boolean;
  /**
   * A batch: called once its last message is written to the socket, before the barrier is
   * answered (what follows is the switch's share of the time).
   */
  onWritten?: () => void;
}

/** How a batch goes out: ahead of the others or not, and who hears that it is written. */
export type BatchOptions = Pick<RequestOptions, 'expedite' | 'onWritten'>;

interface PendingRequest {
  readonly request: OpenFlowMessage;
  /** The reply type that settles it; undefined for a batch member, which only an error settles. */
  readonly replyType: OfpTypeName | undefined;
  readonly parts: MultipartReply[];
}

export interface OpenFlowRequestsOptions {
  readonly endpoint: string;
  /** The default time limit of a request. */
  readonly timeoutMs: number;
  /** Writes messages under xids on the current link; throws when there is none. */
  readonly write: (messages: readonly OpenFlowMessage[], xids: readonly number[]) => void;
}

/** Settles batch members left at the end of their batch; never an OpenFlowError, so never taken for one. */
const BATCH_DONE = new Error('batch finished');

export class OpenFlowRequests {
  private readonly table = new RequestTable<PendingRequest, OpenFlowMessage>({ maxId: 0xffffffff });

  constructor(private readonly options: OpenFlowRequestsOptions) {}

  allocateXid(): number {
    return this.table.allocateId();
  }

  /** Sends `message` and resolves with its reply, typed by the request (see reply-types.ts). */
  transact<K extends RequestType>(message: RequestMessage<K>, options: RequestOptions = {}): Promise<ReplyFor[K]> {
    const spec = replySpec<K>(message.type);
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    return this.table.start({
      meta: { request: message, replyType: spec.replyType, parts: [] },
      timeoutMs,
      timeoutError: (xid) =>
        new UnavailableError(
          `no reply from OpenFlow switch at ${this.options.endpoint} to ${summarize(message, xid)} within ${timeoutMs} ms`,
          {
            hint: 'is ovs-vswitchd overloaded or hung?',
          },
        ),
      accept: (reply, pending) => spec.accept(reply, pending.parts),
      send: (xid) => this.options.write([message], [xid]),
    });
  }

  /**
   * Registers batch members under `xids` (already written, or about to be): each error for
   * one of them lands in `errors` by index. Returns what ends their registration.
   */
  watchBatch(
    messages: readonly OpenFlowMessage[],
    xids: readonly number[],
    errors: Map<number, OpenFlowError>,
  ): () => void {
    messages.forEach((request, index) => {
      this.table
        .start({
          id: xids[index]!,
          meta: { request, replyType: undefined, parts: [] },
          timeoutMs: 0,
          accept: () => undefined,
          send: () => undefined,
        })
        .catch((error: unknown) => {
          if (error instanceof OpenFlowError) errors.set(index, error);
        });
    });
    return () => {
      for (const xid of xids) this.table.fail(xid, BATCH_DONE);
    };
  }

  /** A reply (not ERROR): true if a request took it (or a part of it). */
  onReply(message: OpenFlowMessage): boolean {
    const pending = this.table.get(message.xid);
    if (pending === undefined || pending.replyType !== message.type) return false;
    if (message.type === 'MULTIPART_REPLY') {
      pending.parts.push(message);
      if (message.flags & MULTIPART_MORE) {
        this.table.restartTimer(message.xid); // each part restarts the clock
        return true;
      }
    }
    this.table.settle(message.xid, message);
    return true;
  }

  /**
   * An OFPT_ERROR: the request it fails is rejected; one for no request in flight is returned for the `switch-error`
   * event.
   */
  onError(message: ErrorMessage): OpenFlowError | undefined {
    const pending = this.table.get(message.xid);
    const request: FailedRequest = pending
      ? {
          type: describeOfpType(codec.typeNumberOf(pending.request)),
          xid: message.xid,
          summary: summarize(pending.request, message.xid),
        }
      : { type: describeOfpType(message.data[1] ?? -1), xid: message.xid };
    const error = new OpenFlowError(message, request, this.options.endpoint);
    if (!pending) return error;
    this.table.fail(message.xid, error);
    return undefined;
  }

  /** A message that could not be decoded: true if it failed the request waiting for its xid. */
  onUndecodable(bytes: Uint8Array, error: Error): boolean {
    const xid = bytes.length >= 8 ? readU32BE(bytes, 4) : -1;
    const pending = this.table.get(xid);
    if (pending === undefined || pending.replyType === undefined) return false;
    this.table.fail(xid, error);
    return true;
  }

  failAll(error: Error): void {
    this.table.failAll(() => error);
  }
}
