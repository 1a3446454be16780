/**
 * What each pod port has said lately, group by group: the answers `mcastctl trace` needs
 * and the membership table does not keep. A member's last report is in the table, but a
 * pod that reported a group the daemon refused, or that never reported it while it reports
 * others, or that says nothing at all, leaves no member there to look at.
 *
 * Bounded: at most MAX_GROUPS_PER_PORT groups a port, the one reported longest ago going
 * first, so a pod that reports thousands of groups costs the same as one that reports a few.
 */
/** A refusal's reason, as the guard names it (IGMP_REFUSAL_REASONS). */
type IgmpRefusalReason = string;

/** Groups remembered per port. */
export const MAX_GROUPS_PER_PORT = 64;

export interface GroupActivity {
  /** Reports (and records) naming the group, refused ones included. */
  reports: number;
  /** Wall clock, ms. */
  lastReportAtMs: number | undefined;
  refusals: Record<IgmpRefusalReason, number>;
  /** The last refusal, with the policy rule's line when the policy refused. */
  lastRefusal: { reason: IgmpRefusalReason; atMs: number; rule?: number } | undefined;
}

interface PortRecord {
  /** Wall clock, ms: when the daemon started watching the port. */
  sinceMs: number;
  messages: number;
  lastMessageAtMs: number | undefined;
  /** In the order last touched: a Map keeps insertion order, and a touched group is re-inserted. */
  groups: Map<string, GroupActivity>;
}

export interface PortActivitySnapshot {
  sinceMs: number;
  messages: number;
  lastMessageAtMs: number | undefined;
  /** The group asked about, when the port said anything about it. */
  group: GroupActivity | undefined;
  /** The other groups the port reported, the latest first. */
  otherGroups: string[];
}

export class PortActivity {
  private readonly ports = new Map<number, PortRecord>();
  private readonly startedMs: number;

  /** `wallMs`: the wall clock; a port there at the start is watched from then on. */
  constructor(private readonly wallMs: () => number) {
    this.startedMs = wallMs();
  }

  /** Any IGMP or MLD message decoded from the pod port. */
  message(ofport: number): void {
    const record = this.record(ofport);
    record.messages++;
    record.lastMessageAtMs = this.wallMs();
  }

  /** A report or record naming `group`, before the checks that may refuse it. */
  reported(ofport: number, group: string): void {
    const activity = this.touch(ofport, group);
    activity.reports++;
    activity.lastReportAtMs = this.wallMs();
  }

  refused(ofport: number, group: string, reason: IgmpRefusalReason, rule?: number): void {
    const activity = this.touch(ofport, group);
    activity.refusals[reason] = (activity.refusals[reason] ?? 0) + 1;
    activity.lastRefusal = { reason, atMs: this.wallMs(), ...(rule === undefined ? {} : { rule }) };
  }

  /** The (port, group) pairs whose last refusal was for `reason`, at most MAX_GROUPS_PER_PORT a port. */
  lastRefusedFor(reason: IgmpRefusalReason): Array<{ port: number; group: string }> {
    const refused: Array<{ port: number; group: string }> = [];
    for (const [port, record] of this.ports)
      for (const [group, activity] of record.groups)
        if (activity.lastRefusal?.reason === reason) refused.push({ port, group });
    return refused;
  }

  /** A port that appeared after the start: its watch starts now. */
  portAdded(ofport: number): void {
    this.ports.set(ofport, { sinceMs: this.wallMs(), messages: 0, lastMessageAtMs: undefined, groups: new Map() });
  }

  forgetPort(ofport: number): void {
    this.ports.delete(ofport);
  }

  /** What the port said, and since when it has been watched; `group`: the group asked about. */
  snapshot(ofport: number, group: string | undefined): PortActivitySnapshot {
    const record = this.ports.get(ofport);
    if (record === undefined)
      return { sinceMs: this.startedMs, messages: 0, lastMessageAtMs: undefined, group: undefined, otherGroups: [] };
    const otherGroups = [...record.groups.keys()].filter((name) => name !== group).reverse();
    const activity = group === undefined ? undefined : record.groups.get(group);
    return {
      sinceMs: record.sinceMs,
      messages: record.messages,
      lastMessageAtMs: record.lastMessageAtMs,
      group: activity === undefined ? undefined : { ...activity, refusals: { ...activity.refusals } },
      otherGroups,
    };
  }

  private record(ofport: number): PortRecord {
    let record = this.ports.get(ofport);
    if (record === undefined) {
      record = { sinceMs: this.startedMs, messages: 0, lastMessageAtMs: undefined, groups: new Map() };
      this.ports.set(ofport, record);
    }
    return record;
  }

  private touch(ofport: number, group: string): GroupActivity {
    const { groups } = this.record(ofport);
    let activity = groups.get(group);
    if (activity === undefined) {
      activity = { reports: 0, lastReportAtMs: undefined, refusals: {}, lastRefusal: undefined };
      if (groups.size >= MAX_GROUPS_PER_PORT) {
        const oldest = groups.keys().next().value;
        if (oldest !== undefined) groups.delete(oldest);
      }
    } else {
      groups.delete(group);
    }
    groups.set(group, activity);
    return activity;
  }
}
