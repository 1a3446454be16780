/**
 * The multicast controller: the daemon's control loop (Antrea's multicast controller).
 *
 *   packet-in (IGMP) ─► snooper ─► MembershipTable ─► WorkQueue (by group) ─► sync:
 *                                                                 OVS group + flow
 *                                                                 kernel: upstream joins,
 *                                                                 inbound (S,G) entries
 *   OVSDB monitor ─► PodPorts ─► a deleted pod leaves every group at once
 *   timers: general queries, expiry (GMI, unanswered leaves), idle routes, state saves
 *   ovs-vswitchd back after a restart ─► read the switch, replay every flow and group
 *
 * Everything outside (OVS, the kernel, the disk, the clock) comes in through options,
 * so that the loop is the same under test and in production.
 */
import { hostname, networkInterfaces } from 'node:os';
import { ExitCode, McastError, messageOf, UsageError } from '../../errors.js';
import { ANY_SOURCE } from '../../domain/membership/source-filter.js';
import { MembershipTable, UNKNOWN_HOST, type MemberChange, type MembershipEffect, type RestoredMember } from '../../domain/membership/membership-table.js';
import { systemTimers, WorkQueue, type WorkQueueTimers } from '../../domain/membership/work-queue.js';
import { output } from '../../protocol/openflow/action.js';
import { OpenFlowConnection } from '../../transport/openflow/connection.js';
import { inPortOf } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../protocol/openflow/limits.js';
import { OvsdbClient } from '../../transport/ovsdb/client.js';
import { findBridge, watchInterfaces, type InterfaceWatch } from '../../adapters/ovs/vswitch.js';
import { MulticastPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import { toJsonLine } from '../../packet/frame-event-json.js';
import { compareIPv4 } from '../../wire/ipv4-address.js';
import { VERSION } from '../../version.js';
import { membershipTiming, type DaemonConfig } from './config.js';
import type { DaemonCounters, DaemonEvent, DaemonStatus, DaemonView, GroupView, MemberView, PortView, RouteView } from '../../domain/daemon-view.js';
import { snoopFrame, type MembershipCall } from './igmp-snooper.js';
import { BridgeLock } from '../../adapters/ovs/bridge-lock.js';
import { KernelRouter } from '../../adapters/kernel-router.js';
import { OvsProgrammer } from '../../adapters/ovs/ovs-programmer.js';
import { PodPorts } from '../../adapters/ovs/pod-ports.js';
import { Querier } from './querier.js';
import type { SavedMember, SavedState } from './state-store.js';

export interface ControllerLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What the controller tells the metrics (src/controllers/daemon/metrics.ts implements it). */
export interface ControllerMetrics {
  packetIn(): void;
  igmpMessage(type: string, version: number): void;
  ignoredNonPod(): void;
  syncDone(seconds: number, ok: boolean): void;
  error(kind: string): void;
  queriesSent(count: number): void;
}

/** Where learned state is kept across restarts (src/controllers/daemon/state-store.ts). */
export interface ControllerStateStore {
  load(): Promise<{ state?: SavedState; warning?: string }>;
  save(state: SavedState): Promise<void>;
}

export interface ControllerOptions {
  config: DaemonConfig;
  logger: ControllerLogger;
  stateStore?: ControllerStateStore;
  metrics?: ControllerMetrics;
  /** Monotonic milliseconds (default performance.now). */
  clock?: () => number;
  /** Wall-clock epoch milliseconds (default Date.now). */
  wallClock?: () => number;
  timers?: WorkQueueTimers;
  /** Something the daemon cannot go on without failed (the routing socket): stop and exit 1. */
  onFatal?: (error: McastError) => void;
}

/** How long membership changes wait before they are written to the state directory. */
const SAVE_DELAY_MS = 1_000;
const OPENFLOW_RECONNECT = { minDelayMs: 100, maxDelayMs: 1_000 };
const OVSDB_RECONNECT = { minDelayMs: 100, maxDelayMs: 2_000 };

const NO_METRICS: ControllerMetrics = { packetIn() {}, igmpMessage() {}, ignoredNonPod() {}, syncDone() {}, error() {}, queriesSent() {} };

export class MulticastController implements DaemonView {
  private config: DaemonConfig;
  private readonly logger: ControllerLogger;
  private readonly clock: () => number;
  private readonly wallClock: () => number;
  private readonly timers: WorkQueueTimers;
  private readonly table: MembershipTable;
  private readonly queue: WorkQueue<string>;
  private readonly pods: PodPorts;
  private readonly querier: Querier;
  private readonly listeners = new Set<(event: DaemonEvent) => void>();
  private readonly startedAt: number;
  private metrics: ControllerMetrics = NO_METRICS;
  /** When each group waiting for a sync first changed (for the sync latency). */
  private readonly dirtySince = new Map<string, number>();
  private readonly syncErrors = new Map<string, string>();
  private readonly counters: DaemonCounters = { packetIns: 0, igmpMessages: {}, ignoredNonPod: 0, syncs: 0, syncErrors: 0, replays: 0, queriesSent: 0 };
  private ovsdb: OvsdbClient | undefined;
  private bridgeLock: BridgeLock | undefined;
  private watch: InterfaceWatch | undefined;
  private openflow: OpenFlowConnection | undefined;
  private programmer: OvsProgrammer | undefined;
  private router: KernelRouter | undefined;
  private expiryTimer: { at: number; cancel: () => void } | undefined;
  private cancelSave: (() => void) | undefined;
  private cancelSweep: (() => void) | undefined;
  private frames = 0;
  private stopping = false;

  private constructor(private readonly options: ControllerOptions) {
    this.config = options.config;
    this.logger = options.logger;
    this.clock = options.clock ?? (() => performance.now());
    this.wallClock = options.wallClock ?? Date.now;
    this.timers = options.timers ?? systemTimers;
    this.startedAt = this.wallClock();
    this.pods = new PodPorts(this.config.gateway);
    this.table = new MembershipTable({
      clock: { now: this.clock },
      timing: membershipTiming(this.config),
      fastLeave: this.config.fastLeave,
      onMemberChange: (change) => this.onMemberChange(change),
    });
    this.queue = new WorkQueue<string>({
      sync: (group) => this.syncGroup(group),
      workers: this.config.workers,
      minBackoffMs: this.config.syncBackoffMinMs,
      maxBackoffMs: this.config.syncBackoffMaxMs,
      timers: this.timers,
      onError: (group, error, retryInMs) => {
        const message = error instanceof Error ? error.message : String(error);
        this.syncErrors.set(group, message);
        this.logger.warn('sync failed; retrying', { group, error: message, retryInMs });
      },
    });
    this.querier = new Querier({
      versions: this.config.queryVersions,
      queryIntervalMs: this.config.queryIntervalMs,
      queryResponseIntervalMs: this.config.queryResponseIntervalMs,
      lastMemberQueryIntervalMs: this.config.lastMemberQueryIntervalMs,
      robustness: this.config.robustness,
      source: () => this.querierSource(),
      ports: () => this.pods.pods.map((pod) => pod.ofport),
      send: (frame, ports) => this.sendFrame(frame, ports),
      onError: (error) => this.fail('query', error),
      timers: this.timers,
    });
  }

  /**
   * Connects to OVS, becomes the kernel's multicast router (with a gateway and multicast
   * interfaces), resumes saved state, installs the pipeline and starts listening and
   * querying. Anything that fails at start undoes what was done and throws.
   */
  static async start(options: ControllerOptions): Promise<MulticastController> {
    const controller = new MulticastController(options);
    try {
      await controller.connect();
    } catch (error) {
      await controller.stop({ save: false });
      throw error;
    }
    return controller;
  }

  private async connect(): Promise<void> {
    const { config } = this;
    const { target } = config;
    if (config.multicastInterfaces.length > 0 && config.gateway === undefined) {
      throw new UsageError('multicastInterfaces (--multicast-interfaces) need a gateway (--gateway): traffic crosses between the uplinks and the pods through it');
    }
    this.metrics = this.options.metrics ?? NO_METRICS;

    // OVSDB: the bridge must exist; its ports are watched from now on.
    this.ovsdb = await OvsdbClient.connect({ endpoint: target.db, timeoutMs: 10_000, reconnect: OVSDB_RECONNECT });
    if ((await findBridge(this.ovsdb, target.bridge)) === undefined) {
      throw new UsageError(`OVS has no bridge ${target.bridge} (at ${target.db})`, { code: 'no-such-interface', hint: 'create it, or name another with --bridge; list them with `ovs-vsctl list-br`' });
    }
    // One daemon per bridge: before anything is read or written, OVS names the owner.
    this.bridgeLock = await BridgeLock.acquire({
      client: this.ovsdb,
      bridge: target.bridge,
      holder: `pid ${process.pid} on ${hostname()}, control socket ${config.controlSocket}`,
    });
    let initial = true;
    this.watch = await watchInterfaces(this.ovsdb, target.bridge, (changes) => {
      if (initial) return;
      this.onPortChanges(changes, changes.reason === 'resync');
    });
    this.pods.update({ interfaces: this.watch.interfaces() });
    initial = false;
    if (config.gateway !== undefined && this.pods.gateway === undefined) {
      throw new UsageError(`bridge ${target.bridge} has no port ${config.gateway} with an OpenFlow port number (--gateway)`, {
        code: 'no-such-interface',
        hint: `add it (ovs-vsctl add-port ${target.bridge} ${config.gateway} -- set interface ${config.gateway} type=internal), or name the right port`,
      });
    }

    // The kernel, before OVS is touched: a refused MRT_INIT changes nothing.
    if (config.gateway !== undefined && config.multicastInterfaces.length > 0) {
      this.router = await KernelRouter.open({
        gateway: config.gateway,
        multicastInterfaces: config.multicastInterfaces,
        idleTimeoutMs: config.routeIdleTimeoutMs,
        clock: this.clock,
        hasLocalMembers: (group) => this.table.portsOf(group).length > 0,
        onRoute: (change) => this.onRoute(change),
        onError: (error) => this.fail('mroute', error),
        onFailure: (error) => {
          this.fail('mroute', error);
          this.options.onFatal?.(new McastError('io', `kernel multicast routing failed: ${error.message}; the kernel dropped the daemon's VIFs and routes`, undefined, { hint: 'the daemon stops so that a restart (systemd) sets routing up again', cause: error }));
        },
      });
      this.logger.info('multicast routing on', { gateway: `${this.router.gateway.name} (vif ${this.router.gateway.vif})`, uplinks: this.router.uplinks.map((uplink) => `${uplink.name} (vif ${uplink.vif})`).join(',') });
    }

    // OpenFlow: read what is installed, put back what was learned, then sync.
    this.openflow = await OpenFlowConnection.connect({ endpoint: target.openflow, timeoutMs: 10_000, reconnect: OPENFLOW_RECONNECT });
    this.programmer = new OvsProgrammer(this.openflow, new MulticastPipeline(config.pipeline, { maxBucketsPerGroup: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD }));
    await this.programmer.refresh();
    const saved = await this.restoreState();
    this.seedFromOvs();
    // Saved at once: the state directory must be writable (else exit 1 now, not a
    // restart that forgets everything later), and what was seeded is on disk.
    if (this.options.stateStore !== undefined) await this.options.stateStore.save(this.savedState());
    await this.programmer.installBase(this.pods.gateway?.ofport);
    const installed = new Set(this.programmer.installedGroups);
    // Every group this daemon installed is synced: to its members now, or removed. Groups
    // it did not learn (installed by `mcastctl install`) are not ours to judge here.
    const learned = this.programmer.learnedGroups.map((entry) => entry.group);
    for (const group of new Set([...this.table.snapshot().map((entry) => entry.group), ...learned, ...saved.filter((group) => installed.has(group))])) this.markDirty(group);

    this.openflow.on('packet-in', (packetIn) => this.onPacketIn(packetIn.data, inPortOf(packetIn)));
    this.openflow.on('disconnected', (reason) => {
      if (!this.stopping) this.logger.warn('OpenFlow connection lost; reconnecting', { endpoint: target.openflow, error: reason.message });
    });
    this.openflow.on('reconnected', () => void this.replay());
    this.ovsdb.on('disconnected', (event) => {
      if (!this.stopping) this.logger.warn('OVSDB connection lost; reconnecting', { endpoint: target.db, error: event.error.message });
    });
    this.ovsdb.on('reconnected', () => void this.retakeBridgeLock());
    await this.openflow.enablePacketIn();

    this.querier.start();
    this.armExpiry();
    this.scheduleSweep();
    this.logger.info('started', { bridge: target.bridge, podPorts: this.pods.size, groups: this.table.groupCount, members: this.table.memberCount, fastLeave: config.fastLeave });
  }

  // --- events in -------------------------------------------------------------------------

  /** One IGMP packet-in. Synchronous up to the queue, so a join's sync starts at once. */
  private onPacketIn(frame: Uint8Array, ofport: number | undefined): void {
    this.counters.packetIns++;
    this.metrics.packetIn();
    const snooped = snoopFrame(frame, { frame: ++this.frames, ts: this.wallClock() / 1000 });
    if (snooped === undefined) return;
    const label = snooped.type === 'malformed' ? 'malformed' : `v${snooped.version}_${snooped.type}`;
    this.counters.igmpMessages[label] = (this.counters.igmpMessages[label] ?? 0) + 1;
    this.metrics.igmpMessage(snooped.type, snooped.version);
    const pod = ofport === undefined ? undefined : this.pods.pod(ofport);
    if (this.listeners.size > 0) {
      const port = ofport === undefined ? null : (this.pods.view(ofport) ?? { ofport, name: String(ofport) });
      this.publish({ type: 'igmp', time: this.isoNow(), port, record: JSON.parse(toJsonLine(snooped.event)) as Record<string, unknown> });
    }
    if (pod === undefined) {
      if (snooped.calls.length > 0 || snooped.type === 'query') {
        this.counters.ignoredNonPod++;
        this.metrics.ignoredNonPod();
      }
      return;
    }
    let leaving = false;
    for (const call of snooped.calls) {
      const effects = this.call(pod.ofport, call);
      this.apply(effects);
      // A leave being asked about (however it was said: v2 leave, TO_IN {}, a BLOCK that
      // empties the filter) ends sooner than any member's GMI: the timer must move up.
      if (effects.some((effect) => effect.kind === 'query')) leaving = true;
    }
    if (snooped.calls.length > 0) {
      this.scheduleSave();
      this.armExpiry(leaving);
    }
  }

  private call(port: number, call: MembershipCall): MembershipEffect[] {
    switch (call.op) {
      case 'report':
        return this.table.report(port, call.host, call.group, call.version);
      case 'record':
        return this.table.record(port, call.host, call.record);
      case 'leave':
        return this.table.leave(port, call.host, call.group);
    }
  }

  private apply(effects: readonly MembershipEffect[]): void {
    for (const effect of effects) {
      if (effect.kind === 'members') this.markDirty(effect.group);
      else this.querier.groupQueries(effect.group, effect.port, this.config.queryVersions.includes(3) ? 3 : 2);
    }
  }

  private onPortChanges(changes: Parameters<PodPorts['update']>[0], resync: boolean): void {
    const { added, removed, gatewayChanged } = this.pods.update(changes);
    for (const port of removed) {
      this.logger.info('pod port removed: it leaves every group', { port: port.name, ofport: port.ofport, pod: port.pod });
      this.apply(this.table.removePort(port.ofport));
    }
    if (removed.length > 0) this.scheduleSave();
    for (const port of added) this.logger.info('pod port added', { port: port.name, ofport: port.ofport, pod: port.pod });
    // A new pod is asked at once what it wants, instead of at the next general query.
    if (added.length > 0) void this.querier.generalQueries(added.map((port) => port.ofport));
    if (gatewayChanged) {
      this.logger.warn('the gateway port changed', { gateway: this.pods.gateway?.name, ofport: this.pods.gateway?.ofport });
      void this.programmer?.installBase(this.pods.gateway?.ofport).catch((error: unknown) => this.fail('openflow', error));
      for (const group of this.table.snapshot()) this.markDirty(group.group);
    }
    if (resync) {
      this.counters.replays++;
      this.publish({ type: 'replay', time: this.isoNow(), what: 'ovsdb', groups: this.table.groupCount });
      this.logger.info('OVSDB reconnected; ports resynced', { podPorts: this.pods.size, added: added.length, removed: removed.length });
    }
  }

  private onMemberChange(change: MemberChange): void {
    const port = this.pods.view(change.port) ?? { ofport: change.port, name: String(change.port) };
    if (change.type === 'join') {
      this.logger.debug('join', { group: change.group, port: port.name, host: change.host });
      this.publish({ type: 'join', time: this.isoNow(), group: change.group, port, host: change.host });
    } else {
      const reason = change.reason === 'leave' ? 'fast-leave' : change.reason;
      this.logger.debug('leave', { group: change.group, port: port.name, host: change.host, reason });
      this.publish({ type: 'leave', time: this.isoNow(), group: change.group, port, host: change.host, reason });
    }
  }

  private onRoute(change: { action: 'add' | 'update' | 'remove'; source: string; group: string; iif: string; oifs: string[] }): void {
    this.logger.info(change.action === 'add' ? 'route added' : change.action === 'update' ? 'route updated' : 'idle route removed', change);
    this.publish({ type: 'route', time: this.isoNow(), ...change });
  }

  // --- sync ------------------------------------------------------------------------------

  private markDirty(group: string): void {
    if (!this.dirtySince.has(group)) this.dirtySince.set(group, this.clock());
    this.queue.add(group);
  }

  /** Makes OVS and the kernel match the group's members now (whatever changed meanwhile). */
  private async syncGroup(group: string): Promise<void> {
    const programmer = this.programmer;
    if (programmer === undefined || this.stopping) return;
    const since = this.dirtySince.get(group) ?? this.clock();
    this.dirtySince.delete(group);
    const members = this.table.portsOf(group);
    const gateway = this.pods.gateway?.ofport;
    const ports = members.length > 0 && gateway !== undefined ? [...members, gateway] : members;
    try {
      await programmer.syncGroup(group, ports);
      this.router?.setLocalMembers(group, members.length > 0);
    } catch (error) {
      // A failed sync keeps its start time, so the latency counts the retries too.
      if (!this.dirtySince.has(group)) this.dirtySince.set(group, since);
      this.counters.syncErrors++;
      this.metrics.syncDone((this.clock() - since) / 1000, false);
      this.metrics.error('sync');
      this.publish({ type: 'sync', time: this.isoNow(), group, ports, latencyMs: this.clock() - since, ok: false, error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    const latencyMs = this.clock() - since;
    this.syncErrors.delete(group);
    this.counters.syncs++;
    this.metrics.syncDone(latencyMs / 1000, true);
    this.publish({ type: 'sync', time: this.isoNow(), group, ports, latencyMs, ok: true });
  }

  /** The server forgot the lock with the old connection: take it again, or stop if another daemon has. */
  private async retakeBridgeLock(): Promise<void> {
    const lock = this.bridgeLock;
    if (lock === undefined || this.stopping) return;
    let held: boolean;
    try {
      held = await lock.reacquire();
    } catch (error) {
      // The connection dropped again: the next reconnection tries again.
      this.fail('ovsdb', error);
      return;
    }
    if (held) return;
    const error = new McastError('busy', `another mcastctl daemon took bridge ${this.config.target.bridge} while OVSDB was unreachable`, ExitCode.Failure, {
      hint: 'one daemon per bridge: this one stops',
    });
    this.fail('ovsdb', error);
    this.options.onFatal?.(error);
  }

  /** ovs-vswitchd is back (perhaps restarted, with nothing installed): read it and replay. */
  private async replay(): Promise<void> {
    if (this.programmer === undefined || this.stopping) return;
    try {
      await this.programmer.refresh();
      await this.programmer.installBase(this.pods.gateway?.ofport);
    } catch (error) {
      this.fail('openflow', error);
      return; // the connection dropped again: the next reconnect replays
    }
    const groups = this.table.snapshot().map((entry) => entry.group);
    for (const group of groups) this.markDirty(group);
    this.counters.replays++;
    this.logger.info('OpenFlow reconnected; replaying', { groups: groups.length });
    this.publish({ type: 'replay', time: this.isoNow(), what: 'openflow', groups: groups.length });
  }

  private async sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<number> {
    const openflow = this.openflow;
    if (openflow === undefined || !openflow.connected || ports.length === 0) return 0;
    const { errors } = await openflow.batch(ports.map((port) => packetOut({ data: frame, actions: [output(port)] })));
    const sent = ports.length - errors.size;
    this.counters.queriesSent += sent;
    this.metrics.queriesSent(sent);
    const first = errors.values().next();
    if (!first.done) throw new McastError('refused', `OVS refused ${errors.size} of ${ports.length} queries: ${first.value.message}`);
    return sent;
  }

  private querierSource(): { address: string; mac?: string } {
    const gateway = this.config.gateway;
    const address = gateway === undefined ? undefined : networkInterfaces()[gateway]?.find((entry) => entry.family === 'IPv4');
    return address === undefined ? { address: '0.0.0.0' } : { address: address.address, mac: address.mac };
  }

  // --- timers ----------------------------------------------------------------------------

  /** Arms the expiry timer at the table's next deadline (sooner, after a leave). */
  private armExpiry(sooner = false): void {
    if (this.stopping) return;
    if (this.expiryTimer !== undefined && !sooner) return;
    const next = this.table.nextDeadline();
    if (next === undefined) return;
    if (this.expiryTimer !== undefined) {
      if (this.expiryTimer.at <= next) return;
      this.expiryTimer.cancel();
    }
    const cancel = this.timers.after(Math.max(1, next - this.clock()), () => {
      this.expiryTimer = undefined;
      const effects = this.table.expire();
      this.apply(effects);
      if (effects.length > 0) this.scheduleSave();
      this.armExpiry();
    });
    this.expiryTimer = { at: next, cancel };
  }

  private scheduleSweep(): void {
    if (this.router === undefined || this.stopping) return;
    const every = Math.max(1_000, Math.min(10_000, Math.floor(this.config.routeIdleTimeoutMs / 4)));
    this.cancelSweep = this.timers.after(every, () => {
      void this.router
        ?.sweepIdle()
        .catch((error: unknown) => this.fail('mroute', error))
        .finally(() => this.scheduleSweep());
    });
  }

  // --- state directory -------------------------------------------------------------------

  /** Loads saved members whose ports still exist; returns every group the last run had. */
  private async restoreState(): Promise<string[]> {
    const store = this.options.stateStore;
    if (store === undefined) return [];
    const { state, warning } = await store.load();
    if (warning !== undefined) this.logger.warn(warning);
    if (state === undefined) return [];
    if (state.bridge !== this.config.target.bridge) {
      this.logger.warn('saved state is of another bridge; not restored', { saved: state.bridge, bridge: this.config.target.bridge });
      return [];
    }
    const monoNow = this.clock();
    const wallNow = this.wallClock();
    const members: RestoredMember[] = [];
    let skipped = 0; // their port is gone, or another pod has it now
    for (const group of state.groups) {
      for (const member of group.members) {
        const port = this.pods.byName(member.portName);
        if (port === undefined || (member.pod !== undefined && port.pod !== member.pod)) {
          skipped++;
          continue;
        }
        members.push({
          group: group.group,
          port: port.ofport,
          host: member.host,
          filter: member.mode === 'exclude' && member.sources.length === 0 ? ANY_SOURCE : { mode: member.mode, sources: new Set(member.sources) },
          lastReportAt: monoNow - Math.max(0, wallNow - member.lastReportAt),
          compatibility: member.compatibility,
        });
      }
    }
    this.table.restore(members);
    this.logger.info('state restored', { groups: this.table.groupCount, members: this.table.memberCount, skippedMembersOfGonePods: skipped, savedAt: new Date(state.savedAt).toISOString() });
    return state.groups.map((group) => group.group);
  }

  /**
   * Groups the daemon installed before it restarted may have member ports the saved
   * state does not know (it was lost, or the last second of joins was never written).
   * Those ports keep forwarding, as placeholder members, until the startup queries have
   * been answered: a member there replaces its placeholder by reporting; a port nobody
   * answers for is removed then. Forwarding never shrinks because the state was short.
   */
  private seedFromOvs(): void {
    const gateway = this.pods.gateway?.ofport;
    const { groupMembershipIntervalMs: gmi } = this.table.timings;
    const { robustness, queryIntervalMs, queryResponseIntervalMs } = this.config;
    const grace = Math.min(gmi, (robustness - 1) * Math.floor(queryIntervalMs / 4) + queryResponseIntervalMs + 2_000);
    const now = this.clock();
    const members: RestoredMember[] = [];
    for (const { group, ports } of this.programmer?.learnedGroups ?? []) {
      const known = new Set(this.table.portsOf(group));
      for (const port of ports) {
        if (port === gateway || known.has(port) || this.pods.pod(port) === undefined) continue;
        members.push({ group, port, host: UNKNOWN_HOST, filter: ANY_SOURCE, lastReportAt: now - gmi + grace, compatibility: 3 });
      }
    }
    if (members.length === 0) return;
    this.table.restore(members);
    this.logger.info('ports found in OVS without saved members kept until the startup queries are answered', { members: members.length, seconds: Math.round(grace / 1000) });
  }

  private scheduleSave(): void {
    if (this.options.stateStore === undefined || this.cancelSave !== undefined || this.stopping) return;
    this.cancelSave = this.timers.after(SAVE_DELAY_MS, () => {
      this.cancelSave = undefined;
      void this.saveState();
    });
  }

  private async saveState(): Promise<void> {
    const store = this.options.stateStore;
    if (store === undefined) return;
    try {
      await store.save(this.savedState());
    } catch (error) {
      this.fail('state', error);
    }
  }

  private savedState(): SavedState {
    const monoNow = this.clock();
    const wallNow = this.wallClock();
    const groups = this.table.snapshot().map((group) => ({
      group: group.group,
      members: group.members.flatMap((member): SavedMember[] => {
        const port = this.pods.view(member.port);
        // Placeholders are not saved: the next start finds them in OVS again.
        if (port === undefined || member.host === UNKNOWN_HOST) return [];
        return [{ portName: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }), host: member.host, mode: member.filter.mode, sources: member.filter.sources, compatibility: member.compatibility, lastReportAt: Math.round(wallNow - (monoNow - member.lastReportAt)) }];
      }),
    }));
    return { version: 1, savedAt: wallNow, bridge: this.config.target.bridge, groups };
  }

  /** The configuration it runs with (a reload may have changed its runtime settings). */
  get configuration(): DaemonConfig {
    return this.config;
  }

  /**
   * Takes new runtime settings (see src/controllers/daemon/reload.ts: the caller has kept every other
   * setting as it was). Timers already running keep their time; what they arm next, and
   * every deadline measured from now on, uses the new values.
   */
  reconfigure(config: DaemonConfig): void {
    this.config = config;
    this.table.reconfigure({ timing: membershipTiming(config), fastLeave: config.fastLeave });
    this.querier.reconfigure({
      versions: config.queryVersions,
      queryIntervalMs: config.queryIntervalMs,
      queryResponseIntervalMs: config.queryResponseIntervalMs,
      lastMemberQueryIntervalMs: config.lastMemberQueryIntervalMs,
      robustness: config.robustness,
    });
    this.queue.setBackoff(config.syncBackoffMinMs, config.syncBackoffMaxMs);
    if (this.router !== undefined) this.router.idleTimeoutMs = config.routeIdleTimeoutMs;
    // A shorter Group Membership Interval can bring the next expiry forward.
    this.armExpiry(true);
  }

  /** One line's worth of what the daemon holds, for the log (SIGUSR1). */
  summary(): Record<string, unknown> {
    return {
      bridge: this.config.target.bridge,
      podPorts: this.pods.size,
      groups: this.table.groupCount,
      members: this.table.memberCount,
      routes: this.router?.routeCount ?? 0,
      pendingSyncs: this.queue.size,
      syncErrors: this.syncErrors.size,
      packetIns: this.counters.packetIns,
      replays: this.counters.replays,
      openflow: this.openflow?.connected === true ? 'connected' : 'disconnected',
      ovsdb: this.ovsdb?.state === 'connected' ? 'connected' : 'disconnected',
    };
  }

  // --- the view --------------------------------------------------------------------------

  status(): DaemonStatus {
    const gateway = this.pods.gateway;
    return {
      version: VERSION,
      pid: process.pid,
      startedAt: new Date(this.startedAt).toISOString(),
      uptimeSeconds: Math.floor((this.wallClock() - this.startedAt) / 1000),
      bridge: this.config.target.bridge,
      openflow: this.openflow?.connected === true ? 'connected' : 'disconnected',
      ovsdb: this.ovsdb?.state === 'connected' ? 'connected' : 'disconnected',
      mrouteActive: this.router?.active === true,
      ...(gateway === undefined ? {} : { gateway }),
      multicastInterfaces: [...this.config.multicastInterfaces],
      podPorts: this.pods.size,
      groups: this.table.groupCount,
      members: this.table.memberCount,
      routes: this.router?.routeCount ?? 0,
      pendingSyncs: this.queue.size,
      counters: { ...this.counters, igmpMessages: { ...this.counters.igmpMessages } },
      stateDir: this.config.stateDir,
      controlSocket: this.config.controlSocket,
      ...(this.config.metricsAddress === undefined ? {} : { metricsAddress: this.config.metricsAddress }),
    };
  }

  groups(): GroupView[] {
    const monoNow = this.clock();
    const wallNow = this.wallClock();
    const iso = (mono: number): string => new Date(wallNow - (monoNow - mono)).toISOString();
    const gmi = this.table.timings.groupMembershipIntervalMs;
    const gateway = this.pods.gateway;
    return this.table.snapshot().map((group): GroupView => {
      const ports = group.ports.map((ofport) => this.portView(ofport));
      if (gateway !== undefined) ports.push(gateway);
      const members = group.members.map((member): MemberView => ({
        port: this.portView(member.port),
        host: member.host,
        compatibility: member.compatibility,
        mode: member.filter.mode,
        sources: member.filter.sources,
        lastReportAt: iso(member.lastReportAt),
        ...(member.leavingUntil === undefined ? {} : { leavingUntil: iso(member.leavingUntil) }),
        expiresAt: iso(Math.min(member.lastReportAt + gmi, member.leavingUntil ?? Infinity)),
      }));
      const error = this.syncErrors.get(group.group);
      return { group: group.group, ports, members, synced: !this.dirtySince.has(group.group) && error === undefined, ...(error === undefined ? {} : { error }) };
    });
  }

  /** The kernel entries this daemon added, with their counters (read from /proc). */
  async routes(): Promise<RouteView[]> {
    const views = (await this.router?.routeViews()) ?? [];
    return views.sort((a, b) => compareIPv4(a.group, b.group) || compareIPv4(a.source, b.source));
  }

  subscribe(listener: (event: DaemonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Waits until no sync is queued or running (tests and benchmarks). */
  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
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
    this.expiryTimer?.cancel();
    this.cancelSave?.();
    this.cancelSweep?.();
    this.queue.stop();
    await Promise.race([this.queue.whenIdle(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    let saveFailure: unknown;
    if (options.save !== false && this.options.stateStore !== undefined) {
      try {
        await this.options.stateStore.save(this.savedState());
      } catch (error) {
        this.fail('state', error);
        saveFailure = error;
      }
    }
    this.router?.close();
    await this.bridgeLock?.release();
    await Promise.allSettled([this.watch?.cancel(), this.openflow?.close(), this.ovsdb?.close()]);
    this.listeners.clear();
    if (saveFailure !== undefined) {
      throw saveFailure instanceof McastError
        ? saveFailure
        : new McastError('io', `the final save of the daemon state failed: ${messageOf(saveFailure)}`, ExitCode.Failure, { cause: saveFailure });
    }
  }

  /** Writes the state file now (SIGUSR2); rejects when the write fails. */
  async saveNow(): Promise<string | undefined> {
    const store = this.options.stateStore;
    if (store === undefined) return undefined;
    await store.save(this.savedState());
    return this.config.stateDir;
  }

  private portView(ofport: number): PortView {
    return this.pods.view(ofport) ?? { ofport, name: String(ofport) };
  }

  private publish(event: DaemonEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private fail(kind: string, error: unknown): void {
    this.metrics.error(kind);
    const message = error instanceof Error ? error.message : String(error);
    this.logger.error(`${kind} failure`, { error: message, ...(error instanceof McastError ? { code: error.code } : {}) });
  }

  private isoNow(): string {
    return new Date(this.wallClock()).toISOString();
  }
}
