/**
 * Push-style framing of an OpenFlow byte stream (pg-protocol style): feed it chunks as
 * they arrive, split anywhere, and it hands each whole message to a callback. Every
 * message starts with the 8-octet header whose `length` counts the whole message, so no
 * other knowledge of the protocol is needed here; decoding is message.ts's business.
 *
 * Fast path: a message wholly inside the chunk being pushed is delivered as a view of
 * that chunk (no copy); only a message that straddles chunks is assembled in a carry
 * buffer of its own. A message's octets are valid until the next push(); the decoders
 * copy what they keep (`slice`), so decoded messages live on.
 */
import { OpenFlowDecodeError } from './errors.js';
import { HEADER_LENGTH } from './header.js';

export type MessageHandler = (message: Uint8Array) => void;

const NO_CARRY = new Uint8Array(0);

export class OpenFlowFramer {
  private carry: Uint8Array = NO_CARRY;
  private carryLength = 0;
  /** Octets the carried message needs: 8 while its header is incomplete, then its length. */
  private carryNeed = 0;
  private failure: unknown;
  private failed = false;
  private pushedCount = 0;

  constructor(private readonly onMessage: MessageHandler) {}

  /** Octets pushed so far. */
  get bytesPushed(): number {
    return this.pushedCount;
  }

  /** Octets of an incomplete message waiting for the next chunk. */
  get pending(): number {
    return this.carryLength;
  }

  /**
   * Delivers every message completed by `chunk`, in order. Throws OpenFlowDecodeError
   * (`bad-length`) for a header whose length is below 8: the stream cannot be framed after
   * that, so every later call throws it again (as it does after onMessage threw).
   */
  push(chunk: Uint8Array): void {
    if (this.failed) throw this.failure;
    try {
      this.pushedCount += chunk.length;
      let pos = this.carryLength > 0 ? this.completeCarried(chunk) : 0;
      if (this.carryLength > 0) return;
      while (chunk.length - pos >= HEADER_LENGTH) {
        const length = lengthAt(chunk, pos);
        if (pos + length > chunk.length) break;
        const message = chunk.subarray(pos, pos + length);
        pos += length;
        this.onMessage(message);
      }
      if (pos < chunk.length) this.startCarry(chunk, pos);
    } catch (error) {
      this.failed = true;
      this.failure = error;
      throw error;
    }
  }

  private startCarry(chunk: Uint8Array, pos: number): void {
    const remaining = chunk.length - pos;
    this.carryNeed = remaining >= HEADER_LENGTH ? lengthAt(chunk, pos) : HEADER_LENGTH;
    this.carryLength = 0;
    this.append(chunk, pos, remaining);
  }

  /** Feeds the carried message from the start of `chunk`; returns how many octets it took. */
  private completeCarried(chunk: Uint8Array): number {
    let pos = 0;
    for (;;) {
      const take = Math.min(this.carryNeed - this.carryLength, chunk.length - pos);
      this.append(chunk, pos, take);
      pos += take;
      if (this.carryLength < this.carryNeed) return pos;
      if (this.carryNeed === HEADER_LENGTH) {
        const length = lengthAt(this.carry, 0);
        if (length > HEADER_LENGTH) {
          this.carryNeed = length;
          continue;
        }
      }
      const message = this.carry.subarray(0, this.carryLength);
      // The message is a view of the carry: start a new one rather than overwrite it.
      this.carry = NO_CARRY;
      this.carryLength = 0;
      this.onMessage(message);
      return pos;
    }
  }

  private append(chunk: Uint8Array, pos: number, count: number): void {
    const needed = this.carryLength + count;
    if (needed > this.carry.length) {
      const grown = new Uint8Array(Math.max(this.carryNeed, needed));
      grown.set(this.carry.subarray(0, this.carryLength));
      this.carry = grown;
    }
    this.carry.set(chunk.subarray(pos, pos + count), this.carryLength);
    this.carryLength = needed;
  }
}

function lengthAt(bytes: Uint8Array, pos: number): number {
  const length = (bytes[pos + 2]! << 8) | bytes[pos + 3]!;
  if (length < HEADER_LENGTH) {
    throw new OpenFlowDecodeError(
      'bad-length',
      `OpenFlow message length ${length} is below the 8-octet header: the stream is out of step`,
    );
  }
  return length;
}
