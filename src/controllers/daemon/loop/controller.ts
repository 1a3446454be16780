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
import type { GroupAddress } from '../../../wire/ip-address.js';
import { familyOf } from '../../../domain/family/families.js';
import type { MemberChange, MembershipEffect } from '../../../domain/membership/membership-table.js';
import type {
  DaemonEvent,
  DaemonStatus,
  DaemonView,
  GroupView,
  PortActivityView,
  PortQuery,
  RouteView,
  TrafficStatsView,
} from '../../../transport/control/daemon-view.js';
import { membershipTiming, type DaemonConfig } from '../config/config.js';
import { membershipLimits, packetBudget, PORT_ENTRY_SETTINGS } from '../config/daemon-config.js';
import { callTable } from './igmp-snooper.js';
import {
  groupsToSync,
  restoreSavedState,
  savedStateInTurns,
  savedStateNow,
  seedPlaceholders,
} from '../state/saved-state.js';
import { querierTiming, STOP_SYNC_WAIT_MS } from './loop-timers.js';
import { finalSaveFailure, retakeBridgeLock } from './failures.js';
import { routerEventsOf } from './router-events.js';
import { memberEvent, portViewOf } from '../observe/port-views.js';
import { assembleLoop, type LoopParts } from './loop-parts.js';
import { installBaseFlows, type PortChangeContext, takePortChanges } from './port-changes.js';
import { replacePolicy } from './policy-change.js';
import {
  loopGroups,
  loopPort,
  loopRoutes,
  loopStats,
  loopStatus,
  loopSummary,
  type LoopViewInput,
} from './loop-views.js';
import type { ControllerOptions, RouterEvents } from './ports.js';

export type { ControllerOptions } from './ports.js';

export class MulticastController implements DaemonView {
  private config: DaemonConfig;
  private readonly parts: LoopParts;
  private readonly startedAt: number;
  private stopping = false;

  /** What the kernel router asks and tells the loop. */
  readonly routerEvents: RouterEvents;

  constructor(private readonly options: ControllerOptions) {
    const { config, clock } = options;
    this.config = config;
    this.startedAt = clock.wallMs();
    this.parts = assembleLoop(options, {
      config: () => this.config,
      apply: (effects, port) => this.apply(effects, port),
      memberChanged: (change) => this.onMemberChange(change),
      fail: (kind, error) => this.fail(kind, error),
      isoNow: () => this.isoNow(),
      savedStateInTurns: () => savedStateInTurns(this.saveInput()),
    });
    const { table } = this.parts;
    this.routerEvents = routerEventsOf({
      ...{ hasLocalMembers: (group) => table.portsOf(group).length > 0, logger: options.logger },
      ...{ publish: (event) => this.publish(event), isoNow: () => this.isoNow() },
      fail: (kind, error) => this.fail(kind, error),
      onFatal: (error) => options.onFatal?.(error),
    });
    options.router?.bind(this.routerEvents);
    options.podDirectory.onChange((ports, resync) => takePortChanges(this.portChangeContext(), ports, resync));
  }

