/**
 * `mcastctl daemon` in tunnel mode on the three-node tunnel lab (test/lab/tunnel-lab.ts):
 *
 * 1. cross-node join latency: from the IGMP report of a pod on node 2 on its wire (its
 *    eth0) to the first datagram at that pod from a sender on node 1, over many joins (the
 *    sender sends all the time). The report has to reach node 2's daemon, node 2's daemon
 *    has to tell node 1's, and node 1's has to add a tunnel bucket toward node 2;
 * 2. cross-node leave latency: from the pod's leave on its wire to the last Geneve frame
 *    for the group that reaches node 2 on the underlay (the underlay end of its uplink).
 *    Both captures run on this machine, so both timestamps come from the same clock;
 * 3. the time to drop a dead peer: node 3's daemon killed with -9 and its ovs-vswitchd
 *    killed while a pod of node 3 is a member; until node 1's OVS no longer sends the
 *    group toward node 3 (ovs-ofctl, polled every 20 ms). Bounded by --peer-timeout.
 * 0. (measured first, on fresh daemons) convergence: 20 pods on every node, each holding
 *    the same 50 groups (one group set for the whole cluster, so every node needs a
 *    tunnel bucket toward both others for every group); from the first general query of
 *    the daemons' start on a pod's wire until every node's OVS has, for every group, its
 *    local pods and a tunnel bucket toward each other node (ovs-ofctl dump-flows and
 *    dump-groups on the three nodes, polled).
 *
 *   node --import tsx bench/tunnel.ts            (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_TUNNEL_JOINS (default 200: about 60 s), BENCH_TUNNEL_PEER_TIMEOUT_S (5),
 * BENCH_TUNNEL_REFRESH_S (2),
 * BENCH_TUNNEL_PODS (pods per node in the convergence, default 20), BENCH_TUNNEL_GROUPS (50).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPcapFile } from '../src/packet/pcap/index.js';
import { startDaemon, type RunningDaemon } from '../test/lab/daemon.js';
import { Lab, sleep, waitUntil } from '../test/lab/lab.js';
import type { OvsNode, OvsPod } from '../test/lab/ovs.js';
import { buildTunnelLab, TUNNEL_LAB, type TunnelLabNode } from '../test/lab/tunnel-lab.js';
import { CYCLER_PY, type Distribution, distribution, SENDER_PY, type WireEvent, wireEvents } from './pod-processes.js';
import { HOLDER_PY, stopChild, waitForLine } from '../test/lab/group-holders.js';
import { firstIgmpQueryAt } from '../test/lab/igmp-frames.js';

const GROUP = '239.79.0.1';
const UDP_PORT = 5000;
/** Time between two data packets of the sender: the resolution of both latencies. */
const SEND_INTERVAL_MS = 0.5;
/** How long the receiver stays joined, and then away, in each cycle (away long enough for the leave to cross). */
const JOINED_MS = 100;
const LEFT_MS = 200;
/** A leave's last Geneve frame counts when it comes within this long of the leave; later ones are strays. */
const LEAVE_WINDOW_S = 0.15;
/** The convergence's groups: 239.79.1.1 and on, apart from GROUP. */
const CONVERGENCE_GROUP_PREFIX = '239.79.1.';
/** The query's Max Resp Time: hosts answer within it, so convergence takes about this long. */
const QUERY_RESPONSE_INTERVAL_S = 1;
const CONVERGENCE_TIMEOUT_MS = 20_000;

export interface TunnelConvergenceFigures {
  podsPerNode: number;
  groups: number;
  setupSeconds: number;
  /**
   * ms from the first general query on a pod's wire (earliest of the three nodes) to every node complete; undefined
   * with `problem`.
   */
  convergenceMs: number | undefined;
  /** ms from the same query to each node seen complete (n1, n2, n3): the poll that saw it complete ended then. */
  perNodeMs: (number | undefined)[];
  /**
   * ms from the same query to the start of each node's last poll that saw it incomplete: it became complete after this.
   */
  perNodeAfterMs: (number | undefined)[];
  /** Mean time of one poll of the three nodes' OVS: the resolution of the figures. */
  pollMs: number;
  problem: string | undefined;
}

