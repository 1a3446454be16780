/**
 * The daemon's signals besides SIGINT and SIGTERM (which stop it, see stop.ts):
 *
 *   SIGHUP   read the configuration file again and apply its runtime settings
 *   SIGUSR1  log a one-line summary of the state (groups, members, syncs, connections)
 *   SIGUSR2  write the state file now
 *
 * None of them ever ends the daemon. Listening matters even where an action does
 * nothing yet: Node's default for SIGHUP and SIGUSR2 is to die on the spot (no final
 * save, the control socket left behind), and for SIGUSR1 to open its inspector, an
 * unauthenticated debugger on 127.0.0.1:9229 through which any local user could run
 * code as root. So the listeners are installed first, and work before the actions are
 * known (a signal then does nothing).
 */

export interface DaemonSignalActions {
  reload: () => Promise<void> | void;
  summary: () => Promise<void> | void;
  save: () => Promise<void> | void;
  /** An action threw: it is reported, and the daemon goes on. */
  onError: (signal: HandledSignal, error: unknown) => void;
}

const HANDLED_SIGNALS = ['SIGHUP', 'SIGUSR1', 'SIGUSR2'] as const;
export type HandledSignal = (typeof HANDLED_SIGNALS)[number];

const ACTION_OF: Readonly<Record<HandledSignal, keyof Omit<DaemonSignalActions, 'onError'>>> = {
  SIGHUP: 'reload',
  SIGUSR1: 'summary',
  SIGUSR2: 'save',
};

export class DaemonSignals {
  private actions: DaemonSignalActions | undefined;
  /** A signal's action under way, and whether the same signal came again meanwhile. */
  private readonly busy = new Map<HandledSignal, { again: boolean }>();
  private readonly listeners = new Map<HandledSignal, () => void>();

  constructor() {
    for (const signal of HANDLED_SIGNALS) {
      const listener = (): void => this.deliver(signal);
      this.listeners.set(signal, listener);
      process.on(signal, listener);
    }
  }

  /** What each signal does from now on. */
  on(actions: DaemonSignalActions): void {
    this.actions = actions;
  }

  dispose(): void {
    for (const [signal, listener] of this.listeners) process.off(signal, listener);
    this.listeners.clear();
    this.actions = undefined;
  }

  /** Runs one action at a time per signal; signals that arrive meanwhile run it once more, after. */
  private deliver(signal: HandledSignal): void {
    const running = this.busy.get(signal);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.busy.set(signal, state);
    void (async () => {
      do {
        state.again = false;
        const actions = this.actions;
        if (actions === undefined) break;
        try {
          await actions[ACTION_OF[signal]]();
        } catch (error) {
          actions.onError(signal, error);
        }
      } while (state.again);
      this.busy.delete(signal);
    })();
  }
}
