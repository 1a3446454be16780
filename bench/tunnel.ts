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
 *
 *   node --import tsx bench/tunnel.ts            (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_TUNNEL_JOINS (default 200: about 60 s), BENCH_TUNNEL_PEER_TIMEOUT_S (5),
 * BENCH_TUNNEL_REFRESH_S (2).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { decode as decodeIgmp, type IgmpMessage } from '../src/packet/igmp/index.js';
import { readPcapFile } from '../src/packet/pcap/index.js';
import { startDaemon, type RunningDaemon } from '../test/lab/daemon.js';
import { Lab, sleep, waitUntil } from '../test/lab/lab.js';
import type { OvsNode } from '../test/lab/ovs.js';
import { buildTunnelLab, TUNNEL_LAB, type TunnelLabNode } from '../test/lab/tunnel-lab.js';

const GROUP = '239.79.0.1';
const UDP_PORT = 5000;
/** Time between two data packets of the sender: the resolution of both latencies. */
const SEND_INTERVAL_MS = 0.5;
/** How long the receiver stays joined, and then away, in each cycle (away long enough for the leave to cross). */
const JOINED_MS = 100;
const LEFT_MS = 200;
/** A leave's last Geneve frame counts when it comes within this long of the leave; later ones are strays. */
const LEAVE_WINDOW_S = 0.15;

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface TunnelFigures {
  joins: number;
  /** Joins after which no datagram arrived before the next leave. */
  joinsWithoutData: number;
  /** ms from the report on the pod's wire to its first datagram. */
  join: Distribution;
  /** ms from the leave on the pod's wire to the last Geneve frame for the group on node 2's uplink (0 when none came after it). */
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
}

function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN };
}

/** Sends UDP to group:port every `intervalMs` (paced on a monotonic clock) until killed. */
const SENDER_PY = `
import socket, sys, time
group, port, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
print("ready", flush=True)
payload = b"x" * 18
nxt = time.perf_counter()
while True:
    s.sendto(payload, (group, port))
    nxt += interval
    delay = nxt - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    elif delay < -0.05:
        nxt = time.perf_counter()
`;

/** Joins and leaves `group` `count` times (IP_ADD/DROP_MEMBERSHIP on the multicast route's interface), then prints "done". */
const CYCLER_PY = `
import socket, sys, time
group, count, joined, left = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, float(sys.argv[4]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
mreq = socket.inet_aton(group) + socket.inet_aton("0.0.0.0")
time.sleep(left)
for i in range(count):
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    time.sleep(joined)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, mreq)
    time.sleep(left)
print("done", flush=True)
`;

/** Resolves with the child's first stdout line equal to `word`; rejects if it exits first. */
function waitForLine(child: ChildProcess, word: string, timeoutMs: number, what: string): Promise<void> {
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no "${word}" within ${timeoutMs} ms: ${stderr.trim()}`)), timeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.trim() === word) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before "${word}": ${stderr.trim()}`));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  return exited.finally(() => clearTimeout(timer));
}

// --- capture analysis ------------------------------------------------------------------

type WireEvent = { ts: number; kind: 'join' | 'leave' | 'data' };

const isGroup = (b: Uint8Array, offset: number, group: readonly number[]) =>
  b[offset] === group[0] && b[offset + 1] === group[1] && b[offset + 2] === group[2] && b[offset + 3] === group[3];

/** The IGMP state changes for `group` and the UDP datagrams to it in a pcap of the pod's eth0, in order (seconds). */
async function podEvents(file: string, group: string): Promise<WireEvent[]> {
  const events: WireEvent[] = [];
  const wanted = group.split('.').map(Number);
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (b.length < 34 || b[12] !== 0x08 || b[13] !== 0x00) return;
    const ihl = (b[14]! & 0x0f) * 4;
    const total = (b[16]! << 8) | b[17]!;
    const protocol = b[23];
    if (protocol === 17) {
      if (isGroup(b, 30, wanted)) events.push({ ts: record.ts, kind: 'data' });
      return;
    }
    if (protocol !== 2) return;
    let message: IgmpMessage;
    try {
      message = decodeIgmp(b, 14 + ihl, Math.min(b.length, 14 + total));
    } catch {
      return;
    }
    if (message.kind === 'leave' && message.group === group) events.push({ ts: record.ts, kind: 'leave' });
    else if (message.kind === 'report') {
      if (message.version !== 3) {
        if (message.group === group) events.push({ ts: record.ts, kind: 'join' });
        return;
      }
      for (const r of message.records) {
        if (r.group !== group) continue;
        if (r.type === 'CHANGE_TO_EXCLUDE_MODE' || r.type === 'MODE_IS_EXCLUDE') events.push({ ts: record.ts, kind: 'join' });
        else if ((r.type === 'CHANGE_TO_INCLUDE_MODE' || r.type === 'MODE_IS_INCLUDE') && r.sources.length === 0) {
          events.push({ ts: record.ts, kind: 'leave' });
        }
      }
    }
  });
  return events;
}

/**
 * Capture times (s) of the Geneve frames whose inner IPv4 destination is `group`, from a
 * pcap of an underlay port: outer Ethernet, IPv4, UDP to 6081, Geneve (8 octets and its
 * options), inner Ethernet, inner IPv4.
 */
