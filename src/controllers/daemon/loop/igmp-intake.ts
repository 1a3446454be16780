/**
 * One IGMP or MLD packet-in, from the frame to the membership calls it may make: counted,
 * past the port's budget dropped unread, decoded, published to the event stream, and then,
 * for a pod port, checked against the pod's addresses (spoofing; for MLD, a link-local
 * source) and the group policy (joins it denies). What is left goes to the membership table.
 */
import type { MembershipProtocol } from '../../../packet/frame-decoder.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { MembershipCall } from './igmp-snooper.js';
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import { toJsonRecord } from '../../../packet/frame-event-record.js';
import { hasRouterAlert } from '../../../packet/ipv4/header.js';
import type { DaemonCounters, DaemonEvent } from '../../../transport/control/daemon-view.js';
import type { EventBuilder } from './event-stream.js';
import type { IgmpGuard } from './igmp-guard.js';
import { snoopFrame } from './igmp-snooper.js';
import type { ControllerMetrics } from './ports.js';
import type { PortActivity } from './port-activity.js';
import { portViewOf } from '../observe/port-views.js';

export interface IgmpIntakeOptions {
  pods: PodPorts;
  guard: IgmpGuard;
  policy: () => GroupPolicy;
  counters: DaemonCounters;
  /** The daemon's metrics; a message's protocol is told when it is MLD (IGMP's series keep their labels). */
  metrics: Pick<ControllerMetrics, 'packetIn' | 'ignoredNonPod' | 'igmpMessage'>;
  /** Whether anyone listens to the event stream (an IGMP event is built only then). */
  listened: () => boolean;
  publish: (event: DaemonEvent | EventBuilder) => void;
  wallMs: () => number;
  /** The daemon's monotonic clock (an IGMP event's `clockMs`). */
  monotonicMs: () => number;
  isoNow: () => string;
  /** Each pod port's record of what it said (trace). */
  activity?: PortActivity;
  /** A general query heard from a pod port (the querier election). */
  onGeneralQuery?: (query: { ofport: number; protocol: MembershipProtocol; source: string }) => void;
}

/** Whether a call would add the port to a group or to sources of it (a join the policy may deny). */
function joins(call: MembershipCall): boolean {
  if (call.op === 'report') return true;
  if (call.op === 'leave') return false;
  const { type, sources } = call.record;
  switch (type) {
    case 'MODE_IS_EXCLUDE':
    case 'CHANGE_TO_EXCLUDE_MODE':
    case 'ALLOW_NEW_SOURCES':
      return true;
    case 'MODE_IS_INCLUDE':
    case 'CHANGE_TO_INCLUDE_MODE':
      return sources.length > 0;
    default:
      return false; // BLOCK_OLD_SOURCES only takes sources away
  }
}

/**
 * The key of `status`'s message counts: IGMP's as they always were (`v2_report`,
 * `malformed`), MLD's with the protocol before them (`mld_v1_report`, `mld_malformed`).
 */
export function counterLabel(protocol: MembershipProtocol, type: string, version: number): string {
  const label = type === 'malformed' ? 'malformed' : `v${version}_${type}`;
  return protocol === 'mld' ? `mld_${label}` : label;
}

export class IgmpIntake {
  private frames = 0;

  constructor(private readonly options: IgmpIntakeOptions) {}

  /** The membership calls of one packet-in from `ofport`, and the pod port they are for; undefined: none to make. */
  take(frame: Uint8Array, ofport: number | undefined): { ofport: number; calls: MembershipCall[] } | undefined {
    const { counters, metrics, pods, guard } = this.options;
    counters.packetIns++;
    metrics.packetIn();
    const pod = ofport === undefined ? undefined : pods.pod(ofport);
    // A pod port past its budget: dropped before it is decoded (the guard counts it).
    if (pod !== undefined && guard.overBudget(pod.ofport)) return undefined;
    const snooped = snoopFrame(frame, { frame: ++this.frames, ts: this.options.wallMs() / 1000 });
    if (snooped === undefined) return undefined;
    const label = counterLabel(snooped.protocol, snooped.type, snooped.version);
    counters.igmpMessages[label] = (counters.igmpMessages[label] ?? 0) + 1;
    metrics.igmpMessage(snooped.type, snooped.version, snooped.protocol === 'mld' ? 'mld' : undefined);
    if (this.options.listened()) {
      // Its time now, its record after the turn (the join's OpenFlow first).
      const port = ofport === undefined ? null : portViewOf(pods, ofport);
      const { event } = snooped;
      const { isoNow, monotonicMs } = this.options;
      const at = { time: isoNow(), clockMs: monotonicMs() };
      this.options.publish(() => ({ type: 'igmp', ...at, port, record: toJsonRecord(event) }));
    }
    if (pod === undefined) {
      if (snooped.calls.length > 0 || snooped.type === 'query') {
        counters.ignoredNonPod++;
        metrics.ignoredNonPod();
      }
      return undefined;
    }
    const { activity } = this.options;
    if (activity !== undefined) {
      activity.message(pod.ofport);
      for (const call of snooped.calls)
        if (call.op !== 'leave') activity.reported(pod.ofport, call.op === 'record' ? call.record.group : call.group);
    }
    if (snooped.generalQueryFrom !== undefined)
      this.options.onGeneralQuery?.({
        ofport: pod.ofport,
        protocol: snooped.protocol,
        source: snooped.generalQueryFrom,
      });
    if (snooped.calls.length === 0) return undefined;
    // A header no host on the pod's link sends, or a report for someone else's address,
    // changes nothing (counted and logged by the guard).
    const { event } = snooped;
    if (event.kind === 'mld') {
      if (guard.offLinkMld(pod.ofport, { hopLimit: event.ip.hopLimit, source: event.src })) return undefined;
    } else {
      const header = event.kind === 'igmp' ? { ttl: event.ip.ttl, routerAlert: hasRouterAlert(event.ip) } : undefined;
      if (header !== undefined && guard.offLink(pod.ofport, header, snooped.version)) return undefined;
      if (event.src !== null && guard.spoofed(pod.ofport, event.src)) return undefined;
    }
    const policy = this.options.policy();
    const calls = snooped.calls.filter((call) => {
      if (!joins(call)) return true;
      const group = call.op === 'record' ? call.record.group : call.group;
      const decision = policy.decide(pod.pod, group, 'join');
      if (decision.allowed) return true;
      guard.denied(pod.ofport, group, decision.line);
      if (this.options.listened()) {
        const rule = decision.line === undefined ? {} : { rule: decision.line };
        this.options.publish({
          type: 'refused',
          time: this.options.isoNow(),
          port: portViewOf(pods, pod.ofport),
          group,
          reason: 'policy',
          ...rule,
        });
      }
      return false;
    });
    return { ofport: pod.ofport, calls };
  }
}
