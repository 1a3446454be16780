/**
 * What the control socket and the metrics see of the running loop: its status, its
 * groups with their members, its kernel routes. Built from the loop's state on demand.
 */
import { VERSION } from '../../version.js';
import { compareAddresses } from '../../wire/ip-address.js';
import type { GroupSnapshot, MemberChange, MembershipTable } from '../../domain/membership/membership-table.js';
import type {
  DaemonCounters,
  DaemonEvent,
  DaemonStatus,
  GroupView,
  GroupPolicyView,
  IgmpMeterView,
  IgmpRefusals,
  MemberView,
  PortView,
  RouteView,
} from '../../transport/control/daemon-view.js';
import type { PodPorts } from '../../adapters/ovs/pod-ports.js';
import type { DaemonConfig } from './config.js';
import type { DaemonClock, PortWatch, RouterPort, SwitchPort } from './ports.js';

export interface StatusInput {
  config: DaemonConfig;
  /** Wall-clock epoch milliseconds. */
  startedAt: number;
  clock: DaemonClock;
  pid: number;
  vswitch: Pick<SwitchPort, 'connected'>;
  portWatch: Pick<PortWatch, 'connected'>;
  router: Pick<RouterPort, 'active' | 'routeCount'> | undefined;
  pods: PodPorts;
  table: Pick<MembershipTable, 'groupCount' | 'memberCount'>;
  pendingSyncs: number;
  counters: DaemonCounters;
  igmpRefused: IgmpRefusals;
  igmpMeter: IgmpMeterView;
  groupPolicy: GroupPolicyView;
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
    ovsdb: input.portWatch.connected ? 'connected' : 'disconnected',
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
    stateDir: config.stateDir,
    controlSocket: config.controlSocket,
    ...(config.metricsAddress === undefined ? {} : { metricsAddress: config.metricsAddress }),
  };
}

/** One line's worth of what the daemon holds, for the log (SIGUSR1). */
export function summaryOf(status: DaemonStatus, syncErrors: number): Record<string, unknown> {
  const { bridge, podPorts, groups, members, routes, pendingSyncs, counters, openflow, ovsdb } = status;
  return { bridge, podPorts, groups, members, routes, pendingSyncs, syncErrors, packetIns: counters.packetIns, replays: counters.replays, openflow, ovsdb };
}

/** The event of a host that joined or left (a leave asked for and granted at once is a fast leave). */
export function memberEvent(change: MemberChange, port: PortView, time: string): Extract<DaemonEvent, { type: 'join' | 'leave' }> {
  const { group, host } = change;
  if (change.type === 'join') return { type: 'join', time, group, port, host };
  return { type: 'leave', time, group, port, host, reason: change.reason === 'leave' ? 'fast-leave' : change.reason };
}

export interface GroupViewInput {
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
  groups: readonly GroupSnapshot[];
  pods: PodPorts;
  groupMembershipIntervalMs: number;
  /** Groups waiting for a sync. */
  dirty: ReadonlySet<string> | ReadonlyMap<string, unknown>;
  /** The last sync error of each group whose sync is failing. */
  syncErrors: ReadonlyMap<string, string>;
}

export function portViewOf(pods: PodPorts, ofport: number): PortView {
  return pods.view(ofport) ?? { ofport, name: String(ofport) };
}

export function groupViewsOf(input: GroupViewInput): GroupView[] {
  const { pods, groupMembershipIntervalMs: gmi } = input;
  const monoNow = input.clock.monotonicMs();
  const wallNow = input.clock.wallMs();
  const iso = (mono: number): string => new Date(wallNow - (monoNow - mono)).toISOString();
  const gateway = pods.gateway;
  return input.groups.map((group): GroupView => {
    const ports = group.ports.map((ofport) => portViewOf(pods, ofport));
    if (gateway !== undefined) ports.push(gateway);
    const members = group.members.map(
      (member): MemberView => ({
        port: portViewOf(pods, member.port),
        host: member.host,
        compatibility: member.compatibility,
        mode: member.filter.mode,
        sources: member.filter.sources,
        lastReportAt: iso(member.lastReportAt),
        ...(member.leavingUntil === undefined ? {} : { leavingUntil: iso(member.leavingUntil) }),
        expiresAt: iso(Math.min(member.lastReportAt + gmi, member.leavingUntil ?? Infinity)),
      }),
    );
    const error = input.syncErrors.get(group.group);
    return { group: group.group, ports, members, synced: !input.dirty.has(group.group) && error === undefined, ...(error === undefined ? {} : { error }) };
  });
}

/** Kernel routes by group, then source. */
export function sortedRoutes(views: RouteView[]): RouteView[] {
  return views.sort((a, b) => compareAddresses(a.group, b.group) || compareAddresses(a.source, b.source));
}
