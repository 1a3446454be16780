/**
 * The bound on per-pod traffic counting (maxTrafficCounters): which (pod port, group)
 * pairs are counted. A counted pair has a sender counting flow per entry of the group
 * (with trafficCounters on) and series of its own in the metrics, so the pairs, not the
 * traffic, are what costs: OVS flows and metric cardinality. Pairs are taken in the order
 * their group syncs, and keep their place while the port stays a member; past the bound a
 * new pair is not counted (one rate-limited warning), and the view says the figures are
 * partial until room frees up and the group syncs again.
 */
import type { GroupAddress } from '../../../wire/ip-address.js';
import { WarningLimiter } from '../../../runtime/warning-limiter.js';
import type { PortGroupTraffic } from '../../../adapters/ovs/traffic-counters.js';
import type { PodTrafficView, PortView, TrafficStatsView } from '../../../transport/control/daemon-view.js';
import type { ControllerLogger } from './ports.js';

/** One warning a minute at most: a churn of joins past the bound is one line, with a count. */
const WARNING_INTERVAL_MS = 60_000;

export interface TrafficCounterOptions {
  /** The bound and whether sender flows are written, now (a reload changes them). */
  settings: () => { trafficCounters: boolean; maxTrafficCounters: number };
  logger: ControllerLogger;
  now: () => number;
}

export class TrafficCounterBudget {
  private readonly counted = new Map<GroupAddress, Set<number>>();
  private readonly refused = new Map<GroupAddress, Set<number>>();
  private total = 0;
  private readonly warnings: WarningLimiter;

  constructor(private readonly options: TrafficCounterOptions) {
    this.warnings = new WarningLimiter({ now: options.now, intervalMs: WARNING_INTERVAL_MS });
  }

  /**
   * The member pod ports of `group` that are counted, as of its sync now: those counted
   * already, then new ones while there is room. Ports no longer members give theirs back.
   */
  admit(group: GroupAddress, members: readonly number[]): number[] {
    const { maxTrafficCounters } = this.options.settings();
    const wanted = [...new Set(members)].sort((a, b) => a - b);
    const before = this.counted.get(group) ?? new Set<number>();
    const after = new Set<number>();
    const refused = new Set<number>();
    for (const port of wanted) if (before.has(port)) after.add(port);
    this.total -= before.size - after.size;
    for (const port of wanted) {
      if (after.has(port)) continue;
      if (this.total < maxTrafficCounters) {
        after.add(port);
        this.total++;
      } else refused.add(port);
    }
    this.set(this.counted, group, after);
    this.set(this.refused, group, refused);
    if (refused.size > 0)
      this.warnings.warn(
        this.options.logger,
        'limit',
        'per-pod traffic counting is partial: more (pod, group) pairs than maxTrafficCounters',
        () => ({
          group,
          ports: [...refused],
          maxTrafficCounters,
        }),
      );
    return [...after];
  }

  /** The ports of `group` that get sender counting flows: the counted ones while trafficCounters is on. */
  counterPorts(group: GroupAddress, members: readonly number[]): number[] {
    const ports = this.admit(group, members);
    return this.options.settings().trafficCounters ? ports : [];
  }

  /** Forgets every pair (a reload changed the settings): the groups' next syncs take them again. */
  reset(): void {
    this.counted.clear();
    this.refused.clear();
    this.total = 0;
  }

  /** Whether the pair is counted. */
  has(group: GroupAddress, ofport: number): boolean {
    return this.counted.get(group)?.has(ofport) === true;
  }

  /** Member pairs left out past the bound. */
  get uncounted(): number {
    let count = 0;
    for (const ports of this.refused.values()) count += ports.size;
    return count;
  }

  /**
   * The view of what the switch counted: the counted pairs only, by group then port, each
   * named as `portView` names it; `sent` only where the pair has sender counting flows.
   */
  view(traffic: readonly PortGroupTraffic[], portView: (ofport: number) => PortView): TrafficStatsView {
    const { trafficCounters, maxTrafficCounters } = this.options.settings();
    const entries = traffic
      .filter((entry) => this.has(entry.group, entry.ofport))
      .map(
        (entry): PodTrafficView => ({
          group: entry.group,
          port: portView(entry.ofport),
          received: { packets: Number(entry.received.packets), bytes: Number(entry.received.bytes) },
          ...(entry.sent === undefined || !trafficCounters
            ? {}
            : { sent: { packets: Number(entry.sent.packets), bytes: Number(entry.sent.bytes) } }),
        }),
      );
    return { counting: trafficCounters, limit: maxTrafficCounters, uncounted: this.uncounted, entries };
  }

  private set(map: Map<GroupAddress, Set<number>>, group: GroupAddress, ports: Set<number>): void {
    if (ports.size === 0) map.delete(group);
    else map.set(group, ports);
  }
}
