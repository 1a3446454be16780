/**
 * `mcastctl daemon` on a lab node's real OVS:
 *
 * 1. join latency: from a pod's IGMP or MLD report on the wire to the first data packet that
 *    reaches the pod, over many joins (a sender pod sends to the group all the time), on a
 *    node holding 0, 1,000 and 5,000 installed groups (kernel joins in holder pods, 200 a
 *    pod), 200 of them carrying traffic during the measure; each join split into its legs
 *    (report on the wire → packet-in → OpenFlow written → acknowledged → first datagram);
 * 2. leave latency (fast leave): from the leave on the wire to the last data packet that
 *    still reaches the old member. Both from ONE capture on the receiver pod's eth0, so
 *    both timestamps come from the same clock; the host's own ~10 ms between its socket
 *    call and its report is not counted (docs/architecture.md, "The test lab");
 * 3. convergence of 100 pods × 50 groups after the daemon's first general query, until
 *    every group's OVS group has every pod (from the daemon's sync events);
 * 4. the daemon's RSS and idle CPU with those 5,000 memberships.
 * Steps 1 and 2 run twice on the same dual-stack pods: with an IPv4 group (IGMPv3 hosts)
 * and with an IPv6 group (MLDv2 hosts, IPv6 UDP); the installed groups are IPv4 for both.
 * And the same join/leave loops, at the same table sizes, against OVS's own IGMP and MLD
 * snooping (its table holding the same groups, learned from the same holders), with each
 * daemon figure's ratio to OVS's (BENCH_DAEMON_OVS=0 leaves it out).
 *
 *   node --import tsx bench/daemon.ts [joins]        (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_DAEMON_JOINS (default 200), BENCH_DAEMON_TABLES (installed groups, by
 * commas, multiples of 200; default 0,1000,5000), BENCH_DAEMON_PODS (100),
 * BENCH_DAEMON_GROUPS (50), BENCH_DAEMON_IDLE_S (10), BENCH_DAEMON_OVS (1), BENCH_DAEMON_CPU_PROFILE (a
 * directory: the join/leave daemon's CPU profile is written there when it stops); `--json` also prints the figures as
 * JSON. BENCH_DAEMON_PODS=0 leaves out convergence, memory and idle CPU.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { ControlClient } from '../src/transport/control/control-client.js';
import type { DaemonEvent } from '../src/transport/control/daemon-view.js';
import { startDaemon, type RunningDaemon } from '../test/lab/daemon.js';
import { Lab, sleep } from '../test/lab/lab.js';
import { OvsNode, type OvsPod } from '../test/lab/ovs.js';
import {
  ACTIVE_GROUPS,
  clockOffset,
  GROUPS_PER_HOLDER,
  InstalledGroups,
  type Legs,
  legsOf,
  type PacketInEvent,
  type SyncEvent,
  waitForCount,
} from './daemon-scale.js';
import { CYCLER6_PY, SENDER6_PY, wireEvents6 } from './mld-processes.js';
import {
  CYCLER_PY,
  type Distribution,
  distribution,
  firstQueryMs,
  SENDER_PY,
  type WireEvent,
  wireEvents,
} from './pod-processes.js';
import { HOLDER_PY, stopChild, waitForLine } from '../test/lab/group-holders.js';

const UDP_PORT = 5000;
/** Time between two data packets of the sender: the resolution of both latencies. */
const SEND_INTERVAL_MS = 0.25;
/** How long the receiver stays joined, and then away, in each cycle. */
const JOINED_MS = 60;
const LEFT_MS = 80;
const CLK_TCK = 100;
/** Convergence takes about the query's Max Resp Time (1 s): give up long after. */
const CONVERGENCE_TIMEOUT_MS = 15_000;

/** What the join/leave loop does differently for each address family. */
interface LoopFamily {
  /** How the output names it: `IGMP (IPv4)`, `MLD (IPv6)`. */
  label: string;
  /** The group the sender sends to and the receiver cycles (canonical text: the daemon's events name it so). */
  group: string;
  /** tcpdump's filter on the receiver: the membership messages and the datagrams. */
  captureFilter: string[];
  senderArgv(pod: OvsPod): string[];
  cyclerArgv(pod: OvsPod, joins: number): string[];
  wireEvents(file: string, group: string): Promise<WireEvent[]>;
}

const IPV4_GROUP = '239.77.0.1';
/** Not link scope (ff02::/16 is flooded, never snooped): scope 5, site-local. */
const IPV6_GROUP = 'ff15::77:1';

const IGMP_LOOP: LoopFamily = {
  label: 'IGMP (IPv4)',
  group: IPV4_GROUP,
  captureFilter: ['igmp', 'or', 'udp'],
  senderArgv: () => ['python3', '-u', '-c', SENDER_PY, IPV4_GROUP, String(UDP_PORT), String(SEND_INTERVAL_MS)],
  cyclerArgv: (_pod, joins) => [
    'python3',
    '-u',
    '-c',
    CYCLER_PY,
    IPV4_GROUP,
    String(joins),
    String(JOINED_MS),
    String(LEFT_MS),
  ],
  wireEvents: (file, group) => wireEvents(file, group),
};

