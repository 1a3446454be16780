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
 * Everything outside comes through TraceSources (./trace-sources.ts has the real ones), so
 * the decisions are tested on plain facts. Without the daemon, stages 2 and 3 are skipped
 * and the rest still run.
 */
import { familyOf } from '../../domain/family/families.js';
import { decodeFlowCookie, FlowKind } from '../../domain/pipeline/flow-cookie.js';
import type { InterfaceMembershipRow } from '../../protocol/mroute/proc.js';
import type {
  DaemonStatus,
  GroupView,
  PortActivityView,
  PortQuery,
  PortView,
} from '../../transport/control/daemon-view.js';
import { type AddressFamily, type GroupAddress, textFamily } from '../../wire/ip-address.js';
import type { TraceFailureCode, TraceReport, TraceSender, TraceStage, TraceStageName } from './trace-report.js';
import { TRACE_STAGES } from './trace-report.js';
import { parseTrace } from '../../adapters/ovs/ofproto-trace.js';

/** A port of the bridge, as OVSDB has it. */
export interface TracePort {
  ofport: number;
  name: string;
  pod?: string;
  /** Its addresses (external_ids ip-address), where its CNI plugin wrote them. */
  addresses?: readonly string[];
  /** Its pod's MAC (external_ids attached-mac): the source MAC of a packet traced from it. */
  mac?: string;
}

/** One entry of ours on the switch: a group's (*,G) flow, or one source's (S,G) flow, with its OVS group's buckets. */
export interface InstalledEntry {
  group: string;
  source?: string;
  /** The head of its OVS group chain. */
  groupId: number | undefined;
  /** The ports its buckets output to. */
  ports: readonly number[];
  problem?: string;
}

/** The kernel's multicast routing of one family in this namespace. */
export interface KernelFacts {
  routerActive: boolean;
  /** Names of its routing interfaces (VIFs or MIFs). */
  interfaces: string[];
  routes: Array<{ source: string; group: string; iif: string; oifs: string[]; packets: number; bytes: number }>;
  memberships: InterfaceMembershipRow[];
}

/** What the daemon answers, when it answers. */
export interface DaemonFacts {
  status: DaemonStatus;
  groups: GroupView[];
  port(query: PortQuery): Promise<PortActivityView | undefined>;
}

export interface TraceSources {
  bridge: string;
  cookiePrefix: number;
  ports: readonly TracePort[];
  installed(): Promise<readonly InstalledEntry[]>;
  /** OVS's trace of `flow` (ofproto/trace's text) and the datapath's port numbers (datapath → OpenFlow). */
  ovsTrace(flow: string): Promise<{ text: string; datapathPorts: ReadonlyMap<number, number> }>;
  /** Undefined: not asked (--no-daemon) or not reachable (`daemonState`). */
  daemon: DaemonFacts | undefined;
  daemonState: TraceReport['daemon'];
  /** Where the daemon's socket is, for the message when it did not answer. */
  controlSocket: string;
  kernel(family: AddressFamily): Promise<KernelFacts>;
  /** The gateway port's name (the daemon's, or --gateway). */
  gateway: string | undefined;
  /** The interfaces to the network outside (the daemon's, or --multicast-interfaces). */
  multicastInterfaces: readonly string[];
  /** Tunnel mode's port name, when the daemon runs it. */
  tunnel: string | undefined;
  /** The flow text of a UDP datagram from `inPort` (traceFlowText). */
  flowText(packet: { inPort: number; group: GroupAddress; source: string; sourceMac?: string }): string;
}

export interface TraceRequest {
  group: GroupAddress;
  /** `namespace/name`. */
  pod: string;
  source?: string;
  from?: { pod: string } | { address: string };
  /** The way a sender outside comes in (default: the gateway, else the tunnel). */
  via?: 'gateway' | 'tunnel';
}

