/**
 * Membership churn on the fleet lab (test/lab/fleet.ts), and the checks of what the
 * daemons made of it: what the fleet benchmark (bench/fleet.ts) and its CI version
 * (test/e2e/fleet.test.ts) share.
 *
 * The driver keeps its own record of every live membership (pod → groups): it decides each
 * change from it, applies it to the record as it sends the command, and everything the
 * checks expect of OVS is derived from that record alone. Joins and leaves are real kernel
 * IGMP from the pods (their member helpers' sockets); pods are also added and deleted
 * (veth, OVS port and namespace) at a lower rate, and pods send some traffic.
 *
 * What a node's OVS must hold, from the record: for every group with a member anywhere, a
 * flow from the pods whose OVS group chain outputs to exactly the node's member pods and
 * toward exactly the other nodes with members (one tunnel bucket each, tun_dst their
 * address), and, when the node has members, a flow from the tunnel that outputs to exactly
 * them; for no other group a flow; no OVS group that no flow reaches. The gateway port's
 * bucket (the node itself is always a receiver) is neither counted nor required.
 * Everything is read with ovs-ofctl dump-flows and dump-groups on br-int, a reader
 * independent of the daemon.
 *
 * Delivery is checked for a sample of groups at once: each sampled group gets a few
 * numbered datagrams from a pod that is no member; every member's helper counts what its
 * socket got, and non-members are checked at the switch: the tx counter of every pod port
 * of every node (ovs-ofctl dump-ports), which must grow by exactly the datagrams of the
 * sampled groups the pod is a member of. That covers every non-member port of the fleet
 * for every sampled group without a capture process per pod, and what a port transmits is
 * what reached the pod's wire; nothing else is sent to pods meanwhile (no membership
 * changes, and the daemons' next general query is minutes away: fleetDaemonArgs).
 */
import { readFileSync } from 'node:fs';
import type { RunningDaemon } from './daemon.js';
import { buildFleet, FLEET, type Fleet, type FleetNode, type FleetPod } from './fleet.js';
import { run, sleep, type Lab, type Tcpdump } from './lab.js';
import type { TunnelLabNode } from './tunnel-lab.js';
import { firstIgmpQueryAt } from './igmp-frames.js';

/** The churn's groups: 239.70.0.1 to 239.70.0.200. */
export const CHURN_GROUP_COUNT = 200;
export const churnGroup = (index: number): string => `239.70.${Math.floor(index / 250)}.${(index % 250) + 1}`;
const CHURN_GROUPS = Array.from({ length: CHURN_GROUP_COUNT }, (_, index) => churnGroup(index));

// ---------------------------------------------------------------------------------------
// Random numbers: seeded, so that a run can be repeated.

/** mulberry32: a small, fast, seeded generator of [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: () => number, items: readonly T[]): T | undefined =>
  items[Math.floor(random() * items.length)];

// ---------------------------------------------------------------------------------------
// Latency distributions

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN };
}

// ---------------------------------------------------------------------------------------
// The record

/** The driver's record of live memberships: what every check expects. */
export class MembershipRecord {
  private readonly groupsOf = new Map<FleetPod, Set<string>>();

  groups(pod: FleetPod): ReadonlySet<string> {
    return this.groupsOf.get(pod) ?? new Set();
  }

  has(pod: FleetPod, group: string): boolean {
    return this.groupsOf.get(pod)?.has(group) ?? false;
  }

  set(pod: FleetPod, group: string, member: boolean): void {
    let groups = this.groupsOf.get(pod);
    if (!groups) this.groupsOf.set(pod, (groups = new Set()));
    if (member) groups.add(group);
    else groups.delete(group);
  }

  /** The pod is gone: so are its memberships. */
  forget(pod: FleetPod): void {
    this.groupsOf.delete(pod);
  }

  /** Memberships in all. */
  size(): number {
    let total = 0;
    for (const groups of this.groupsOf.values()) total += groups.size;
    return total;
  }

  /** Whether any pod of `node` is a member of `group`. */
  nodeHas(node: FleetNode, group: string): boolean {
    return node.pods.some((pod) => this.has(pod, group));
  }

  /** Groups with at least one member, each with its member pods. */
  membersByGroup(): Map<string, FleetPod[]> {
    const members = new Map<string, FleetPod[]>();
    for (const [pod, groups] of this.groupsOf)
      for (const group of groups) members.set(group, [...(members.get(group) ?? []), pod]);
    return members;
  }
}

// ---------------------------------------------------------------------------------------
// What OVS holds

/**
 * Where one flow's OVS group chain sends a multicast group: pod ports (gateway and tunnel ports left out) and tunnel
 * destinations.
 */
interface Forwarding {
  ports: Set<number>;
  peers: Set<string>;
}

interface NodeOvs {
  /** Per multicast group: the flow for traffic from the pods (no in_port). */
  fromPods: Map<string, Forwarding>;
  /** Per multicast group: the flow for traffic from the tunnel (in_port = tun0). */
  fromTunnel: Map<string, Forwarding>;
  /** OVS groups that no flow reaches. */
  orphanGroups: string[];
}

interface OvsGroupEntry {
  outputs: number[];
  peers: string[];
  next: string[];
}

