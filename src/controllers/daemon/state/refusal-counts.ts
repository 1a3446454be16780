/**
 * What a restart left out of the saved state as a live join would have been left out:
 * counted by reason, and said in one line, since a file over the limits may hold tens of
 * thousands of such members and a line each would drown the log.
 */
import type { RefusalReason } from '../../../domain/membership/membership-limits.js';

/** Why a saved member was not restored: the limits' reasons, or the group policy's. */
type RestoreRefusal = RefusalReason | 'policy';

/** The order a line names the reasons in: as a join meets them, the policy first. */
const REASONS: readonly RestoreRefusal[] = ['policy', 'ssm', 'node-groups', 'port-groups', 'group-sources'];

export class RefusalCounts {
  private readonly counts = new Map<RestoreRefusal, number>();
  private sum = 0;

  add(reason: RestoreRefusal): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    this.sum++;
  }

  /** Members left out in all. */
  get total(): number {
    return this.sum;
  }

  /** The count of each reason that left some out, as log fields. */
  byReason(): Partial<Record<RestoreRefusal, number>> {
    return Object.fromEntries(REASONS.flatMap((reason) => this.entryOf(reason)));
  }

  /**
   * "state file: 99,600 members saved, 8,192 restored, 91,408 dropped past the limits
   * (node-groups 91,000, port-groups 408)": `restored` need not add up with the rest, as
   * members of gone pods and members whose timers ended are neither.
   */
  line(saved: number, restored: number): string {
    const reasons = REASONS.flatMap((reason) => this.entryOf(reason).map(([, count]) => `${reason} ${shown(count)}`));
    const counts = `${shown(saved)} members saved, ${shown(restored)} restored, ${shown(this.sum)}`;
    return `state file: ${counts} dropped past the limits (${reasons.join(', ')})`;
  }

  private entryOf(reason: RestoreRefusal): [RestoreRefusal, number][] {
    const count = this.counts.get(reason);
    return count === undefined ? [] : [[reason, count]];
  }
}

/** `n` with thousands grouped, as people read counts. */
function shown(n: number): string {
  return n.toLocaleString('en-US');
}
