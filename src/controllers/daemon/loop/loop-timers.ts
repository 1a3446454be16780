/**
 * The loop's own timers, besides the querier's and the sync retries: membership expiry
 * (at the table's next deadline, moved up by a leave), the idle-route sweep and the
 * delayed state save. All on the loop's one clock.
 */
import type { MembershipEffect, MembershipTable } from '../../../domain/membership/membership-table.js';
import type { QuerierTiming } from './querier.js';
import type { DaemonConfig } from '../config/config.js';
import type { DaemonClock, MemoryPort, RouterPort } from './ports.js';

/**
 * Once membership changes are followed by a quiet spell of RELEASE_QUIET_MS, the memory
 * they took is given back if there were RELEASE_AFTER_CHANGES of them since the last time
 * (a flood's groups ending, a node's pods all answering a query), or if the process has
 * grown by RELEASE_AFTER_GROWTH_BYTES since (many small changes). V8 shrinks its heap only
 * as a program goes on allocating, and a daemon that goes quiet keeps what it grew to:
 * with 5,000 memberships learned in a second it stayed at 98 to 114 MiB resident, where
 * it is 70 once given back.
 */
const RELEASE_AFTER_CHANGES = 1_000;
const RELEASE_AFTER_GROWTH_BYTES = 10 * 2 ** 20;
const RELEASE_QUIET_MS = 5_000;
/**
 * How long membership changes wait before they are written to the state directory: a
 * second, and a second more for every SAVE_MEMBERS_A_SECOND members, up to SAVE_DELAY_MAX_MS.
 * A save serializes the whole table, so under a churn of thousands of groups (a flood
 * expiring and refilling its limit) a save every second was a tenth of the daemon's CPU
 * and most of its garbage; a small table still saves within a second.
 */
const SAVE_DELAY_MS = 1_000;
const SAVE_MEMBERS_A_SECOND = 1_000;
const SAVE_DELAY_MAX_MS = 10_000;
/**
 * The most groups one turn of the expiry timer ends; what else is due ends a millisecond
 * later, and so on. Thousands of groups joined in one burst (a flooding pod's, up to its
 * limit) fall due together, and ending them all in one turn held every packet-in behind
 * it: a quiet pod's join waited tens of milliseconds.
 */
const EXPIRE_GROUPS_A_TURN = 128;
/** How long stop() waits for running syncs. */
export const STOP_SYNC_WAIT_MS = 2_000;

export interface LoopTimersOptions {
  clock: DaemonClock;
  table: MembershipTable;
  router: RouterPort | undefined;
  /** Members expired: the effects to apply. */
  onExpired: (effects: readonly MembershipEffect[]) => void;
  /** The idle timeout of kernel routes now (the sweep runs a quarter of it apart, 1 to 10 s). */
  routeIdleTimeoutMs: () => number;
  /** Whether there is a state store to save to. */
  saves: boolean;
  save: () => Promise<void>;
  onSweepError: (error: unknown) => void;
  /** The process's memory (runtime/memory-release.ts); none: never given back. */
  memory?: MemoryPort;
}

export class LoopTimers {
  private expiry: { at: number; cancel: () => void } | undefined;
  private cancelSave: (() => void) | undefined;
  private cancelSweep: (() => void) | undefined;
  private cancelRelease: (() => void) | undefined;
  /** Membership changes (joins, leaves, expiry) since memory was last given back. */
  private changesSinceRelease = 0;
  /** The resident memory when it was last given back (or at the start). */
  private residentAfterRelease: number | undefined;
  private stopped = false;

  constructor(private readonly options: LoopTimersOptions) {
    this.residentAfterRelease = options.memory?.residentBytes();
  }

  /** Arms the expiry timer at the table's next deadline (sooner, after a leave). */
  armExpiry(sooner = false): void {
    if (this.stopped) return;
    if (this.expiry !== undefined && !sooner) return;
    const { clock, table } = this.options;
    const next = table.nextDeadline();
    if (next === undefined) return;
    if (this.expiry !== undefined) {
      if (this.expiry.at <= next) return;
      this.expiry.cancel();
    }
    const cancel = clock.after(Math.max(1, next - clock.monotonicMs()), () => {
      this.expiry = undefined;
      const effects = table.expire(EXPIRE_GROUPS_A_TURN);
      this.options.onExpired(effects);
      if (effects.length > 0) this.scheduleSave();
      this.countChanges(effects.length);
      this.armExpiry();
    });
    this.expiry = { at: next, cancel };
  }

  /** Counts membership changes; once they stop coming for a while, gives memory back if they were many or it grew. */
  countChanges(changes: number): void {
    const memory = this.options.memory;
    if (memory === undefined || changes === 0 || this.stopped) return;
    this.changesSinceRelease += changes;
    this.cancelRelease?.();
    this.cancelRelease = this.options.clock.after(RELEASE_QUIET_MS, () => {
      this.cancelRelease = undefined;
      const grown = memory.residentBytes() - (this.residentAfterRelease ?? 0);
      if (this.changesSinceRelease < RELEASE_AFTER_CHANGES && grown < RELEASE_AFTER_GROWTH_BYTES) return;
      this.changesSinceRelease = 0;
      memory.release();
      this.residentAfterRelease = memory.residentBytes();
    });
  }

  scheduleSweep(): void {
    const router = this.options.router;
    if (router === undefined || this.stopped) return;
    const every = Math.max(1_000, Math.min(10_000, Math.floor(this.options.routeIdleTimeoutMs() / 4)));
    this.cancelSweep = this.options.clock.after(every, () => {
      void router
        .sweepIdle()
        .catch((error: unknown) => this.options.onSweepError(error))
        .finally(() => this.scheduleSweep());
    });
  }

  scheduleSave(): void {
    if (!this.options.saves || this.cancelSave !== undefined || this.stopped) return;
    const delay = Math.min(
      SAVE_DELAY_MAX_MS,
      SAVE_DELAY_MS * (1 + Math.floor(this.options.table.memberCount / SAVE_MEMBERS_A_SECOND)),
    );
    this.cancelSave = this.options.clock.after(delay, () => {
      this.cancelSave = undefined;
      void this.options.save();
    });
  }

  stop(): void {
    this.stopped = true;
    this.expiry?.cancel();
    this.cancelRelease?.();
    this.cancelSave?.();
    this.cancelSweep?.();
  }
}

/** The querier's timing, as the configuration sets it. */
export function querierTiming(config: DaemonConfig): QuerierTiming {
  return {
    versions: config.queryVersions,
    queryIntervalMs: config.queryIntervalMs,
    queryResponseIntervalMs: config.queryResponseIntervalMs,
    lastMemberQueryIntervalMs: config.lastMemberQueryIntervalMs,
    robustness: config.robustness,
  };
}
