/**
 * How a long-running command is told to stop: Ctrl-C (SIGINT), SIGTERM, a time limit, or
 * standard output's reader going away (`mcastctl snoop --json | head`). Each ends the
 * command the same way, through its normal path: the summary is printed, files are
 * flushed and closed, and the exit code is 0.
 */

/** Aborted when writing to stdout fails with EPIPE (the reader is gone). Set up by bin/. */
const stdoutClosed = new AbortController();

/**
 * Routes stdout errors: EPIPE stops the command cleanly; anything else is a failure.
 * Called by bin/mcastctl.js (through dist/, which the unused-exports check cannot follow).
 * @public
 */
export function watchStdout(stdout: NodeJS.WriteStream = process.stdout): void {
  stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') {
      if (!stdoutClosed.signal.aborted) stdoutClosed.abort();
      return;
    }
    process.stderr.write(`mcastctl: cannot write standard output: ${error.code ?? error.message}\n`);
    process.exit(1);
  });
}

export interface StopOptions {
  /** Stop after this long. */
  durationMs?: number;
}

/** One stop condition for a command; `dispose()` removes its handlers and timer. */
export class StopSignal {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly onSignal = (): void => this.stop();
  private readonly onStdoutClosed = (): void => this.stop();

  constructor(options: StopOptions = {}) {
    this.timer = options.durationMs === undefined ? undefined : setTimeout(this.onSignal, options.durationMs);
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
    if (stdoutClosed.signal.aborted) this.stop();
    else stdoutClosed.signal.addEventListener('abort', this.onStdoutClosed, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  /** Resolves once something asked the command to stop. */
  whenStopped(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.controller.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  stop(): void {
    if (!this.stopped) this.controller.abort();
  }

  dispose(): void {
    clearTimeout(this.timer);
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    stdoutClosed.signal.removeEventListener('abort', this.onStdoutClosed);
  }
}
