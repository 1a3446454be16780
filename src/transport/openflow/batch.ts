/**
 * Pipelined batches: messages the switch does not answer (FLOW_MOD, GROUP_MOD, SET_*,
 * PACKET_OUT) written back to back, as fast as the socket takes them (backpressure), then
 * one barrier. OVS answers in order, so every error for them arrives before the barrier's
 * reply.
 *
 * Batches share barriers: at most MAX_BARRIERS_IN_FLIGHT are unanswered at a time, and the
 * batches asked for meanwhile go out together behind one barrier as soon as one is
 * answered. A lone batch goes at once; under load (the daemon syncing thousands of groups,
 * a few groups a batch) the switch gets a few large batches instead of one round trip per
 * group, so the number of groups in flight, not the round trip, bounds the sync rate.
 *
 * An expedited batch does not wait for a slot: it goes at once behind a barrier of its own
 * (one more in flight), so what waits for a slot is only ever the bulk. Reordering batches
 * not yet written is safe: they are independent (the callers run them concurrently), and
 * the switch keeps the order of what it was sent.
 */
import { UnavailableError } from '../../errors.js';
import type { OpenFlowError } from '../../protocol/openflow/errors.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { encodeChunks, type OpenFlowLink } from './link.js';
import type { OpenFlowRequests, RequestOptions } from './requests.js';

/** What came back for a batch: the errors, by index into the batch. An empty map: all applied. */
export interface BatchResult {
  errors: Map<number, OpenFlowError>;
}

export interface BatchContext {
  readonly endpoint: string;
  /** The default time limit of the whole batch. */
  readonly timeoutMs: number;
  readonly requests: OpenFlowRequests;
  /** The current link, if any. */
  readonly link: () => OpenFlowLink | undefined;
}

/** A BARRIER_REQUEST: a bare header. */
const BARRIER_OCTETS = 8;

/** Two: one barrier's batch in the switch while the next is on the wire. */
const MAX_BARRIERS_IN_FLIGHT = 2;

interface QueuedBatch {
  chunks: Uint8Array[];
  /** Date.now() by which the batch must be written and answered. */
  deadline: number;
  timeoutMs: number;
  onWritten: (() => void) | undefined;
  errors: Map<number, OpenFlowError>;
  unwatch: () => void;
  resolve: (result: BatchResult) => void;
  reject: (error: unknown) => void;
}

export class BatchSender {
  private readonly queued: QueuedBatch[] = [];
  private inFlight = 0;

  constructor(private readonly context: BatchContext) {}

  get requests(): OpenFlowRequests {
    return this.context.requests;
  }

  /**
   * Sends `messages` and a barrier (perhaps shared with other batches); resolves with the
   * switch's errors by index, rejects only when the connection fails. Every message is
   * encoded before the first is sent, so a message that cannot be encoded (RangeError)
   * sends none of them.
   */
  send(messages: readonly OpenFlowMessage[], options: RequestOptions = {}): Promise<BatchResult> {
    const { requests } = this.context;
    const xids = messages.map(() => requests.allocateXid());
    const chunks = encodeChunks(messages, xids); // validate everything before sending anything
    const errors = new Map<number, OpenFlowError>();
    const unwatch = requests.watchBatch(messages, xids, errors);
    const timeoutMs = options.timeoutMs ?? this.context.timeoutMs;
    return new Promise<BatchResult>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      const batch = { chunks, deadline, timeoutMs, onWritten: options.onWritten, errors, unwatch, resolve, reject };
      // With a slot free nothing waits (pump drains the queue whenever one frees): either way it goes now.
      if (options.expedite === true && this.inFlight >= MAX_BARRIERS_IN_FLIGHT) this.sendNow([batch]);
      else {
        this.queued.push(batch);
        this.pump();
      }
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_BARRIERS_IN_FLIGHT && this.queued.length > 0) this.sendNow(this.queued.splice(0));
  }

  private sendNow(batches: readonly QueuedBatch[]): void {
    this.inFlight++;
    void this.sendTogether(batches).finally(() => {
      this.inFlight--;
      this.pump();
    });
  }

  /**
   * Writes every batch, each in order and whole, then one barrier for them all; a few
   * small batches and the barrier in one write.
   */
  private async sendTogether(batches: readonly QueuedBatch[]): Promise<void> {
    const octets = batches.reduce((sum, batch) => sum + batch.chunks.reduce((n, chunk) => n + chunk.length, 0), 0);
    let release = this.context.link()?.holdWrites(octets + BARRIER_OCTETS);
    try {
      for (const batch of batches) {
        for (const chunk of batch.chunks) {
          const link = this.context.link();
          if (!link)
            throw new UnavailableError(`OpenFlow connection ${this.context.endpoint} lost while sending`, {
              hint: 'is ovs-vswitchd running?',
            });
          // One time limit for each whole batch: a switch that stops reading must not leave
          // the writes waiting for a drain forever (the barrier's own timer starts only after them).
          const drained = link.writeChunk(chunk, batch.deadline, batch.timeoutMs);
          if (drained !== undefined) await drained;
        }
        if (release === undefined) batch.onWritten?.();
      }
      const latest = Math.max(...batches.map((batch) => batch.deadline));
      const barrier = this.context.requests.transact(
        { type: 'BARRIER_REQUEST', xid: 0 },
        { timeoutMs: Math.max(1, latest - Date.now()) },
      );
      if (release !== undefined) {
        release();
        release = undefined;
        for (const batch of batches) batch.onWritten?.();
      }
      await barrier;
      for (const batch of batches) {
        batch.unwatch();
        batch.resolve({ errors: batch.errors });
      }
    } catch (error) {
      for (const batch of batches) {
        batch.unwatch();
        batch.reject(error);
      }
    } finally {
      release?.();
    }
  }
}
