/**
 * What the control socket and the metrics see of the running loop: its status, its
 * groups with their members, its kernel routes. Built from the loop's state on demand.
 */
import { VERSION } from '../../../version.js';
import { compareAddresses, type GroupAddress } from '../../../wire/ip-address.js';
import type { GroupSnapshot, MemberChange, MembershipTable } from '../../../domain/membership/membership-table.js';
import type { PortFilter } from '../../../domain/membership/source-filter.js';
import { portFiltersOfMembers } from '../../../domain/membership/port-filters.js';
import { splitBySource } from '../../../domain/pipeline/source-split.js';
import type { IpPrefix } from '../../../domain/policy/ip-prefix.js';
import { isSsmGroup } from '../../../domain/membership/membership-limits.js';
import type {
  DaemonCounters,
  DaemonEvent,
  DaemonStatus,
  GroupView,
  GroupPolicyView,
  IgmpMeterView,
  IgmpRefusals,
  MemberView,
  PeerDropReason,
  PortActivityView,
  PortView,
  QuerierView,
  RemoteMemberView,
  RouteView,
  SourceReceiversView,
  TunnelView,
} from '../../../transport/control/daemon-view.js';
import type { RemoteMembersView } from '../../../domain/peers/remote-members.js';
import type { RemoteMembersWithDrops } from '../tunnel/peer-counters.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { QuerierElection } from '../../../domain/membership/querier-election.js';
import type { GroupPolicy, PolicyDecision } from '../../../domain/policy/group-policy.js';
import type { PortActivitySnapshot } from '../loop/port-activity.js';
import type { DaemonConfig, TunnelConfig } from '../config/config.js';
import type { DaemonClock, RouterPort, SwitchPort } from '../loop/ports.js';
import type { PodDirectory } from '../../../domain/pods/pod-directory.js';

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

export interface PortActivityInput {
  port: PortView;
  addresses: readonly string[] | undefined;
  activity: PortActivitySnapshot;
  queryIntervalMs: number;
  refusals: Record<string, number>;
  meterDropped: number;
  /** With the group asked about, and the policy in force to decide it. */
  group?: GroupAddress;
  policy?: GroupPolicy;
}

export function portActivityViewOf(input: PortActivityInput): PortActivityView {
  const { port, addresses, activity, group, policy } = input;
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const decision = (made: PolicyDecision) => ({
    allowed: made.allowed,
    ...(made.line === undefined ? {} : { rule: made.line }),
  });
  const said = activity.group;
  return {
    port,
    ...(addresses === undefined ? {} : { addresses: [...addresses] }),
    since: new Date(activity.sinceMs).toISOString(),
    messages: activity.messages,
    lastMessageAt: iso(activity.lastMessageAtMs),
    queryIntervalMs: input.queryIntervalMs,
    reportedGroups: activity.otherGroups,
    ...(group === undefined || policy === undefined
      ? {}
      : {
          group: {
            group,
            reports: said?.reports ?? 0,
            lastReportAt: iso(said?.lastReportAtMs),
            refusals: { ...(said?.refusals ?? {}) },
            ...(said?.lastRefusal === undefined
              ? {}
              : {
                  lastRefusal: {
                    reason: said.lastRefusal.reason,
                    at: new Date(said.lastRefusal.atMs).toISOString(),
                    ...(said.lastRefusal.rule === undefined ? {} : { rule: said.lastRefusal.rule }),
                  },
                }),
            policy: {
              join: decision(policy.decide(port.pod, group, 'join')),
              send: decision(policy.decide(port.pod, group, 'send')),
            },
          },
        }),
    refusals: { ...input.refusals },
    meterDropped: input.meterDropped,
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
    controlSocket: config.controlSocket,
    ...(config.metricsAddress === undefined ? {} : { metricsAddress: config.metricsAddress }),
  };
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

/** The event of a host that joined or left (a leave asked for and granted at once is a fast leave). */
export function memberEvent(
  change: MemberChange,
  port: PortView,
  time: string,
): Extract<DaemonEvent, { type: 'join' | 'leave' }> {
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
  /**
   * Each port's merged filter of a group (MembershipTable.portFiltersOf); absent: merged here from the snapshot's
   * members.
   */
  portFiltersOf?: (group: GroupAddress) => readonly PortFilter[];
  /** The SSM range in force, to mark its groups; absent: none marked. */
  ssmRange?: readonly IpPrefix[];
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
        expiresAt: iso(Math.min(memberEnd(member, gmi), member.leavingUntil ?? Infinity)),
      }),
    );
    const error = input.syncErrors.get(group.group);
    const filters = input.portFiltersOf?.(group.group) ?? snapshotPortFilters(group);
    return {
      group: group.group,
      ports,
      members,
      synced: !input.dirty.has(group.group) && error === undefined,
      ...(error === undefined ? {} : { error }),
      ...(input.ssmRange !== undefined && isSsmGroup(group.group, input.ssmRange) ? { ssm: true } : {}),
      ...sourceReceiversOf(filters, (ofport) => portViewOf(pods, ofport), gateway),
    };
  });
}

/**
 * Who gets which source, as the per-source entries forward it (splitBySource): nothing
 * while every member takes every source. The gateway is on every list, as on `ports`.
 */
function sourceReceiversOf(
  filters: readonly PortFilter[],
  viewOf: (ofport: number) => PortView,
  gateway: PortView | undefined,
): Pick<GroupView, 'sources' | 'otherSources'> {
  const split = splitBySource(filters);
  if (split.bySource.length === 0) return {};
  const viewsOf = (ofports: readonly number[]): PortView[] => [
    ...ofports.map(viewOf),
    ...(gateway === undefined ? [] : [gateway]),
  ];
  const sources = split.bySource.map(
    (entry): SourceReceiversView => ({ source: entry.source, ports: viewsOf(entry.ports) }),
  );
  return { sources, otherSources: viewsOf(split.other) };
}