/** Reads node `n`'s br-int with ovs-ofctl and resolves every group flow's chain. */
async function readNodeOvs(n: TunnelLabNode): Promise<NodeOvs> {
  const [flows, groups] = await Promise.all([
    n.node.ofctl('dump-flows', n.node.bridge),
    n.node.ofctl('dump-groups', n.node.bridge),
  ]);
  const entries = new Map<string, OvsGroupEntry>();
  for (const line of groups.split('\n')) {
    const id = /group_id=(\d+)/.exec(line)?.[1];
    if (id === undefined) continue;
    entries.set(id, {
      outputs: [...line.matchAll(/output:(\d+)/g)].map((match) => Number(match[1])),
      peers: [...line.matchAll(/set_field:(\d+\.\d+\.\d+\.\d+)->tun_dst/g)].map((match) => match[1]!),
      next: [...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!),
    });
  }
  const reached = new Set<string>();
  const follow = (start: readonly string[]): Forwarding => {
    const forwarding: Forwarding = { ports: new Set(), peers: new Set() };
    const pending = [...start];
    const visited = new Set<string>();
    for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
      const entry = entries.get(id);
      if (visited.has(id) || entry === undefined) continue;
      visited.add(id);
      reached.add(id);
      for (const port of entry.outputs)
        if (port !== n.gateway.ofport && port !== n.tunnel.ofport) forwarding.ports.add(port);
      for (const peer of entry.peers) forwarding.peers.add(peer);
      pending.push(...entry.next);
    }
    return forwarding;
  };
  const fromPods = new Map<string, Forwarding>();
  const fromTunnel = new Map<string, Forwarding>();
  for (const line of flows.split('\n')) {
    const group = /nw_dst=(\d+\.\d+\.\d+\.\d+)[ ,]/.exec(line)?.[1];
    const ids = [...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!);
    if (group === undefined || ids.length === 0) continue;
    const inPort = /in_port=(\d+)/.exec(line)?.[1];
    if (inPort === undefined) fromPods.set(group, follow(ids));
    else if (Number(inPort) === n.tunnel.ofport) fromTunnel.set(group, follow(ids));
    else follow(ids);
  }
  return { fromPods, fromTunnel, orphanGroups: [...entries.keys()].filter((id) => !reached.has(id)) };
}

/**
 * One node's OVS against the record: every bucket (port or tunnel destination) and flow too few or too many, described.
 */
export interface NodeCheck {
  node: string;
  missing: string[];
  stray: string[];
}

/**
 * What node `node`'s OVS must hold for the record: per group with members anywhere, its member ports here and the other
 * nodes with members.
 */
function expectedOf(
  record: MembershipRecord,
  node: FleetNode,
): Map<string, { ports: Set<number>; peers: Set<string> }> {
  const expected = new Map<string, { ports: Set<number>; peers: Set<string> }>();
  for (const [group, members] of record.membersByGroup()) {
    const ports = new Set(members.filter((pod) => pod.node === node).map((pod) => pod.pod.ofport));
    const peers = new Set(members.filter((pod) => pod.node !== node).map((pod) => pod.node.tunnel.underlayAddress));
    expected.set(group, { ports, peers });
  }
  return expected;
}

/** Compares node `node`'s OVS with the record. */
export async function checkNode(record: MembershipRecord, node: FleetNode): Promise<NodeCheck> {
  const ovs = await readNodeOvs(node.tunnel);
  const expected = expectedOf(record, node);
  const podName = new Map(node.pods.map((pod) => [pod.pod.ofport, pod.pod.name]));
  const portName = (port: number) => `port ${port}${podName.has(port) ? ` (${podName.get(port)})` : ''}`;
  const missing: string[] = [];
  const stray: string[] = [];
  const compare = (
    what: string,
    want: ReadonlySet<number | string>,
    have: ReadonlySet<number | string>,
    describe: (item: number | string) => string,
  ) => {
    for (const item of want) if (!have.has(item)) missing.push(`${what}: ${describe(item)}`);
    for (const item of have) if (!want.has(item)) stray.push(`${what}: ${describe(item)}`);
  };
  const none = new Set<never>();
  const describePort = (item: number | string) => portName(Number(item));
  const describePeer = (item: number | string) => `toward ${item}`;
  for (const [group, want] of expected) {
    const pods = ovs.fromPods.get(group);
    compare(`${group} from pods`, want.ports, pods?.ports ?? none, describePort);
    compare(`${group} from pods`, want.peers, pods?.peers ?? none, describePeer);
    const tunnel = ovs.fromTunnel.get(group);
    compare(`${group} from the tunnel`, want.ports, tunnel?.ports ?? none, describePort);
    // What comes from the tunnel never goes back into it.
    compare(`${group} from the tunnel`, none, tunnel?.peers ?? none, describePeer);
  }
  for (const group of new Set([...ovs.fromPods.keys(), ...ovs.fromTunnel.keys()])) {
    if (!expected.has(group)) stray.push(`${group}: a flow, and no member anywhere`);
  }
  for (const id of ovs.orphanGroups) stray.push(`OVS group ${id}: no flow reaches it`);
  return { node: node.tunnel.node.name, missing, stray };
}

export interface FleetCheck {
  nodes: NodeCheck[];
  missing: number;
  stray: number;
}

/** Every node's OVS against the record, at once. */
export async function checkFleet(fleet: Fleet, record: MembershipRecord): Promise<FleetCheck> {
  const nodes = await Promise.all(fleet.nodes.map((node) => checkNode(record, node)));
  return {
    nodes,
    missing: nodes.reduce((sum, n) => sum + n.missing.length, 0),
    stray: nodes.reduce((sum, n) => sum + n.stray.length, 0),
  };
}

/** A check's faults, a few per node, for a message. */
export function describeFaults(check: FleetCheck, perNode = 5): string {
  return check.nodes
    .filter((n) => n.missing.length + n.stray.length > 0)
    .map(
      (n) =>
        `${n.node}: ${n.missing.length} missing [${n.missing.slice(0, perNode).join('; ')}], ${n.stray.length} stray [${n.stray.slice(0, perNode).join('; ')}]`,
    )
    .join('\n');
}

