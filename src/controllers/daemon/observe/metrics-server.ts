/**
 * The HTTP endpoint of the metrics (`--metrics-address`, GET /metrics), built to outlast a
 * local user who scrapes it in a loop or holds connections open to it:
 * - a scrape is served from a copy of the metrics rendered at most once a second
 *   (MetricsCopy), and one copy answers at most ten scrapes, the others wait for the
 *   next: eight scrapers in a loop cost one render and ten writes a second, where each
 *   would otherwise cost a render, and then thousands of writes a second;
 * - the copy is compressed once when rendered, for the scrapers that accept gzip
 *   (Prometheus does): a tenth of the bytes to write for each of them;
 * - at most `maxConnections` connections: one more closes the connection idle the longest
 *   (never one whose request is being served), so connections held open cannot lock a
 *   scraper out; and a connection idle for `idleTimeoutMs` is closed. Each connection is an
 *   open file of the daemon's, which also needs its files for OVS, the kernel and its state.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { Counter, type Registry } from 'prom-client';
import { isSystemError, McastError, messageOf, PermissionError, quoteInput, UsageError } from '../../../errors.js';
import { parseHostPort } from '../../../wire/endpoint.js';

/** How old a served copy of the metrics may be. */
const METRICS_MAX_AGE_MS = 1000;
/** Scrapes answered with one copy: past them, scrapes wait for the next copy. */
const METRICS_MAX_ANSWERS = 10;
/** Connections served at once; documented in mcastctl-daemon(8). */
const METRICS_MAX_CONNECTIONS = 64;
/** A connection with no request for this long is closed. */
const METRICS_IDLE_TIMEOUT_MS = 10_000;

interface RenderedMetrics {
  /** performance.now() when rendered. */
  at: number;
  text: Buffer;
  gzip: Buffer;
  /** Scrapes answered with it so far. */
  answers: number;
}

interface MetricsCopyOptions {
  registry: Registry;
  maxAgeMs: number;
  maxAnswers: number;
  /** Monotonic milliseconds. */
  now: () => number;
}

/**
 * The metrics text, rendered at most once every `maxAgeMs`; scrapes in between are served
 * the copy, at most `maxAnswers` of them: later ones wait for the next copy. However fast
 * local scrapers loop, the daemon renders once and writes `maxAnswers` copies a period.
 */
class MetricsCopy {
  #copy: RenderedMetrics | undefined;
  #rendering: Promise<RenderedMetrics> | undefined;
  /** Resolves when the current copy is too old to serve (one timer for all who wait). */
  #expiry: Promise<void> | undefined;
  readonly #renders: Counter;

  constructor(private readonly options: MetricsCopyOptions) {
    this.#renders = new Counter({
      name: 'mcastctl_metrics_renders_total',
      help: 'Times the metrics were rendered: at most once a second, whatever the number of scrapes.',
      registers: [options.registry],
    });
  }

  get contentType(): string {
    return this.options.registry.contentType;
  }

  /**
   * A copy at most `maxAgeMs` old with an answer left, once there is one (one render for
   * all who ask meanwhile); undefined if the asker is gone (`wanted` false) by then.
   */
  async take(wanted: () => boolean): Promise<RenderedMetrics | undefined> {
    for (;;) {
      const copy = this.#fresh() ?? (await (this.#rendering ??= this.#render()));
      if (!wanted()) return undefined;
      if (copy.answers < this.options.maxAnswers) {
        copy.answers += 1;
        return copy;
      }
      await (this.#expiry ??= this.#expiryOf(copy));
    }
  }

  #fresh(): RenderedMetrics | undefined {
    const copy = this.#copy;
    return copy !== undefined && this.options.now() - copy.at < this.options.maxAgeMs ? copy : undefined;
  }

  #expiryOf(copy: RenderedMetrics): Promise<void> {
    const waitMs = Math.max(0, copy.at + this.options.maxAgeMs - this.options.now());
    return sleep(waitMs).finally(() => {
      this.#expiry = undefined;
    });
  }

  async #render(): Promise<RenderedMetrics> {
    try {
      const at = this.options.now();
      // Counted before the render, so that the copy includes itself.
      this.#renders.inc();
      const text = Buffer.from(await this.options.registry.metrics());
      this.#copy = { at, text, gzip: gzipSync(text, { level: 1 }), answers: 0 };
      return this.#copy;
    } finally {
      this.#rendering = undefined;
    }
  }
}

type ClosedReason = 'idle' | 'evicted' | 'refused';

/**
 * The connections of the endpoint, least recently active first: one past `max` closes the
 * first of them that has no request in progress, or is itself refused when all have.
 */
class ConnectionBudget {
  /** Each connection and its requests in progress; a Map keeps the order of their last activity. */
  readonly #open = new Map<Socket, number>();

  constructor(
    private readonly max: number,
    private readonly closed: (reason: ClosedReason) => void,
  ) {}

