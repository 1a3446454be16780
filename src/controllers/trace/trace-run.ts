/**
 * `mcastctl trace`: one group followed to one pod through every stage, in the order
 * traffic and control meet them, stopping at the first that fails:
 *
 *   1 pod-port    OVSDB: the pod has a port on the bridge, with an OpenFlow port number
 *   2 igmp        the daemon: what the port said of the group (reports, refusals, silence)
 *   3 membership  the daemon: member? its filter, whether it admits the source, its timer
 *   then for each sender (./trace-senders.ts: the one named, else every kind the node carries):
 *   4 ovs         our flow and OVS group for the group, the pod's bucket in it, and OVS's own
 *                 trace of a packet from the sender's port: does it reach the pod's port?
 *   5 outside     a sender outside the node: through the tunnel, or kernel routing (the
 *                 upstream join, the (S,G) route)
 *   6 sender      a pod sender: its send policy, the (S,G) route out of the node
 *
 * Everything outside comes through TraceSources (./trace-facts.ts; ./trace-sources.ts has the
 * real ones), so the decisions are tested on plain facts. Without the daemon, stages 2 and 3
 * are skipped and the rest still run. Here: the shared stages, the senders, and the verdict;
 * each stage's decision is in its own file (trace-daemon-stages, trace-ovs-stage, trace-route-stages).
 */
import { describePort, portView, type TraceRequest, type TraceSources } from './trace-facts.js';
import type { TracePath, TraceReport, TraceStage, TraceStageName } from './trace-report.js';
import { igmpStage, membershipStage } from './trace-daemon-stages.js';
import {
  everySender,
  followSender,
  isCarried,
  namedSender,
  notCarriedPath,
  type SenderContext,
  stageOf,
} from './trace-senders.js';
import { fail, pass, type StageOutcome } from './trace-stage-outcome.js';

export async function runTrace(request: TraceRequest, sources: TraceSources): Promise<TraceReport> {
  const shared: TraceStage[] = [];
  const target = sources.ports.find((port) => port.pod === request.pod);
  const named = namedSender(request, sources);
  const report = (paths: TracePath[]): TraceReport => verdictOf({ request, sources, named, shared, paths });
  /** Adds the stage; true when it failed (the trace ends there). */
  const record = (name: TraceStageName, outcome: StageOutcome): boolean => {
    shared.push(stageOf(name, outcome));
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
    return report([]);
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
    return report([]);
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
    if (record('igmp', igmpStage(request, activity, member !== undefined))) return report([]);
    if (record('membership', membershipStage(request, member, request.source ?? named?.address ?? null)))
      return report([]);
  }

  // 4 to 6. Each sender's own way to the pod.
  const context: SenderContext = { request, sources, target };
  const paths: TracePath[] = [];
  for (const candidate of named === undefined ? everySender(context) : [named]) {
    paths.push(isCarried(candidate) ? await followSender(context, candidate) : notCarriedPath(candidate));
  }
  return report(paths);
}

interface VerdictInput {
  request: TraceRequest;
  sources: TraceSources;
  named: TraceReport['sender'] | undefined;
  /** Stages 1 to 3, as far as they went. */
  shared: TraceStage[];
  paths: TracePath[];
}

/**
 * The report: blocked at a shared stage that failed; else decided by the first sender
 * delivered, else the first blocked, of those the node carries (none: blocked, no-sender).
 */
function verdictOf({ request, sources, named, shared, paths }: VerdictInput): TraceReport {
  const followed = paths.filter((path) => path.verdict !== 'not-applicable');
  const deciding = followed.find((path) => path.verdict === 'delivered') ?? followed[0];
  const stages = [...shared, ...(deciding?.stages ?? [])];
  if (paths.length > 0 && deciding === undefined) {
    const reasons = paths.map((path) => path.stages[0]!.summary.replace(/^not applicable: /, ''));
    stages.push(
      stageOf(
        'sender',
        fail(
          'no-sender',
          `no sender the node carries can reach the pod: ${reasons.join('; ')}`,
          'name a sender with --from or --from-address to trace it anyway',
          {},
        ),
      ),
    );
  }
  const failed = stages.find((stage) => stage.status === 'fail');
  const skipped = stages.some((stage) => stage.status === 'skipped');
  const sender = deciding?.sender ?? named ?? null;
  return {
    group: request.group,
    pod: request.pod,
    source: request.source ?? sender?.address ?? null,
    sender,
    senderNamed: named !== undefined,
    daemon: sources.daemonState,
    verdict: failed !== undefined ? 'blocked' : skipped ? 'incomplete' : 'delivered',
    blockedAt: failed?.name ?? null,
    stages,
    paths: shared.some((stage) => stage.status === 'fail') ? [] : paths,
  };
}