async function geneveTimes(file: string, group: string): Promise<number[]> {
  const times: number[] = [];
  const wanted = group.split('.').map(Number);
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (b.length < 34 || b[12] !== 0x08 || b[13] !== 0x00 || b[23] !== 17) return;
    const udp = 14 + (b[14]! & 0x0f) * 4;
    if (((b[udp + 2]! << 8) | b[udp + 3]!) !== TUNNEL_LAB.geneveUdpPort) return;
    const geneve = udp + 8;
    const innerEthernet = geneve + 8 + (b[geneve]! & 0x3f) * 4;
    const innerIp = innerEthernet + 14;
    if (b.length < innerIp + 20 || b[innerEthernet + 12] !== 0x08 || b[innerEthernet + 13] !== 0x00) return;
    if (isGroup(b, innerIp + 16, wanted)) times.push(record.ts);
  });
  return times;
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

/** Per leave: ms from it to the last Geneve frame within the leave window (0 if none); frames later while away are strays. */
function leaveSamples(leaves: readonly number[], joins: readonly number[], frames: readonly number[]): { latencies: number[]; stray: number } {
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
  const groups = (await node.ofctl('dump-groups', node.bridge)).split('\n').filter((line) => [...ids].some((id) => line.includes(`group_id=${id},`)));
  return [...new Set(groups.flatMap((line) => [...line.matchAll(/set_field:(\d+\.\d+\.\d+\.\d+)->tun_dst/g)].map((match) => match[1]!)))].sort();
}

function startTunnelDaemon(n: TunnelLabNode, timers: string[]): RunningDaemon {
  return startDaemon(n.node, {
    gateway: n.gateway.name,
    multicastInterfaces: [],
    args: ['--tunnel-port', n.tunnel.name, '--peers', TUNNEL_LAB.underlayAddresses.join(','), '--node-address', n.underlayAddress, '--fast-leave', ...timers],
  });
}

export async function benchTunnel(options: TunnelBenchOptions = {}): Promise<TunnelFigures> {
  const joins = options.joins ?? 200;
  const peerTimeoutMs = options.peerTimeoutMs ?? 5000;
  const refreshIntervalMs = options.refreshIntervalMs ?? 2000;
  const timers = ['--peer-refresh-interval', `${refreshIntervalMs}ms`, '--peer-timeout', `${peerTimeoutMs}ms`, '--query-interval', '600s'];
  const started = performance.now();
  const lab = Lab.create();
  try {
    const tl = await buildTunnelLab(lab);
    const [n1, n2, n3] = tl.nodes;
    const daemons = tl.nodes.map((n) => startTunnelDaemon(n, timers));
    await Promise.all(daemons.map((daemon) => daemon.ready()));

    // --- 1, 2: cross-node join and leave ----------------------------------------------
    const sender = n1.pods[0]!;
    const receiver = n2.pods[0]!;
    const podPcap = lab.file('tunnel-pod.pcap');
    const uplinkPcap = lab.file('tunnel-uplink.pcap');
    const podCapture = await lab.startTcpdump(receiver.ns, receiver.iface, podPcap, { filter: ['igmp', 'or', 'udp'] });
    const uplinkCapture = await lab.startTcpdump(tl.underlayNs, n2.uplinkPeer, uplinkPcap, { filter: ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort)] });
    const send = lab.spawn(sender.ns, ['python3', '-u', '-c', SENDER_PY, GROUP, String(UDP_PORT), String(SEND_INTERVAL_MS)]);
    await waitForLine(send, 'ready', 10_000, 'sender');
    const loopStarted = performance.now();
    const cycler = lab.spawn(receiver.ns, ['python3', '-u', '-c', CYCLER_PY, GROUP, String(joins), String(JOINED_MS), String(LEFT_MS)]);
    await waitForLine(cycler, 'done', joins * (JOINED_MS + LEFT_MS) * 2 + 10_000, 'join/leave cycler');
    const loopSeconds = (performance.now() - loopStarted) / 1000;
    await stopChild(send);
    await sleep(200);
    await Promise.all([podCapture.stop(), uplinkCapture.stop()]);
    const samples = joinSamples(await podEvents(podPcap, GROUP));
    const timed = samples.joins.filter((sample) => sample.data !== undefined);
    const leave = leaveSamples(
      samples.leaves,
      samples.joins.map((sample) => sample.wire),
      await geneveTimes(uplinkPcap, GROUP),
    );

    // --- 3: a dead peer ---------------------------------------------------------------
    let deadPeerDropMs: number | undefined;
    let deadPeerProblem: string | undefined;
    const member3 = await n3.pods[0]!.listen(GROUP, UDP_PORT);
    try {
      await waitUntil('node 1 to send toward node 3', async () => (await tunnelDestinations(n1.node, GROUP)).includes(n3.underlayAddress), 10_000, 20);
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
      joins: samples.joins.length,
      joinsWithoutData: samples.joins.length - timed.length,
      join: distribution(timed.map((sample) => (sample.data! - sample.wire) * 1000)),
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
const spread = (d: Distribution) => `p50 ${ms(d.p50)}, p90 ${ms(d.p90)}, p99 ${ms(d.p99)}, max ${ms(d.max)} (n=${d.count})`;

export function tunnelReport(figures: TunnelFigures): string[] {
  return [
    `  cross-node join (report on node 2's pod wire → first datagram there from node 1; target p50 10 ms): ${spread(figures.join)}`,
    `    ${figures.joins} joins in ${figures.loopSeconds.toFixed(1)} s, ${figures.joinsWithoutData} without data before the leave`,
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
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(tunnelReport(await benchTunnel(tunnelOptionsFromEnv())).join('\n'));
}