/** ms spent by each node on a cross-node join, read off the wire (see joinLegs). */
export interface JoinLegs {
  /** Node 2: its pod's report → its report to node 1 leaves its uplink. */
  joiner: Distribution;
  /** Node 1: that report on the underlay → the group's first datagram toward node 2. */
  sender: Distribution;
  /** Node 2: that datagram on its uplink → at its pod. */
  delivery: Distribution;
}

export interface TunnelFigures {
  convergence: TunnelConvergenceFigures;
  joins: number;
  /** Joins after which no datagram arrived before the next leave. */
  joinsWithoutData: number;
  /** ms from the report on the pod's wire to its first datagram. */
  join: Distribution;
  /** The same joins' time, leg by leg (joinLegs). */
  joinLegs: JoinLegs;
  /**
   * ms from the leave on the pod's wire to the last Geneve frame for the group on node 2's uplink (0 when none came
   * after it).
   */
  leave: Distribution;
  /** Geneve frames for the group toward node 2 while its pod was away, outside the leave window (should be 0). */
  strayFrames: number;
  loopSeconds: number;
  /** ms from node 3's death to node 1 sending it nothing more; undefined with `deadPeerProblem`. */
  deadPeerDropMs: number | undefined;
  deadPeerProblem: string | undefined;
  peerTimeoutMs: number;
  refreshIntervalMs: number;
  totalSeconds: number;
}

export interface TunnelBenchOptions {
  joins?: number;
  peerTimeoutMs?: number;
  refreshIntervalMs?: number;
  /** Pods per node in the convergence (default 20). */
  podsPerNode?: number;
  groups?: number;
}

// --- capture analysis ------------------------------------------------------------------

const isGroup = (b: Uint8Array, offset: number, group: readonly number[]) =>
  b[offset] === group[0] && b[offset + 1] === group[1] && b[offset + 2] === group[2] && b[offset + 3] === group[3];

/** The addresses of a Geneve frame that a capture analysis picks frames by. */
interface GeneveAddresses {
  outerSource: Uint8Array;
  outerDestination: Uint8Array;
  innerDestination: Uint8Array;
}

/**
 * Capture times (s) of the Geneve frames that `wanted` picks, from a pcap of an underlay
 * port: outer Ethernet, IPv4, UDP to 6081, Geneve (8 octets and its options), inner
 * Ethernet, inner IPv4.
 */
async function geneveFrameTimes(file: string, wanted: (addresses: GeneveAddresses) => boolean): Promise<number[]> {
  const times: number[] = [];
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (b.length < 34 || b[12] !== 0x08 || b[13] !== 0x00 || b[23] !== 17) return;
    const udp = 14 + (b[14]! & 0x0f) * 4;
    if (((b[udp + 2]! << 8) | b[udp + 3]!) !== TUNNEL_LAB.geneveUdpPort) return;
    const geneve = udp + 8;
    const innerEthernet = geneve + 8 + (b[geneve]! & 0x3f) * 4;
    const innerIp = innerEthernet + 14;
    if (b.length < innerIp + 20 || b[innerEthernet + 12] !== 0x08 || b[innerEthernet + 13] !== 0x00) return;
    const addresses = {
      outerSource: b.subarray(26, 30),
      outerDestination: b.subarray(30, 34),
      innerDestination: b.subarray(innerIp + 16, innerIp + 20),
    };
    if (wanted(addresses)) times.push(record.ts);
  });
  return times;
}

const octets = (address: string) => address.split('.').map(Number);

/** The Geneve frames whose inner IPv4 destination is `group` (its datagrams, toward any peer). */
function geneveTimes(file: string, group: string): Promise<number[]> {
  const wanted = octets(group);
  return geneveFrameTimes(file, ({ innerDestination }) => isGroup(innerDestination, 0, wanted));
}

/** The Geneve frames of IGMPv3 reports (inner destination 224.0.0.22) from the node at `from` to the node at `to`. */
function peerReportTimes(file: string, from: string, to: string): Promise<number[]> {
  const [source, destination, reports] = [octets(from), octets(to), octets('224.0.0.22')];
  return geneveFrameTimes(
    file,
    (frame) =>
      isGroup(frame.outerSource, 0, source) &&
      isGroup(frame.outerDestination, 0, destination) &&
      isGroup(frame.innerDestination, 0, reports),
  );
}

