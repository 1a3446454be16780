/**
 * Who sends to the traced pod, and each sender's own way to it (stages 4 to 6). A sender
 * named on the command line (--from, --from-address, --via) is the one followed; without
 * one, every kind of sender the node can have is: another pod on the node always, other
 * nodes through the tunnel in tunnel mode, hosts outside through the gateway where the node
 * routes multicast in. A kind the node does not carry by its configuration is a path that
 * is not applicable, with why: never a failure.
 */
import { familyOf } from '../../domain/family/families.js';
import { type AddressFamily, textFamily } from '../../wire/ip-address.js';
import { portView, type TracePort, type TraceRequest, type TraceSources } from './trace-facts.js';
import { ovsStage } from './trace-ovs-stage.js';
import type { TracePath, TraceSender, TraceSenderKind, TraceStage, TraceStageName } from './trace-report.js';
import { TRACE_STAGES } from './trace-report.js';
import { outsideStage, senderStage } from './trace-route-stages.js';
import type { StageOutcome } from './trace-stage-outcome.js';

/** Documentation addresses (RFC 5737, RFC 3849): the source of a traced packet when no sender or source is named. */
const ANY_SOURCE: Record<AddressFamily, string> = { ipv4: '192.0.2.1', ipv6: '2001:db8::1' };

/** A kind of sender the node does not carry, and the stage that says why. */
interface NotCarried {
  from: TraceSenderKind;
  stage: TraceStageName;
  reason: string;
}

export interface SenderContext {
  request: TraceRequest;
  sources: TraceSources;
  /** The traced pod's port. */
  target: TracePort;
}

/** One stage of a trace, numbered as TRACE_STAGES orders them. */
export function stageOf(name: TraceStageName, outcome: StageOutcome): TraceStage {
  return { stage: TRACE_STAGES.indexOf(name) + 1, name, ...outcome };
}

/** The sender --from, --from-address or --via names; undefined when none does. */
export function namedSender(request: TraceRequest, sources: TraceSources): TraceSender | undefined {
  const from = request.from;
  if (from !== undefined && 'pod' in from) {
    const port = sources.ports.find((candidate) => candidate.pod === from.pod);
    // An unknown sender pod is refused before the trace (the command checks it).
    return {
      kind: 'pod',
      pod: from.pod,
      port: port === undefined ? { ofport: 0, name: '?' } : portView(port),
      address: port === undefined ? null : addressOf(port, request),
    };
  }
  if (from === undefined && request.via === undefined) return undefined;
  const address = from !== undefined && 'address' in from ? from.address : null;
  // A named address of a pod on this node sends from that pod's port.
  const local =
    address === null
      ? undefined
      : sources.ports.find((port) => port.pod !== undefined && port.addresses?.includes(address));
  if (local !== undefined) return { kind: 'pod', pod: local.pod!, port: portView(local), address };
  const via =
    request.via ?? (sources.gateway !== undefined ? 'gateway' : sources.tunnel !== undefined ? 'tunnel' : null);
  return outsideSender(sources, via, address);
}

/**
 * Every kind of sender, a pod, the tunnel, the outside: the sender to follow, or why the
 * node carries none of that kind.
 */
export function everySender({ request, sources, target }: SenderContext): Array<TraceSender | NotCarried> {
  const otherPod = sources.ports
    .filter(
      (port) =>
        port.pod !== undefined &&
        port.ofport !== target.ofport &&
        port.name !== sources.gateway &&
        port.name !== sources.tunnel,
    )
    .sort((a, b) => a.ofport - b.ofport)[0];
  const pod: TraceSender | NotCarried =
    otherPod === undefined
      ? { from: 'pod', stage: 'sender', reason: `no other pod has a port on bridge ${sources.bridge}` }
      : { kind: 'pod', pod: otherPod.pod!, port: portView(otherPod), address: addressOf(otherPod, request) };
  const daemonSays =
    sources.daemonState === 'reachable'
      ? ''
      : ` (the daemon's settings are not known: it ${DAEMON_STATE[sources.daemonState]})`;
  const tunnel: TraceSender | NotCarried =
    sources.tunnel === undefined
      ? { from: 'tunnel', stage: 'outside', reason: `the node is not in tunnel mode${daemonSays}` }
      : outsideSender(sources, 'tunnel', null);
  const routes =
    sources.gateway === undefined
      ? `no gateway port${daemonSays}`
      : sources.multicastInterfaces.length === 0
        ? `no multicast interfaces${daemonSays}`
        : undefined;
  const outside: TraceSender | NotCarried =
    routes === undefined
      ? outsideSender(sources, 'gateway', null)
      : { from: 'outside', stage: 'outside', reason: `the node routes no multicast in from outside (${routes})` };
  return [pod, tunnel, outside];
}

const DAEMON_STATE = { 'not-asked': 'was not asked', unreachable: 'did not answer' } as const;

export function isCarried(candidate: TraceSender | NotCarried): candidate is TraceSender {
  return 'kind' in candidate;
}

/** The path of a kind of sender the node does not carry: its one stage says why. */
export function notCarriedPath({ from, stage, reason }: NotCarried): TracePath {
  return {
    from,
    sender: null,
    verdict: 'not-applicable',
    blockedAt: null,
    stages: [stageOf(stage, { status: 'not-applicable', summary: `not applicable: ${reason}`, facts: {} })],
  };
}

/** `sender` followed to the pod: the switch (4), then the way in from outside (5) or the sending pod (6). */
export async function followSender(context: SenderContext, sender: TraceSender): Promise<TracePath> {
  const { request, sources, target } = context;
  const family = familyOf(request.group).name;
  const source = request.source ?? sender.address ?? null;
  const stages: TraceStage[] = [];
  const record = (name: TraceStageName, outcome: StageOutcome): boolean => {
    stages.push(stageOf(name, outcome));
    return outcome.status === 'fail';
  };
  const path = (): TracePath => {
    const failed = stages.find((stage) => stage.status === 'fail');
    return {
      from: sender.kind === 'pod' ? 'pod' : sender.via === 'tunnel' ? 'tunnel' : 'outside',
      sender,
      verdict: failed !== undefined ? 'blocked' : 'delivered',
      blockedAt: failed?.name ?? null,
      stages,
    };
  };
  if (record('ovs', await ovsStage({ request, sources, target, sender, source: source ?? ANY_SOURCE[family] })))
    return path();
  if (sender.kind === 'pod') record('sender', await senderStage({ request, sources, sender, family }));
  else record('outside', await outsideStage({ request, sources, sender, family, source }));
  return path();
}

function outsideSender(
  sources: TraceSources,
  via: 'gateway' | 'tunnel' | null,
  address: string | null,
): Extract<TraceSender, { kind: 'outside' }> {
  const name = via === 'gateway' ? sources.gateway : via === 'tunnel' ? sources.tunnel : undefined;
  const port = name === undefined ? undefined : sources.ports.find((candidate) => candidate.name === name);
  return { kind: 'outside', address, via, port: port === undefined ? null : portView(port) };
}

/** The port's address of the group's family, where its CNI plugin wrote one. */
function addressOf(port: TracePort, request: TraceRequest): string | null {
  const family: AddressFamily = familyOf(request.group).name;
  return port.addresses?.find((text) => textFamily(text) === family) ?? null;
}
