/**
 * What the loop shows of itself (the DaemonView of `status`, `groups`, `routes`, `port`
 * and `stats`), read off its parts at the moment of asking; the views' shapes and wording
 * are the observation room's (../observe/).
 */
import { parseGroupAddress } from '../../../wire/ip-address.js';
import type {
  DaemonStatus,
  GroupView,
  PortActivityView,
  PortQuery,
  RouteView,
  TrafficStatsView,
} from '../../../transport/control/daemon-view.js';
import type { DaemonConfig } from '../config/config.js';
import { groupViewsOf, sortedRoutes } from '../observe/group-views.js';
import { portActivityViewOf, portViewOf } from '../observe/port-views.js';
import { daemonStatusOf, querierViewOf, summaryOf } from '../observe/status-view.js';
import type { LoopParts } from './loop-parts.js';
import type { ControllerOptions } from './ports.js';

/** The parts a view reads, and what the loop was started with. */
export interface LoopViewInput extends LoopParts {
  config: DaemonConfig;
  /** Wall-clock epoch milliseconds of the start. */
  startedAt: number;
  options: Pick<ControllerOptions, 'clock' | 'vswitch' | 'podDirectory' | 'router' | 'pid' | 'stateStore'>;
}

export function loopStatus(input: LoopViewInput): DaemonStatus {
  const { config, startedAt, pods, table, counters, options } = input;
  const { clock, vswitch, podDirectory, router, pid = process.pid } = options;
  const [igmpRefused, igmpMeter] = [input.guard.view(), input.portEntries.view()];
  const groupPolicy = input.policy.view(input.portEntries.sendPolicyPorts);
  const pendingSyncs = input.sync.size + input.portEntries.pending;
  const parts = { config, startedAt, clock, vswitch, podDirectory, router, pods, table, counters, pid };
  const querier = querierViewOf(input.election, pods, clock.monotonicMs());
  const tunnel = input.tunnel?.status();
  return daemonStatusOf({
    ...parts,
    ...{ igmpRefused, igmpMeter, groupPolicy, querier, pendingSyncs },
    ...(tunnel === undefined ? {} : { tunnel }),
    ...(options.stateStore === undefined ? {} : { stateStore: options.stateStore }),
  });
}

/** One line's worth of what the daemon holds, for the log (SIGUSR1). */
export function loopSummary(input: LoopViewInput): Record<string, unknown> {
  return summaryOf(loopStatus(input), input.sync.syncErrors.size);
}

export function loopGroups(input: LoopViewInput): GroupView[] {
  const { table, sync, pods, tunnel } = input;
  const local = groupViewsOf({
    ...{
      groupMembershipIntervalMs: table.timings.groupMembershipIntervalMs,
      dirty: sync.dirty,
      syncErrors: sync.syncErrors,
    },
    ...{ clock: input.options.clock, ssmRange: input.config.ssmRange, pods },
    groups: table.snapshot(),
    portFiltersOf: (group) => table.portFiltersOf(group),
  });
  return tunnel?.groupViews(local, sync) ?? local;
}

/** The kernel entries this daemon added, with their counters (read from /proc). */
export async function loopRoutes(input: LoopViewInput): Promise<RouteView[]> {
  return sortedRoutes((await input.options.router?.routeViews()) ?? []);
}

export function loopPort(input: LoopViewInput, query: PortQuery): PortActivityView | undefined {
  const { pods } = input;
  const port = query.pod === undefined ? pods.byName(query.name ?? '') : pods.pods.find((pod) => pod.pod === query.pod);
  if (port === undefined) return undefined;
  const { ofport } = port;
  const group = query.group === undefined ? undefined : parseGroupAddress(query.group);
  return portActivityViewOf({
    port: portViewOf(pods, ofport),
    addresses: pods.addressesOf(ofport),
    activity: input.activity.snapshot(ofport, group),
    queryIntervalMs: input.config.queryIntervalMs,
    refusals: input.guard.view().byPort.find((entry) => entry.port.ofport === ofport)?.counts ?? {},
    meterDropped: input.portEntries.view().byPort.find((entry) => entry.port.ofport === ofport)?.dropped ?? 0,
    ...(group === undefined ? {} : { group, policy: input.policy.current }),
  });
}

/** What each counted pod sent to and received from each of its groups, read from the switch now. */
export async function loopStats(input: LoopViewInput): Promise<TrafficStatsView> {
  const traffic = (await input.options.vswitch.trafficCounters?.()) ?? [];
  return input.traffic.view(traffic, (ofport) => portViewOf(input.pods, ofport));
}
