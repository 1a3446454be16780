/**
 * Pipelined batches: messages the switch does not answer (FLOW_MOD, GROUP_MOD, SET_*,
 * PACKET_OUT) written back to back, as fast as the socket takes them (backpressure), then
 * one barrier. OVS answers in order, so every error for them arrives before the barrier's
 * reply.
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

/**
 * Sends `messages` and a barrier; resolves with the switch's errors by index, rejects only
 * when the connection fails. Every message is encoded before the first is sent, so a
 * message that cannot be encoded (RangeError) sends none of them.
 */
export async function sendBatch(context: BatchContext, messages: readonly OpenFlowMessage[], options: RequestOptions = {}): Promise<BatchResult> {
  const { requests } = context;
  const errors = new Map<number, OpenFlowError>();
  const xids = messages.map(() => requests.allocateXid());
  const chunks = encodeChunks(messages, xids); // validate everything before sending anything
  const unwatch = requests.watchBatch(messages, xids, errors);
  // One time limit for the whole batch: a switch that stops reading must not leave the
  // writes waiting for a drain forever (the barrier's own timer starts only after them).
  const timeoutMs = options.timeoutMs ?? context.timeoutMs;
  const deadline = Date.now() + timeoutMs;
  try {
    for (const chunk of chunks) {
      const link = context.link();
      if (!link) throw new UnavailableError(`OpenFlow connection ${context.endpoint} lost while sending`, { hint: 'is ovs-vswitchd running?' });
      await link.writeChunk(chunk, deadline, timeoutMs);
    }
    await requests.transact({ type: 'BARRIER_REQUEST', xid: 0 }, { timeoutMs: Math.max(1, deadline - Date.now()) });
  } finally {
    unwatch();
  }
  return { errors };
}