/** The first time in sorted `times` after `after`, or undefined. */
function firstAfter(times: readonly number[], after: number): number | undefined {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (times[middle]! <= after) low = middle + 1;
    else high = middle;
  }
  return times[low];
}

/**
 * Where a cross-node join's time goes, from the two captures: node 2 (the report on its
 * pod's wire → its report to node 1 on its uplink), node 1 (that report → the group's
 * first datagram toward node 2 on the same uplink) and node 2 again (→ at the pod).
 */
function joinLegs(
  joins: readonly Sample[],
  peerReports: readonly number[],
  dataTowardNode2: readonly number[],
): JoinLegs {
  const legs = { joiner: [] as number[], sender: [] as number[], delivery: [] as number[] };
  for (const { wire, data } of joins) {
    const told = firstAfter(peerReports, wire);
    const sent = told === undefined ? undefined : firstAfter(dataTowardNode2, told);
    if (data === undefined || told === undefined || sent === undefined || sent > data) continue;
    legs.joiner.push((told - wire) * 1000);
    legs.sender.push((sent - told) * 1000);
    legs.delivery.push((data - sent) * 1000);
  }
  return {
    joiner: distribution(legs.joiner),
    sender: distribution(legs.sender),
    delivery: distribution(legs.delivery),
  };
}

interface Sample {
  wire: number;
  data: number | undefined;
}

/** Joins from the pod's wire (the first report after a leave) with their first datagram; the leaves' times. */
function joinSamples(events: readonly WireEvent[]): { joins: Sample[]; leaves: number[] } {
  const joins: Sample[] = [];
  const leaves: number[] = [];
  let state: 'out' | 'in' = 'out';
  let current: Sample | undefined;
  for (const event of events) {
    if (event.kind === 'join') {
      if (state === 'in') continue;
      state = 'in';
      joins.push((current = { wire: event.ts, data: undefined }));
    } else if (event.kind === 'leave') {
      if (state === 'out') continue;
      state = 'out';
      leaves.push(event.ts);
    } else if (state === 'in' && current !== undefined) current.data ??= event.ts;
  }
  return { joins, leaves };
}

/**
 * Per leave: ms from it to the last Geneve frame within the leave window (0 if none); frames later while away are
 * strays.
 */
function leaveSamples(
  leaves: readonly number[],
  joins: readonly number[],
  frames: readonly number[],
): { latencies: number[]; stray: number } {
  const latencies: number[] = [];
  let stray = 0;
  for (const leave of leaves) {
    const nextJoin = joins.find((join) => join > leave) ?? Number.POSITIVE_INFINITY;
    const away = frames.filter((at) => at > leave && at < nextJoin);
    const inWindow = away.filter((at) => at - leave <= LEAVE_WINDOW_S);
    stray += away.length - inWindow.length;
    latencies.push(inWindow.length === 0 ? 0 : (inWindow[inWindow.length - 1]! - leave) * 1000);
  }
  return { latencies, stray };
}

// --- the benchmark ----------------------------------------------------------------------

/** The tun_dst addresses of every OVS group bucket on the node that a flow for `group` points to. */
async function tunnelDestinations(node: OvsNode, group: string): Promise<string[]> {
  const flows = (await node.ofctl('dump-flows', node.bridge))
    .split('\n')
    .filter((line) => line.includes(`nw_dst=${group} `) || line.includes(`nw_dst=${group},`));
  const ids = new Set(flows.flatMap((line) => [...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!)));
  if (ids.size === 0) return [];
  const groups = (await node.ofctl('dump-groups', node.bridge))
    .split('\n')
    .filter((line) => [...ids].some((id) => line.includes(`group_id=${id},`)));
  return [
    ...new Set(
      groups.flatMap((line) =>
        [...line.matchAll(/set_field:(\d+\.\d+\.\d+\.\d+)->tun_dst/g)].map((match) => match[1]!),
      ),
    ),
  ].sort();
}

// --- convergence ------------------------------------------------------------------------

