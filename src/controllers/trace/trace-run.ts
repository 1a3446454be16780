/**
 * `mcastctl trace`: one group followed for one pod through every stage, in the order
 * traffic and control meet them, stopping at the first that fails:
 *
 *   1 pod-port    OVSDB: the pod has a port on the bridge, with an OpenFlow port number
 *   2 igmp        the daemon: what the port said of the group (reports, refusals, silence)
 *   3 membership  the daemon: member? its filter, whether it admits the source, its timer
 *   4 ovs         our flow and OVS group for the group, the pod's bucket in it, and OVS's own
 *                 trace of a packet from the sender's port: does it reach the pod's port?
 *   5 outside     a sender outside the node: kernel routing, the upstream join, the (S,G) route
 *   6 sender      a pod sender (--from): its send policy, the (S,G) route out of the node
 *
 * Everything outside comes through TraceSources (./trace-facts.ts; ./trace-sources.ts has the
 * real ones), so the decisions are tested on plain facts. Without the daemon, stages 2 and 3
 * are skipped and the rest still run. Here: the order of the stages and the sender; each
 * stage's decision is in its own file (trace-daemon-stages, trace-ovs-stage, trace-route-stages).
 */
import { familyOf } from '../../domain/family/families.js';
import { type AddressFamily, textFamily } from '../../wire/ip-address.js';
import { describePort, portView, type TraceRequest, type TraceSources } from './trace-facts.js';
import type { TraceReport, TraceSender, TraceStage, TraceStageName } from './trace-report.js';
import { TRACE_STAGES } from './trace-report.js';
import { igmpStage, membershipStage } from './trace-daemon-stages.js';
import { ovsStage } from './trace-ovs-stage.js';
import { outsideStage, senderStage } from './trace-route-stages.js';
import { fail, pass, type StageOutcome } from './trace-stage-outcome.js';

/** Documentation addresses (RFC 5737, RFC 3849): the source of a traced packet when no sender or source is named. */
const ANY_SOURCE: Record<AddressFamily, string> = { ipv4: '192.0.2.1', ipv6: '2001:db8::1' };

export async function runTrace(request: TraceRequest, sources: TraceSources): Promise<TraceReport> {
  const family = familyOf(request.group).name;
  const stages: TraceStage[] = [];
  const target = sources.ports.find((port) => port.pod === request.pod);
  const sender = senderOf(request, sources);
  const sourceAddress = request.source ?? sender.address ?? null;
  const report = (): TraceReport => {
    const failed = stages.find((stage) => stage.status === 'fail');
    const skipped = stages.some((stage) => stage.status === 'skipped');
    return {
      group: request.group,
      pod: request.pod,
      source: sourceAddress,
      sender,
      daemon: sources.daemonState,
      verdict: failed !== undefined ? 'blocked' : skipped ? 'incomplete' : 'delivered',
      blockedAt: failed?.name ?? null,
      stages,
    };
  };
  /** Adds the stage; true when it failed (the trace ends there). */
  const record = (name: TraceStageName, outcome: StageOutcome): boolean => {
    stages.push({ stage: TRACE_STAGES.indexOf(name) + 1, name, ...outcome });
    return outcome.status === 'fail';
  };

  // 1. The pod's port.
  if (target === undefined) {
    const pods = sources.ports.filter((port) => port.pod !== undefined).map((port) => port.pod!);
    const known = pods.length === 0 ? 'none' : pods.slice(0, 8).join(', ') + (pods.length > 8 ? ', ...' : '');
    record(
      'pod-port',
      fail(
        'no-such-pod',
        `no port of bridge ${sources.bridge} belongs to pod ${request.pod}`,
        `the bridge's pods: ${known}; is the pod on this node?`,
        {
          port: null,
          addresses: [],
        },
      ),
    );
    return report();
  }
  const podFacts = { port: portView(target), addresses: [...(target.addresses ?? [])] };
  if (target.name === sources.gateway || target.name === sources.tunnel) {
    record(
      'pod-port',
      fail(
        'not-a-pod-port',
        `${describePort(target)} is the ${target.name === sources.gateway ? 'gateway' : 'tunnel'}, not a pod's port`,
        'name a pod',
        podFacts,
      ),
    );
    return report();
  }
  record(
    'pod-port',
    pass(
      `${describePort(target)}, pod ${request.pod}${podFacts.addresses.length > 0 ? `, ${podFacts.addresses.join(', ')}` : ''}`,
      podFacts,
    ),
  );

  // 2 and 3. What the daemon heard and made of it.
  const daemon = sources.daemon;
  const member = daemon?.groups
    .find((view) => view.group === request.group)
    ?.members.find((entry) => entry.port.ofport === target.ofport);
  if (daemon === undefined) {
    const why =
      sources.daemonState === 'not-asked'
        ? 'skipped (--no-daemon)'
        : `skipped: the daemon did not answer on ${sources.controlSocket}`;
    record('igmp', { status: 'skipped', summary: why, facts: {} });
    record('membership', { status: 'skipped', summary: why, facts: {} });
  } else {
    const activity = await daemon.port({ pod: request.pod, group: request.group });
    if (record('igmp', igmpStage(request, activity, member !== undefined))) return report();
    if (record('membership', membershipStage(request, member, sourceAddress))) return report();
  }

  // 4. OVS: our entry, the pod's bucket, and OVS's own trace from the sender's port.
  if (record('ovs', await ovsStage({ request, sources, target, sender, source: sourceAddress ?? ANY_SOURCE[family] })))
    return report();

  // 5. From outside the node: nothing to follow when neither a sender nor a way in is known.
  if (sender.kind === 'outside' && sender.address === null && sender.via === null) {
    record('outside', {
      status: 'skipped',
      summary: 'no sender named (--from, --from-address) and no gateway or tunnel known (--gateway)',
      facts: {},
    });
  } else if (sender.kind === 'outside') {
    if (record('outside', await outsideStage({ request, sources, sender, family, source: sourceAddress })))
      return report();
  }

  // 6. The sending pod.
  if (sender.kind === 'pod') record('sender', await senderStage({ request, sources, sender, family }));
  return report();
}

function senderOf(request: TraceRequest, sources: TraceSources): TraceSender {
  const from = request.from;
  if (from !== undefined && 'pod' in from) {
    const port = sources.ports.find((candidate) => candidate.pod === from.pod);
    const address = port?.addresses?.find((text) => familyOf(request.group).name === textFamily(text)) ?? null;
    // An unknown sender pod is refused before the trace (the command checks it).
    return {
      kind: 'pod',
      pod: from.pod,
      port: port === undefined ? { ofport: 0, name: '?' } : portView(port),
      address,
    };
  }
  const address = from !== undefined && 'address' in from ? from.address : null;
  // A named address of a pod on this node sends from that pod's port.
  const local =
    address === null
      ? undefined
      : sources.ports.find((port) => port.pod !== undefined && port.addresses?.includes(address));
  if (local !== undefined) return { kind: 'pod', pod: local.pod!, port: portView(local), address };
  const via =
    request.via ?? (sources.gateway !== undefined ? 'gateway' : sources.tunnel !== undefined ? 'tunnel' : null);
  const name = via === 'gateway' ? sources.gateway : via === 'tunnel' ? sources.tunnel : undefined;
  const port = name === undefined ? undefined : sources.ports.find((candidate) => candidate.name === name);
  return { kind: 'outside', address, via, port: port === undefined ? null : portView(port) };
}
