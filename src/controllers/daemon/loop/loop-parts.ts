/**
 * The loop's collaborators, built from its options in the order they need each other:
 * the pod ports and the policy first, then the guard and the intake of IGMP and MLD, the
 * membership table, the syncs of groups and of ports, the timers and the querier. Each is
 * given the parts it reads (the table, the pod ports, the tunnel), not the loop; what it
 * tells the loop goes through LoopHooks, the loop's few entry points.
 */
import type { MembershipEffect, MemberChange } from '../../../domain/membership/membership-table.js';
import { MembershipTable } from '../../../domain/membership/membership-table.js';
import {
  otherQuerierPresentMs,
  QuerierElection,
  type QueryProtocol,
} from '../../../domain/membership/querier-election.js';
import { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { DaemonCounters, DaemonEvent } from '../../../transport/control/daemon-view.js';
import type { GroupAddress } from '../../../wire/ip-address.js';
import { membershipTiming, type DaemonConfig } from '../config/config.js';
import { membershipLimits, packetBudget } from '../config/daemon-config.js';
import type { SavedState } from '../state/state-format.js';
import { portViewOf } from '../observe/port-views.js';
import { type TunnelMode, tunnelModeOf } from '../tunnel/tunnel-mode.js';
import { EventStream, type EventBuilder } from './event-stream.js';
import { GroupSync } from './group-sync.js';
import { IgmpGuard } from './igmp-guard.js';
import { IgmpIntake } from './igmp-intake.js';
import { LoopTimers, querierTiming } from './loop-timers.js';
import { PolicyInForce } from './policy-in-force.js';
import { PortActivity } from './port-activity.js';
import { PortEntriesSync } from './port-entries-sync.js';
import { NO_METRICS, type ControllerMetrics, type ControllerOptions } from './ports.js';
import { Querier, queryFrameSender } from './querier.js';
import { TrafficCounterBudget } from './traffic-counters.js';

/** What the collaborators tell the loop. */
export interface LoopHooks {
  /** The configuration in force now (a reload replaces it). */
  config(): DaemonConfig;
  /** Membership effects to carry out; `port`: the pod port whose IGMP had them. */
  apply(effects: readonly MembershipEffect[], port?: number): void;
  memberChanged(change: MemberChange): void;
  fail(kind: string, error: unknown): void;
  isoNow(): string;
  /** The state to save, snapshotted a slice of groups a turn (packet-ins go between). */
  savedStateInTurns(): Promise<SavedState>;
}

export interface LoopParts {
  readonly pods: PodPorts;
  readonly policy: PolicyInForce;
  readonly activity: PortActivity;
  readonly guard: IgmpGuard;
  readonly election: QuerierElection;
  readonly intake: IgmpIntake;
  readonly portEntries: PortEntriesSync;
  readonly traffic: TrafficCounterBudget;
  readonly table: MembershipTable;
  readonly tunnel: TunnelMode | undefined;
  readonly sync: GroupSync;
  readonly timers: LoopTimers;
  readonly querier: Querier;
  readonly metrics: ControllerMetrics;
  readonly counters: DaemonCounters;
  /** The daemon's events for its subscribers (`snoop --daemon`). */
  readonly events: EventStream;
}

/** The collaborators of a loop on `options` (module comment). */
export function assembleLoop(options: ControllerOptions, hooks: LoopHooks): LoopParts {
  const { config, clock, logger, vswitch, router } = options;
  const metrics = options.metrics ?? NO_METRICS;
  const counters: DaemonCounters = {
    packetIns: 0,
    igmpMessages: {},
    ignoredNonPod: 0,
    syncs: 0,
    syncErrors: 0,
    replays: 0,
    queriesSent: 0,
  };
  const events = new EventStream();
  const publish = (event: DaemonEvent | EventBuilder) => events.publish(event);
  const { isoNow } = hooks;
  const now = () => clock.monotonicMs();
  const pods = new PodPorts(config.gateway);
  pods.update(options.podDirectory.ports());
  const policyInForce = new PolicyInForce(options.policy, clock);
  const policy = () => policyInForce.current;
  const activity = new PortActivity(() => clock.wallMs());
  const guard = new IgmpGuard({ logger, pods, now, budget: packetBudget(config), policy, activity });
  const election = new QuerierElection(config.querierElection, now);
  const intake = new IgmpIntake({
    ...{ pods, guard, policy, counters, metrics, publish, isoNow, activity },
    listened: () => events.listened,
    wallMs: () => clock.wallMs(),
    monotonicMs: now,
    onGeneralQuery: (query) => otherQuerier(query),
  });
  const podBudget = () => {
    const { igmpMeter: metered, igmpRatePerPort: rate, igmpBurstPerPort: burst } = hooks.config();
    return { rate, burst, metered };
  };
  const portEntries = new PortEntriesSync({
    ...{ vswitch, pods, clock, logger },
    meter: () => {
      const { rate, burst, metered } = podBudget();
      return metered ? { rate, burst } : undefined;
    },
    deniedSend: (pod) => policyInForce.deniedSend(pod, hooks.config().maxSendDenyRanges),
    fail: (error) => hooks.fail('openflow', error),
    retryMs: () => hooks.config().syncBackoffMinMs,
  });
  const traffic = new TrafficCounterBudget({ settings: () => hooks.config(), logger, now });
  const table = new MembershipTable({
    ...{ clock: { now }, timing: membershipTiming(config), fastLeave: config.fastLeave },
    onMemberChange: (change) => hooks.memberChanged(change),
    limits: membershipLimits(config),
    onRefusal: guard.refused.bind(guard),
    // Tunnel mode's groups only peers want count too: the tunnel exists by the time a report comes.
    heldForOthers: {
      count: () => tunnel?.heldForPeers.count() ?? 0,
      has: (group) => tunnel?.heldForPeers.has(group) ?? false,
    },
  });
  // The tunnel marks the groups its peers changed; the sync exists by the time it does.
  let sync: GroupSync | undefined;
  const markDirty = (group: GroupAddress, lane?: string) => sync?.markDirty(group, lane);
  const ports = options.podDirectory.ports();
  const maxGroups = () => hooks.config().maxGroups;
  const countPacketIn = () => {
    counters.packetIns++;
    metrics.packetIn();
  };
  const tunnel = tunnelModeOf({ ...options, config, markDirty, ports, events, maxGroups, podBudget, countPacketIn });
  sync = new GroupSync({
    ...{ vswitch, router, clock, logger, metrics, counters, publish, isoNow },
    ...{ workers: config.workers, minBackoffMs: config.syncBackoffMinMs, maxBackoffMs: config.syncBackoffMaxMs },
    ...{ members: table, pods, traffic },
    ...(tunnel === undefined ? {} : { tunnel }),
  });
  const { stateStore } = options;
  const timers = new LoopTimers({
    ...{ clock, router, table, memory: options.memory },
    onExpired: (effects) => hooks.apply(effects),
    routeIdleTimeoutMs: () => hooks.config().routeIdleTimeoutMs,
    saves: stateStore !== undefined,
    save: () =>
      Promise.resolve()
        .then(async () => stateStore?.save(await hooks.savedStateInTurns()))
        .catch((error: unknown) => hooks.fail('state', error)),
    onSweepError: (error) => hooks.fail('mroute', error),
  });
  const querier = new Querier({
    ...querierTiming(config),
    mldVersions: config.mldQueryVersions,
    // The gateway's address and MAC, or 0.0.0.0 (a snooping switch's proxy querier).
    source: () =>
      (config.gateway === undefined ? undefined : options.host.interfaceIPv4(config.gateway)) ?? UNSPECIFIED,
    ports: () => pods.pods.map((pod) => pod.ofport),
    send: queryFrameSender({ vswitch, counters, metrics }),
    onError: (error) => hooks.fail('query', error),
    timers: clock,
    election,
  });
  /** A general query from a pod port: a querier with a lower address silences our general queries there. */
  function otherQuerier(query: { ofport: number; protocol: QueryProtocol; source: string }): void {
    if (election.mode !== 'auto') return;
    const { ofport, protocol, source } = query;
    const already = election.present().some((other) => other.port === ofport && other.protocol === protocol);
    const presentMs = otherQuerierPresentMs(hooks.config());
    const ours = querier.sourceAddress(protocol);
    if (!election.heard({ port: ofport, protocol, address: source, ours, presentMs }) || already) return;
    logger.info('another querier present: no general queries on the port while it queries', {
      ...{ port: portViewOf(pods, ofport), protocol, querier: source, forMs: presentMs },
    });
  }
  const parts = { pods, policy: policyInForce, activity, guard, election, intake, portEntries, traffic, table };
  return { ...parts, tunnel, sync, timers, querier, metrics, counters, events };
}

/** The source of queries from a node with no gateway address. */
const UNSPECIFIED = { address: '0.0.0.0' };