const MLD_LOOP: LoopFamily = {
  label: 'MLD (IPv6)',
  group: IPV6_GROUP,
  // MLD sits behind a hop-by-hop header, which tcpdump's `icmp6` does not look past.
  captureFilter: ['ip6'],
  senderArgv: (pod) => [
    'python3',
    '-u',
    '-c',
    SENDER6_PY,
    IPV6_GROUP,
    String(UDP_PORT),
    String(SEND_INTERVAL_MS),
    pod.iface,
  ],
  cyclerArgv: (pod, joins) => [
    'python3',
    '-u',
    '-c',
    CYCLER6_PY,
    IPV6_GROUP,
    String(joins),
    String(JOINED_MS),
    String(LEFT_MS),
    pod.iface,
  ],
  wireEvents: wireEvents6,
};

export interface JoinLeaveFigures {
  group: string;
  /** Joins seen on the wire (IGMPv3 or MLDv2 report with a change to exclude mode for the group). */
  joins: number;
  /** Joins after which no data arrived before the next leave. */
  joinsWithoutData: number;
  /** ms from the report on the wire to the first data packet. */
  join: Distribution;
  /** ms from the leave on the wire to the last data packet (0 when none came after it). */
  leave: Distribution;
  /** Leaves after which no data at all arrived. */
  leavesClean: number;
  /** Data packets seen at the receiver while it was not a member, outside the leave window (should be 0). */
  strayPackets: number;
  /** Data packets the sender sent per second. */
  sendRate: number;
  /** Where the time goes (the daemon only). */
  legs: LoopLegs | undefined;
}

/** The legs of the loop's joins and leaves, from the daemon's events. */
export interface LoopLegs {
  join: Legs;
  leave: Legs;
  /** How well the daemon's monotonic clock was lined up with the capture's (± ms); NaN: not at all. */
  clockUncertaintyMs: number;
  /** The share of the daemon's events consistent with that line-up. */
  clockConsistent: number;
}

export interface ConvergenceFigures {
  pods: number;
  groups: number;
  queryResponseIntervalMs: number;
  /** Setup of the pods (namespaces, veths, OVS ports) and their joins, s. */
  setupSeconds: number;
  /** From the first general query on the wire (on one pod's eth0) to every group complete in OVS, ms. */
  convergenceMs: number | undefined;
  /** From the first general query on the wire to the last report the daemon got, ms (the hosts' share). */
  lastReportMs: number | undefined;
  /** Why there is no convergence figure. */
  problem: string | undefined;
  /** Reports (packet-ins of IGMP) the daemon got during convergence. */
  reports: number;
  /** OVS group syncs it made, and their latency (first change to OVS acknowledging), ms. */
  syncs: number;
  syncLatency: Distribution;
  /** Groups in OVS with every pod as a bucket, read back with ovs-ofctl at the end. */
  completeOvsGroups: number;
  /** The daemon's own count. */
  daemonMembers: number;
  rssStartMiB: number;
  rssMiB: number;
  idleCpuPercent: number;
  /** Context switches per second of all its threads while idle. */
  idleWakeupsPerSecond: number;
  /** V8 heap in use (metrics endpoint, nodejs_heap_size_used_bytes), MiB. */
  heapUsedMiB: number;
  idleSeconds: number;
  /** Sync latency histogram from the metrics endpoint (le → count), if read. */
  metricsHistogram: string[];
}

/** The loops of one table size. */
export interface TableSizeFigures {
  /** Groups installed on the node (each with one member pod) during the loops. */
  installedGroups: number;
  /** Of them, carrying traffic during the loops. */
  activeGroups: number;
  /** IGMP (IPv4). */
  igmp: JoinLeaveFigures;
  /** MLD (IPv6): the same loop on the same pods with an IPv6 group. */
  mld: JoinLeaveFigures;
}

export interface DaemonFigures {
  daemon: TableSizeFigures[];
  /** The same loops and table sizes with OVS's own snooping. */
  ovsSnooping: TableSizeFigures[] | undefined;
  /** Absent when no pods were asked for (BENCH_DAEMON_PODS=0). */
  convergence: ConvergenceFigures | undefined;
  totalSeconds: number;
}

export interface DaemonBenchOptions {
  joins?: number;
  /** Installed groups of each measure (multiples of 200; default 0, 1,000, 5,000). */
  tableSizes?: readonly number[];
  pods?: number;
  groups?: number;
  idleSeconds?: number;
  /** Also measure OVS's own snooping (default true). */
  ovsSnooping?: boolean;
  /** Where the join/leave daemon's CPU profile goes (node --cpu-prof, 100 µs samples); none: not profiled. */
  cpuProfileDir?: string;
}

// ---------------------------------------------------------------------------------------

// --- capture analysis ------------------------------------------------------------------