/** Documentation addresses (RFC 5737, RFC 3849): the source of a traced packet when no sender or source is named. */
const ANY_SOURCE: Record<AddressFamily, string> = { ipv4: '192.0.2.1', ipv6: '2001:db8::1' };

type Outcome =
  | { status: 'pass'; summary: string; facts: Record<string, unknown> }
  | { status: 'skipped'; summary: string; facts: Record<string, unknown> }
  | { status: 'fail'; summary: string; code: TraceFailureCode; hint: string; facts: Record<string, unknown> };

const pass = (summary: string, facts: Record<string, unknown>): Outcome => ({ status: 'pass', summary, facts });
const fail = (code: TraceFailureCode, summary: string, hint: string, facts: Record<string, unknown>): Outcome => ({
  status: 'fail',
  code,
  summary,
  hint,
  facts,
});

function portView(port: TracePort): PortView {
  return { ofport: port.ofport, name: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }) };
}

function describePort(port: TracePort | PortView): string {
  return `${port.name} (ofport ${port.ofport})`;
}

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
  const record = (name: TraceStageName, outcome: Outcome): boolean => {
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

const LIMIT_REASONS = ['port-groups', 'node-groups', 'group-sources', 'ssm'] as const;

function igmpStage(request: TraceRequest, activity: PortActivityView | undefined, member: boolean): Outcome {
  if (activity === undefined) {
    return fail(
      'not-a-pod-port',
      `the daemon does not snoop ${request.pod}'s port`,
      "its Interface needs external_ids pod-name (and pod-namespace), and must not be the daemon's gateway",
      {},
    );
  }
  const said = activity.group;
  const facts = {
    messages: activity.messages,
    lastMessageAt: activity.lastMessageAt,
    reports: said?.reports ?? 0,
    lastReportAt: said?.lastReportAt ?? null,
    refusals: said?.refusals ?? {},
    reportedGroups: activity.reportedGroups,
    meterDropped: activity.meterDropped,
    since: activity.since,
    ...(said?.lastRefusal === undefined ? {} : { lastRefusal: said.lastRefusal }),
  };
  const policy = said?.policy.join;
  if (policy !== undefined && !policy.allowed) {
    const rule = policy.rule;
    return fail(
      'denied-by-policy',
      `the group policy denies ${request.pod} joining ${request.group}${rule === undefined ? '' : ` (rule at line ${rule})`}; ${facts.reports} report(s) refused`,
      'change the policy file (groupPolicy) and reload the daemon (SIGHUP), if the pod should get the group',
      { ...facts, rule: rule ?? null },
    );
  }
  if (member)
    return pass(
      `${facts.reports} report(s) of ${request.group}${facts.lastReportAt === null ? '' : `, the last at ${facts.lastReportAt}`}`,
      facts,
    );
  const mld = familyOf(request.group).protocol === 'mld';
  const protocol = mld ? 'MLD' : 'IGMP';
  if (facts.reports === 0) {
    const watched = `since ${activity.since} (the daemon queries every ${Math.round(activity.queryIntervalMs / 1000)} s)`;
    if (facts.messages === 0) {
      const meter = facts.meterDropped > 0 ? `; its meter in OVS dropped ${facts.meterDropped} message(s)` : '';
      return fail(
        'no-igmp',
        `no ${protocol} at all from the port ${watched}${meter}`,
        `nothing in the pod has joined a group, or its ${protocol} never leaves it: look for a firewall in the pod (nft list ruleset, iptables -S) dropping ${mld ? 'ICMPv6 types 131/143' : 'IP protocol 2 (igmp)'}`,
        facts,
      );
    }
    const others = facts.reportedGroups.slice(0, 4).join(', ');
    return fail(
      'never-reported',
      `the port reports ${others === '' ? 'other groups' : others} but has never reported ${request.group} ${watched}`,
      `no socket in the pod has joined ${request.group} (IP_ADD_MEMBERSHIP): check the application's group and interface`,
      facts,
    );
  }
  const refusal = said?.lastRefusal?.reason;
  const limit = LIMIT_REASONS.find((reason) => reason === refusal);
  if (limit !== undefined) {
    const hints: Record<(typeof LIMIT_REASONS)[number], string> = {
      'port-groups': 'the pod is in as many groups as maxGroupsPerPort allows: raise it, or have the pod leave a group',
      'node-groups': 'the node has as many groups as maxGroups allows: raise it',
      'group-sources': "the pod's filter of the group has as many sources as maxSourcesPerGroup allows: raise it",
      ssm: 'the group is in the SSM range: join it for named sources (IGMPv3 INCLUDE)',
    };
    return fail(
      'limit-reached',
      `the daemon refused ${request.pod}'s join of ${request.group}: ${limit}`,
      hints[limit],
      { ...facts, limit },
    );
  }
  const portRefusal = (['spoofed', 'off-link', 'port-rate'] as const).find(
    (reason) => (activity.refusals[reason] ?? 0) > 0,
  );
  if (portRefusal !== undefined) {
    const codes = { spoofed: 'spoofed', 'off-link': 'off-link', 'port-rate': 'rate-limited' } as const;
    const hints = {
      spoofed:
        "the pod's reports come from an address that is not its own (external_ids ip-address): fix the pod's address or the port's ip-address",
      'off-link': 'its reports have a TTL other than 1 or no Router Alert: they look routed, not sent on the link',
      'port-rate': 'the pod sends more IGMP than igmpRatePerPort allows: find what floods',
    };
    return fail(
      codes[portRefusal],
      `${facts.reports} report(s) of ${request.group}, but the port's ${protocol} was refused: ${portRefusal}`,
      hints[portRefusal],
      facts,
    );
  }
  return pass(`${facts.reports} report(s) of ${request.group}, the last at ${facts.lastReportAt}`, facts);
}

function membershipStage(
  request: TraceRequest,
  member: GroupView['members'][number] | undefined,
  source: string | null,
): Outcome {
  if (member === undefined) {
    return fail(
      'not-member',
      `${request.pod} is not a member of ${request.group}`,
      'it left, or its membership expired without a report: is the application still joined?',
      {
        member: false,
        mode: null,
        sources: [],
        admitsSource: null,
        expiresInMs: null,
        compatibility: null,
      },
    );
  }
  const expiresInMs = Math.max(0, Date.parse(member.expiresAt) - Date.now());
  const admitsSource =
    source === null
      ? null
      : member.mode === 'include'
        ? member.sources.includes(source)
        : !member.sources.includes(source);
  const facts = {
    member: true,
    mode: member.mode,
    sources: member.sources,
    admitsSource,
    expiresInMs,
    compatibility: member.compatibility,
    host: member.host,
  };
  const filter =
    member.mode === 'exclude' && member.sources.length === 0
      ? 'any source'
      : `${member.mode.toUpperCase()} {${member.sources.join(', ')}}`;
  if (admitsSource === false) {
    return fail(
      'source-not-admitted',
      `member with ${filter}: ${source} is not admitted`,
      `the pod's filter leaves ${source} out: it must join (${source}, ${request.group})`,
      facts,
    );
  }
  return pass(
    `member (IGMPv${member.compatibility}, ${filter}), expires in ${Math.round(expiresInMs / 1000)} s`,
    facts,
  );
}

interface OvsStageInput {
  request: TraceRequest;
  sources: TraceSources;
  target: TracePort;
  sender: TraceSender;
  source: string;
}

async function ovsStage(input: OvsStageInput): Promise<Outcome> {
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

interface OutsideStageInput {
  request: TraceRequest;
  sources: TraceSources;
  sender: Extract<TraceSender, { kind: 'outside' }>;
  family: AddressFamily;
  source: string | null;
}

async function outsideStage(input: OutsideStageInput): Promise<Outcome> {
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

async function senderStage(input: SenderStageInput): Promise<Outcome> {
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
