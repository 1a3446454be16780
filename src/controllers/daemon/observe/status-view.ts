/**
 * The daemon's status (`mcastctl status`, and the one-line summary SIGUSR1 logs): what it
 * is connected to, what it holds and counts, and the querier election's view, built from
 * the loop's state on demand. One view per file, so that each can be read with its input.
 */
import { VERSION } from '../../../version.js';
import type { MembershipTable } from '../../../domain/membership/membership-table.js';
import type { QuerierElection } from '../../../domain/membership/querier-election.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type {
  DaemonCounters,
  DaemonStatus,
  GroupPolicyView,
  IgmpMeterView,
  IgmpRefusals,
  QuerierView,
  TunnelView,
} from '../../../transport/control/daemon-view.js';
import type { PodDirectory } from '../../../domain/pods/pod-directory.js';
import type { DaemonConfig } from '../config/config.js';
import type { ControllerStateStore, DaemonClock, RouterPort, SwitchPort } from '../loop/ports.js';
import { portViewOf } from './port-views.js';

export interface StatusInput {
  config: DaemonConfig;
  /** Wall-clock epoch milliseconds. */
  startedAt: number;
  clock: DaemonClock;
  pid: number;
  vswitch: Pick<SwitchPort, 'connected'>;
  podDirectory: Pick<PodDirectory, 'connected'>;
  router: Pick<RouterPort, 'active' | 'routeCount'> | undefined;
  pods: PodPorts;
  table: Pick<MembershipTable, 'groupCount' | 'memberCount'>;
  pendingSyncs: number;
  counters: DaemonCounters;
  igmpRefused: IgmpRefusals;
  igmpMeter: IgmpMeterView;
  groupPolicy: GroupPolicyView;
  querier: QuerierView;
  /** Tunnel mode's part (tunnelViewOf), when it is on. */
  tunnel?: TunnelView;
  /** The state directory's store, when the daemon saves its state. */
  stateStore?: Pick<ControllerStateStore, 'lastSaved'>;
}

/** The election's mode and the other queriers present now, their ports as the status shows them. */
export function querierViewOf(
  election: Pick<QuerierElection, 'mode' | 'present'>,
  pods: PodPorts,
  nowMs: number,
): QuerierView {
  return {
    election: election.mode,
    otherQueriers: election.present().map((other) => ({
      port: portViewOf(pods, other.port),
      protocol: other.protocol,
      address: other.address,
      expiresInMs: Math.max(0, Math.round(other.untilMs - nowMs)),
    })),
  };
}

export function daemonStatusOf(input: StatusInput): DaemonStatus {
  const { config, pods, router } = input;
  const gateway = pods.gateway;
  return {
    version: VERSION,
    pid: input.pid,
    startedAt: new Date(input.startedAt).toISOString(),
    uptimeSeconds: Math.floor((input.clock.wallMs() - input.startedAt) / 1000),
    bridge: config.target.bridge,
    openflow: input.vswitch.connected ? 'connected' : 'disconnected',
    ovsdb: input.podDirectory.connected ? 'connected' : 'disconnected',
    mrouteActive: router?.active === true,
    ...(gateway === undefined ? {} : { gateway }),
    multicastInterfaces: [...config.multicastInterfaces],
    podPorts: pods.size,
    groups: input.table.groupCount,
    members: input.table.memberCount,
    routes: router?.routeCount ?? 0,
    pendingSyncs: input.pendingSyncs,
    counters: { ...input.counters, igmpMessages: { ...input.counters.igmpMessages } },
    igmpRefused: input.igmpRefused,
    igmpMeter: input.igmpMeter,
    groupPolicy: input.groupPolicy,
    querier: input.querier,
    ...(input.tunnel === undefined ? {} : { tunnel: input.tunnel }),
    stateDir: config.stateDir,
    ...(input.stateStore === undefined ? {} : { stateSavedAt: isoOrNull(input.stateStore.lastSaved()) }),
    maxGroups: config.maxGroups,
    controlSocket: config.controlSocket,
    ...(config.metricsAddress === undefined ? {} : { metricsAddress: config.metricsAddress }),
  };
}

function isoOrNull(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : new Date(epochMs).toISOString();
}

/** One line's worth of what the daemon holds, for the log (SIGUSR1). */
export function summaryOf(status: DaemonStatus, syncErrors: number): Record<string, unknown> {
  const { bridge, podPorts, groups, members, routes, pendingSyncs, counters, openflow, ovsdb } = status;
  return {
    bridge,
    podPorts,
    groups,
    members,
    routes,
    pendingSyncs,
    syncErrors,
    packetIns: counters.packetIns,
    replays: counters.replays,
    openflow,
    ovsdb,
  };
}