/** One join or leave on the wire, with the data packet that timed it (first after a join, last after a leave). */
interface WireSample {
  wire: number;
  data: number | undefined;
}

/**
 * Joins and leaves from the wire: the first join-report after a leave (retransmissions
 * of a state-change report repeat it: only the first counts), the first leave after a join.
 * Join latency = first data after the join; leave latency = last data after the leave
 * (before the next join), 0 when there was none.
 */
function wireSamples(events: readonly WireEvent[]): { joins: WireSample[]; leaves: WireSample[]; stray: number } {
  const joins: WireSample[] = [];
  const leaves: WireSample[] = [];
  let stray = 0;
  let current: WireSample | undefined;
  let state: 'out' | 'in' = 'out';
  for (const event of events) {
    if (event.kind === 'join') {
      if (state === 'in') continue;
      state = 'in';
      joins.push((current = { wire: event.ts, data: undefined }));
    } else if (event.kind === 'leave') {
      if (state === 'out') continue;
      state = 'out';
      leaves.push((current = { wire: event.ts, data: undefined }));
    } else if (current === undefined) stray++;
    else if (state === 'in') current.data ??= event.ts;
    else if (event.ts - current.wire < 0.05) current.data = event.ts;
    else stray++;
  }
  return { joins, leaves, stray };
}

interface LoopOutcome {
  group: string;
  samples: ReturnType<typeof wireSamples>;
  durationS: number;
  dataSent: number;
  legs: LoopLegs | undefined;
}

function joinLeaveFigures({ group, samples, durationS, dataSent, legs }: LoopOutcome): JoinLeaveFigures {
  const timed = samples.joins.filter((sample) => sample.data !== undefined);
  return {
    group,
    joins: samples.joins.length,
    joinsWithoutData: samples.joins.length - timed.length,
    join: distribution(timed.map((sample) => (sample.data! - sample.wire) * 1000)),
    leave: distribution(
      samples.leaves.map((sample) => (sample.data === undefined ? 0 : (sample.data - sample.wire) * 1000)),
    ),
    leavesClean: samples.leaves.filter((sample) => sample.data === undefined).length,
    strayPackets: samples.stray,
    sendRate: dataSent / durationS,
    legs,
  };
}

/** What the daemon reported while the loop ran (its event stream). */
interface DaemonTrace {
  /** IGMP or MLD packet-ins from the receiver's port. */
  packetIns: PacketInEvent[];
  /** Syncs of the loop's group. */
  syncs: SyncEvent[];
}

function loopLegs(samples: ReturnType<typeof wireSamples>, trace: DaemonTrace): LoopLegs {
  const offset = clockOffset([...trace.packetIns, ...trace.syncs]);
  const offsetMs = offset?.offsetMs ?? NaN;
  return {
    join: legsOf(samples.joins, true, trace.packetIns, trace.syncs, offsetMs),
    leave: legsOf(samples.leaves, false, trace.packetIns, trace.syncs, offsetMs),
    clockUncertaintyMs: offset?.uncertaintyMs ?? NaN,
    clockConsistent: offset?.consistent ?? 0,
  };
}

interface JoinLeaveLoopOptions {
  family: LoopFamily;
  sender: OvsPod;
  receiver: OvsPod;
  joins: number;
  /** Names the capture file. */
  tag: string;
  /** The daemon's, to follow its events meanwhile and tell where the time goes. */
  controlSocket?: string;
}

/** Runs the join/leave cycle in `receiver` while `sender` sends, capturing on the receiver's eth0. */
async function joinLeaveLoop(lab: Lab, options: JoinLeaveLoopOptions): Promise<JoinLeaveFigures> {
  const { family, sender, receiver, joins, controlSocket } = options;
  const pcap = lab.file(`join-leave-${options.tag}.pcap`);
  const capture = await lab.startTcpdump(receiver.ns, receiver.iface, pcap, { filter: family.captureFilter });
  const trace: DaemonTrace = { packetIns: [], syncs: [] };
  const client = controlSocket === undefined ? undefined : await ControlClient.connect(controlSocket);
  void client
    ?.events((event) => {
      // MLD's packet-ins are published as `igmp` events too.
      if (event.type === 'igmp' && event.port?.ofport === receiver.ofport)
        trace.packetIns.push({ wallMs: Date.parse(event.time), clockMs: event.clockMs });
      else if (event.type === 'sync' && event.group === family.group && event.ok)
        trace.syncs.push({
          ...{ wallMs: Date.parse(event.time), clockMs: event.clockMs },
          ...{ latencyMs: event.latencyMs, sentMs: event.sentMs, member: event.ports.includes(receiver.ofport) },
        });
    })
    .catch(() => undefined);
  const send = lab.spawn(sender.ns, family.senderArgv(sender));
  await waitForLine(send, 'ready', 10_000, 'sender');
  const senderStats = await lab.exec(sender.ns, ['cat', `/sys/class/net/${sender.iface}/statistics/tx_packets`]);
  const started = performance.now();
  const cycler = lab.spawn(receiver.ns, family.cyclerArgv(receiver, joins));
  await waitForLine(cycler, 'done', joins * (JOINED_MS + LEFT_MS) * 2 + 10_000, 'join/leave cycler');
  const durationS = (performance.now() - started) / 1000;
  const senderAfter = await lab.exec(sender.ns, ['cat', `/sys/class/net/${sender.iface}/statistics/tx_packets`]);
  await stopChild(send);
  await sleep(100);
  await capture.stop();
  client?.close();
  const samples = wireSamples(await family.wireEvents(pcap, family.group));
  return joinLeaveFigures({
    group: family.group,
    samples,
    durationS,
    dataSent: Number(senderAfter.stdout) - Number(senderStats.stdout),
    legs: client === undefined ? undefined : loopLegs(samples, trace),
  });
}