/** Adds pods to a tunnel lab node up to `podsPerNode` (a few at a time), named and addressed as the lab's own. */
async function growPods(n: TunnelLabNode, index: number, podsPerNode: number): Promise<void> {
  const subnet = TUNNEL_LAB.podSubnets[index]!.split('.').slice(0, 3).join('.');
  const BATCH = 5;
  for (let first = n.pods.length; first < podsPerNode; first += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, podsPerNode - first) }, (_, k) => first + k);
    const added = await Promise.all(
      batch.map((j) =>
        n.node.addPod(`p${index + 1}${j + 1}`, {
          address: `${subnet}.${TUNNEL_LAB.firstPodHost + j}/24`,
          gateway: n.gateway.address,
        }),
      ),
    );
    n.pods.push(...added);
  }
}

interface OvsGroupEntry {
  outputs: Set<number>;
  tunnelDestinations: Set<string>;
  next: string[];
}

/**
 * Whether `node`'s OVS forwards each of `groups` to every port of `localPorts` and toward
 * every address of `peers`: the union of the buckets of every OVS group its flows for the
 * group reach (a chain's links jump to the next with group:N).
 */
async function nodeComplete(
  node: OvsNode,
  groups: readonly string[],
  localPorts: readonly number[],
  peers: readonly string[],
): Promise<boolean> {
  const [flows, dump] = await Promise.all([
    node.ofctl('dump-flows', node.bridge),
    node.ofctl('dump-groups', node.bridge),
  ]);
  const entries = new Map<string, OvsGroupEntry>();
  for (const line of dump.split('\n')) {
    const id = /group_id=(\d+)/.exec(line)?.[1];
    if (id === undefined) continue;
    entries.set(id, {
      outputs: new Set([...line.matchAll(/output:(\d+)/g)].map((match) => Number(match[1]))),
      tunnelDestinations: new Set(
        [...line.matchAll(/set_field:(\d+\.\d+\.\d+\.\d+)->tun_dst/g)].map((match) => match[1]!),
      ),
      next: [...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!),
    });
  }
  const starts = new Map<string, string[]>();
  for (const line of flows.split('\n')) {
    const group = /nw_dst=(\d+\.\d+\.\d+\.\d+)[ ,]/.exec(line)?.[1];
    if (group === undefined) continue;
    starts.set(group, [...(starts.get(group) ?? []), ...[...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!)]);
  }
  return groups.every((group) => {
    const outputs = new Set<number>();
    const destinations = new Set<string>();
    const visited = new Set<string>();
    const pending = [...(starts.get(group) ?? [])];
    for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
      const entry = entries.get(id);
      if (visited.has(id) || entry === undefined) continue;
      visited.add(id);
      for (const port of entry.outputs) outputs.add(port);
      for (const address of entry.tunnelDestinations) destinations.add(address);
      pending.push(...entry.next);
    }
    return localPorts.every((port) => outputs.has(port)) && peers.every((address) => destinations.has(address));
  });
}

interface ConvergenceRun {
  lab: Lab;
  nodes: readonly TunnelLabNode[];
  podsPerNode: number;
  groupCount: number;
  startDaemons: () => RunningDaemon[];
}

/**
 * Grows the pods, holds the groups in every pod, then starts the daemons (their startup
 * general query is what the hosts answer) and polls the three nodes' OVS until complete.
 * Returns the figures, the running daemons, and the holders to stop.
 */
