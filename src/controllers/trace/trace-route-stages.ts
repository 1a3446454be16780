/**
 * Stages 5 and 6 of a trace: routing across the node's edge. A sender outside comes in
 * through the tunnel, or through kernel routing (the router, the upstream join, the (S,G)
 * route to the gateway); a pod sender goes out under its send policy and the (S,G) route.
 */
import type { AddressFamily } from '../../wire/ip-address.js';
import { describePort, type TraceRequest, type TraceSources } from './trace-facts.js';
import type { TraceSender } from './trace-report.js';
import { fail, pass, type StageOutcome } from './trace-stage-outcome.js';

interface OutsideStageInput {
  request: TraceRequest;
  sources: TraceSources;
  sender: Extract<TraceSender, { kind: 'outside' }>;
  family: AddressFamily;
  source: string | null;
}

export async function outsideStage(input: OutsideStageInput): Promise<StageOutcome> {
  const { request, sources, sender, family, source } = input;
  if (sender.via === 'tunnel') {
    const facts = { tunnel: sources.tunnel ?? null, port: sender.port };
    if (sender.port === null)
      return fail(
        'no-tunnel',
        `the tunnel port ${sources.tunnel ?? ''} has no OpenFlow port`,
        'see `mcastctl status` (tunnel)',
        facts,
      );
    return pass(`from other nodes through the tunnel ${describePort(sender.port)}`, facts);
  }
  const kernel = await sources.kernel(family);
  const interfaces = [...sources.multicastInterfaces];
  const upstreamJoins = interfaces.map((name) => ({
    interface: name,
    joined: kernel.memberships.some((row) => row.name === name && row.group === request.group),
  }));
  const route =
    kernel.routes.find((row) => row.group === request.group && (source === null || row.source === source)) ?? null;
  const facts = { routerActive: kernel.routerActive, vifs: kernel.interfaces, upstreamJoins, route };
  const gateway = sources.gateway;
  if (gateway === undefined || interfaces.length === 0) {
    return fail(
      'no-router',
      'the node routes no multicast in from outside: no gateway or no multicast interfaces',
      'run the daemon with --gateway and --multicast-interfaces (or give them to trace when the daemon is not running)',
      facts,
    );
  }
  const missing = [gateway, ...interfaces].filter((name) => !kernel.interfaces.includes(name));
  if (!kernel.routerActive || missing.length > 0) {
    const why = !kernel.routerActive
      ? 'no multicast router is active in this namespace'
      : `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} no routing interface`;
    return fail(
      'no-router',
      `kernel routing: ${why}`,
      'the daemon routes only while it runs with --multicast-interfaces and --gateway: see `mcastctl routes`',
      facts,
    );
  }
  if (!upstreamJoins.some((join) => join.joined)) {
    return fail(
      'no-upstream-join',
      `no multicast interface (${interfaces.join(', ')}) has joined ${request.group}`,
      "the daemon joins upstream for groups with local members: is the pod a member (`mcastctl groups`)? does the interface's kernel allow it (igmp_max_memberships)?",
      facts,
    );
  }
  if (route === null) {
    return pass(
      `joined on ${upstreamJoins
        .filter((join) => join.joined)
        .map((join) => join.interface)
        .join(', ')}; no (S,G) route yet: the kernel adds it at the first packet that arrives`,
      facts,
    );
  }
  if (!interfaces.includes(route.iif) || !route.oifs.includes(gateway)) {
    return fail(
      'route-wrong',
      `the kernel's (${route.source}, ${route.group}) comes in on ${route.iif} and goes out to ${route.oifs.join(', ') || 'nothing'}, not in on a multicast interface and out to ${gateway}`,
      "compare `mcastctl routes` with the daemon's interfaces; a static route (`mcastctl install --source`) may be in the way",
      facts,
    );
  }
  return pass(
    `joined upstream; (${route.source}, ${route.group}) in on ${route.iif} to ${route.oifs.join(', ')}: ${route.packets} packets, ${route.bytes} bytes`,
    facts,
  );
}

interface SenderStageInput {
  request: TraceRequest;
  sources: TraceSources;
  sender: Extract<TraceSender, { kind: 'pod' }>;
  family: AddressFamily;
}

export async function senderStage(input: SenderStageInput): Promise<StageOutcome> {
  const { request, sources, sender, family } = input;
  const activity = await sources.daemon?.port({ pod: sender.pod, group: request.group });
  const send = activity?.group?.policy.send;
  const routedOut = sources.gateway !== undefined && sources.multicastInterfaces.length > 0;
  const kernel = routedOut ? await sources.kernel(family) : undefined;
  const route =
    kernel?.routes.find(
      (row) => row.group === request.group && (sender.address === null || row.source === sender.address),
    ) ?? null;
  const facts = { sendAllowed: send?.allowed ?? null, rule: send?.rule ?? null, route };
  if (send !== undefined && !send.allowed) {
    return fail(
      'send-denied',
      `the group policy denies ${sender.pod} sending to ${request.group}${send.rule === undefined ? '' : ` (rule at line ${send.rule})`}`,
      'change the send rules of the group policy and reload the daemon',
      facts,
    );
  }
  const policy = send === undefined ? 'send policy not known (no daemon)' : 'the policy lets it send';
  const out = !routedOut
    ? 'not routed off the node (no multicast interfaces)'
    : route === null
      ? 'no (S,G) route out yet'
      : `(${route.source}, ${route.group}) out to ${route.oifs.join(', ')}: ${route.packets} packets`;
  return pass(`${sender.pod}: ${policy}; ${out}`, facts);
}
