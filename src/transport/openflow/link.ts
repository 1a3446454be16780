/**
 * One socket to an OpenFlow switch: dialling (with a time limit), framing what arrives
 * into messages, and writing messages under the connection's xids, with backpressure for
 * batches. It knows nothing of requests, the handshake or reconnection.
 */
import net from 'node:net';
import { UnavailableError, isSystemError } from '../../errors.js';
import { OpenFlowFramer } from '../../protocol/openflow/framer.js';
import * as codec from '../../protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { connectFailure, type Endpoint } from '../../wire/endpoint.js';

/** Batches are encoded into buffers of about this size, each one socket write. */
const BATCH_CHUNK_OCTETS = 256 * 1024;
/** The most holdWrites holds: well below the socket's buffer (16 KiB), so no held write waits for a drain. */
const HELD_WRITE_OCTETS = 8 * 1024;
/** How long a closing link may take to flush before it is destroyed. */
const CLOSE_GRACE_MS = 1000;
export const CONNECT_HINT = 'is ovs-vswitchd running? set --openflow';

export interface LinkHandlers {
  /** Each framed message's bytes, in order. */
  readonly onMessage: (bytes: Uint8Array, link: OpenFlowLink) => void;
  /** Once, when the socket has closed: `failure` is why, undefined if the switch just closed it. */
  readonly onClose: (failure: Error | undefined, link: OpenFlowLink) => void;
}

export interface DialOptions {
  readonly target: Endpoint;
  readonly timeoutMs: number;
}

export class OpenFlowLink {
  /** When the switch last sent anything (Date.now()). */
  lastReceived = Date.now();

  private constructor(
    private readonly socket: net.Socket,
    private readonly endpoint: string,
  ) {}

  /** Connects; rejects as connectFailure() says (UnavailableError, PermissionError, UsageError). */
  static dial(endpoint: string, options: DialOptions, handlers: LinkHandlers): Promise<OpenFlowLink> {
    const { target, timeoutMs } = options;
    return new Promise((resolve, reject) => {
      const socket =
        target.kind === 'unix'
          ? net.connect({ path: target.path })
          : net.connect({ host: target.host, port: target.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          connectFailure(target, 'OpenFlow', `no answer within ${timeoutMs} ms`, { unavailableHint: CONNECT_HINT }),
        );
      }, timeoutMs);
      const onError = (error: Error) => {
        clearTimeout(timer);
        const code = isSystemError(error) ? error.code : error.message;
        // As the OVSDB client's: EACCES is exit 77 whichever socket refused us.
        reject(connectFailure(target, 'OpenFlow', code, { unavailableHint: CONNECT_HINT, cause: error }));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        if (target.kind === 'tcp') socket.setNoDelay(true);
        const link = new OpenFlowLink(socket, endpoint);
        link.attach(handlers);
        resolve(link);
      });
    });
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }

  /**
   * Holds what is written next back until the returned function is called, so that a small
   * batch and its barrier leave in one write (the switch wakes once for them, not twice).
   * Undefined, and nothing held, when `octets` is more than a few pages or the socket
   * already has output waiting: a held write past the socket's buffer would wait for a
   * drain that cannot come.
   */
  holdWrites(octets: number): (() => void) | undefined {
    const socket = this.socket;
    if (octets > HELD_WRITE_OCTETS || socket.writableLength > 0 || socket.destroyed) return undefined;
    socket.cork();
    return () => socket.uncork();
  }

  /** Writes `messages` under `xids` at once, without waiting for the socket's buffer. */
  write(messages: readonly OpenFlowMessage[], xids: readonly number[]): void {
    for (const chunk of encodeChunks(messages, xids)) this.socket.write(chunk);
  }

  /**
   * Writes one chunk. Undefined when the socket took it at once (the caller goes on in the
   * same turn: a join's batch and barrier are written before the packet-in's handler
   * returns); else a promise of the drain, while the socket's buffer is full
   * (backpressure), until `deadline`: past it the switch is taken to be stuck and the link
   * is dropped. Throws when the link is gone.
   */
  writeChunk(chunk: Uint8Array, deadline: number, timeoutMs: number): Promise<void> | undefined {
    const socket = this.socket;
    if (socket.destroyed) throw this.lostWhileSending();
    if (socket.write(chunk)) return undefined;
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        clearTimeout(timer);
        socket.off('drain', drained);
        socket.off('close', closed);
        if (error) reject(error);
        else resolve();
      };
      const drained = () => finish();
      const closed = () => finish(this.lostWhileSending());
      const timer = setTimeout(
        () => {
          const error = new UnavailableError(
            `OpenFlow switch at ${this.endpoint} stopped reading: a batch was not sent within ${timeoutMs} ms`,
            {
              hint: 'is ovs-vswitchd overloaded or stuck?',
            },
          );
          finish(error);
          socket.destroy(error);
        },
        Math.max(1, deadline - Date.now()),
      );
      socket.on('drain', drained);
      socket.once('close', closed);
    });
  }

  destroy(error?: Error): void {
    this.socket.destroy(error);
  }

  /**
   * Ends the link, letting what was written (a HELLO_FAILED error) reach the switch; destroys it after a grace period.
   */
  end(): void {
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Ends the link and resolves once it has closed. */
  async close(): Promise<void> {
    const socket = this.socket;
    if (socket.destroyed) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.end();
    const timer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    await closed;
    clearTimeout(timer);
  }

  private attach(handlers: LinkHandlers): void {
    const framer = new OpenFlowFramer((bytes) => {
      this.lastReceived = Date.now();
      handlers.onMessage(bytes, this);
    });
    let failure: Error | undefined;
    this.socket.on('data', (chunk: Buffer) => {
      try {
        framer.push(chunk);
      } catch (error) {
        // The stream is out of step (a length below 8): nothing after this can be framed.
        this.socket.destroy(error instanceof Error ? error : new Error(String(error)));
      }
    });
    this.socket.on('error', (error) => (failure = error));
    this.socket.on('close', () => handlers.onClose(failure, this));
  }

  private lostWhileSending(): UnavailableError {
    return new UnavailableError(`OpenFlow connection ${this.endpoint} lost while sending`, {
      hint: 'is ovs-vswitchd running?',
    });
  }
}

/** Encodes `messages` with `xids` into buffers of about BATCH_CHUNK_OCTETS (one message may exceed it). */
export function encodeChunks(messages: readonly OpenFlowMessage[], xids: readonly number[]): Uint8Array[] {
  const lengths = messages.map((message) => codec.encodingLength(message));
  const chunks: Uint8Array[] = [];
  for (let first = 0; first < messages.length; ) {
    let size = 0;
    let end = first;
    while (end < messages.length && (end === first || size + lengths[end]! <= BATCH_CHUNK_OCTETS))
      size += lengths[end++]!;
    const chunk = Buffer.alloc(size);
    let offset = 0;
    for (let i = first; i < end; i++) {
      codec.encode(messages[i]!, chunk, offset);
      chunk.writeUInt32BE(xids[i]!, offset + 4); // the connection's xid, not the message's
      offset += lengths[i]!;
    }
    chunks.push(chunk);
    first = end;
  }
  return chunks;
}