async function measureConvergence(
  run: ConvergenceRun,
): Promise<{ figures: TunnelConvergenceFigures; daemons: RunningDaemon[]; holders: ChildProcess[] }> {
  const { lab, nodes, podsPerNode, groupCount } = run;
  const setupStarted = performance.now();
  await Promise.all(nodes.map((n, index) => growPods(n, index, podsPerNode)));
  const groups = Array.from({ length: groupCount }, (_, i) => `${CONVERGENCE_GROUP_PREFIX}${i + 1}`);
  const holders = nodes.map((n) =>
    lab.spawn(n.node.ns, [
      'python3',
      '-u',
      '-c',
      HOLDER_PY,
      groups.join(','),
      '-',
      ...n.pods.map((pod: OvsPod) => pod.ns),
    ]),
  );
  await Promise.all(
    holders.map((holder, index) => waitForLine(holder, 'ready', 60_000, `group holder of ${nodes[index]!.node.name}`)),
  );
  // Let the hosts' unsolicited reports (and their retransmissions, within 1 s) pass: only the query's answers count.
  await sleep(1500);
  const setupSeconds = (performance.now() - setupStarted) / 1000;
  const pcaps = nodes.map((n) => lab.file(`convergence-query-${n.node.name}.pcap`));
  const captures = await Promise.all(
    nodes.map((n, index) => lab.startTcpdump(n.pods[0]!.ns, n.pods[0]!.iface, pcaps[index]!, { filter: ['igmp'] })),
  );
  const daemons = run.startDaemons();
  const completeAt: (number | undefined)[] = nodes.map(() => undefined);
  const incompleteAt: (number | undefined)[] = nodes.map(() => undefined);
  const deadline = performance.now() + CONVERGENCE_TIMEOUT_MS;
  let polls = 0;
  const pollStarted = performance.now();
  while (completeAt.some((at) => at === undefined) && performance.now() < deadline) {
    await Promise.all(
      nodes.map(async (n, index) => {
        if (completeAt[index] !== undefined) return;
        const peers = nodes.filter((other) => other !== n).map((other) => other.underlayAddress);
        const ports = n.pods.map((pod) => pod.ofport);
        const readStartedAt = Date.now();
        if (await nodeComplete(n.node, groups, ports, peers).catch(() => false)) completeAt[index] = Date.now();
        else incompleteAt[index] = readStartedAt;
      }),
    );
    polls++;
    await sleep(10);
  }
  const pollMs = (performance.now() - pollStarted) / Math.max(1, polls);
  await Promise.all(captures.map((capture) => capture.stop()));
  const queries = (await Promise.all(pcaps.map(firstIgmpQueryAt))).filter((at): at is number => at !== undefined);
  const firstQuery = queries.length === 0 ? undefined : Math.min(...queries);
  let problem: string | undefined;
  if (firstQuery === undefined) problem = 'no general query seen on any node';
  else if (completeAt.some((at) => at === undefined)) {
    problem = `not converged in ${CONVERGENCE_TIMEOUT_MS / 1000} s: complete on ${
      nodes
        .filter((_, index) => completeAt[index] !== undefined)
        .map((n) => n.node.name)
        .join(', ') || 'no node'
    }`;
  }
  const sinceQuery = (at: number | undefined) =>
    at === undefined || firstQuery === undefined ? undefined : at - firstQuery;
  const perNodeMs = completeAt.map(sinceQuery);
  return {
    figures: {
      podsPerNode,
      groups: groupCount,
      setupSeconds,
      convergenceMs: problem === undefined ? Math.max(...perNodeMs.map((value) => value ?? NaN)) : undefined,
      perNodeMs,
      perNodeAfterMs: incompleteAt.map(sinceQuery),
      pollMs,
      problem,
    },
    daemons,
    holders,
  };
}

function startTunnelDaemon(n: TunnelLabNode, timers: string[]): RunningDaemon {
  return startDaemon(n.node, {
    gateway: n.gateway.name,
    multicastInterfaces: [],
    args: [
      '--tunnel-port',
      n.tunnel.name,
      '--peers',
      TUNNEL_LAB.underlayAddresses.join(','),
      '--node-address',
      n.underlayAddress,
      '--fast-leave',
      ...timers,
    ],
  });
}