  admit(socket: Socket): void {
    if (this.#open.size >= this.max) {
      const idle = [...this.#open].find(([, busy]) => busy === 0)?.[0];
      if (idle === undefined) {
        this.closed('refused');
        socket.destroy();
        return;
      }
      this.#open.delete(idle);
      this.closed('evicted');
      idle.destroy();
    }
    this.#open.set(socket, 0);
    socket.once('close', () => this.#open.delete(socket));
  }

  /** A request on `socket` starts (+1) or ends (-1): the connection is the most recently active. */
  busy(socket: Socket, change: 1 | -1): void {
    const count = this.#open.get(socket);
    if (count === undefined) return;
    this.#open.delete(socket);
    this.#open.set(socket, count + change);
  }
}

export interface MetricsServerOptions {
  /** HOST:PORT (parseMetricsAddress). */
  address: string;
  registry: Registry;
  maxAgeMs?: number;
  maxAnswers?: number;
  maxConnections?: number;
  idleTimeoutMs?: number;
}

export class MetricsServer {
  private constructor(
    private readonly server: Server,
    /** The address actually listened on, HOST:PORT (the real port when 0 was asked for). */
    readonly address: string,
  ) {}

  static async listen(options: MetricsServerOptions): Promise<MetricsServer> {
    const { host, port } = parseMetricsAddress(options.address);
    const copy = new MetricsCopy({
      registry: options.registry,
      maxAgeMs: options.maxAgeMs ?? METRICS_MAX_AGE_MS,
      maxAnswers: options.maxAnswers ?? METRICS_MAX_ANSWERS,
      now: () => performance.now(),
    });
    const closed = new Counter<'reason'>({
      name: 'mcastctl_metrics_connections_closed_total',
      help: 'Metrics connections the daemon closed: idle too long (idle), for a new one past the limit (evicted), or new ones refused with every connection busy (refused).',
      labelNames: ['reason'],
      registers: [options.registry],
    });
    const budget = new ConnectionBudget(options.maxConnections ?? METRICS_MAX_CONNECTIONS, (reason) =>
      closed.inc({ reason }),
    );
    const server = createServer((request, response) => {
      budget.busy(request.socket, 1);
      response.once('close', () => budget.busy(request.socket, -1));
      serve(request, response, copy);
    });
    const idleMs = options.idleTimeoutMs ?? METRICS_IDLE_TIMEOUT_MS;
    server.on('connection', (socket: Socket) => budget.admit(socket));
    server.setTimeout(idleMs, (socket: Socket) => {
      closed.inc({ reason: 'idle' });
      socket.destroy();
    });
    server.keepAliveTimeout = Math.min(5000, idleMs);
    server.headersTimeout = idleMs;
    server.requestTimeout = idleMs;
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(listenFailure(error, options.address));
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    // A socket error after listening (EMFILE on accept) must not crash the daemon.
    server.on('error', () => undefined);
    const bound = server.address() as AddressInfo;
    const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
    return new MetricsServer(server, `${shownHost}:${bound.port}`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function serve(request: IncomingMessage, response: ServerResponse, copy: MetricsCopy): void {
  const path = (request.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    response
      .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      .end('not found: the metrics are at /metrics\n');
    return;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response
      .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' })
      .end('method not allowed\n');
    return;
  }
  copy
    .take(() => !response.destroyed)
    .then(
      (rendered) => {
        if (rendered === undefined) return;
        const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
        const body = gzip ? rendered.gzip : rendered.text;
        response.writeHead(200, {
          'content-type': copy.contentType,
          'content-length': body.length,
          vary: 'accept-encoding',
          ...(gzip ? { 'content-encoding': 'gzip' } : {}),
        });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        response
          .writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
          .end(`cannot collect the metrics: ${messageOf(error)}\n`);
      },
    );
}

/**
 * Splits `HOST:PORT` (`[::1]:9100` for IPv6; `:9100` for every address; port 0 for any free
 * one), with the host checks of the OVS endpoints. Throws UsageError (`bad-address`) naming --metrics-address.
 */
export function parseMetricsAddress(address: string): { host: string | undefined; port: number } {
  return parseHostPort(address, {
    bad: (reason) =>
      new UsageError(
        `--metrics-address takes HOST:PORT (127.0.0.1:9100, [::1]:9100, :9100), not ${quoteInput(address)}: ${reason}`,
        {
          code: 'bad-address',
        },
      ),
    malformed: 'expected HOST:PORT, [IPv6]:PORT or :PORT',
    emptyHost: true,
    portZero: true,
  });
}

function listenFailure(error: Error, address: string): McastError {
  const code = isSystemError(error) ? error.code : error.message;
  if (code === 'EADDRINUSE') {
    return new McastError('busy', `cannot serve metrics on ${address}: EADDRINUSE (another program listens there)`, {
      hint: 'pick another --metrics-address (ss -ltnp shows who holds this one)',
      cause: error,
    });
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new PermissionError(
      `cannot serve metrics on ${address}: ${code} (ports below 1024 need root or CAP_NET_BIND_SERVICE)`,
      {
        hint: 'pick another --metrics-address',
        cause: error,
      },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new UsageError(`cannot serve metrics on ${address}: ${code} (no such address on this host)`, {
      code: 'bad-address',
      hint: 'set --metrics-address to an address of this host',
    });
  }
  return new McastError('io', `cannot serve metrics on ${address}: ${code}`, {
    hint: 'check --metrics-address',
    cause: error,
  });
}
