/**
 * The multicast controller: the daemon's control loop (Antrea's multicast controller).
 *
 *   packet-in (IGMP, MLD) ─► snooper ─► MembershipTable ─► WorkQueue (by group) ─► sync:
 *                                                                      OVS group + flow
 *                                                                      kernel: upstream joins,
 *                                                                      inbound (S,G) entries
 *   OVSDB monitor ─► PodPorts ─► a deleted pod leaves every group at once
 *   timers: general queries, expiry (GMI, unanswered leaves), idle routes, state saves
 *   ovs-vswitchd back after a restart ─► read the switch, replay every flow and group
 *
 * Everything outside (OVS, the kernel, the host, the disk, the clock) comes in through
 * the ports of ./ports.ts, already connected (./wiring.ts connects the real ones), so
 * that the loop is the same under test and in production.
 */
import { McastError, messageOf } from '../../../errors.js';
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import { type GroupAddress, parseGroupAddress } from '../../../wire/ip-address.js';
import { familyOf } from '../../../domain/family/families.js';
import {
  MembershipTable,
  type MemberChange,
  type MembershipEffect,
} from '../../../domain/membership/membership-table.js';
import { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { DirectoryPort } from '../../../domain/pods/pod-directory.js';
import type {
  DaemonCounters,
  DaemonEvent,
  DaemonStatus,
  DaemonView,
  GroupView,
  PortActivityView,
  PortQuery,
  RouteView,
} from '../../../transport/control/daemon-view.js';
import type { TrafficStatsView } from '../../../transport/control/daemon-view.js';
import { membershipTiming, type DaemonConfig } from '../config/config.js';
import { membershipLimits, packetBudget } from '../config/daemon-config.js';
import { callTable } from './igmp-snooper.js';
import { IgmpGuard } from './igmp-guard.js';
import { IgmpIntake } from './igmp-intake.js';
import { PortEntriesSync } from './port-entries-sync.js';
import { PolicyInForce } from './policy-in-force.js';
import { Querier, queryFrameSender } from './querier.js';
import { groupsToSync, restoreSavedState, savedStateOf, seedPlaceholders } from '../state/saved-state.js';
import { GroupSync } from './group-sync.js';
import { LoopTimers, querierTiming, STOP_SYNC_WAIT_MS } from './loop-timers.js';
import { finalSaveFailure, retakeBridgeLock } from './failures.js';
import { routerEventsOf } from './router-events.js';
import { TrafficCounterBudget } from './traffic-counters.js';
import { type TunnelMode, tunnelModeOf } from '../tunnel/tunnel-mode.js';
import {
  daemonStatusOf,
  groupViewsOf,
  memberEvent,
  portActivityViewOf,
  portViewOf,
  querierViewOf,
  sortedRoutes,
  summaryOf,
} from '../observe/view.js';
import { PortActivity } from './port-activity.js';
import {
  otherQuerierPresentMs,
  QuerierElection,
  type QueryProtocol,
} from '../../../domain/membership/querier-election.js';
import type { SavedState } from '../state/state-store.js';
import { NO_METRICS } from './ports.js';
import type {
  ControllerLogger,
  ControllerMetrics,
  ControllerOptions,
  DaemonClock,
  RouterEvents,
  RouterPort,
  SwitchPort,
} from './ports.js';

export type { ControllerLogger, ControllerMetrics, ControllerOptions } from './ports.js';

export class MulticastController implements DaemonView {
  private config: DaemonConfig;
  private readonly logger: ControllerLogger;
  private readonly clock: DaemonClock;
  private readonly vswitch: SwitchPort;
  private readonly router: RouterPort | undefined;
  private readonly table: MembershipTable;
  private readonly sync: GroupSync;
  private readonly timers: LoopTimers;
  private readonly pods: PodPorts;
  private readonly querier: Querier;
  private readonly election: QuerierElection;
  private readonly guard: IgmpGuard;
  private readonly intake: IgmpIntake;
  private readonly activity: PortActivity;
  private readonly portEntries: PortEntriesSync;
  private readonly policy: PolicyInForce;
  private readonly traffic: TrafficCounterBudget;
  private readonly tunnel: TunnelMode | undefined;
  private readonly metrics: ControllerMetrics;
  private readonly listeners = new Set<(event: DaemonEvent) => void>();
  private readonly startedAt: number;
  private readonly counters: DaemonCounters = {
    packetIns: 0,
    igmpMessages: {},
    ignoredNonPod: 0,
    syncs: 0,
    syncErrors: 0,
    replays: 0,
    queriesSent: 0,
  };
  private stopping = false;

  /** What the kernel router asks and tells the loop. */
  readonly routerEvents: RouterEvents;

  constructor(private readonly options: ControllerOptions) {
    const { config, clock } = options;
    this.config = config;
    this.logger = options.logger;
    this.clock = clock;
    this.vswitch = options.vswitch;
    this.router = options.router;
    this.routerEvents = routerEventsOf({
      ...{ hasLocalMembers: (group) => this.table.portsOf(group).length > 0, logger: options.logger },
      ...{
        publish: (event) => this.publish(event),
        isoNow: () => this.isoNow(),
        fail: (kind, error) => this.fail(kind, error),
      },
      onFatal: (error) => options.onFatal?.(error),
    });
    this.router?.bind(this.routerEvents);
    this.metrics = options.metrics ?? NO_METRICS;
    this.startedAt = clock.wallMs();
    this.pods = new PodPorts(config.gateway);
    this.pods.update(options.podDirectory.ports());
    options.podDirectory.onChange((ports, resync) => this.onPortChanges(ports, resync));
    const markDirty = (group: GroupAddress, lane?: string) => this.sync.markDirty(group, lane);
    this.tunnel = tunnelModeOf({
      ...options,
      config,
      markDirty,
      ports: options.podDirectory.ports(),
      listeners: this.listeners,
    });
    const onMemberChange = (change: MemberChange) => this.onMemberChange(change);
    const timing = membershipTiming(config);
    const { vswitch, router, logger, metrics, counters, pods } = this;
    this.policy = new PolicyInForce(options.policy, clock);
    const policy = () => this.policy.current;
    const [publish, isoNow, listened] = [
      (event: DaemonEvent) => this.publish(event),
      () => this.isoNow(),
      () => this.listeners.size > 0,
    ];
    this.activity = new PortActivity(() => clock.wallMs());
    const activity = this.activity;
    this.guard = new IgmpGuard({
      logger,
      pods,
      now: () => clock.monotonicMs(),
      budget: packetBudget(config),
      policy,
      activity,
    });
    this.election = new QuerierElection(config.querierElection, () => clock.monotonicMs());
    this.intake = new IgmpIntake({
      ...{
        pods,
        guard: this.guard,
        policy,
        counters,
        metrics,
        listened,
        publish,
        wallMs: () => clock.wallMs(),
        isoNow,
        activity,
      },
      onGeneralQuery: (query) => this.otherQuerier(query),
    });
    this.portEntries = new PortEntriesSync({
      ...{ vswitch, pods, clock, logger },
      meter: () =>
        this.config.igmpMeter ? { rate: this.config.igmpRatePerPort, burst: this.config.igmpBurstPerPort } : undefined,
      deniedSend: (pod) => this.policy.deniedSend(pod),
      fail: (error) => this.fail('openflow', error),
      retryMs: () => this.config.syncBackoffMinMs,
    });
    this.traffic = new TrafficCounterBudget({ settings: () => this.config, logger, now: () => clock.monotonicMs() });
    const limits = { limits: membershipLimits(config), onRefusal: this.guard.refused.bind(this.guard) };
    this.table = new MembershipTable({
      clock: { now: () => clock.monotonicMs() },
      timing,
      fastLeave: config.fastLeave,
      onMemberChange,
      ...limits,
    });
    this.sync = new GroupSync({
      ...{ vswitch, router, clock, logger, metrics, counters, publish, isoNow },
      ...{ workers: config.workers, minBackoffMs: config.syncBackoffMinMs, maxBackoffMs: config.syncBackoffMaxMs },
      membersOf: (group) => this.table.portsOf(group),
      filtersOf: (group) => this.table.portFiltersOf(group),
      gatewayOfport: () => this.pods.gateway?.ofport,
      tunnelOf: (group) => this.tunnel?.tunnelOf(group),
      counterPortsOf: (group, members) => this.traffic.counterPorts(group, members),
    });
    this.timers = new LoopTimers({
      ...{ clock, router, table: this.table, releaseMemory: options.releaseMemory },
      onExpired: (effects) => this.apply(effects),
      routeIdleTimeoutMs: () => this.config.routeIdleTimeoutMs,
      saves: options.stateStore !== undefined,
      save: () =>
        Promise.resolve()
          .then(() => this.options.stateStore?.save(this.savedState()))
          .catch((error: unknown) => this.fail('state', error)),
      onSweepError: (error) => this.fail('mroute', error),
    });
    this.querier = new Querier({
      ...querierTiming(config),
      mldVersions: config.mldQueryVersions,
      // The gateway's address and MAC, or 0.0.0.0 (a snooping switch's proxy querier).
      source: () =>
        (config.gateway === undefined ? undefined : options.host.interfaceIPv4(config.gateway)) ?? {
          address: '0.0.0.0',
        },
      ports: () => this.pods.pods.map((pod) => pod.ofport),
      send: queryFrameSender({ vswitch, counters, metrics }),
      onError: (error) => this.fail('query', error),
      timers: clock,
      election: this.election,
    });
  }

  /**
   * A general query from a pod port: a querier with a lower address silences our general queries there
   * (QuerierElection).
   */
  private otherQuerier(query: { ofport: number; protocol: QueryProtocol; source: string }): void {
    if (this.election.mode !== 'auto') return;
    const { ofport, protocol, source } = query;
    const already = this.election.present().some((other) => other.port === ofport && other.protocol === protocol);
    const presentMs = otherQuerierPresentMs(this.config);
    if (
      this.election.heard({
        port: ofport,
        protocol,
        address: source,
        ours: this.querier.sourceAddress(protocol),
        presentMs,
      }) &&
      !already
    ) {
      this.options.logger.info('another querier present: no general queries on the port while it queries', {
        port: portViewOf(this.pods, ofport),
        protocol,
        querier: source,
        forMs: presentMs,
      });
    }
  }

  /** Reads the switch, resumes saved state, installs the pipeline, then listens and queries. */
  async start(): Promise<void> {
    const { vswitch, podDirectory, stateStore } = this.options;
    const { target } = this.config;
    await vswitch.refresh();
    const { table, pods, clock, logger } = this;
    const saved = await restoreSavedState({ store: stateStore, bridge: target.bridge, table, pods, clock, logger });
    seedPlaceholders({ learned: vswitch.learnedGroups, config: this.config, table, pods, clock, logger });
    // kept until refreshed or timed out
    for (const { group, peers } of vswitch.learnedGroups) if (peers !== undefined) this.tunnel?.seed(group, peers);
    table.removeMembers(this.policy.deniesMember(pods), 'denied'); // saved before this policy; synced below
    // Saved at once: the state directory must be writable (else exit 1 now, not a
    // restart that forgets everything later), and what was seeded is on disk.
    if (stateStore !== undefined) await stateStore.save(this.savedState());
    await vswitch.installBase(this.pods.gateway?.ofport, this.tunnel?.ofport);
    // Each pod port's meter and policy drops, and the entries of ports gone meanwhile go.
    this.portEntries.start();
    const learned = vswitch.learnedGroups.map((entry) => entry.group);
    for (const group of groupsToSync({ installed: vswitch.installedGroups, learned, table, saved }))
      this.sync.markDirty(group);

    for (const { group, ports } of this.table.snapshot()) this.tunnel?.localMembers(group, ports.length > 0);
    vswitch.onPacketIn((frame, ofport, tunnelSource) => this.onPacketIn(frame, ofport, tunnelSource));
    const lost = (what: string, endpoint: string) => (error: Error) =>
      this.stopping || this.logger.warn(`${what} connection lost; reconnecting`, { endpoint, error: error.message });
    vswitch.onDisconnected(lost('OpenFlow', target.openflow));
    vswitch.onReconnected(() => void this.replay());
    podDirectory.onDisconnected(lost('OVSDB', target.db));
    const onFatal = (error: McastError) => this.options.onFatal?.(error);
    const lock = this.options.bridgeLock;
    podDirectory.onReconnected(
      () =>
        lock === undefined ||
        this.stopping ||
        void retakeBridgeLock({ lock, bridge: target.bridge, fail: (e) => this.fail('ovsdb', e), onFatal }),
    );
    await vswitch.enablePacketIn();
    this.querier.start();
    this.tunnel?.start();
    this.timers.armExpiry();
    this.timers.scheduleSweep();
    const { groupCount: groups, memberCount: members } = this.table;
    this.logger.info('started', {
      bridge: target.bridge,
      podPorts: this.pods.size,
      groups,
      members,
      fastLeave: this.config.fastLeave,
    });
  }

  // --- events in -------------------------------------------------------------------------

  /**
   * One IGMP packet-in (a peer's, from the tunnel port, is the tunnel's). Synchronous up to the queue, so a join's sync
   * starts at once.
   */
  private onPacketIn(frame: Uint8Array, ofport: number | undefined, tunnelSource?: string): void {
    if (this.tunnel?.takes(frame, ofport, tunnelSource) === true) return;
    const taken = this.intake.take(frame, ofport);
    if (taken === undefined) return;
    // Every record of the packet first, then their effects at once (one report to the peers).
    const effects = taken.calls.flatMap((call) => callTable(this.table, taken.ofport, call));
    this.apply(effects, taken.ofport);
    if (taken.calls.length > 0) {
      this.timers.scheduleSave();
      // A leave being asked about (however it was said: v2 leave, TO_IN {}, a BLOCK that
      // empties the filter) ends sooner than any member's GMI: the timer must move up.
      this.timers.armExpiry(effects.some((effect) => effect.kind === 'query'));
    }
  }

  /** `port`: the pod port whose IGMP had these effects (its syncs take turns with other ports'). */
  private apply(effects: readonly MembershipEffect[], port?: number): void {
    // The peers first: a cross-node join waits for their syncs, and on the one OpenFlow
    // connection the report to them would otherwise queue behind this node's own entries.
    for (const effect of effects)
      if (effect.kind === 'members') this.tunnel?.localMembers(effect.group, effect.ports.length > 0);
    this.tunnel?.announceChanges();
    for (const effect of effects) {
      if (effect.kind === 'members') this.sync.markDirty(effect.group, port);
      else
        this.querier.groupQueries(effect.group, effect.port, this.groupQueryVersion(effect.group, effect.port), {
          sources: effect.sources,
        });
    }
  }

  /**
   * The version a group's queries go in: IGMPv3 when general queries are v3, else v2; for
   * an IPv6 group, as the port's listeners speak (an MLDv1 host is asked in MLDv1, RFC 3810
   * §8.3.2, which the table holds as IGMPv2 compatibility), else MLDv2.
   */
  private groupQueryVersion(group: GroupAddress, port: number): 2 | 3 {
    if (familyOf(group).protocol === 'mld') return this.table.compatibilityOf(group, port) === 3 ? 3 : 2;
    return this.config.queryVersions.includes(3) ? 3 : 2;
  }

  private onPortChanges(ports: readonly DirectoryPort[], resync: boolean): void {
    const { added, removed, gatewayChanged } = this.pods.update(ports);
    const tunnelChanged = this.tunnel?.updatePorts(ports) === true;
    for (const port of removed) {
      this.logger.info('pod port removed: it leaves every group', {
        port: port.name,
        ofport: port.ofport,
        pod: port.pod,
      });
      this.apply(this.table.removePort(port.ofport));
      this.guard.forgetPort(port.ofport);
      this.activity.forgetPort(port.ofport);
      this.portEntries.forget(port.ofport);
    }
    if (removed.length > 0) this.timers.scheduleSave();
    for (const port of added) {
      this.logger.info('pod port added', { port: port.name, ofport: port.ofport, pod: port.pod });
      this.activity.portAdded(port.ofport);
      this.portEntries.markDirty(port.ofport);
    }
    // A new pod is asked at once what it wants, instead of at the next general query.
    if (added.length > 0) void this.querier.generalQueries(added.map((port) => port.ofport));
    if (gatewayChanged || tunnelChanged) {
      this.logger.warn('the gateway or tunnel port changed', {
        gateway: this.pods.gateway?.ofport,
        tunnel: this.tunnel?.ofport,
      });
      void this.vswitch
        .installBase(this.pods.gateway?.ofport, this.tunnel?.ofport)
        .catch((error: unknown) => this.fail('openflow', error));
      for (const group of this.groupsInUse()) this.sync.markDirty(group);
    }
    if (resync) {
      this.counters.replays++;
      this.publish({ type: 'replay', time: this.isoNow(), what: 'ovsdb', groups: this.table.groupCount });
      this.logger.info('OVSDB reconnected; ports resynced', {
        podPorts: this.pods.size,
        added: added.length,
        removed: removed.length,
      });
    }
  }

  private onMemberChange(change: MemberChange): void {
    const event = memberEvent(change, portViewOf(this.pods, change.port), this.isoNow());
    this.logger.debug(event.type, {
      group: event.group,
      port: event.port.name,
      host: event.host,
      ...(event.type === 'leave' ? { reason: event.reason } : {}),
    });
    this.publish(event);
  }

  // --- reconnections ---------------------------------------------------------------------

  /** The groups the switch must hold: those with local members, and those only peers want. */
  private groupsInUse(): Set<GroupAddress> {
    return new Set([
      ...this.table.snapshot().map((entry) => entry.group),
      ...(this.tunnel?.groupsWithRemoteMembers() ?? []),
    ]);
  }

  /** ovs-vswitchd is back (perhaps restarted, with nothing installed): read it and replay. */
  private async replay(): Promise<void> {
    if (this.stopping) return;
    try {
      await this.vswitch.refresh();
      await this.vswitch.installBase(this.pods.gateway?.ofport, this.tunnel?.ofport);
    } catch (error) {
      this.fail('openflow', error);
      return; // the connection dropped again: the next reconnect replays
    }
    const groups = this.groupsInUse();
    for (const group of groups) this.sync.markDirty(group);
    this.portEntries.markAll();
    this.counters.replays++;
    this.logger.info('OpenFlow reconnected; replaying', { groups: groups.size });
    this.publish({ type: 'replay', time: this.isoNow(), what: 'openflow', groups: groups.size });
  }

  // --- state directory -------------------------------------------------------------------

  private savedState(): SavedState {
    return savedStateOf({
      bridge: this.config.target.bridge,
      groups: this.table.snapshot(),
      pods: this.pods,
      clock: this.clock,
    });
  }

  /** Writes the state file now (SIGUSR2); rejects when the write fails. */
  async saveNow(): Promise<string | undefined> {
    if (this.options.stateStore === undefined) return undefined;
    await this.options.stateStore.save(this.savedState());
    return this.config.stateDir;
  }

  // --- configuration and the view -------------------------------------------------------

  /** The configuration it runs with (a reload may have changed its runtime settings). */
  get configuration(): DaemonConfig {
    return this.config;
  }

  /**
   * Takes new runtime settings (./reload.ts: the caller kept every other setting as it was). Timers
   * already running keep their time; what they arm next, and every deadline from now on, uses the new values.
   */
  reconfigure(config: DaemonConfig): void {
    const meterChanged = (['igmpMeter', 'igmpRatePerPort', 'igmpBurstPerPort'] as const).some(
      (key) => config[key] !== this.config[key],
    );
    const countingChanged = (['trafficCounters', 'maxTrafficCounters'] as const).some(
      (key) => config[key] !== this.config[key],
    );
    this.config = config;
    if (meterChanged) this.portEntries.markAll();
    if (countingChanged) {
      // Every pair is taken again under the new bound, and every group's counting flows follow.
      this.traffic.reset();
      for (const group of this.groupsInUse()) this.sync.markDirty(group);
    }
    this.table.reconfigure({
      timing: membershipTiming(config),
      fastLeave: config.fastLeave,
      limits: membershipLimits(config),
    });
    this.guard.reconfigure(packetBudget(config));
    this.querier.reconfigure({ ...querierTiming(config), mldVersions: config.mldQueryVersions });
    this.election.mode = config.querierElection;
    this.sync.setBackoff(config.syncBackoffMinMs, config.syncBackoffMaxMs);
    if (config.tunnel !== undefined) this.tunnel?.setPeers(config.tunnel.peers);
    if (this.router !== undefined) this.router.idleTimeoutMs = config.routeIdleTimeoutMs;
    // A shorter Group Membership Interval can bring the next expiry forward.
    this.timers.armExpiry(true);
  }

  /** One line's worth of what the daemon holds, for the log (SIGUSR1). */
  summary(): Record<string, unknown> {
    return summaryOf(this.status(), this.sync.syncErrors.size);
  }

  status(): DaemonStatus {
    const { config, startedAt, clock, vswitch, router, pods, table, counters } = this;
    const { podDirectory, pid = process.pid } = this.options;
    const [igmpRefused, igmpMeter, groupPolicy] = [
      this.guard.view(),
      this.portEntries.view(),
      this.policy.view(this.portEntries.portsDenyingSend),
    ];
    const pendingSyncs = this.sync.size + this.portEntries.pending;
    const parts = { config, startedAt, clock, vswitch, podDirectory, router, pods, table, counters, pid };
    const querier = querierViewOf(this.election, this.pods, clock.monotonicMs());
    return daemonStatusOf({
      ...parts,
      igmpRefused,
      igmpMeter,
      groupPolicy,
      querier,
      pendingSyncs,
      ...(this.tunnel && { tunnel: this.tunnel.status() }),
    });
  }

  groups(): GroupView[] {
    const [{ groupMembershipIntervalMs }, { dirty, syncErrors }, table] = [this.table.timings, this.sync, this.table];
    const inputs = {
      groupMembershipIntervalMs,
      dirty,
      syncErrors,
      clock: this.clock,
      ssmRange: this.config.ssmRange,
      pods: this.pods,
    };
    const local = groupViewsOf({
      ...inputs,
      groups: table.snapshot(),
      portFiltersOf: (group) => table.portFiltersOf(group),
    });
    return this.tunnel?.groupViews(local, this.sync) ?? local;
  }

  /** The kernel entries this daemon added, with their counters (read from /proc). */
  async routes(): Promise<RouteView[]> {
    return sortedRoutes((await this.router?.routeViews()) ?? []);
  }

  port(query: PortQuery): PortActivityView | undefined {
    const port =
      query.pod === undefined
        ? this.pods.byName(query.name ?? '')
        : this.pods.pods.find((pod) => pod.pod === query.pod);
    if (port === undefined) return undefined;
    const { ofport } = port;
    const group = query.group === undefined ? undefined : parseGroupAddress(query.group);
    return portActivityViewOf({
      port: portViewOf(this.pods, ofport),
      addresses: this.pods.addressesOf(ofport),
      activity: this.activity.snapshot(ofport, group),
      queryIntervalMs: this.config.queryIntervalMs,
      refusals: this.guard.view().byPort.find((entry) => entry.port.ofport === ofport)?.counts ?? {},
      meterDropped: this.portEntries.view().byPort.find((entry) => entry.port.ofport === ofport)?.dropped ?? 0,
      ...(group === undefined ? {} : { group, policy: this.policy.current }),
    });
  }

  /** What each counted pod sent to and received from each of its groups, read from the switch now. */
  async stats(): Promise<TrafficStatsView> {
    const traffic = (await this.vswitch.trafficCounters?.()) ?? [];
    return this.traffic.view(traffic, (ofport) => portViewOf(this.pods, ofport));
  }

  subscribe(listener: (event: DaemonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Waits until no sync is queued or running (tests and benchmarks). */
  async whenIdle(): Promise<void> {
    await Promise.all([this.sync.whenIdle(), this.portEntries.whenIdle()]);
  }

  /**
   * A new group policy (a reload): members it denies leave at once, the send drops that differ change; false: it
   * decides as the last.
   */
  setPolicy(policy: GroupPolicy, file: string | undefined): boolean {
    if (!this.policy.replace(policy, file)) return false; // the same decisions: nothing to redo
    this.apply(this.table.removeMembers(this.policy.deniesMember(this.pods), 'denied'));
    this.portEntries.markAll();
    this.timers.scheduleSave();
    return true;
  }

  // --- shutdown --------------------------------------------------------------------------

  /**
   * Stops: timers and queries end, running syncs finish, learned state is saved, the
   * routing socket closes (the kernel removes our VIFs and entries: cross-node traffic
   * stops) and the OVS connections close. OVS keeps our flows and groups, so pods on
   * this node keep receiving the groups they had until the next start takes over.
   */
  async stop(options: { save?: boolean } = {}): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.querier.stop();
    this.tunnel?.stop();
    this.timers.stop();
    this.sync.stop();
    this.portEntries.stop();
    let cancelWait: (() => void) | undefined;
    await Promise.race([
      this.sync.whenIdle(),
      new Promise<void>((resolve) => (cancelWait = this.clock.after(STOP_SYNC_WAIT_MS, resolve))),
    ]);
    cancelWait?.();
    const store = options.save === false ? undefined : this.options.stateStore;
    const saveFailure = await store?.save(this.savedState()).then(
      () => undefined,
      (error: unknown) => {
        this.fail('state', error);
        return finalSaveFailure(error);
      },
    );
    this.router?.close();
    await this.options.bridgeLock?.release();
    await Promise.allSettled([this.options.podDirectory.close(), this.vswitch.close()]);
    this.listeners.clear();
    if (saveFailure !== undefined) throw saveFailure;
  }

  private publish(event: DaemonEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private fail(kind: string, error: unknown): void {
    this.metrics.error(kind);
    this.logger.error(`${kind} failure`, {
      error: messageOf(error),
      ...(error instanceof McastError ? { code: error.code } : {}),
    });
  }

  private isoNow(): string {
    return new Date(this.clock.wallMs()).toISOString();
  }
}