export async function benchTunnel(options: TunnelBenchOptions = {}): Promise<TunnelFigures> {
  const joins = options.joins ?? 200;
  const peerTimeoutMs = options.peerTimeoutMs ?? 5000;
  const refreshIntervalMs = options.refreshIntervalMs ?? 2000;
  const podsPerNode = options.podsPerNode ?? 20;
  const groupCount = options.groups ?? 50;
  const timers = [
    ...['--peer-refresh-interval', `${refreshIntervalMs}ms`, '--peer-timeout', `${peerTimeoutMs}ms`],
    ...['--query-interval', '600s', '--query-response-interval', `${QUERY_RESPONSE_INTERVAL_S}s`],
  ];
  const started = performance.now();
  const lab = Lab.create();
  try {
    const tl = await buildTunnelLab(lab);
    const [n1, n2, n3] = tl.nodes;
    // --- 0: convergence (first: the daemons' startup query is the one the hosts answer) ---
    const convergence = await measureConvergence({
      lab,
      nodes: tl.nodes,
      podsPerNode,
      groupCount,
      startDaemons: () => tl.nodes.map((n) => startTunnelDaemon(n, timers)),
    });
    const { daemons } = convergence;
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    // The holders' sockets close with them: their leaves empty the groups before the join loop.
    await Promise.all(convergence.holders.map(stopChild));
    await sleep(1000);

    // --- 1, 2: cross-node join and leave ----------------------------------------------
    const sender = n1.pods[0]!;
    const receiver = n2.pods[0]!;
    const podPcap = lab.file('tunnel-pod.pcap');
    const uplinkPcap = lab.file('tunnel-uplink.pcap');
    const podCapture = await lab.startTcpdump(receiver.ns, receiver.iface, podPcap, { filter: ['igmp', 'or', 'udp'] });
    const uplinkCapture = await lab.startTcpdump(tl.underlayNs, n2.uplinkPeer, uplinkPcap, {
      filter: ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort)],
    });
    const send = lab.spawn(sender.ns, [
      'python3',
      '-u',
      '-c',
      SENDER_PY,
      GROUP,
      String(UDP_PORT),
      String(SEND_INTERVAL_MS),
    ]);
    await waitForLine(send, 'ready', 10_000, 'sender');
    const loopStarted = performance.now();
    const cycler = lab.spawn(receiver.ns, [
      'python3',
      '-u',
      '-c',
      CYCLER_PY,
      GROUP,
      String(joins),
      String(JOINED_MS),
      String(LEFT_MS),
    ]);
    await waitForLine(cycler, 'done', joins * (JOINED_MS + LEFT_MS) * 2 + 10_000, 'join/leave cycler');
    const loopSeconds = (performance.now() - loopStarted) / 1000;
    await stopChild(send);
    await sleep(200);
    await Promise.all([podCapture.stop(), uplinkCapture.stop()]);
    const samples = joinSamples(await wireEvents(podPcap, GROUP));
    const timed = samples.joins.filter((sample) => sample.data !== undefined);
    const dataFrames = await geneveTimes(uplinkPcap, GROUP);
    const leave = leaveSamples(
      samples.leaves,
      samples.joins.map((sample) => sample.wire),
      dataFrames,
    );
    const legs = joinLegs(timed, await peerReportTimes(uplinkPcap, n2.underlayAddress, n1.underlayAddress), dataFrames);

    // --- 3: a dead peer ---------------------------------------------------------------
    let deadPeerDropMs: number | undefined;
    let deadPeerProblem: string | undefined;
    const member3 = await n3.pods[0]!.listen(GROUP, UDP_PORT);
    try {
      await waitUntil(
        'node 1 to send toward node 3',
        async () => (await tunnelDestinations(n1.node, GROUP)).includes(n3.underlayAddress),
        10_000,
        20,
      );
      await daemons[2]!.kill9();
      process.kill(Number(readFileSync(join(n3.node.rundir, 'ovs-vswitchd.pid'), 'utf8').trim()), 'SIGKILL');
      const diedAt = performance.now();
      await waitUntil(
        'node 1 to drop node 3',
        async () => !(await tunnelDestinations(n1.node, GROUP)).includes(n3.underlayAddress),
        peerTimeoutMs + refreshIntervalMs + 10_000,
        20,
      );
      deadPeerDropMs = performance.now() - diedAt;
    } catch (error) {
      deadPeerProblem = error instanceof Error ? error.message.split('\n')[0] : String(error);
    } finally {
      await member3.stop();
    }
    for (const daemon of daemons) await daemon.stop();
    return {
      convergence: convergence.figures,
      joins: samples.joins.length,
      joinsWithoutData: samples.joins.length - timed.length,
      join: distribution(timed.map((sample) => (sample.data! - sample.wire) * 1000)),
      joinLegs: legs,
      leave: distribution(leave.latencies),
      strayFrames: leave.stray,
      loopSeconds,
      deadPeerDropMs,
      deadPeerProblem,
      peerTimeoutMs,
      refreshIntervalMs,
      totalSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await lab.destroy();
  }
}

