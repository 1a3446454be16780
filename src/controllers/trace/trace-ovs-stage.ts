/**
 * Stage 4 of a trace: the switch. Our flow and OVS group for the group, the pod's bucket in
 * it, then OVS's own trace of a packet from the sender's port: does it reach the pod's port,
 * and if not, which rule took it.
 */
import { parseTrace } from '../../adapters/ovs/ofproto-trace.js';
import { decodeFlowCookie, FlowKind } from '../../domain/pipeline/flow-cookie.js';
import { describePort, type TracePort, type TraceRequest, type TraceSources } from './trace-facts.js';
import type { TraceSender } from './trace-report.js';
import { fail, pass, type StageOutcome } from './trace-stage-outcome.js';

interface OvsStageInput {
  request: TraceRequest;
  sources: TraceSources;
  target: TracePort;
  sender: TraceSender;
  source: string;
}

export async function ovsStage(input: OvsStageInput): Promise<StageOutcome> {
  const { request, sources, target, sender, source } = input;
  const entries = await sources.installed();
  const ofGroup = entries.filter((entry) => entry.group === request.group);
  const entry =
    ofGroup.find((candidate) => candidate.source === source) ??
    ofGroup.find((candidate) => candidate.source === undefined);
  const facts: Record<string, unknown> = {
    groupId: entry?.groupId ?? null,
    flowPorts: [...(entry?.ports ?? [])],
    bucket: entry?.ports.includes(target.ofport) ?? false,
    ...(entry?.source === undefined ? {} : { entrySource: entry.source }),
    trace: null,
  };
  if (entry === undefined) {
    return fail(
      'no-flow',
      `no flow of ours for ${request.group} on bridge ${sources.bridge}`,
      sources.daemon === undefined
        ? 'is the daemon running? (`mcastctl show` lists what is installed)'
        : 'the daemon has not synced it: see `mcastctl status` (pending syncs, sync errors)',
      facts,
    );
  }
  const what = entry.source === undefined ? request.group : `(${entry.source}, ${request.group})`;
  if (!entry.ports.includes(target.ofport)) {
    const problem = entry.problem === undefined ? '' : ` (${entry.problem})`;
    return fail(
      'no-bucket',
      `OVS group 0x${(entry.groupId ?? 0).toString(16)} of ${what} has no bucket for ${describePort(target)}${problem}; it outputs to ${entry.ports.join(', ') || 'nothing'}`,
      "the switch lost or was changed by hand: the daemon rewrites a group's entry at its next change, or at once on `systemctl restart mcastctl` (or SIGHUP after a policy change)",
      facts,
    );
  }
  const inPort = sender.port?.ofport;
  if (inPort === undefined || inPort === 0) {
    return pass(
      `${what} → OVS group 0x${(entry.groupId ?? 0).toString(16)}, with a bucket for ${describePort(target)}; no sender port to trace from`,
      facts,
    );
  }
  // From the sender's own MAC where its CNI plugin wrote it, so that flows that check it (anti-spoofing) let it by.
  const sourceMac = sources.ports.find((port) => port.ofport === inPort)?.mac;
  const flow = sources.flowText({
    inPort,
    group: request.group,
    source,
    ...(sourceMac === undefined ? {} : { sourceMac }),
  });
  const { text, datapathPorts } = await sources.ovsTrace(flow);
  const verdict = parseTrace(text);
  const outputs = (verdict?.datapathOutputs ?? []).map((port) => datapathPorts.get(port) ?? -port);
  const reachesPod = outputs.includes(target.ofport);
  const rule = verdict?.firstRule;
  const cookie = rule?.cookie === undefined ? undefined : decodeFlowCookie(rule.cookie, sources.cookiePrefix);
  facts['trace'] = {
    inPort,
    flow,
    datapathActions: verdict?.datapathActions ?? '',
    outputs,
    reachesPod,
    ...(rule === undefined
      ? {}
      : { firstRule: { table: rule.table, match: rule.match, priority: rule.priority, ours: cookie !== undefined } }),
  };
  if (reachesPod)
    return pass(
      `${what} → OVS group 0x${(entry.groupId ?? 0).toString(16)}; OVS's trace from ofport ${inPort} outputs to ${outputs.join(', ')}, the pod's port among them`,
      facts,
    );
  if (cookie?.kind === FlowKind.SendPolicyDrop) {
    return fail(
      'send-denied',
      `the group policy denies ${sender.kind === 'pod' ? sender.pod : 'the sender'} sending to ${request.group}: OVS drops it at its port`,
      'change the send rules of the group policy and reload the daemon',
      facts,
    );
  }
  const first =
    rule === undefined
      ? 'no rule'
      : `${rule.match} (priority ${rule.priority}${cookie === undefined ? ', not ours' : ''})`;
  return fail(
    'trace-misses-pod',
    `OVS's trace from ofport ${inPort} matches ${first} and outputs to ${outputs.length === 0 ? 'nothing' : outputs.join(', ')}, not to ${describePort(target)}`,
    'a flow above ours takes the packet (another controller, a higher priority), or ours changed: compare `ovs-ofctl dump-flows` with `mcastctl show`',
    facts,
  );
}