  /** Reads the switch, resumes saved state, installs the pipeline, then listens and queries. */
  async start(): Promise<void> {
    const { vswitch, podDirectory, stateStore, clock, logger } = this.options;
    const [{ target }, { table, pods }] = [this.config, this.parts];
    await vswitch.refresh();
    const deniesMember = this.parts.policy.deniesMember(pods);
    const restoring = { store: stateStore, bridge: target.bridge, table, pods, clock, logger, deniesMember };
    const saved = await restoreSavedState(restoring);
    seedPlaceholders({ learned: vswitch.learnedGroups, config: this.config, table, pods, clock, logger });
    // kept until refreshed or timed out
    for (const { group, peers } of vswitch.learnedGroups)
      if (peers !== undefined) this.parts.tunnel?.seed(group, peers);
    table.removeMembers(deniesMember, 'denied'); // the placeholders, seeded before this policy; synced below
    // Saved at once: the state directory must be writable (else exit 1 now, not a
    // restart that forgets everything later), and what was seeded is on disk.
    if (stateStore !== undefined) await stateStore.save(savedStateNow(this.saveInput()));
    await installBaseFlows(this.parts, vswitch);
    // Each pod port's meter and policy drops, and the entries of ports gone meanwhile go.
    this.parts.portEntries.start();
    const learned = vswitch.learnedGroups.map((entry) => entry.group);
    for (const group of groupsToSync({ installed: vswitch.installedGroups, learned, table, saved }))
      this.parts.sync.markDirty(group);

    for (const { group, ports } of this.parts.table.snapshot())
      this.parts.tunnel?.localMembers(group, ports.length > 0);
    vswitch.onPacketIn((frame, ofport, tunnelSource) => this.onPacketIn(frame, ofport, tunnelSource));
    const lost = (what: string, endpoint: string) => (error: Error) =>
      this.stopping ||
      this.options.logger.warn(`${what} connection lost; reconnecting`, { endpoint, error: error.message });
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
    this.parts.querier.start();
    this.parts.tunnel?.start();
    this.parts.timers.armExpiry();
    this.parts.timers.scheduleSweep();
    const { groupCount: groups, memberCount: members } = this.parts.table;
    this.options.logger.info('started', {
      bridge: target.bridge,
      podPorts: this.parts.pods.size,
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
    if (this.parts.tunnel?.takes(frame, ofport, tunnelSource) === true) return;
    const taken = this.parts.intake.take(frame, ofport);
    if (taken === undefined) return;
    // Every record of the packet first, then their effects at once (one report to the peers).
    const effects = taken.calls.flatMap((call) => callTable(this.parts.table, taken.ofport, call));
    this.apply(effects, taken.ofport);
    if (taken.calls.length > 0) {
      this.parts.timers.countChanges(effects.length);
      this.parts.timers.scheduleSave();
      // A leave being asked about (however it was said: v2 leave, TO_IN {}, a BLOCK that
      // empties the filter) ends sooner than any member's GMI: the timer must move up.
      this.parts.timers.armExpiry(effects.some((effect) => effect.kind === 'query'));
    }
  }

  /** `port`: the pod port whose IGMP had these effects (its syncs take turns with other ports'). */
  private apply(effects: readonly MembershipEffect[], port?: number): void {
    // The peers first: a cross-node join waits for their syncs, and on the one OpenFlow
    // connection the report to them would otherwise queue behind this node's own entries.
    for (const effect of effects)
      if (effect.kind === 'members') this.parts.tunnel?.localMembers(effect.group, effect.ports.length > 0);
    this.parts.tunnel?.announceChanges();
    for (const effect of effects) {
      if (effect.kind === 'members') this.parts.sync.markDirty(effect.group, port);
      else this.parts.querier.groupQueries(effect.group, effect.port, this.groupQueryVersion(effect), effect);
    }
  }

  /**
   * The version a group's queries go in: IGMPv3 when general queries are v3, else v2; for
   * an IPv6 group, as the port's listeners speak (an MLDv1 host is asked in MLDv1, RFC 3810
   * §8.3.2, which the table holds as IGMPv2 compatibility), else MLDv2.
   */
  private groupQueryVersion({ group, port }: { group: GroupAddress; port: number }): 2 | 3 {
    if (familyOf(group).protocol === 'mld') return this.parts.table.compatibilityOf(group, port) === 3 ? 3 : 2;
    return this.config.queryVersions.includes(3) ? 3 : 2;
  }

  private onMemberChange(change: MemberChange): void {
    const event = memberEvent(change, portViewOf(this.parts.pods, change.port), this.isoNow());
    this.options.logger.debug(event.type, {
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
      ...this.parts.table.snapshot().map((entry) => entry.group),
      ...(this.parts.tunnel?.groupsWithRemoteMembers() ?? []),
    ]);
  }

  /** ovs-vswitchd is back (perhaps restarted, with nothing installed): read it and replay. */
  private async replay(): Promise<void> {
    if (this.stopping) return;
    try {
      await this.options.vswitch.refresh();
      await installBaseFlows(this.parts, this.options.vswitch);
    } catch (error) {
      this.fail('openflow', error);
      return; // the connection dropped again: the next reconnect replays
    }
    const groups = this.groupsInUse();
    for (const group of groups) this.parts.sync.markDirty(group);
    this.parts.portEntries.markAll();
    this.parts.counters.replays++;
    this.options.logger.info('OpenFlow reconnected; replaying', { groups: groups.size });
    this.publish({ type: 'replay', time: this.isoNow(), what: 'openflow', groups: groups.size });
  }

  // --- state directory -------------------------------------------------------------------

  /** What a save reads: the table, the ports' names and the clocks. */
  private saveInput() {
    const { table, pods } = this.parts;
    return { bridge: this.config.target.bridge, table, pods, clock: this.options.clock };
  }

  /** Writes the state file now (SIGUSR2); rejects when the write fails. */
  async saveNow(): Promise<string | undefined> {
    if (this.options.stateStore === undefined) return undefined;
    await this.options.stateStore.save(savedStateNow(this.saveInput()));
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
    const portEntriesChanged = PORT_ENTRY_SETTINGS.some((key) => config[key] !== this.config[key]);
    const countingChanged = (['trafficCounters', 'maxTrafficCounters'] as const).some(
      (key) => config[key] !== this.config[key],
    );
    this.config = config;
    if (portEntriesChanged) this.parts.portEntries.markAll();
    if (countingChanged) {
      // Every pair is taken again under the new bound, and every group's counting flows follow.
      this.parts.traffic.reset();
      for (const group of this.groupsInUse()) this.parts.sync.markDirty(group);
    }
    this.parts.table.reconfigure({
      timing: membershipTiming(config),
      fastLeave: config.fastLeave,
      limits: membershipLimits(config),
    });
    this.parts.guard.reconfigure(packetBudget(config));
    this.parts.querier.reconfigure({ ...querierTiming(config), mldVersions: config.mldQueryVersions });
    this.parts.election.mode = config.querierElection;
    this.parts.sync.setBackoff(config.syncBackoffMinMs, config.syncBackoffMaxMs);
    if (config.tunnel !== undefined && this.parts.tunnel?.reconfigure(config.tunnel) === true)
      void installBaseFlows(this.parts, this.options.vswitch).catch((error: unknown) => this.fail('openflow', error));
    if (this.options.router !== undefined) this.options.router.idleTimeoutMs = config.routeIdleTimeoutMs;
    // A shorter Group Membership Interval can bring the next expiry forward.
    this.parts.timers.armExpiry(true);
  }

  /** One line's worth of what the daemon holds, for the log (SIGUSR1). */
  summary(): Record<string, unknown> {
    return loopSummary(this.viewInput());
  }

  status(): DaemonStatus {
    return loopStatus(this.viewInput());
  }

  groups(): GroupView[] {
    return loopGroups(this.viewInput());
  }

  routes(): Promise<RouteView[]> {
    return loopRoutes(this.viewInput());
  }

  port(query: PortQuery): PortActivityView | undefined {
    return loopPort(this.viewInput(), query);
  }

  stats(): Promise<TrafficStatsView> {
    return loopStats(this.viewInput());
  }

  private portChangeContext(): PortChangeContext {
    return {
      ...{ parts: this.parts, options: this.options, groupsInUse: () => this.groupsInUse() },
      ...{ apply: (effects) => this.apply(effects), fail: (kind, error) => this.fail(kind, error) },
      ...{ publish: (event) => this.publish(event), isoNow: () => this.isoNow() },
    };
  }

  private viewInput(): LoopViewInput {
    return { ...this.parts, config: this.config, startedAt: this.startedAt, options: this.options };
  }

  subscribe(listener: (event: DaemonEvent) => void): () => void {
    return this.parts.events.subscribe(listener);
  }

  /** Waits until no sync is queued or running (tests and benchmarks). */
  async whenIdle(): Promise<void> {
    await Promise.all([this.parts.sync.whenIdle(), this.parts.portEntries.whenIdle()]);
  }

  /**
   * A new group policy (a reload): members it denies leave at once, ports it lets back into a group are asked about
   * it, the send drops that differ change; false: it decides as the last.
   */
  setPolicy(policy: GroupPolicy, file: string | undefined): boolean {
    const effects = replacePolicy(this.parts, policy, file);
    if (effects === undefined) return false; // the same decisions: nothing to redo
    this.apply(effects);
    this.parts.portEntries.markAll();
    this.parts.timers.scheduleSave();
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
    this.parts.querier.stop();
    this.parts.tunnel?.stop();
    this.parts.timers.stop();
    this.parts.sync.stop();
    this.parts.portEntries.stop();
    let cancelWait: (() => void) | undefined;
    await Promise.race([
      this.parts.sync.whenIdle(),
      new Promise<void>((resolve) => (cancelWait = this.options.clock.after(STOP_SYNC_WAIT_MS, resolve))),
    ]);
    cancelWait?.();
    const store = options.save === false ? undefined : this.options.stateStore;
    const saveFailure = await store?.save(savedStateNow(this.saveInput())).then(
      () => undefined,
      (error: unknown) => {
        this.fail('state', error);
        return finalSaveFailure(error);
      },
    );
    this.options.router?.close();
    await this.options.bridgeLock?.release();
    await Promise.allSettled([this.options.podDirectory.close(), this.options.vswitch.close()]);
    this.parts.events.clear();
    if (saveFailure !== undefined) throw saveFailure;
  }

  private publish(event: DaemonEvent): void {
    this.parts.events.publish(event);
  }

  private fail(kind: string, error: unknown): void {
    this.parts.metrics.error(kind);
    this.options.logger.error(`${kind} failure`, {
      error: messageOf(error),
      ...(error instanceof McastError ? { code: error.code } : {}),
    });
  }

  private isoNow(): string {
    return new Date(this.options.clock.wallMs()).toISOString();
  }
}
