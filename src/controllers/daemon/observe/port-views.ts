/**
 * A pod port as the views show it, what one port has been doing (`mcastctl port`), and
 * the join and leave events of the event stream. Here, apart from the status and groups
 * views, because every other view names its ports with portViewOf.
 */
import type { GroupAddress } from '../../../wire/ip-address.js';
import type { MemberChange } from '../../../domain/membership/membership-table.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { GroupPolicy, PolicyDecision } from '../../../domain/policy/group-policy.js';
import type { DaemonEvent, PortActivityView, PortView } from '../../../transport/control/daemon-view.js';
import type { PortActivitySnapshot } from '../loop/port-activity.js';

export function portViewOf(pods: PodPorts, ofport: number): PortView {
  return pods.view(ofport) ?? { ofport, name: String(ofport) };
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