/**
 * Why a loop's figures do not measure snooping: no data reached the member at all, or
 * the group reached the pod while it was no member (flooded, or left in place).
 */
function snoopingProblem(figures: JoinLeaveFigures): string | undefined {
  if (figures.joins === 0) return `no join of ${figures.group} seen on the receiver's wire`;
  if (figures.joinsWithoutData === figures.joins)
    return `no datagram to ${figures.group} reached the member after any of its ${figures.joins} joins: not delivered`;
  const expectedWhileAway = (figures.sendRate * LEFT_MS * figures.leave.count) / 1000;
  if (figures.strayPackets > 0.5 * expectedWhileAway)
    return `${figures.strayPackets} datagrams to ${figures.group} reached the pod while it was no member (about ${Math.round(expectedWhileAway)} were sent meanwhile): flooded or kept after the leave, not snooped`;
  return undefined;
}

async function waitListening(daemon: RunningDaemon): Promise<void> {
  await daemon.ready();
}

// --- /proc ------------------------------------------------------------------------------

function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** Context switches of all the process's threads so far: how often it woke up. */
function wakeups(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
      total +=
        Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0) +
        Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return total;
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
}

// --- the benchmark ----------------------------------------------------------------------

export async function benchDaemon(options: DaemonBenchOptions = {}): Promise<DaemonFigures> {
  const joins = options.joins ?? 200;
  const tableSizes = options.tableSizes ?? [0, 1000, 5000];
  const badSize = tableSizes.find((size) => !(Number.isInteger(size) && size >= 0 && size % GROUPS_PER_HOLDER === 0));
  if (badSize !== undefined || tableSizes.length === 0)
    throw new RangeError(`installed groups must be multiples of ${GROUPS_PER_HOLDER}: ${tableSizes.join(',')}`);
  const podCount = options.pods ?? 100;
  const groupCount = options.groups ?? 50;
  const idleSeconds = options.idleSeconds ?? 10;
  const benchStarted = performance.now();
  const lab = Lab.create();
  try {
    // --- 1, 2: join and leave latency --------------------------------------------------
    const node = await OvsNode.start(lab, 'j');
    await node.addGateway({ address: '10.9.0.1/24', address6: 'fd00:9::1/64' });
    // Dual-stack, so that both families' loops run on the same pods and ports; each waits for its own DAD.
    const [sender, receiver] = await Promise.all([
      node.addPod('snd', { address: '10.9.0.11/24', address6: 'fd00:9::11/64' }),
      node.addPod('rcv', { address: '10.9.0.12/24', address6: 'fd00:9::12/64' }),
    ]);
    const loop = (family: LoopFamily, tag: string, controlSocket?: string) =>
      joinLeaveLoop(lab, {
        family,
        sender: sender!,
        receiver: receiver!,
        joins,
        tag,
        ...(controlSocket === undefined ? {} : { controlSocket }),
      });
    const installed = new InstalledGroups(lab, node);
    /** The loops at each table size; `learned` resolves once the installed groups are in the switch's table. */
    const atEachSize = async (tag: string, learned: (size: number) => Promise<unknown>, controlSocket?: string) => {
      const rows: TableSizeFigures[] = [];
      for (const size of tableSizes) {
        await installed.fillTo(size);
        await learned(size);
        await installed.startTraffic();
        const igmp = await loop(IGMP_LOOP, `${tag}-${size}`, controlSocket);
        const mld = await loop(MLD_LOOP, `${tag}6-${size}`, controlSocket);
        await installed.stopTraffic();
        rows.push({ installedGroups: size, activeGroups: Math.min(size, ACTIVE_GROUPS), igmp, mld });
      }
      await installed.clear();
      return rows;
    };

    // A gateway and no multicast interfaces: OVS programming only, no kernel routing.
    // Groups without members go to the gateway (whose kernel drops them), not to every pod.
    const daemon = startDaemon(node, {
      multicastInterfaces: [],
      args: ['--fast-leave', '--query-interval', '600s'],
      ...(options.cpuProfileDir === undefined
        ? {}
        : {
            wrapper: ['sh', '-c', 'exec "$0" --cpu-prof --cpu-prof-interval 100 --cpu-prof-dir="$PROFILE_DIR" "$@"'],
            env: { PROFILE_DIR: options.cpuProfileDir },
          }),
    });
    await waitListening(daemon);
    const daemonMembers = async () => {
      const client = await ControlClient.connect(daemon.controlSocket);
      try {
        return (await client.request<{ members: number }>('status')).members;
      } finally {
        client.close();
      }
    };
    const daemonRows = await atEachSize(
      'daemon',
      (size) => waitForCount('the daemon learning the installed groups', daemonMembers, size),
      daemon.controlSocket,
    );
    await daemon.stop();

    let ovsRows: TableSizeFigures[] | undefined;
    if (options.ovsSnooping ?? true) {
      // The same pods, OVS's own snooping instead: our flows out, NORMAL with snooping on
      // (OVS's mcast_snooping handles MLD as well as IGMP), its table large enough for the
      // installed groups (2,048 by default).
      await node.ofctl('del-flows', node.bridge);
      await node.ofctl('del-groups', node.bridge);
      await node.ofctl('add-flow', node.bridge, 'priority=0,actions=NORMAL');
      await node.vsctl(
        'set',
        'bridge',
        node.bridge,
        'mcast_snooping_enable=true',
        'other_config:mcast-snooping-disable-flood-unregistered=true',
        `other_config:mcast-snooping-table-size=${Math.max(2048, 2 * Math.max(...tableSizes))}`,
      );
      await sleep(500);
      const snooped = async () =>
        (await node.appctl('mdb/show', node.bridge)).split('\n').filter((line) => line.includes('239.80.')).length;
      ovsRows = await atEachSize('ovs', (size) =>
        waitForCount("OVS's snooping learning the installed groups", snooped, size),
      );
    }

    // --- 3, 4: convergence, memory, idle CPU -------------------------------------------
    const convergence =
      podCount === 0 ? undefined : await measureConvergence(lab, { podCount, groupCount, idleSeconds });
    return {
      daemon: daemonRows,
      ovsSnooping: ovsRows,
      convergence,
      totalSeconds: (performance.now() - benchStarted) / 1000,
    };
  } finally {
    await lab.destroy();
  }
}

