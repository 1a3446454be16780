/**
 * Each pod port's own entries on the switch, kept in step with the pod ports, the meter
 * settings and the group policy: its IGMP meter and metered IGMP flow, and the drops of
 * what the policy does not let it send. One port at a time, in the background: a port
 * that appears is metered within one round trip, a port that goes takes its entries
 * with it, a reload touches only the ports whose entries change. It also reads the
 * meters' drop counters, so that `status` and the metrics can show a flood's excess.
 */
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { PortMeter } from '../../../domain/pipeline/multicast-pipeline.js';
import type { GroupRange } from '../../../domain/pipeline/port-entries.js';
import type { IgmpMeterView } from '../../../transport/control/daemon-view.js';
import type { ControllerLogger, DaemonClock, SwitchPort } from './ports.js';
import { portViewOf } from '../observe/port-views.js';

/** How often the meters' counters are read. */
const METER_POLL_MS = 5_000;

export interface PortEntriesSyncOptions {
  vswitch: SwitchPort;
  pods: PodPorts;
  clock: DaemonClock;
  logger: ControllerLogger;
  /** The meter each pod port's IGMP goes through; undefined: none (meters off). */
  meter: () => PortMeter | undefined;
  /**
   * The group ranges a pod may not send to (the group policy), one drop flow each; `capped`: more than the bound, the
   * pod may send to link-local groups only, `denied` the ranges the policy gave.
   */
  deniedSend: (pod: string | undefined) => { ranges: readonly GroupRange[]; denied: number; capped: boolean };
  /** A port's sync failed: counted and logged; it is tried again after `retryMs`. */
  fail: (error: unknown) => void;
  retryMs: () => number;
}

/** A meter's drops, kept growing across the resets of the switch's counter (a changed meter, a restarted switch). */
interface DropCount {
  /** Drops counted before the switch's counter last restarted. */
  carried: bigint;
  /** The switch's counter at the last read. */
  last: bigint;
}

export class PortEntriesSync {
  private readonly dirty = new Set<number>();
  private readonly metered = new Set<number>();
  /** Ports with send-policy drops on the switch. */
  private readonly denying = new Set<number>();
  /** Of those, the ports past the bound of drop flows (deniedSend's `capped`). */
  private readonly capped = new Set<number>();
  private readonly drops = new Map<number, DropCount>();
  private running: Promise<void> | undefined;
  private retry: (() => void) | undefined;
  private poll: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly options: PortEntriesSyncOptions) {}

  /** Brings every port in step (markAll) and starts reading the meters' counters. */
  start(): void {
    this.markAll();
    this.schedulePoll();
  }

  /** `ofport`'s entries are to be brought in step (it appeared, went, or its policy changed). */
  markDirty(ofport: number): void {
    this.dirty.add(ofport);
    this.kick();
  }

  /** Every pod port, and every port that still has entries of ours (its pod gone while the daemon was away). */
  markAll(): void {
    for (const pod of this.options.pods.pods) this.dirty.add(pod.ofport);
    for (const ofport of this.options.vswitch.portsWithEntries) this.dirty.add(ofport);
    this.kick();
  }

  /** The port went away: its drop count goes with it. */
  forget(ofport: number): void {
    this.drops.delete(ofport);
    this.markDirty(ofport);
  }

  /** Resolves when no port waits for a sync. */
  async whenIdle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  /** Pod ports with send-policy drops on the switch, and those of them past the bound. */
  get sendPolicyPorts(): { denyingSend: number; sendCapped: number } {
    return { denyingSend: this.denying.size, sendCapped: this.capped.size };
  }

  get pending(): number {
    return this.dirty.size;
  }

  stop(): void {
    this.stopped = true;
    this.retry?.();
    this.poll?.();
  }

  /** Reads the meters' counters now. */
  async readDrops(): Promise<void> {
    if (!this.options.vswitch.connected) return;
    for (const [ofport, count] of await this.options.vswitch.meterDrops()) {
      const known = this.drops.get(ofport) ?? { carried: 0n, last: 0n };
      // A counter below the last read restarted (MODIFY zeroes it, so does a new switch).
      if (count < known.last) known.carried += known.last;
      known.last = count;
      this.drops.set(ofport, known);
    }
  }

  view(): IgmpMeterView {
    const meter = this.options.meter();
    const byPort = [...this.drops]
      .sort(([a], [b]) => a - b)
      .filter(([ofport]) => this.options.pods.pod(ofport) !== undefined)
      .map(([ofport, count]) => ({
        port: portViewOf(this.options.pods, ofport),
        dropped: Number(count.carried + count.last),
      }));
    return {
      enabled: meter !== undefined,
      ...(meter === undefined ? {} : { ratePerSecond: meter.rate, burst: meter.burst }),
      meteredPorts: this.metered.size,
      dropped: byPort.reduce((sum, entry) => sum + entry.dropped, 0),
      byPort,
    };
  }

  private kick(): void {
    if (this.running !== undefined || this.stopped) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  private async drain(): Promise<void> {
    const { vswitch, pods } = this.options;
    while (this.dirty.size > 0 && !this.stopped && vswitch.connected) {
      const ofport = this.dirty.values().next().value as number;
      this.dirty.delete(ofport);
      const pod = pods.pod(ofport);
      const meter = this.options.meter();
      const denied = pod === undefined ? undefined : this.options.deniedSend(pod.pod);
      const wanted =
        denied === undefined ? undefined : { deniedSend: denied.ranges, ...(meter === undefined ? {} : { meter }) };
      try {
        const { metered } = await vswitch.syncPort(ofport, wanted);
        if (metered) this.metered.add(ofport);
        else this.metered.delete(ofport);
        if ((wanted?.deniedSend.length ?? 0) > 0) this.denying.add(ofport);
        else this.denying.delete(ofport);
        if (denied?.capped !== true) this.capped.delete(ofport);
        else if (!this.capped.has(ofport)) {
          this.capped.add(ofport);
          this.options.logger.warn(
            'the group policy denies this pod sending to more ranges of groups than maxSendDenyRanges: it may send to link-local groups only',
            { port: pod?.name, ofport, ranges: denied.denied },
          );
        }
        if (pod !== undefined && meter !== undefined && !metered) {
          this.options.logger.warn('the switch cannot hold a meter for this pod port: its IGMP is not metered', {
            port: pod.name,
            ofport,
          });
        }
      } catch (error) {
        this.options.fail(error);
        this.dirty.add(ofport);
        this.scheduleRetry();
        return;
      }
    }
  }

  private scheduleRetry(): void {
    if (this.retry !== undefined || this.stopped) return;
    this.retry = this.options.clock.after(this.options.retryMs(), () => {
      this.retry = undefined;
      this.kick();
    });
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.poll = this.options.clock.after(METER_POLL_MS, () => {
      this.poll = undefined;
      void this.readDrops()
        .catch(() => undefined)
        .finally(() => this.schedulePoll());
    });
  }
}
