/**
 * What the daemon bench needs to measure a join on a node that is not empty: pods that hold
 * many groups (real kernel joins, 200 groups a pod), a pod that sends to some of them all
 * the time (so the datapath holds their flows, as a busy node's does), and the breakdown of
 * a join or a leave into its legs from the daemon's events, timed on its monotonic clock and
 * lined up with the capture's wall clock.
 */
import type { ChildProcess } from 'node:child_process';
import type { Lab } from '../test/lab/lab.js';
import { sleep } from '../test/lab/lab.js';
import type { OvsNode, OvsPod } from '../test/lab/ovs.js';
import { type Distribution, distribution } from './pod-processes.js';
import { stopChild, waitForLine } from '../test/lab/group-holders.js';

/** Groups a holder pod joins (well inside the daemon's default per-port limit of 1,024). */
export const GROUPS_PER_HOLDER = 200;
/** Installed groups that carry traffic during the measure. */
export const ACTIVE_GROUPS = 200;
/** Datagrams a second to each active group (2,000 a second in all). */
const ACTIVE_RATE_PER_GROUP = 10;
/** The installed groups: 239.80.0.0 and up (the join loop's group is 239.77.0.1). */
const INSTALLED_BASE = 0xef500000;
const UDP_PORT = 5001;

export function installedGroup(index: number): string {
  const n = INSTALLED_BASE + index + 1;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/**
 * One process for the holder pods: in the namespace of each (setns), sockets that join its
 * share of the groups, 20 a socket (net.ipv4.igmp_max_memberships). argv: the count a pod,
 * the first group's index, then the groups (all of them, by commas) and the namespaces.
 * Prints "ready" once every join is made; holds them until stdin closes.
 */
const FILL_PY = `
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
per_pod, first = int(sys.argv[1]), int(sys.argv[2])
groups = sys.argv[3].split(",")
sockets = []
for k, ns in enumerate(sys.argv[4:]):
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "setns " + ns)
    os.close(fd)
    mine = groups[first + k * per_pod:first + (k + 1) * per_pod]
    for start in range(0, len(mine), 20):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for g in mine[start:start + 20]:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(g) + socket.inet_aton("0.0.0.0"))
        sockets.append(s)
print("ready", flush=True)
sys.stdin.read()
`;

/** Sends UDP to every group of argv[1] (by commas) in turn, argv[3] datagrams a second to each, until killed. */
const TRAFFIC_PY = `
import socket, sys, time
groups, port, rate = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
print("ready", flush=True)
interval = 1.0 / (rate * len(groups))
nxt = time.perf_counter()
while True:
    for g in groups:
        s.sendto(b"y" * 18, (g, port))
        nxt += interval
        delay = nxt - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.05:
            nxt = time.perf_counter()
`;

/** The groups installed on a lab node by real kernel joins, and the traffic to some of them. */
export class InstalledGroups {
  private readonly holders: OvsPod[] = [];
  private readonly processes: ChildProcess[] = [];
  private traffic: ChildProcess | undefined;
  private trafficPod: OvsPod | undefined;
  private joined = 0;

  constructor(
    private readonly lab: Lab,
    private readonly node: OvsNode,
  ) {}

  /** Groups joined now. */
  get size(): number {
    return this.joined;
  }

  /** Joins groups in more holder pods until `size` are held (a multiple of GROUPS_PER_HOLDER). */
  async fillTo(size: number): Promise<void> {
    const pods = Math.ceil(size / GROUPS_PER_HOLDER);
    while (this.holders.length < pods) {
      const k = this.holders.length;
      this.holders.push(await this.node.addPod(`h${k + 1}`, { address: `10.9.0.${101 + k}/24` }));
    }
    const first = this.joined / GROUPS_PER_HOLDER;
    if (pods <= first) return;
    const all = Array.from({ length: pods * GROUPS_PER_HOLDER }, (_, i) => installedGroup(i));
    const holder = this.lab.spawn(this.node.ns, [
      'python3',
      '-u',
      '-c',
      FILL_PY,
      String(GROUPS_PER_HOLDER),
      String(this.joined),
      all.join(','),
      ...this.holders.slice(first, pods).map((pod) => pod.ns),
    ]);
    this.processes.push(holder);
    await waitForLine(holder, 'ready', 60_000, 'group holder');
    this.joined = pods * GROUPS_PER_HOLDER;
  }

  /** Starts the traffic to the first ACTIVE_GROUPS installed groups (none while fewer are installed). */
  async startTraffic(): Promise<void> {
    if (this.traffic !== undefined || this.joined < ACTIVE_GROUPS) return;
    this.trafficPod ??= await this.node.addPod('traffic', { address: '10.9.0.200/24' });
    const groups = Array.from({ length: ACTIVE_GROUPS }, (_, i) => installedGroup(i));
    this.traffic = this.lab.spawn(this.trafficPod.ns, [
      'python3',
      '-u',
      '-c',
      TRAFFIC_PY,
      groups.join(','),
      String(UDP_PORT),
      String(ACTIVE_RATE_PER_GROUP),
    ]);
    await waitForLine(this.traffic, 'ready', 10_000, 'traffic sender');
    // Let the datapath learn the active groups' flows before the measure.
    await sleep(1000);
  }

  async stopTraffic(): Promise<void> {
    if (this.traffic !== undefined) await stopChild(this.traffic);
    this.traffic = undefined;
  }

  /** Leaves every group (the holders' sockets close) and stops the traffic; the pods stay. */
  async clear(): Promise<void> {
    await this.stopTraffic();
    await Promise.all(this.processes.splice(0).map((child) => stopChild(child)));
    this.joined = 0;
  }
}

/** Polls `count()` until it reaches `wanted`; returns how long that took, ms (throws after `timeoutMs`). */
export async function waitForCount(
  what: string,
  count: () => Promise<number>,
  wanted: number,
  timeoutMs = 60_000,
): Promise<number> {
  const started = performance.now();
  let seen = 0;
  while (performance.now() - started < timeoutMs) {
    seen = await count();
    if (seen >= wanted) return performance.now() - started;
    await sleep(200);
  }
  throw new Error(`${what}: ${seen} of ${wanted} within ${timeoutMs / 1000} s`);
}

// --- where a join's time goes ----------------------------------------------------------

/** A packet-in of the receiver's membership message, as the daemon's event stream told it. */
export interface PacketInEvent {
  /** Wall clock, ms (the event's `time`: the millisecond). */
  wallMs: number;
  /** The daemon's monotonic clock, ms with a fraction. */
  clockMs: number;
}

/** A sync of the loop's group. */
export interface SyncEvent extends PacketInEvent {
  latencyMs: number;
  sentMs: number | undefined;
  /** Whether the receiver was a member after it. */
  member: boolean;
}

/** The legs of a join or a leave, each a distribution over the loop's samples, ms. */
export interface Legs {
  /** Report (or leave) on the receiver's wire → the daemon read the packet-in. */
  wireToPacketIn: Distribution;
  /** Packet-in → the sync's OpenFlow written to the switch (the daemon's own share). */
  packetInToSent: Distribution;
  /** Written → the switch acknowledged (its barrier reply). */
  sentToAcknowledged: Distribution;
  /** Acknowledged → the first datagram at the pod (a join), the last (a leave; negative: already on its way). */
  acknowledgedToData: Distribution;
}

/**
 * The offset from the daemon's monotonic clock to the wall clock. Each event was stamped
 * with both at once, the wall clock to the millisecond: the offset lies in [time - clock,
 * time + 1 - clock] for every event, and where most of those windows meet (a late read of
 * the wall clock, a pause between the two reads, puts an event's window off) pins it within
 * tens of microseconds. `consistent`: the share of the events whose window holds it.
 */
export function clockOffset(
  events: readonly PacketInEvent[],
): { offsetMs: number; uncertaintyMs: number; consistent: number } | undefined {
  if (events.length === 0) return undefined;
  // A sweep over the windows' edges: +1 where one opens, -1 where one closes.
  const edges = events.flatMap((event) => [
    { at: event.wallMs - event.clockMs, step: 1 },
    { at: event.wallMs + 1 - event.clockMs, step: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || b.step - a.step);
  let open = 0;
  let best = { count: 0, from: 0, to: 0 };
  for (const [k, edge] of edges.entries()) {
    open += edge.step;
    if (edge.step === 1 && open > best.count) best = { count: open, from: edge.at, to: edges[k + 1]!.at };
  }
  return {
    offsetMs: (best.from + best.to) / 2,
    uncertaintyMs: (best.to - best.from) / 2,
    consistent: best.count / events.length,
  };
}

/** One join or leave: its time on the wire and the datagram that timed it (epoch seconds, the capture's clock). */
export interface TimedSample {
  wire: number;
  data: number | undefined;
}

/**
 * The legs of each sample that the daemon's events can be matched to: the first packet-in
 * after the sample's wire time, then the first sync (of the right kind) that started after
 * that packet-in.
 */
export function legsOf(
  samples: readonly TimedSample[],
  member: boolean,
  packetIns: readonly PacketInEvent[],
  syncs: readonly SyncEvent[],
  offsetMs: number,
): Legs {
  const legs = { wireToPacketIn: [], packetInToSent: [], sentToAcknowledged: [], acknowledgedToData: [] } as Record<
    keyof Legs,
    number[]
  >;
  const mine = syncs.filter((sync) => sync.member === member && sync.sentMs !== undefined);
  for (const sample of samples) {
    const wireMs = sample.wire * 1000;
    const packetIn = packetIns.find((event) => event.clockMs + offsetMs >= wireMs - 0.05);
    if (packetIn === undefined || packetIn.clockMs + offsetMs - wireMs > 100) continue;
    const sync = mine.find((event) => event.clockMs - event.latencyMs >= packetIn.clockMs - 0.001);
    if (sync === undefined || sync.clockMs - packetIn.clockMs > 100) continue;
    const sentAt = sync.clockMs - sync.latencyMs + sync.sentMs!;
    legs.wireToPacketIn.push(packetIn.clockMs + offsetMs - wireMs);
    legs.packetInToSent.push(sentAt - packetIn.clockMs);
    legs.sentToAcknowledged.push(sync.clockMs - sentAt);
    if (sample.data !== undefined) legs.acknowledgedToData.push(sample.data * 1000 - (sync.clockMs + offsetMs));
  }
  return {
    wireToPacketIn: distribution(legs.wireToPacketIn),
    packetInToSent: distribution(legs.packetInToSent),
    sentToAcknowledged: distribution(legs.sentToAcknowledged),
    acknowledgedToData: distribution(legs.acknowledgedToData),
  };
}
