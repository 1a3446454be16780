/**
 * The daemon's groups (`mcastctl groups`): each group with its ports, its members and
 * when they end, whether it is synced, and which receivers get which source; and its
 * kernel routes (`mcastctl routes`), in the same order by group. Built from the
 * membership table's snapshot on demand.
 */
import { compareAddresses, type GroupAddress } from '../../../wire/ip-address.js';
import type { GroupSnapshot } from '../../../domain/membership/membership-table.js';
import { isSsmGroup } from '../../../domain/membership/membership-limits.js';
import { portFiltersOfMembers } from '../../../domain/membership/port-filters.js';
import type { PortFilter } from '../../../domain/membership/source-filter.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import { splitBySource } from '../../../domain/pipeline/source-split.js';
import type { IpPrefix } from '../../../domain/policy/ip-prefix.js';
import type {
  GroupView,
  MemberView,
  PortView,
  RouteView,
  SourceReceiversView,
} from '../../../transport/control/daemon-view.js';
import type { DaemonClock } from '../loop/ports.js';
import { portViewOf } from './port-views.js';

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

/** Kernel routes by group, then source. */
export function sortedRoutes(views: RouteView[]): RouteView[] {
  return views.sort((a, b) => compareAddresses(a.group, b.group) || compareAddresses(a.source, b.source));
}
