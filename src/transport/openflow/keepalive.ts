/**
 * Echo keepalive of one link: when the switch has been silent for `intervalMs`, an
 * ECHO_REQUEST goes out, and no reply within the request's time limit counts as a lost
 * connection. (The switch's own ECHO_REQUESTs are answered by the connection at once.)
 */

export interface KeepaliveOptions {
  /** 0: never probe. */
  readonly intervalMs: number;
  /** When the switch last sent anything (Date.now()). */
  readonly lastReceived: () => number;
  /** Sends an ECHO_REQUEST; rejects when no reply came in time. Undefined: not now (not connected). */
  readonly echo: () => Promise<unknown> | undefined;
  /** The echo went unanswered. */
  readonly onUnanswered: () => void;
}

export class Keepalive {
  private timer: NodeJS.Timeout | undefined;
  private outstanding = false;

  constructor(private readonly options: KeepaliveOptions) {}

  start(): void {
    if (this.options.intervalMs <= 0) return;
    this.timer = setInterval(() => this.probe(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.outstanding = false;
  }

  private probe(): void {
    if (this.outstanding || Date.now() - this.options.lastReceived() < this.options.intervalMs) return;
    const echo = this.options.echo();
    if (echo === undefined) return;
    this.outstanding = true;
    echo.then(
      () => (this.outstanding = false),
      () => {
        this.outstanding = false;
        this.options.onUnanswered();
      },
    );
  }
}