/** Steps 3 and 4: convergence after a general query, then the daemon's memory and idle CPU. */
async function measureConvergence(
  lab: Lab,
  { podCount, groupCount, idleSeconds }: { podCount: number; groupCount: number; idleSeconds: number },
): Promise<ConvergenceFigures> {
  const setupStarted = performance.now();
  const big = await OvsNode.start(lab, 'c');
  await big.addGateway({ address: '10.8.0.1/16' });
  const pods: OvsPod[] = [];
  const BATCH = 20;
  for (let first = 0; first < podCount; first += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, podCount - first) }, (_, k) => first + k);
    pods.push(
      ...(await Promise.all(
        batch.map((i) =>
          big.addPod(`p${i + 1}`, { address: `10.8.${Math.floor((i + 11) / 250)}.${((i + 11) % 250) + 1}/16` }),
        ),
      )),
    );
  }
  const groups = Array.from({ length: groupCount }, (_, i) => `239.78.${Math.floor(i / 200)}.${(i % 200) + 1}`);
  const holder = lab.spawn(big.ns, [
    'python3',
    '-u',
    '-c',
    HOLDER_PY,
    groups.join(','),
    '-',
    ...pods.map((pod) => pod.ns),
  ]);
  await waitForLine(holder, 'ready', 60_000, 'group holder');
  // Let the hosts' unsolicited reports (and their retransmissions, within 1 s) pass: only the query's answers count.
  await sleep(1500);
  const setupSeconds = (performance.now() - setupStarted) / 1000;

  const queryPcap = lab.file('convergence-query.pcap');
  const queryCapture = await lab.startTcpdump(pods[0]!.ns, pods[0]!.iface, queryPcap, { filter: ['igmp'] });
  const podPorts = new Set(pods.map((pod) => pod.ofport));
  const complete = new Map<string, number>();
  const syncLatencies: number[] = [];
  let lastReportAt = 0;
  let reports = 0;
  let convergedAt: number | undefined;
  let onConverged: () => void = () => undefined;
  const converged = new Promise<void>((resolve) => (onConverged = resolve));
  const seen: Record<string, number> = {};
  const onEvent = (event: DaemonEvent) => {
    seen[event.type] = (seen[event.type] ?? 0) + 1;
    if (event.type === 'igmp') {
      if (event.port !== null && event.record['type'] !== 'query') {
        reports++;
        lastReportAt = Math.max(lastReportAt, Date.parse(event.time));
      }
    } else if (event.type === 'sync' && event.ok) {
      syncLatencies.push(event.latencyMs);
      const full = [...podPorts].every((port) => event.ports.includes(port));
      if (full && !complete.has(event.group)) complete.set(event.group, Date.parse(event.time));
      else if (!full) complete.delete(event.group);
      if (complete.size === groupCount && convergedAt === undefined) {
        convergedAt = Math.max(...complete.values());
        onConverged();
      }
    }
  };

  const convergenceDaemon = startDaemon(big, {
    multicastInterfaces: [],
    args: ['--fast-leave', '--query-response-interval', '1s', '--query-interval', '600s'],
  });
  // Events: subscribed as soon as the control socket answers, before the loop starts and
  // sends its first query (a starting daemon takes subscribers).
  const client = await (async () => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        return await ControlClient.connect(convergenceDaemon.controlSocket, { timeoutMs: 2000 });
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(5);
      }
    }
  })();
  let subscriptionError: unknown;
  const streamEnded = client.events(onEvent).catch((error: unknown) => void (subscriptionError = error));
  await waitListening(convergenceDaemon);
  const rssStartMiB = rssMiB(convergenceDaemon.pid);
  let giveUp: NodeJS.Timeout | undefined;
  await Promise.race([
    converged,
    streamEnded,
    new Promise<void>((resolve) => (giveUp = setTimeout(resolve, CONVERGENCE_TIMEOUT_MS))),
  ]);
  clearTimeout(giveUp);
  await queryCapture.stop();
  const firstQuery = await firstQueryMs(queryPcap);
  // Not converged: say what was seen instead of a figure (the other figures still count).
  let problem: string | undefined;
  if (firstQuery === undefined) problem = 'no general query seen on the first pod';
  else if (convergedAt === undefined) {
    const status = await ControlClient.connect(convergenceDaemon.controlSocket)
      .then(async (c) => {
        try {
          return await c.request<{ members: number; counters: { packetIns: number } }>('status');
        } finally {
          c.close();
        }
      })
      .catch(() => undefined);
    const warnings = convergenceDaemon
      .entries()
      .filter((entry) => entry['level'] !== 'info' && entry['level'] !== 'debug')
      .map((entry) => entry.msg);
    problem =
      `not converged: ${complete.size} of ${groupCount} groups seen complete in ${CONVERGENCE_TIMEOUT_MS / 1000} s; events seen ${JSON.stringify(seen)}` +
      (subscriptionError === undefined ? '' : `; the event stream ended: ${String(subscriptionError)}`) +
      (status === undefined
        ? ''
        : `; the daemon has ${status.members} memberships from ${status.counters.packetIns} packet-ins`) +
      (warnings.length === 0 ? '' : `; daemon warnings: ${JSON.stringify(warnings)}`);
  }

  // Read OVS back: every group must have every pod port as a bucket.
  const dump = await big.ofctl('dump-groups', big.bridge);
  let completeOvsGroups = 0;
  for (const line of dump.split('\n')) {
    if (!line.includes('group_id=')) continue;
    const outputs = new Set([...line.matchAll(/output:(\d+)/g)].map((m) => Number(m[1])));
    if ([...podPorts].every((port) => outputs.has(port))) completeOvsGroups++;
  }
  const statusClient = await ControlClient.connect(convergenceDaemon.controlSocket);
  const status = await statusClient.request<{ members: number }>('status');
  statusClient.close();

  // Idle: nothing changes; the state save (1 s after the last change) is done by then.
  await sleep(2000);
  const ticksBefore = cpuTicks(convergenceDaemon.pid);
  const wakeupsBefore = wakeups(convergenceDaemon.pid);
  const idleStarted = performance.now();
  await sleep(idleSeconds * 1000);
  const ticks = cpuTicks(convergenceDaemon.pid) - ticksBefore;
  const idleElapsedS = (performance.now() - idleStarted) / 1000;
  const idleWakeupsPerSecond = (wakeups(convergenceDaemon.pid) - wakeupsBefore) / idleElapsedS;
  const idleCpuPercent = (ticks / CLK_TCK / idleElapsedS) * 100;
  const rss = rssMiB(convergenceDaemon.pid);

  // The sync histogram as the metrics endpoint shows it.
  let metricsHistogram: string[] = [];
  let heapUsedMiB = NaN;
  const listening = await convergenceDaemon.ready(10_000);
  if (typeof listening['metrics'] === 'string') {
    const metrics = await lab
      .exec(big.ns, ['curl', '-s', '--max-time', '5', listening['metrics']])
      .catch(() => undefined);
    const text = metrics?.stdout ?? '';
    metricsHistogram = text.split('\n').filter((line) => line.startsWith('mcastctl_sync_duration_seconds'));
    heapUsedMiB = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? NaN) / 2 ** 20;
  }

  client.close();
  await convergenceDaemon.stop();
  await stopChild(holder);
  return {
    pods: podCount,
    groups: groupCount,
    queryResponseIntervalMs: 1000,
    setupSeconds,
    convergenceMs: convergedAt === undefined || firstQuery === undefined ? undefined : convergedAt - firstQuery,
    lastReportMs: firstQuery === undefined || lastReportAt === 0 ? undefined : lastReportAt - firstQuery,
    problem,
    reports,
    syncs: syncLatencies.length,
    syncLatency: distribution(syncLatencies),
    completeOvsGroups,
    daemonMembers: status.members,
    rssStartMiB,
    rssMiB: rss,
    idleCpuPercent,
    idleWakeupsPerSecond,
    heapUsedMiB,
    idleSeconds,
    metricsHistogram,
  };
}

