/**
 * The count of the tunnel's membership messages the switch drops for an outer source that
 * is no peer (tunnelMembership's drop flows): they never reach the daemon, so it reads
 * them from the switch, once a second while the tunnel port is there, and adds them to
 * the `unknown-peer` drops that `status` and the metrics show. The flows' counters
 * restart when the base flows are written again; what they had counted is carried.
 */
import type { DaemonClock, SwitchPort } from '../loop/ports.js';

/** How often the switch's count is read. */
const TUNNEL_SHED_POLL_MS = 1000;

export class TunnelShedCount {
  #carried = 0n;
  #last = 0n;
  #cancel: (() => void) | undefined;
  #stopped = false;

  constructor(
    private readonly options: {
      vswitch: Pick<SwitchPort, 'tunnelShedPackets' | 'connected'>;
      clock: Pick<DaemonClock, 'after'>;
      /** Whether the tunnel port is on the bridge now (its flows are written only then). */
      portPresent: () => boolean;
    },
  ) {}

  /** Packets dropped since the daemon started. */
  get packets(): number {
    return Number(this.#carried + this.#last);
  }

  start(): void {
    if (this.#cancel !== undefined || this.#stopped) return;
    this.#cancel = this.options.clock.after(TUNNEL_SHED_POLL_MS, () => {
      this.#cancel = undefined;
      void this.read().finally(() => this.start());
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
  }

  /** Reads the switch's count now; a switch that does not answer leaves the count as it was. */
  async read(): Promise<void> {
    const { vswitch, portPresent } = this.options;
    if (!vswitch.connected || !portPresent()) return;
    const count = await vswitch.tunnelShedPackets().catch(() => undefined);
    if (count === undefined) return;
    if (count < this.#last) this.#carried += this.#last;
    this.#last = count;
  }
}
