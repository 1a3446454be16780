/**
 * The counts of the tunnel's membership messages the switch drops before the daemon sees
 * them: for an outer source that is no peer (tunnelMembership's drop flows), and past the
 * tunnel's meter (a peer's address flooding, whoever wrote it). They never reach the
 * daemon, so it reads them from the switch, once a second while the tunnel port is there,
 * and adds them to the `unknown-peer` and `meter` drops that `status` and the metrics
 * show. The switch's counters restart when the base flows or the meter are written again;
 * what they had counted is carried.
 */
import type { DaemonClock, SwitchPort } from '../loop/ports.js';

/** How often the switch's counts are read. */
const TUNNEL_SHED_POLL_MS = 1000;

/** A switch counter that restarts now and then, read into a count that does not. */
class CarriedCount {
  #carried = 0n;
  #last = 0n;

  get value(): number {
    return Number(this.#carried + this.#last);
  }

  read(count: bigint): void {
    if (count < this.#last) this.#carried += this.#last;
    this.#last = count;
  }
}

export class TunnelShedCount {
  readonly #notPeer = new CarriedCount();
  readonly #overRate = new CarriedCount();
  #cancel: (() => void) | undefined;
  #stopped = false;

  constructor(
    private readonly options: {
      vswitch: Pick<SwitchPort, 'tunnelDrops' | 'connected'>;
      clock: Pick<DaemonClock, 'after'>;
      /** Whether the tunnel port is on the bridge now (its flows are written only then). */
      portPresent: () => boolean;
    },
  ) {}

  /** Packets dropped for an outer source that is no peer since the daemon started. */
  get packets(): number {
    return this.#notPeer.value;
  }

  /** Packets the tunnel's meter dropped since the daemon started. */
  get metered(): number {
    return this.#overRate.value;
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

  /** Reads the switch's counts now; a switch that does not answer leaves the counts as they were. */
  async read(): Promise<void> {
    const { vswitch, portPresent } = this.options;
    if (!vswitch.connected || !portPresent()) return;
    const drops = await vswitch.tunnelDrops().catch(() => undefined);
    if (drops === undefined) return;
    this.#notPeer.read(drops.notPeer);
    this.#overRate.read(drops.overRate);
  }
}