// --- output -----------------------------------------------------------------------------

const ms = (value: number) => `${value.toFixed(2)} ms`;
const spread = (d: Distribution) =>
  `p50 ${ms(d.p50)}, p90 ${ms(d.p90)}, p95 ${ms(d.p95)}, p99 ${ms(d.p99)}, max ${ms(d.max)} (n=${d.count})`;

function joinLeaveLines(figures: JoinLeaveFigures): string[] {
  return [
    `join  (report on the wire → first data at the pod): ${spread(figures.join)}` +
      (figures.joinsWithoutData > 0
        ? `; ${figures.joinsWithoutData} of ${figures.joins} joins got no data within ${JOINED_MS} ms`
        : ''),
    `leave (leave on the wire → last data at the pod):   ${spread(figures.leave)}; ${figures.leavesClean} of ${figures.leave.count} leaves had no data after them`,
    `  sender ${Math.round(figures.sendRate).toLocaleString('en-US')} datagrams/s (resolution ~${(1000 / figures.sendRate).toFixed(2)} ms); ${figures.strayPackets} datagrams reached the pod while it was no member (outside 50 ms after a leave)`,
    ...(figures.legs === undefined ? [] : legLines(figures.legs)),
  ];
}

function legLines({ join, leave, clockUncertaintyMs, clockConsistent }: LoopLegs): string[] {
  return [
    `  where the time goes (the daemon's events; its monotonic clock lined up with the capture's within ±${clockUncertaintyMs.toFixed(3)} ms, by ${(clockConsistent * 100).toFixed(0)} % of them):`,
    `    join:  report on the wire → packet-in:         ${spread(join.wireToPacketIn)}`,
    `           packet-in → OpenFlow written:           ${spread(join.packetInToSent)}`,
    `           written → acknowledged by OVS:          ${spread(join.sentToAcknowledged)}`,
    `           acknowledged → first data at the pod:   ${spread(join.acknowledgedToData)}`,
    `    leave: leave on the wire → packet-in:          ${spread(leave.wireToPacketIn)}`,
    `           packet-in → OpenFlow written:           ${spread(leave.packetInToSent)}`,
    `           written → acknowledged by OVS:          ${spread(leave.sentToAcknowledged)}`,
    `           acknowledged → last data at the pod:    ${spread(leave.acknowledgedToData)}`,
  ];
}

