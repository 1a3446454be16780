/**
 * The daemon's sync of groups: a work queue by group that makes OVS (the group's (*,G)
 * entry, and an (S,G) entry for each source whose receivers differ) and the kernel (the
 * group's local members and the sources they want) match the membership table, retried
 * with backoff, timed from the first change a sync waited for.
 */
import { messageOf } from '../../../errors.js';
import type { GroupAddress, HostAddress } from '../../../wire/ip-address.js';
import { WorkQueue, type SyncTurn } from '../../../domain/membership/work-queue.js';
import { mergeFilters, type PortFilter } from '../../../domain/membership/source-filter.js';
import { splitBySource, type SourcePorts } from '../../../domain/pipeline/source-split.js';
import type { DaemonCounters, DaemonEvent } from '../../../transport/control/daemon-view.js';
import type { ControllerLogger, ControllerMetrics, DaemonClock, RouterPort, SwitchPort } from './ports.js';

export interface GroupSyncOptions {
  vswitch: SwitchPort;
  router: RouterPort | undefined;
  clock: DaemonClock;
  logger: ControllerLogger;
  metrics: ControllerMetrics;
  /** Counted into: syncs, syncErrors. */
  counters: DaemonCounters;
  workers: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  /** The membership table, read at each sync. */
  members: GroupMembersReader;
  /** The pod ports: the gateway's now (every group with members also goes there). */
  pods: { readonly gateway: { ofport: number } | undefined };
  /** Tunnel mode (absent: none). */
  tunnel?: GroupTunnelReader;
  /** The pairs of pod and group that get sender counting flows (absent: none). */
  traffic?: GroupCountingReader;
  publish: (event: DaemonEvent) => void;
  isoNow: () => string;
}

/** What a sync reads of the membership table. */
interface GroupMembersReader {
  /** The member ports of `group` now. */
  portsOf(group: GroupAddress): readonly number[];
  /** The merged source filter of each member port of `group` now. */
  portFiltersOf(group: GroupAddress): readonly PortFilter[];
}

/** What a sync reads of tunnel mode. */
interface GroupTunnelReader {
  /** The tunnel port and the peers that want `group` now; undefined: no tunnel port on the bridge yet. */
  tunnelOf(group: GroupAddress): { ofport: number; peers: readonly HostAddress[] } | undefined;
}

/** What a sync reads of the traffic counters' budget. */
interface GroupCountingReader {
  /** Of the member ports of `group` now, those whose traffic to it gets sender counting flows. */
  counterPorts(group: GroupAddress, members: readonly number[]): readonly number[];
}

export class GroupSync {
  private readonly queue: WorkQueue<GroupAddress>;
  /** When each group waiting for a sync first changed (for the sync latency). */
  private readonly dirtySince = new Map<GroupAddress, number>();
  private readonly errors = new Map<GroupAddress, string>();
  private stopped = false;

  constructor(private readonly options: GroupSyncOptions) {
    this.queue = new WorkQueue<GroupAddress>({
      sync: (group, turn) => this.syncGroup(group, turn),
      workers: options.workers,
      // A quiet port's join never waits for a worker busy with a flood's groups.
      expressWorkers: 1,
      minBackoffMs: options.minBackoffMs,
      maxBackoffMs: options.maxBackoffMs,
      timers: options.clock,
      onError: (group, error, retryInMs) => {
        const message = messageOf(error);
        this.errors.set(group, message);
        options.logger.warn('sync failed; retrying', { group, error: message, retryInMs });
      },
    });
  }

  /** Asks for `group` to be synced (again); `lane`: on whose behalf (a pod port, a peer): they take turns. */
  markDirty(group: GroupAddress, lane?: number | string): void {
    if (!this.dirtySince.has(group)) this.dirtySince.set(group, this.options.clock.monotonicMs());
    this.queue.add(group, lane);
  }