/**
 * When a member ends unless it is heard again: its last timer (an EXCLUDE member not before its group timer), else the
 * GMI after its last report.
 */
function memberEnd(member: GroupSnapshot['members'][number], gmi: number): number {
  const timers = [
    ...(member.sourceTimers ?? []).map((timer) => timer.until),
    ...(member.groupTimerUntil === undefined ? [] : [member.groupTimerUntil]),
  ];
  return timers.length === 0 ? member.lastReportAt + gmi : Math.max(...timers);
}

/** Each member port's filter, merged over its hosts (RFC 3376 §3.2), from a snapshot's forwarded filters. */
function snapshotPortFilters(group: GroupSnapshot): PortFilter[] {
  return portFiltersOfMembers(
    group.members.map((member) => ({
      port: member.port,
      filter: { mode: member.filter.mode, sources: new Set(member.filter.sources) },
    })),
  );
}

/** Monotonic milliseconds as ISO 8601 wall-clock time. */
function wallTimeOf(clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>): (mono: number) => string {
  const monoNow = clock.monotonicMs();
  const wallNow = clock.wallMs();
  return (mono) => new Date(wallNow - (monoNow - mono)).toISOString();
}

const PEER_DROP_REASONS: readonly PeerDropReason[] = [
  'unknown-peer',
  'self',
  'rate',
  'unsupported',
  'malformed',
  'refused',
];

/** A peer of the remote members' view, with its drops when the exchange counts them. */
type RemotePeer = RemoteMembersView['peers'][number] & { drops?: Partial<Record<PeerDropReason, number>> };

export interface TunnelViewInput {
  tunnel: TunnelConfig;
  /** The tunnel port's OpenFlow port number; undefined until OVSDB has it. */
  ofport: number | undefined;
  /** Why the port of that name cannot be the tunnel (not a flow-based tunnel); undefined when it can, or is absent. */
  portProblem?: string | undefined;
  /**
   * The remote members' view (PeerExchange.view()): lastContact in monotonic milliseconds;
   * each peer's drops and those of no peer when the exchange counts them apart.
   */
  remote: RemoteMembersView | RemoteMembersWithDrops;
  /** Messages from the tunnel dropped since start, by reason; a reason left out is 0. */
  drops: Partial<Record<PeerDropReason, number>>;
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
}

/**
 * The status's tunnel part: the port, this node's address, every configured peer (with its drops), the drops in all and
 * of no peer.
 */
export function tunnelViewOf(input: TunnelViewInput): TunnelView {
  const unattributedDrops = 'unattributedDrops' in input.remote ? input.remote.unattributedDrops : undefined;
  const iso = wallTimeOf(input.clock);
  const drops = Object.fromEntries(PEER_DROP_REASONS.map((reason) => [reason, input.drops[reason] ?? 0])) as Record<
    PeerDropReason,
    number
  >;
  return {
    port: input.tunnel.port,
    ofport: input.ofport ?? null,
    ...(input.portProblem === undefined ? {} : { portProblem: input.portProblem }),
    nodeAddress: input.tunnel.nodeAddress,
    peers: input.remote.peers.map((peer: RemotePeer) => ({
      address: peer.address,
      state: peer.state,
      lastContact: peer.lastContact === null ? null : iso(peer.lastContact),
      members: peer.members,
      ...(peer.drops === undefined ? {} : { drops: { ...peer.drops } }),
    })),
    drops,
    ...(unattributedDrops === undefined ? {} : { unattributedDrops: { ...unattributedDrops } }),
  };
}

export interface RemoteGroupsInput {
  /** The groups with local members (groupViewsOf). */
  local: readonly GroupView[];
  remote: RemoteMembersView;
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
  /** As groupViewsOf's, for the groups with remote members only. */
  dirty: ReadonlySet<string> | ReadonlyMap<string, unknown>;
  syncErrors: ReadonlyMap<string, string>;
}

/**
 * The groups of tunnel mode: each local group with its remote members, and every group
 * with remote members only (forwarded into the tunnel from local senders), by address.
 */
export function withRemoteMembers(input: RemoteGroupsInput): GroupView[] {
  const iso = wallTimeOf(input.clock);
  const remoteOf = new Map<string, RemoteMemberView[]>();
  for (const { group, members } of input.remote.groups) {
    remoteOf.set(
      group,
      members.map((member) => ({
        peer: member.peer,
        lastRefresh: member.lastRefresh === null ? null : iso(member.lastRefresh),
        expiresInMs: member.expiresInMs,
      })),
    );
  }
  const views = input.local.map((view): GroupView => ({ ...view, remoteMembers: remoteOf.get(view.group) ?? [] }));
  const local = new Set(input.local.map((view) => view.group));
  for (const [group, remoteMembers] of remoteOf) {
    if (local.has(group)) continue;
    const error = input.syncErrors.get(group);
    views.push({
      group,
      ports: [],
      members: [],
      synced: !input.dirty.has(group) && error === undefined,
      ...(error === undefined ? {} : { error }),
      remoteMembers,
    });
  }
  return views.sort((a, b) => compareAddresses(a.group, b.group));
}

/** Kernel routes by group, then source. */
export function sortedRoutes(views: RouteView[]): RouteView[] {
  return views.sort((a, b) => compareAddresses(a.group, b.group) || compareAddresses(a.source, b.source));
}