/** The daemon's figures beside OVS's at each table size: the figures the targets name, and their ratios. */
function summaryLines(figures: DaemonFigures, family: 'igmp' | 'mld'): string[] {
  const cell = (value: number) => value.toFixed(2).padStart(6);
  const ratio = (mine: number, theirs: number | undefined) =>
    theirs === undefined || !(theirs > 0) ? '     -' : `${(mine / theirs).toFixed(2)}×`.padStart(6);
  const empty = figures.daemon[0]?.[family].join.p50;
  const lines = [
    `      installed  | daemon join p50   p99  leave p99 | OVS join p50   p99  leave p99 | join p50 ÷ OVS's  ÷ first size's`,
  ];
  for (const [k, row] of figures.daemon.entries()) {
    const mine = row[family];
    const theirs = figures.ovsSnooping?.[k]?.[family];
    lines.push(
      `      ${String(row.installedGroups).padStart(9)}  |      ${cell(mine.join.p50)} ${cell(mine.join.p99)}  ${cell(mine.leave.p99)}   |   ` +
        (theirs === undefined
          ? '     -      -       -   '
          : `${cell(theirs.join.p50)} ${cell(theirs.join.p99)}  ${cell(theirs.leave.p99)}   `) +
        `|           ${ratio(mine.join.p50, theirs?.join.p50)}  ${ratio(mine.join.p50, empty)}`,
    );
  }
  return lines;
}

/** `le="0.005",result="ok"} 12` lines → `≤5 ms 12, ≤10 ms 40, ...`. */
function histogramLine(lines: readonly string[]): string {
  const buckets: string[] = [];
  for (const line of lines) {
    const match = /_bucket\{(?=.*result="ok")(?=.*le="([^"]+)").*\} (\d+)/.exec(line);
    if (!match) continue;
    const le = match[1] === '+Inf' ? '+Inf' : `≤${Number(match[1]) * 1000} ms`;
    buckets.push(`${le} ${match[2]}`);
  }
  return buckets.join(', ');
}