  /** Groups waiting for a sync. */
  get dirty(): ReadonlyMap<GroupAddress, number> {
    return this.dirtySince;
  }

  /** The last error of each group whose sync is failing. */
  get syncErrors(): ReadonlyMap<GroupAddress, string> {
    return this.errors;
  }

  get size(): number {
    return this.queue.size;
  }

  setBackoff(minBackoffMs: number, maxBackoffMs: number): void {
    this.queue.setBackoff(minBackoffMs, maxBackoffMs);
  }

  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
  }

  stop(): void {
    this.stopped = true;
    this.queue.stop();
  }

  /** Makes OVS and the kernel match the group's members now (whatever changed meanwhile). */
  private async syncGroup(group: GroupAddress, { expedited }: SyncTurn): Promise<void> {
    if (this.stopped) return;
    const { clock, counters, metrics, publish, isoNow } = this.options;
    const since = this.dirtySince.get(group) ?? clock.monotonicMs();
    this.dirtySince.delete(group);
    const members = this.options.members.portsOf(group);
    const filters = this.options.members.portFiltersOf(group);
    const split = splitBySource(filters);
    const tunnel = this.options.tunnel?.tunnelOf(group);
    // A group that only peers want still goes to the gateway too: what leaves the node is
    // its own to route, as for a group with local members. Every source does: outside
    // receivers are the gateway's to filter.
    const wanted = members.length > 0 || (tunnel?.peers.length ?? 0) > 0;
    const gateway = this.options.pods.gateway?.ofport;
    const withGateway = (ports: readonly number[]) =>
      wanted && gateway !== undefined ? [...ports, gateway] : [...ports];
    // Nobody filters: every member takes every source through the (*,G) entry alone.
    const ports = withGateway(split.bySource.length === 0 ? members : split.other);
    const sources: SourcePorts[] = split.bySource.map(({ source, ports: receivers }) => ({
      source,
      ports: withGateway(receivers),
    }));
    const sourcesEvent = sources.length === 0 ? {} : { sources };
    const counterPorts = this.options.traffic?.counterPorts(group, members) ?? [];
    const counted = counterPorts.length === 0 ? {} : { counterPorts };
    let writtenAt: number | undefined;
    try {
      await this.options.vswitch.syncForwarding(
        { group, ports, bySource: sources, ...(tunnel === undefined ? {} : { tunnel }), ...counted },
        { expedite: expedited, onWritten: () => (writtenAt = clock.monotonicMs()) },
      );
      this.options.router?.setLocalMembers(
        group,
        members.length > 0,
        mergeFilters(filters.map(({ filter }) => filter)),
      );
    } catch (error) {
      // A failed sync keeps its start time, so the latency counts the retries too.
      if (!this.dirtySince.has(group)) this.dirtySince.set(group, since);
      counters.syncErrors++;
      const timing = syncTiming(clock.monotonicMs(), since, writtenAt);
      metrics.syncDone(timing.latencyMs / 1000, false);
      metrics.error('sync');
      publish({
        ...{ type: 'sync', time: isoNow(), group, ports, ...sourcesEvent, ...timing },
        ...{ ok: false, error: messageOf(error) },
      });
      throw error;
    }
    const timing = syncTiming(clock.monotonicMs(), since, writtenAt);
    this.errors.delete(group);
    counters.syncs++;
    metrics.syncDone(timing.latencyMs / 1000, true);
    publish({ type: 'sync', time: isoNow(), group, ports, ...sourcesEvent, ...timing, ok: true });
  }
}

/** A sync event's times: all from the monotonic clock, read at the end (`now`), the start and the write. */
function syncTiming(
  now: number,
  since: number,
  writtenAt: number | undefined,
): { latencyMs: number; sentMs?: number; clockMs: number } {
  return { latencyMs: now - since, ...(writtenAt === undefined ? {} : { sentMs: writtenAt - since }), clockMs: now };
}