/**
 * Polls until every node's OVS matches the record (resolves with the ms it took and the clean check), or until
 * `timeoutMs` (with the last check).
 */
export async function waitForFleet(
  fleet: Fleet,
  record: MembershipRecord,
  timeoutMs: number,
): Promise<{ ms: number | undefined; check: FleetCheck }> {
  const started = performance.now();
  for (;;) {
    const check = await checkFleet(fleet, record);
    if (check.missing + check.stray === 0) return { ms: performance.now() - started, check };
    if (performance.now() - started > timeoutMs) return { ms: undefined, check };
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------
// Initial memberships and convergence

/**
 * Every pod joins `groupsPerPod` random groups (its kernel reports them at once; the daemons hear them at their first
 * query if not running yet).
 */
export async function joinInitialGroups(
  fleet: Fleet,
  record: MembershipRecord,
  options: { groupsPerPod: number; random: () => number },
): Promise<void> {
  for (const pod of fleet.pods()) {
    const groups = new Set<string>();
    while (groups.size < Math.min(options.groupsPerPod, CHURN_GROUP_COUNT))
      groups.add(pick(options.random, CHURN_GROUPS)!);
    for (const group of groups) record.set(pod, group, true);
    await Promise.all([...groups].map((group) => pod.member.join(group)));
  }
}

export interface ConvergenceFigures {
  /**
   * Per node: ms from the first general query on its pod's wire to its OVS seen complete (undefined: not within the
   * timeout).
   */
  perNodeMs: (number | undefined)[];
  /** ms from the fleet's first general query to the last node seen complete (undefined with `problem`). */
  overallMs: number | undefined;
  /** Mean time of one poll of a node: the resolution of the figures. */
  pollMs: number;
  problem: string | undefined;
}

/**
 * Starts the daemons on a fleet whose pods hold their groups already, and polls every
 * node's OVS until it matches the record exactly (0 missing, 0 stray). Times run from the
 * first general query on the wire of a pod of the node (a capture per node), the query
 * the hosts answer with all their groups.
 */
export async function startAndConverge(
  fleet: Fleet,
  record: MembershipRecord,
  timeoutMs = 60_000,
): Promise<ConvergenceFigures> {
  const { lab } = fleet;
  const captures: (Tcpdump | undefined)[] = await Promise.all(
    fleet.nodes.map((node) => {
      const pod = node.pods[0]?.pod;
      return pod === undefined
        ? undefined
        : lab.startTcpdump(pod.ns, pod.iface, lab.file(`query-${node.tunnel.node.name}.pcap`), { filter: ['igmp'] });
    }),
  );
  const daemons = fleet.startDaemons();
  const completeAt: (number | undefined)[] = fleet.nodes.map(() => undefined);
  const deadline = Date.now() + timeoutMs;
  let polls = 0;
  let pollTime = 0;
  while (completeAt.some((at) => at === undefined) && Date.now() < deadline) {
    await Promise.all(
      fleet.nodes.map(async (node, index) => {
        if (completeAt[index] !== undefined) return;
        const started = performance.now();
        const check = await checkNode(record, node).catch(() => undefined);
        pollTime += performance.now() - started;
        polls++;
        if (check !== undefined && check.missing.length + check.stray.length === 0) completeAt[index] = Date.now();
      }),
    );
    await sleep(20);
  }
  await Promise.all(daemons.map((daemon) => daemon.ready()));
  await Promise.all(captures.map((capture) => capture?.stop()));
  const queries = await Promise.all(
    captures.map((capture) => (capture === undefined ? undefined : firstIgmpQueryAt(capture.file))),
  );
  const known = queries.filter((at): at is number => at !== undefined);
  const firstQuery = known.length === 0 ? undefined : Math.min(...known);
  const perNodeMs = completeAt.map((at, index) => {
    const query = queries[index] ?? firstQuery;
    return at === undefined || query === undefined ? undefined : at - query;
  });
  let problem: string | undefined;
  if (firstQuery === undefined) problem = 'no general query seen on any node';
  else if (completeAt.some((at) => at === undefined)) {
    problem = `not converged within ${timeoutMs / 1000} s: incomplete on ${fleet.nodes
      .filter((_, index) => completeAt[index] === undefined)
      .map((node) => node.tunnel.node.name)
      .join(', ')}`;
  }
  const last = Math.max(...completeAt.map((at) => at ?? NaN));
  return {
    perNodeMs,
    overallMs: problem === undefined && firstQuery !== undefined ? last - firstQuery : undefined,
    pollMs: pollTime / Math.max(1, polls),
    problem,
  };
}

// ---------------------------------------------------------------------------------------
// Daemon resources

/** The daemon's resident set (KiB), from /proc/<pid>/status. */
export function daemonRssKiB(daemon: Pick<RunningDaemon, 'pid'>): number {
  const status = readFileSync(`/proc/${daemon.pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${daemon.pid}/status`);
  return Number(kib);
}

/** Clock ticks a second of /proc/<pid>/stat's times (USER_HZ). */
let ticksPerSecond: number | undefined;

/** CPU seconds the daemon has used (user + system), from /proc/<pid>/stat. */
export async function daemonCpuSeconds(daemon: Pick<RunningDaemon, 'pid'>): Promise<number> {
  ticksPerSecond ??= Number((await run(['getconf', 'CLK_TCK'])).stdout.trim());
  const stat = readFileSync(`/proc/${daemon.pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: fields 14 and 15 (utime, stime) counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

// ---------------------------------------------------------------------------------------
// The churn

export interface ChurnOptions {
  durationMs: number;
  /** Joins and leaves a second across the fleet (default 50). */
  changesPerSecond?: number;
  /** Pods added or deleted a minute across the fleet (default 12). */
  podChangesPerMinute?: number;
  /** Sends a second (each a few datagrams from a random pod to a random group with members; default 2). */
  sendsPerSecond?: number;
  /** The memberships a pod tends to: joins are likelier below it, leaves above (default 20). */
  groupsPerPod?: number;
  /** Sync latency samples a second (default 4): changes whose reflection in OVS is polled for. */
  samplesPerSecond?: number;
  random: () => number;
}

export interface ChurnFigures {
  seconds: number;
  /** Joins and leaves the member helpers acknowledged. */
  joins: number;
  leaves: number;
  /** Commands that failed while their pod still lived (a pod deleted meanwhile does not count). */
  failedChanges: number;
  changesPerSecond: number;
  podsAdded: number;
  podsRemoved: number;
  sends: number;
  /**
   * ms from a change (its setsockopt returned) to the pod's node's OVS reflecting it (the pod's port in or out of the
   * group's buckets).
   */
  localSync: Distribution;
  /**
   * ms from a change that made a node a member of a group, or no longer one, to another node's OVS reflecting it (its
   * tunnel bucket toward that node).
   */
  remoteSync: Distribution;
  /** Samples that OVS did not reflect within the sampling timeout. */
  syncTimeouts: string[];
  /**
   * The daemons' own measure of the same, over every sync of the churn on every node:
   * mcastctl_sync_duration_seconds (a group marked changed → OVS acknowledged its flow
   * and group mods), as the upper bounds (ms) of the histogram buckets its quantiles fall in.
   */
  daemonSync: { count: number; p50Ms: number; p99Ms: number };
  /** CPU seconds each daemon used during the churn (user + system). */
  cpuSeconds: number[];
  /** Each daemon's VmRSS (KiB), read every tenth of the churn: whether memory grows with the changes or levels off. */
  rssDuringKiB: { atSeconds: number; kib: number[] }[];
}

const SYNC_TIMEOUT_MS = 10_000;

/**
 * Every daemon's mcastctl_sync_duration_seconds buckets (result ok), summed over the fleet: cumulative count by upper
 * bound (s).
 */
async function syncHistogram(fleet: Fleet): Promise<Map<number, number>> {
  const buckets = new Map<number, number>();
  await Promise.all(
    fleet.nodes.map(async (node) => {
      const listening = await node.daemon!.ready();
      const { stdout } = await node.tunnel.node.exec(['curl', '-sf', '--max-time', '5', String(listening['metrics'])]);
      for (const line of stdout.split('\n')) {
        if (!line.startsWith('mcastctl_sync_duration_seconds_bucket{') || !line.includes('result="ok"')) continue;
        const le = /le="([^"]+)"/.exec(line)?.[1];
        const count = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (le === undefined) continue;
        const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
        buckets.set(bound, (buckets.get(bound) ?? 0) + count);
      }
    }),
  );
  return buckets;
}

/** p50 and p99 of a cumulative histogram, as the upper bounds (ms) of the buckets they fall in. */
function histogramQuantiles(cumulative: Map<number, number>): { count: number; p50Ms: number; p99Ms: number } {
  const bounds = [...cumulative.keys()].sort((a, b) => a - b);
  const count = cumulative.get(Number.POSITIVE_INFINITY) ?? 0;
  const quantile = (q: number) => (bounds.find((bound) => (cumulative.get(bound) ?? 0) >= q * count) ?? NaN) * 1000;
  return { count, p50Ms: quantile(0.5), p99Ms: quantile(0.99) };
}

/** Whether node's OVS flow for `group` from the pods outputs to `port` (pods view) or sends toward `peer`. */
async function forwards(
  n: TunnelLabNode,
  group: string,
  target: { port: number } | { peer: string },
): Promise<boolean> {
  const [flows, groups] = await Promise.all([
    n.node.ofctl('dump-flows', n.node.bridge, `ip,nw_dst=${group}`),
    n.node.ofctl('dump-groups', n.node.bridge),
  ]);
  const start = flows.split('\n').find((line) => line.includes('group:') && !line.includes('in_port='));
  if (start === undefined) return false;
  const entries = new Map<string, string>();
  for (const line of groups.split('\n')) {
    const id = /group_id=(\d+)/.exec(line)?.[1];
    if (id !== undefined) entries.set(id, line);
  }
  const pending = [...start.matchAll(/group:(\d+)/g)].map((match) => match[1]!);
  const visited = new Set<string>();
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    const line = entries.get(id);
    if (line === undefined || visited.has(id)) continue;
    visited.add(id);
    if (
      'port' in target
        ? new RegExp(`output:${target.port}(,|$|\\s)`).test(line)
        : line.includes(`set_field:${target.peer}->tun_dst`)
    )
      return true;
    pending.push(...[...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!));
  }
  return false;
}

/**
 * Runs the churn for `durationMs` and returns what it did. Changes go out on a schedule
 * (so many a second from the start, whatever the helpers' pace); each applies to the
 * record when its command is sent. Every so often an acknowledged change is sampled: its
 * node's OVS (and for a change of the node's membership as a whole, a random other
 * node's) is polled until it shows the change, unless the record has moved on meanwhile.
 */
export async function runChurn(fleet: Fleet, record: MembershipRecord, options: ChurnOptions): Promise<ChurnFigures> {
  const { random } = options;
  const changesPerSecond = options.changesPerSecond ?? 50;
  const podChangesPerMinute = options.podChangesPerMinute ?? 12;
  const sendsPerSecond = options.sendsPerSecond ?? 2;
  const groupsPerPod = options.groupsPerPod ?? 20;
  const sampleEveryMs = 1000 / (options.samplesPerSecond ?? 4);
  const podsPerNode = Math.max(1, Math.round(fleet.pods().length / fleet.nodes.length));
  const daemons = fleet.nodes.map((node) => node.daemon!);
  const cpuBefore = await Promise.all(daemons.map(daemonCpuSeconds));
  const syncBefore = await syncHistogram(fleet);
  const figures = { joins: 0, leaves: 0, failedChanges: 0, podsAdded: 0, podsRemoved: 0, sends: 0 };
  const localSync: number[] = [];
  const remoteSync: number[] = [];
  const syncTimeouts: string[] = [];
  /** Pods being deleted or not yet usable: no new changes for them. */
  const busy = new Set<FleetPod>();
  const pending = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    pending.add(promise);
    void promise.finally(() => pending.delete(promise));
  };
  let sampling = false;
  let lastSample = 0;

  const sample = async (pod: FleetPod, group: string, joined: boolean, nodeChanged: boolean, at: number) => {
    const still = () => record.has(pod, group) === joined && pod.node.pods.includes(pod);
    const pollUntil = async (
      n: TunnelLabNode,
      target: { port: number } | { peer: string },
      wanted: () => boolean,
      into: number[],
      what: string,
    ) => {
      for (;;) {
        if (!still() || !wanted()) return;
        if ((await forwards(n, group, target).catch(() => !joined)) === joined) {
          into.push(performance.now() - at);
          return;
        }
        if (performance.now() - at > SYNC_TIMEOUT_MS) {
          syncTimeouts.push(`${what} not in OVS of ${n.node.name} after ${SYNC_TIMEOUT_MS} ms`);
          return;
        }
        await sleep(10);
      }
    };
    const polls = [
      pollUntil(
        pod.node.tunnel,
        { port: pod.pod.ofport },
        () => true,
        localSync,
        `${pod.pod.name} ${joined ? 'joined' : 'left'} ${group}`,
      ),
    ];
    const other = pick(
      random,
      fleet.nodes.filter((node) => node !== pod.node),
    );
    if (nodeChanged && other !== undefined) {
      const nodeState = () => record.nodeHas(pod.node, group) === joined;
      polls.push(
        pollUntil(
          other.tunnel,
          { peer: pod.node.tunnel.underlayAddress },
          nodeState,
          remoteSync,
          `${pod.node.tunnel.node.name} ${joined ? 'a member of' : 'no member of'} ${group}`,
        ),
      );
    }
    await Promise.all(polls);
  };

  const change = () => {
    const pod = pick(
      random,
      fleet.pods().filter((candidate) => !busy.has(candidate)),
    );
    if (pod === undefined) return;
    const groups = record.groups(pod);
    // Joins likelier below groupsPerPod, leaves above: the fleet hovers around it.
    const join = groups.size === 0 || (groups.size < CHURN_GROUP_COUNT && random() >= groups.size / (2 * groupsPerPod));
    const group = join
      ? pick(
          random,
          CHURN_GROUPS.filter((candidate) => !groups.has(candidate)),
        )!
      : pick(random, [...groups])!;
    const nodeHadIt = record.nodeHas(pod.node, group);
    record.set(pod, group, join);
    const nodeChanged = nodeHadIt !== record.nodeHas(pod.node, group);
    track(
      (join ? pod.member.join(group) : pod.member.leave(group)).then(
        () => {
          const at = performance.now();
          if (join) figures.joins++;
          else figures.leaves++;
          if (!sampling && at - lastSample >= sampleEveryMs) {
            sampling = true;
            lastSample = at;
            void sample(pod, group, join, nodeChanged, at).finally(() => (sampling = false));
          }
        },
        () => {
          // A pod deleted meanwhile takes its commands with it; anything else failed.
          if (!pod.node.pods.includes(pod)) return;
          figures.failedChanges++;
          record.set(pod, group, !join);
        },
      ),
    );
  };

  const podChange = async () => {
    const node = pick(random, fleet.nodes)!;
    const live = node.pods.filter((pod) => !busy.has(pod));
    const remove = live.length > podsPerNode || (live.length === podsPerNode && random() < 0.5);
    if (remove && live.length > 1) {
      const pod = pick(random, live)!;
      busy.add(pod);
      record.forget(pod);
      await fleet.removePod(pod);
      busy.delete(pod);
      figures.podsRemoved++;
    } else {
      await fleet.addPod(node);
      figures.podsAdded++;
    }
  };

  const send = () => {
    const members = record.membersByGroup();
    const group = pick(random, [...members.keys()]);
    if (group === undefined) return;
    const sender = pick(
      random,
      fleet.pods().filter((pod) => !busy.has(pod)),
    );
    if (sender === undefined) return;
    figures.sends++;
    track(sender.pod.send(group, FLEET.udpPort, 3, { intervalMs: 2, tag: 'churn' }).catch(() => undefined));
  };

  const rssDuringKiB: ChurnFigures['rssDuringKiB'] = [];
  const started = performance.now();
  let issued = 0;
  let podChanges = 0;
  let sends = 0;
  let podChanging: Promise<void> | undefined;
  for (let elapsed = 0; elapsed < options.durationMs; elapsed = performance.now() - started) {
    const seconds = elapsed / 1000;
    for (; issued < Math.floor(seconds * changesPerSecond); issued++) change();
    for (; sends < Math.floor(seconds * sendsPerSecond); sends++) send();
    if (rssDuringKiB.length < Math.floor((elapsed / options.durationMs) * 10))
      rssDuringKiB.push({ atSeconds: seconds, kib: daemons.map(daemonRssKiB) });
    // One pod change at a time: they take a few hundred ms each.
    if (podChanging === undefined && podChanges < Math.floor((seconds * podChangesPerMinute) / 60)) {
      podChanges++;
      podChanging = podChange().finally(() => (podChanging = undefined));
      track(podChanging);
    }
    await sleep(10);
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all([...pending]);
  while (sampling) await sleep(20);
  const cpuAfter = await Promise.all(daemons.map(daemonCpuSeconds));
  const syncAfter = await syncHistogram(fleet);
  return {
    daemonSync: histogramQuantiles(
      new Map([...syncAfter].map(([le, count]) => [le, count - (syncBefore.get(le) ?? 0)])),
    ),
    seconds,
    ...figures,
    changesPerSecond: (figures.joins + figures.leaves) / seconds,
    localSync: distribution(localSync),
    remoteSync: distribution(remoteSync),
    syncTimeouts,
    cpuSeconds: cpuAfter.map((after, index) => after - cpuBefore[index]!),
    rssDuringKiB,
  };
}

// ---------------------------------------------------------------------------------------
// Delivery

export interface DeliveryCheck {
  /** The groups sampled, each with its sender and members. */
  groups: number;
  datagramsPerGroup: number;
  /** Member sockets checked (group and pod). */
  memberships: number;
  /** Per sampled group: its sender, and its members with what each received. */
  perGroup: { group: string; sender: string; members: { pod: string; node: string; received: number }[] }[];
  /** Members that did not get every datagram of their group exactly once: `<pod> <group>: <n> of <count>`. */
  memberFaults: string[];
  /** Pod ports whose tx counter grew by more than their groups' datagrams: `<pod>: <n> more`. */
  nonMemberFaults: string[];
  /** Datagrams pod ports transmitted beyond their groups' (0: non-members got nothing). */
  nonMemberDatagrams: number;
  /** Ports whose counters grew by less than their groups' (a member lost some on the way). */
  shortPorts: string[];
}

/** tx packets of every port of node's br-int, by OpenFlow port number. */
async function txPackets(n: TunnelLabNode): Promise<Map<number, number>> {
  const text = await n.node.ofctl('dump-ports', n.node.bridge);
  const counts = new Map<number, number>();
  for (const match of text.matchAll(/port\s+(\d+):[^\n]*\n\s*tx pkts=(\d+)/g))
    counts.set(Number(match[1]), Number(match[2]));
  return counts;
}

/**
 * Sends `datagrams` numbered datagrams to each of up to `groups` groups with members (all
 * of them when fewer; at least `groups` when there are), each from a pod that is no
 * member, and checks the members' counts and every pod port's tx counter.
 */
export async function checkDelivery(
  fleet: Fleet,
  record: MembershipRecord,
  options: { groups: number; datagrams: number; random: () => number },
): Promise<DeliveryCheck> {
  const members = record.membersByGroup();
  const all = [...members.keys()];
  const sampled: string[] = [];
  while (sampled.length < Math.min(options.groups, all.length)) {
    const group = pick(options.random, all)!;
    if (!sampled.includes(group)) sampled.push(group);
  }
  const pods = fleet.pods();
  const tag = 'dlv';
  const senders = sampled.map((group) => {
    const sender = pick(
      options.random,
      pods.filter((pod) => !record.has(pod, group)),
    );
    if (sender === undefined) throw new Error(`every pod is a member of ${group}: no sender that is none`);
    return sender;
  });
  const before = await Promise.all(fleet.nodes.map((node) => txPackets(node.tunnel)));
  // A few senders at a time: each is a process in a pod.
  for (let first = 0; first < sampled.length; first += 5) {
    await Promise.all(
      sampled
        .slice(first, first + 5)
        .map((group, offset) =>
          senders[first + offset]!.pod.send(group, FLEET.udpPort, options.datagrams, { intervalMs: 2, tag }),
        ),
    );
  }
  await sleep(500);
  const after = await Promise.all(fleet.nodes.map((node) => txPackets(node.tunnel)));
  const memberFaults: string[] = [];
  let memberships = 0;
  const perGroup: DeliveryCheck['perGroup'] = [];
  for (const [index, group] of sampled.entries()) {
    const received: DeliveryCheck['perGroup'][number]['members'] = [];
    for (const pod of members.get(group) ?? []) {
      memberships++;
      const got = await pod.member.count(group, tag);
      received.push({ pod: pod.pod.name, node: pod.node.tunnel.node.name, received: got });
      if (got !== options.datagrams) memberFaults.push(`${pod.pod.name} ${group}: ${got} of ${options.datagrams}`);
    }
    perGroup.push({ group, sender: senders[index]!.pod.name, members: received });
  }
  const nonMemberFaults: string[] = [];
  const shortPorts: string[] = [];
  let nonMemberDatagrams = 0;
  for (const [index, node] of fleet.nodes.entries()) {
    for (const pod of node.pods) {
      const wanted = sampled.filter((group) => record.has(pod, group)).length * options.datagrams;
      const sent = (after[index]!.get(pod.pod.ofport) ?? 0) - (before[index]!.get(pod.pod.ofport) ?? 0);
      if (sent > wanted) {
        nonMemberDatagrams += sent - wanted;
        nonMemberFaults.push(`${pod.pod.name}: ${sent - wanted} more than its ${wanted}`);
      } else if (sent < wanted) shortPorts.push(`${pod.pod.name}: ${sent} of ${wanted}`);
    }
  }
  return {
    groups: sampled.length,
    datagramsPerGroup: options.datagrams,
    memberships,
    perGroup,
    memberFaults,
    nonMemberFaults,
    nonMemberDatagrams,
    shortPorts,
  };
}

// ---------------------------------------------------------------------------------------
// The whole run

export interface FleetRunOptions {
  nodes?: number;
  podsPerNode?: number;
  /** How long the churn runs. */
  churnMs: number;
  changesPerSecond?: number;
  podChangesPerMinute?: number;
  sendsPerSecond?: number;
  groupsPerPod?: number;
  /** Groups the delivery check samples (default 20). */
  deliveryGroups?: number;
  /** Datagrams to each sampled group (default 5). */
  datagrams?: number;
  /** Default: one of the clock's. */
  seed?: number;
  /** How long the nodes may take to match the record after the churn (default 30 s). */
  settleTimeoutMs?: number;
  /**
   * How long the daemons are left quiet before each RSS reading (default 10 s): V8 gives
   * memory back by itself (its memory reducer) only once a program stops allocating, so a
   * reading in the middle of work lands anywhere on the heap's saw-tooth.
   */
  quietMs?: number;
  /** Called with a line at each stage (a long run says where it is). */
  progress?: (line: string) => void;
}

export interface FleetRun {
  nodes: string[];
  podsPerNode: number;
  seed: number;
  setupSeconds: number;
  /** Memberships when the daemons started. */
  initialMemberships: number;
  convergence: ConvergenceFigures;
  /** VmRSS (KiB) of each daemon once its node had converged (and the quiet time passed). */
  rssAfterConvergenceKiB: number[];
  churn: ChurnFigures;
  /** Memberships when the churn stopped. */
  finalMemberships: number;
  /** ms from the churn's end until every node's OVS matched the record (undefined: not within the timeout). */
  settleMs: number | undefined;
  /** The check after the settling: the final word on missing and stray. */
  check: FleetCheck;
  delivery: DeliveryCheck;
  /** VmRSS (KiB) of each daemon at the end (after the quiet time). */
  rssAtEndKiB: number[];
  /** The quiet time before each RSS reading. */
  quietSeconds: number;
  /**
   * Log lines at level error or warn of each daemon, apart from the MTU warning every pod port gets on a 1,500
   * underlay.
   */
  daemonComplaints: string[];
  totalSeconds: number;
}

/**
 * The daemons' warning of a pod port whose MTU leaves no room for the tunnel: expected in the fleet (pods at 1,500).
 */
const MTU_WARNING = 'a pod port leaves no room for the tunnel';

/**
 * The whole run on a fresh fleet in `lab`: pods join their first groups, the daemons start
 * and converge, the churn runs, then everything stops changing, every node's OVS is
 * compared with the record until it matches (or the timeout), and delivery is checked.
 */
export async function runFleet(lab: Lab, options: FleetRunOptions): Promise<FleetRun> {
  const say = options.progress ?? (() => undefined);
  const started = performance.now();
  const seed = options.seed ?? Date.now() % 2 ** 31;
  const random = seededRandom(seed);
  const groupsPerPod = options.groupsPerPod ?? 20;
  const fleet = await buildFleet(lab, { nodes: options.nodes, podsPerNode: options.podsPerNode });
  const record = new MembershipRecord();
  await joinInitialGroups(fleet, record, { groupsPerPod, random });
  // Let the hosts' unsolicited reports (and their retransmissions, within 1 s) pass: only the query's answers count.
  await sleep(1500);
  const setupSeconds = (performance.now() - started) / 1000;
  say(
    `fleet of ${fleet.nodes.length} nodes × ${fleet.nodes[0]?.pods.length ?? 0} pods built in ${setupSeconds.toFixed(1)} s; starting the daemons`,
  );
  const initialMemberships = record.size();
  const convergence = await startAndConverge(fleet, record);
  const daemons = fleet.nodes.map((node) => node.daemon!);
  const quietMs = options.quietMs ?? 10_000;
  await sleep(quietMs);
  const rssAfterConvergenceKiB = daemons.map(daemonRssKiB);
  say(
    `converged: ${convergence.overallMs === undefined ? convergence.problem : `${convergence.overallMs.toFixed(0)} ms after the first query`}; churning for ${options.churnMs / 1000} s`,
  );
  const churn = await runChurn(fleet, record, {
    durationMs: options.churnMs,
    changesPerSecond: options.changesPerSecond,
    podChangesPerMinute: options.podChangesPerMinute,
    sendsPerSecond: options.sendsPerSecond,
    groupsPerPod,
    random,
  });
  say(
    `churn done: ${churn.joins + churn.leaves} changes in ${churn.seconds.toFixed(1)} s; waiting for every node to match the record`,
  );
  const settled = await waitForFleet(fleet, record, options.settleTimeoutMs ?? 30_000);
  const delivery = await checkDelivery(fleet, record, {
    groups: options.deliveryGroups ?? 20,
    datagrams: options.datagrams ?? 5,
    random,
  });
  await sleep(quietMs);
  const rssAtEndKiB = daemons.map(daemonRssKiB);
  const daemonComplaints = fleet.nodes.flatMap((node) =>
    (node.daemon?.entries() ?? [])
      .filter(
        (entry) =>
          (entry['level'] === 'error' || entry['level'] === 'warn') && !String(entry['msg']).startsWith(MTU_WARNING),
      )
      .map((entry) => `${node.tunnel.node.name}: ${JSON.stringify(entry)}`),
  );
  await fleet.stopDaemons();
  return {
    nodes: fleet.nodes.map((node) => node.tunnel.node.name),
    podsPerNode: options.podsPerNode ?? FLEET.podsPerNode,
    seed,
    setupSeconds,
    initialMemberships,
    convergence,
    rssAfterConvergenceKiB,
    churn,
    finalMemberships: record.size(),
    settleMs: settled.ms,
    check: settled.check,
    delivery,
    rssAtEndKiB,
    quietSeconds: quietMs / 1000,
    daemonComplaints,
    totalSeconds: (performance.now() - started) / 1000,
  };
}

/** Each daemon's RSS growth, end against after convergence (0.05 = 5 %). */
export function rssGrowth(run: Pick<FleetRun, 'rssAfterConvergenceKiB' | 'rssAtEndKiB'>): number[] {
  return run.rssAtEndKiB.map((end, index) => end / run.rssAfterConvergenceKiB[index]! - 1);
}

const ms = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? '-' : `${value.toFixed(0)} ms`);
const spread = (d: Distribution) =>
  d.count === 0
    ? 'no samples'
    : `p50 ${d.p50.toFixed(0)} ms, p90 ${d.p90.toFixed(0)} ms, p99 ${d.p99.toFixed(0)} ms, max ${d.max.toFixed(0)} ms (n=${d.count})`;
const mib = (kib: number) => `${(kib / 1024).toFixed(1)}`;

/** The run's figures and checks, as lines for a person. */
export function fleetReport(run: FleetRun): string[] {
  const { convergence: c, churn, check, delivery } = run;
  const growth = rssGrowth(run);
  return [
    `  ${run.nodes.length} nodes × ${run.podsPerNode} pods, ${CHURN_GROUP_COUNT} groups, seed ${run.seed}; setup ${run.setupSeconds.toFixed(1)} s, ${run.initialMemberships} memberships at the daemons' start`,
    c.overallMs === undefined
      ? `  convergence: ${c.problem}`
      : `  convergence after the first general query: every node complete in ${ms(c.overallMs)} (OVS polled, ${c.pollMs.toFixed(0)} ms a poll of one node)`,
    `    per node (from its own pods' first query): ${c.perNodeMs.map((value, index) => `${run.nodes[index]} ${ms(value)}`).join(', ')}`,
    `  churn: ${churn.joins} joins + ${churn.leaves} leaves in ${churn.seconds.toFixed(1)} s = ${churn.changesPerSecond.toFixed(1)} changes/s sustained` +
      ` (${churn.failedChanges} failed); ${churn.podsAdded} pods added, ${churn.podsRemoved} deleted; ${churn.sends} sends`,
    `    sync latency, change → its node's OVS: ${spread(churn.localSync)}`,
    `    sync latency, a node's first join or last leave → another node's tunnel bucket: ${spread(churn.remoteSync)}`,
    `    the daemons' own sync time (change marked → OVS acknowledged, mcastctl_sync_duration_seconds, all nodes): p50 ≤ ${churn.daemonSync.p50Ms} ms, p99 ≤ ${churn.daemonSync.p99Ms} ms (n=${churn.daemonSync.count})`,
    ...(churn.syncTimeouts.length > 0
      ? [`    ${churn.syncTimeouts.length} samples not reflected in time: ${churn.syncTimeouts.slice(0, 3).join('; ')}`]
      : []),
    `    CPU seconds per daemon during the churn: ${churn.cpuSeconds.map((value, index) => `${run.nodes[index]} ${value.toFixed(1)}`).join(', ')}` +
      ` (mean ${((churn.cpuSeconds.reduce((sum, value) => sum + value, 0) / churn.cpuSeconds.length / churn.seconds) * 100).toFixed(1)} % of a core)`,
    `  after the churn (${run.finalMemberships} memberships): every node matched the record ${run.settleMs === undefined ? 'NOT within the timeout' : `${ms(run.settleMs)} after it stopped`};` +
      ` ${check.missing} missing, ${check.stray} stray`,
    ...(check.missing + check.stray > 0
      ? describeFaults(check)
          .split('\n')
          .map((line) => `    ${line}`)
      : []),
    `  delivery: ${delivery.groups} groups × ${delivery.datagramsPerGroup} datagrams from non-members: ${delivery.memberships - delivery.memberFaults.length} of ${delivery.memberships} member sockets got every one exactly;` +
      ` non-member pod ports transmitted ${delivery.nonMemberDatagrams} datagrams (OVS tx counters of every pod port)`,
    ...(delivery.memberFaults.length > 0 ? [`    member faults: ${delivery.memberFaults.slice(0, 5).join('; ')}`] : []),
    ...(delivery.nonMemberFaults.length > 0
      ? [`    non-member faults: ${delivery.nonMemberFaults.slice(0, 5).join('; ')}`]
      : []),
    `  daemon RSS (MiB) after convergence → at the end: ${run.nodes.map((name, index) => `${name} ${mib(run.rssAfterConvergenceKiB[index]!)}→${mib(run.rssAtEndKiB[index]!)} (${(growth[index]! * 100).toFixed(1)} %)`).join(', ')}`,
    `    largest growth ${(Math.max(...growth) * 100).toFixed(1)} % (target: within 10 %; both read after ${(run.quietSeconds).toFixed(0)} s without changes);` +
      ` peak during the churn (MiB): ${run.nodes.map((name, index) => `${name} ${mib(Math.max(...churn.rssDuringKiB.map(({ kib }) => kib[index]!)))}`).join(', ')}`,
    `    mean RSS during the churn (MiB): ${churn.rssDuringKiB
      .map(
        ({ atSeconds, kib }) =>
          `${atSeconds.toFixed(0)} s ${mib(kib.reduce((sum, value) => sum + value, 0) / kib.length)}`,
      )
      .join(', ')}`,
    ...(run.daemonComplaints.length > 0
      ? [
          `  daemon errors and warnings: ${run.daemonComplaints.length}, e.g. ${run.daemonComplaints.slice(0, 3).join(' | ')}`,
        ]
      : []),
    `  total ${run.totalSeconds.toFixed(1)} s`,
  ];
}