export function daemonReport(figures: DaemonFigures): string[] {
  const c = figures.convergence;
  const block = (label: string, loop: JoinLeaveFigures) => [
    `    ${label}, group ${loop.group}:`,
    ...joinLeaveLines(loop).map((line) => `      ${line}`),
  ];
  const first = figures.daemon[0]!;
  const lines = [
    `  mcastctl daemon (fast leave) beside OVS's own snooping, one node, ${first.igmp.joins} joins and leaves a loop, timed from one capture on the receiver's eth0, at ${figures.daemon.map((row) => row.installedGroups.toLocaleString('en-US')).join(', ')} installed groups (${ACTIVE_GROUPS} of them carrying traffic)`,
    `  targets: on an empty node join p50 ≤ 1.0 ms, p99 ≤ 4 ms, leave p99 ≤ 5 ms; join p50 ≤ 1.5× the empty node's at 5,000 groups; ≤ 2.0× OVS's own at the same size`,
  ];
  for (const [family, label] of [
    ['igmp', IGMP_LOOP.label],
    ['mld', MLD_LOOP.label],
  ] as const) {
    lines.push(`    ${label}, group ${first[family].group}, ms:`, ...summaryLines(figures, family));
  }
  for (const row of figures.daemon) {
    lines.push(
      `  the daemon at ${row.installedGroups.toLocaleString('en-US')} installed groups:`,
      ...block(IGMP_LOOP.label, row.igmp),
      ...block(MLD_LOOP.label, row.mld),
    );
  }
  for (const row of figures.ovsSnooping ?? []) {
    lines.push(`  OVS's own snooping at ${row.installedGroups.toLocaleString('en-US')} installed groups:`);
    for (const [label, loop] of [
      [IGMP_LOOP.label, row.igmp],
      [MLD_LOOP.label, row.mld],
    ] as const) {
      lines.push(...block(label, loop));
      const problem = snoopingProblem(loop);
      if (problem !== undefined) lines.push(`      NO FIGURE for OVS's snooping: ${problem}`);
    }
  }
  if (c === undefined) lines.push('  convergence, memory and idle CPU: not measured (BENCH_DAEMON_PODS=0)');
  else
    lines.push(
      `  convergence of ${c.pods} pods × ${c.groups} groups after the first general query (Max Resp Time ${c.queryResponseIntervalMs / 1000} s: hosts answer within it)`,
      c.convergenceMs === undefined || c.lastReportMs === undefined
        ? `    NO FIGURE: ${c.problem ?? 'no reports'}`
        : `    all ${c.groups} OVS groups complete ${c.convergenceMs.toFixed(0)} ms after the query on the wire; last report reached the daemon at ${c.lastReportMs.toFixed(0)} ms; the daemon's share after it: ${(c.convergenceMs - c.lastReportMs).toFixed(0)} ms`,
      `    ${c.reports} reports, ${c.syncs} group syncs; sync latency ${spread(c.syncLatency)}`,
      ...(c.metricsHistogram.length === 0
        ? []
        : [
            `    metrics endpoint, mcastctl_sync_duration_seconds (ok, cumulative): ${histogramLine(c.metricsHistogram)}`,
          ]),
      `    read back: ${c.completeOvsGroups} of ${c.groups} OVS groups have all ${c.pods} pod buckets; the daemon counts ${c.daemonMembers} memberships (setup ${c.setupSeconds.toFixed(1)} s)`,
      `  daemon with ${c.daemonMembers.toLocaleString('en-US')} memberships: RSS ${c.rssMiB.toFixed(1)} MiB (${c.rssStartMiB.toFixed(1)} MiB at start; V8 heap in use ${c.heapUsedMiB.toFixed(1)} MiB); idle CPU ${c.idleCpuPercent.toFixed(2)} % of one core over ${c.idleSeconds} s, ${c.idleWakeupsPerSecond.toFixed(0)} wakeups/s`,
    );
  lines.push(`  (whole benchmark ${figures.totalSeconds.toFixed(0)} s)`);
  return lines;
}

/** Options from BENCH_DAEMON_* (see the top of this file). */
export function daemonOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): DaemonBenchOptions {
  return {
    joins: Number(env.BENCH_DAEMON_JOINS ?? 200),
    tableSizes: (env.BENCH_DAEMON_TABLES ?? '0,1000,5000').split(',').map(Number),
    pods: Number(env.BENCH_DAEMON_PODS ?? 100),
    groups: Number(env.BENCH_DAEMON_GROUPS ?? 50),
    idleSeconds: Number(env.BENCH_DAEMON_IDLE_S ?? 10),
    ovsSnooping: env.BENCH_DAEMON_OVS !== '0',
    ...(env.BENCH_DAEMON_CPU_PROFILE === undefined ? {} : { cpuProfileDir: env.BENCH_DAEMON_CPU_PROFILE }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const joins = args.find((arg) => /^\d+$/.test(arg));
  const figures = await benchDaemon({
    ...daemonOptionsFromEnv(),
    ...(joins === undefined ? {} : { joins: Number(joins) }),
  });
  console.log(daemonReport(figures).join('\n'));
  if (args.includes('--json')) console.log(JSON.stringify(figures, null, 2));
}
