/**
 * One control-socket client connection and its limits: request lines at most
 * MAX_REQUEST_BYTES long, no reading while its answers are not read, dropped past
 * MAX_CLIENT_BUFFER_BYTES of unread output, closed after CLIENT_IDLE_TIMEOUT_MS without a
 * request (unless it follows `events`).
 */
import type { Socket } from 'node:net';
import { parseRequestLine, type ControlRequest, type ControlResponse } from './control-protocol.js';

/** The longest request line the server reads (a request is a few dozen bytes). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** A client whose unread output grows past this is dropped, whether it is answers or events. */
export const MAX_CLIENT_BUFFER_BYTES = 1024 * 1024;
/** A client that sends no request for this long is closed, unless it follows `events`. */
export const CLIENT_IDLE_TIMEOUT_MS = 30_000;
/** Requests of one client whose answers wait for the kernel (`routes`); its next requests wait for them. */
const MAX_PENDING_REQUESTS = 8;
/** How long a last error line may take to leave before the connection is destroyed anyway. */
export const LAST_LINE_GRACE_MS = 1000;

/** What a connection needs of the server it belongs to. */
export interface ConnectionOwner {
  /** Answers one request of `client`. */
  handle(client: ControlConnection, request: ControlRequest): void;
  /** Drops a client whose unread output passed MAX_CLIENT_BUFFER_BYTES. */
  dropSlowClient(client: ControlConnection, what: 'answers' | 'events'): void;
}

/**
 * One client connection: splits request lines and answers them in order. It stops reading
 * while its answers are not being read (the socket's buffer is full) or while too many wait
 * for the kernel, and resumes on 'drain'; while it reads, a client that closes is seen at once.
 */
export class ControlConnection {
  /** Received bytes not yet taken as request lines: a partial line, or lines held while blocked. */
  private input: Buffer = Buffer.alloc(0);
  private backedUp = false;
  /** A last line was sent: what the client sends now is ignored until the socket is destroyed. */
  private finished = false;
  private readonly idleTimer: NodeJS.Timeout | undefined;
  /** @internal Requests whose answers wait for the kernel. */
  pendingRequests = 0;

  constructor(
    readonly socket: Socket,
    private readonly owner: ConnectionOwner,
    private readonly idleTimeoutMs: number,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy()); // a client going away is not the daemon's problem
    socket.on('drain', () => {
      this.backedUp = false;
      this.idleTimer?.refresh(); // the client is reading: not idle
      this.readMore();
    });
    if (idleTimeoutMs > 0) {
      this.idleTimer = setTimeout(() => this.onIdle(), idleTimeoutMs);
      this.idleTimer.unref();
      socket.once('close', () => clearTimeout(this.idleTimer));
    }
  }

  /** Sends an answer; drops the client when what it has not read already passes MAX_CLIENT_BUFFER_BYTES. */
  send(response: ControlResponse): void {
    if (this.socket.destroyed || this.finished) return;
    if (this.socket.writableLength > MAX_CLIENT_BUFFER_BYTES) {
      this.owner.dropSlowClient(this, 'answers');
      return;
    }
    this.write(JSON.stringify(response) + '\n');
  }

  write(line: string): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    if (!this.socket.write(line)) this.backedUp = true;
  }

  /** Subscribed to `events`: it may stay connected without sending requests. */
  subscribed(): void {
    clearTimeout(this.idleTimer);
  }

  /** Takes the request lines received so far while the client is not blocked, then reads on or pauses. */
  readMore(): void {
    while (!this.blocked()) {
      const newline = this.input.indexOf(0x0a);
      if (newline === -1 ? this.input.length > MAX_REQUEST_BYTES : newline > MAX_REQUEST_BYTES) {
        this.tooLong();
        return;
      }
      if (newline === -1) break;
      const line = this.input.subarray(0, newline);
      this.input = this.input.subarray(newline + 1);
      this.onLine(line.toString('utf8'));
    }
    if (this.socket.destroyed || this.finished) return;
    if (this.blocked()) this.socket.pause();
    else this.socket.resume();
  }

  private blocked(): boolean {
    return this.socket.destroyed || this.finished || this.backedUp || this.pendingRequests >= MAX_PENDING_REQUESTS;
  }

  private onData(chunk: Buffer): void {
    if (this.finished) return;
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    this.readMore();
  }

  private tooLong(): void {
    this.finish({
      id: null,
      error: {
        code: 'request-too-long',
        message: `a request line is longer than ${MAX_REQUEST_BYTES} bytes; closing the connection`,
      },
    });
  }

  private onIdle(): void {
    if (this.pendingRequests > 0) {
      this.idleTimer?.refresh(); // waiting for our answer is not idleness
      return;
    }
    this.finish({
      id: null,
      error: { code: 'idle-timeout', message: `no request in ${this.idleTimeoutMs} ms; closing the connection` },
    });
  }

  /** Sends a last line and destroys the connection, reading (and ignoring) what the client sends meanwhile. */
  private finish(response: ControlResponse): void {
    this.finished = true;
    this.input = Buffer.alloc(0);
    clearTimeout(this.idleTimer);
    this.socket.resume();
    sendLastLine(this.socket, response);
  }

  private onLine(text: string): void {
    if (text.trim() === '') return;
    this.idleTimer?.refresh(); // any line but a blank one counts as a request, even a bad one
    const parsed = parseRequestLine(text);
    if ('refusal' in parsed) this.send(parsed.refusal);
    else this.owner.handle(this, parsed.request);
  }
}

/**
 * Writes one last line and destroys the socket once the kernel has it, or after
 * LAST_LINE_GRACE_MS when it cannot take it (a client that does not read): never a
 * half-close that waits for the client to close its side.
 */
export function sendLastLine(socket: Socket, response: ControlResponse): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), LAST_LINE_GRACE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.write(JSON.stringify(response) + '\n', () => socket.destroy());
}