const ms = (value: number) => `${value.toFixed(2)} ms`;
const spread = (d: Distribution) =>
  `p50 ${ms(d.p50)}, p90 ${ms(d.p90)}, p99 ${ms(d.p99)}, max ${ms(d.max)} (n=${d.count})`;

/** "<after>–<seen> ms" for one node: it became complete after the first figure, and was seen complete by the second. */
function nodeRange(c: TunnelConvergenceFigures, index: number): string {
  const seen = c.perNodeMs[index];
  if (seen === undefined) return '-';
  const after = c.perNodeAfterMs[index];
  return `${after === undefined ? '' : `${Math.max(0, after).toFixed(0)}–`}${seen.toFixed(0)} ms`;
}

function convergenceReport(c: TunnelConvergenceFigures): string[] {
  const scale = c.podsPerNode < 20 ? ` (fewer than the asked 20 pods a node: BENCH_TUNNEL_PODS=${c.podsPerNode})` : '';
  return [
    `  convergence of 3 nodes × ${c.podsPerNode} pods × ${c.groups} groups (the same groups on every node)${scale} after the daemons' startup general query` +
      ` (Max Resp Time ${QUERY_RESPONSE_INTERVAL_S} s: hosts answer within it)`,
    c.convergenceMs === undefined
      ? `    not measured: ${c.problem}`
      : `    every node's OVS has every group's local pods and a tunnel bucket toward both other nodes` +
        ` ${c.convergenceMs.toFixed(0)} ms after the query on the wire` +
        ` (seen complete at most this long after it; ${c.perNodeMs.map((_, index) => `${TUNNEL_LAB.nodeNames[index]} ${nodeRange(c, index)}`).join(', ')};` +
        ` OVS polled every ${c.pollMs.toFixed(0)} ms, so a node's figure is a range: incomplete at the start of one poll, complete at the end of the next)`,
    `    setup (pods, joins, the hosts' own reports let pass) ${c.setupSeconds.toFixed(1)} s`,
  ];
}

export function tunnelReport(figures: TunnelFigures): string[] {
  return [
    ...convergenceReport(figures.convergence),
    `  cross-node join (report on node 2's pod wire → first datagram there from node 1; target p50 10 ms): ${spread(figures.join)}`,
    `    ${figures.joins} joins in ${figures.loopSeconds.toFixed(1)} s, ${figures.joinsWithoutData} without data before the leave`,
    `    leg by leg, p50: node 2 (pod's report → its report to node 1 on the uplink) ${ms(figures.joinLegs.joiner.p50)}, ` +
      `node 1 (that report → first datagram toward node 2) ${ms(figures.joinLegs.sender.p50)}, ` +
      `node 2 (→ at the pod) ${ms(figures.joinLegs.delivery.p50)} (n=${figures.joinLegs.sender.count})`,
    `  cross-node leave (leave on the pod's wire → last Geneve frame toward node 2; target under 1 s): ${spread(figures.leave)}`,
    `    ${figures.strayFrames} Geneve frames toward node 2 while its pod was away, outside the ${LEAVE_WINDOW_S * 1000} ms leave window`,
    figures.deadPeerDropMs === undefined
      ? `  dead peer: not measured (${figures.deadPeerProblem})`
      : `  dead peer (daemon kill -9 + ovs-vswitchd killed → node 1 sends it nothing): ${ms(figures.deadPeerDropMs)}` +
        ` (peer timeout ${figures.peerTimeoutMs} ms, refresh ${figures.refreshIntervalMs} ms)`,
    `  total ${figures.totalSeconds.toFixed(1)} s`,
  ];
}

export function tunnelOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): TunnelBenchOptions {
  const number = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : Number(env[name]));
  const seconds = (name: string) => {
    const value = number(name);
    return value === undefined ? undefined : value * 1000;
  };
  return {
    joins: number('BENCH_TUNNEL_JOINS'),
    peerTimeoutMs: seconds('BENCH_TUNNEL_PEER_TIMEOUT_S'),
    refreshIntervalMs: seconds('BENCH_TUNNEL_REFRESH_S'),
    podsPerNode: number('BENCH_TUNNEL_PODS'),
    groups: number('BENCH_TUNNEL_GROUPS'),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(tunnelReport(await benchTunnel(tunnelOptionsFromEnv())).join('\n'));
}
