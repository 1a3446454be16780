/**
 * `mcastctl daemon` under an IGMP flood, on a lab node's real OVS. One pod (the attacker)
 * writes IGMPv3 reports of its own through a packet socket, each joining fresh groups,
 * at a set rate; meanwhile a victim pod joins and leaves one group, again and again, and
 * a sender pod sends to that group all the time. Printed:
 *
 * - the victim's join latency: from its join call to the first datagram it reads (this
 *   includes the host's own time to send its report, well under a millisecond for v3);
 * - its delivery ratio from 1 s after each join on: the datagrams it read against those
 *   the sender numbered in that second;
 * - the daemon's peak RSS and mean CPU, ovs-vswitchd's mean CPU, over the flood;
 * - how many of the attacker's groups the daemon and OVS hold at the end.
 *
 *   node --import tsx bench/flood.ts      (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_FLOOD_S (flood seconds, default 60), BENCH_FLOOD_REPORTS (reports a
 * second, default 2,000), BENCH_FLOOD_RECORDS (records a report, default 10),
 * BENCH_FLOOD_DAEMON_ARGS (more daemon flags, e.g. `--max-groups-per-port 1000000
 * --max-groups 1000000` to see the flood without the limits).
 */
import { readFileSync } from 'node:fs';
import { ControlClient } from '../src/transport/control/control-client.js';
import { startDaemon } from '../test/lab/daemon.js';
import { Lab, sleep } from '../test/lab/lab.js';
import { OvsNode, type OvsPod } from '../test/lab/ovs.js';

const VICTIM_GROUP = '239.77.0.1';
const UDP_PORT = 5000;
/** The sender's pause between datagrams: 1,000 a second, the ratio's resolution. */
const SEND_INTERVAL_MS = 1;
/** One join cycle of the victim: joined for this long, then away for LEFT_MS. */
const JOINED_MS = 2_000;
const LEFT_MS = 500;
/** Delivery counts from this long after the join call on. */
const SETTLE_MS = 1_000;
const CLK_TCK = 100;

/**
 * The attacker: Ethernet / IPv4 (TTL 1, Router Alert) / IGMPv3 report to 224.0.0.22 with
 * `records` CHANGE_TO_EXCLUDE records of groups never used before, `rate` a second, out
 * of eth0 through an AF_PACKET socket. Prints how many reports it sent.
 */
const FLOOD_PY = `
import socket, struct, sys, time
iface, src, mac, rate, records, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
def csum(b):
    if len(b) % 2: b += b"\\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return (~t) & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
eth = bytes.fromhex("01005e000016") + bytes.fromhex(mac.replace(":", "")) + b"\\x08\\x00"
srcb = socket.inet_aton(src)
dst = socket.inet_aton("224.0.0.22")
n = 0
sent = 0
start = time.monotonic()
interval = 1.0 / rate
while True:
    now = time.monotonic()
    if now - start >= seconds: break
    body = b""
    for _ in range(records):
        g = 0xEFC80000 + (n % 0x370000)  # 239.200.0.0 and up: fresh groups
        n += 1
        body += struct.pack("!BBH", 4, 0, 0) + struct.pack("!I", g)
    igmp = struct.pack("!BBHHH", 0x22, 0, 0, 0, records) + body
    igmp = igmp[:2] + struct.pack("!H", csum(igmp)) + igmp[4:]
    total = 24 + len(igmp)
    ip = struct.pack("!BBHHHBBH4s4s", 0x46, 0xc0, total, 0, 0x4000, 1, 2, 0, srcb, dst) + b"\\x94\\x04\\x00\\x00"
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(eth + ip + igmp)
    sent += 1
    delay = start + sent * interval - time.monotonic()
    if delay > 0: time.sleep(delay)
print(sent)
`;

/** The sender: numbered datagrams `data <i>` to group:port every `interval` ms, for `seconds`. */
const SEND_PY = `
import socket, sys, time
group, port, interval, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
start = time.monotonic()
i = 0
while time.monotonic() - start < seconds:
    s.sendto(("data %d" % i).encode(), (group, port))
    i += 1
    delay = start + i * interval - time.monotonic()
    if delay > 0: time.sleep(delay)
print(i)
`;

export interface FloodFigures {
  seconds: number;
  reportsPerSecondAsked: number;
  reportsSent: number;
  recordsPerReport: number;
  /** ms from the victim's join call to its first datagram, one per join cycle. */
  joinMs: number[];
  /** Joins after which no datagram came within the joined time. */
  joinsWithoutData: number;
  /** Per join cycle: datagrams read / datagrams numbered, from SETTLE_MS after the join on. */
  deliveryRatios: number[];
  daemonPeakRssMiB: number;
  daemonStartRssMiB: number;
  daemonCpuPercent: number;
  vswitchdCpuPercent: number;
  /** At the end of the flood. */
  daemonGroups: number | undefined;
  ovsGroups: number;
}

function procTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

/** The sequence number a datagram of the sender carries (`<tag> <i>`). */
function sequenceOf(payload: string): number {
  return Number(payload.slice(payload.lastIndexOf(' ') + 1));
}

async function joinCycles(victim: OvsPod, until: number): Promise<{ joinMs: number[]; joinsWithoutData: number; deliveryRatios: number[] }> {
  const joinMs: number[] = [];
  const deliveryRatios: number[] = [];
  let joinsWithoutData = 0;
  while (performance.now() + JOINED_MS < until) {
    const joinedAt = performance.now();
    const receiver = await victim.listen(VICTIM_GROUP, UDP_PORT);
    let firstAt: number | undefined;
    let settledFrom: number | undefined;
    while (performance.now() - joinedAt < JOINED_MS) {
      if (firstAt === undefined && receiver.received.length > 0) firstAt = performance.now();
      if (settledFrom === undefined && performance.now() - joinedAt >= SETTLE_MS) settledFrom = receiver.received.length;
      await sleep(1);
    }
    const all = await receiver.stop();
    if (firstAt === undefined) joinsWithoutData++;
    else joinMs.push(firstAt - joinedAt);
    const settled = all.slice(settledFrom ?? all.length).map((datagram) => sequenceOf(datagram.payload));
    // Against what the sender numbered from the first to the last it read (none read: 0).
    const span = settled.length === 0 ? 1 : Math.max(...settled) - Math.min(...settled) + 1;
    deliveryRatios.push(new Set(settled).size / span);
    await sleep(LEFT_MS);
  }
  return { joinMs, joinsWithoutData, deliveryRatios };
}

export interface FloodOptions {
  seconds?: number;
  reportsPerSecond?: number;
  records?: number;
  /** More daemon flags, e.g. limits raised to see the flood without them. */
  daemonArgs?: string[];
}

export async function benchFlood(options: FloodOptions = {}): Promise<FloodFigures> {
  const seconds = options.seconds ?? 60;
  const rate = options.reportsPerSecond ?? 2_000;
  const records = options.records ?? 10;
  const lab = Lab.create();
  try {
    const node = await OvsNode.start(lab, 'f');
    await node.addGateway({ address: '10.7.0.1/24' });
    const [attacker, victim, sender] = await Promise.all([
      node.addPod('atk', { address: '10.7.0.11/24' }),
      node.addPod('vic', { address: '10.7.0.12/24' }),
      node.addPod('snd', { address: '10.7.0.13/24' }),
    ]);
    const daemon = startDaemon(node, { multicastInterfaces: [], args: ['--fast-leave', ...(options.daemonArgs ?? [])] });
    await daemon.ready();
    const vswitchd = node.pids.vswitchd;
    if (vswitchd === undefined) throw new Error('ovs-vswitchd is not running');
    const daemonStartRssMiB = rssMiB(daemon.pid);

    const sending = lab
      .exec(sender!.ns, ['python3', '-c', SEND_PY, VICTIM_GROUP, String(UDP_PORT), String(SEND_INTERVAL_MS), String(seconds + 3)], {
        timeoutMs: (seconds + 30) * 1000,
      })
      .catch(() => undefined);
    const started = performance.now();
    const ticksBefore = { daemon: procTicks(daemon.pid), vswitchd: procTicks(vswitchd) };
    const flood = lab.exec(
      attacker!.ns,
      ['python3', '-c', FLOOD_PY, attacker!.iface, attacker!.address, attacker!.mac, String(rate), String(records), String(seconds)],
      {
        timeoutMs: (seconds + 30) * 1000,
      },
    );
    let peakRss = daemonStartRssMiB;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rssMiB(daemon.pid));
      } catch {
        // the daemon is gone: the figures say so
      }
    }, 250);
    await sleep(2_000); // the flood is under way
    const cycles = await joinCycles(victim!, started + seconds * 1000);
    const { stdout } = await flood;
    const elapsedS = (performance.now() - started) / 1000;
    const ticksAfter = { daemon: procTicks(daemon.pid), vswitchd: procTicks(vswitchd) };
    clearInterval(sampler);
    peakRss = Math.max(peakRss, rssMiB(daemon.pid));

    const client = await ControlClient.connect(daemon.controlSocket);
    let daemonGroups: number | undefined;
    try {
      daemonGroups = (await client.request<{ groups: number }>('status')).groups;
    } finally {
      client.close();
    }
    const ovsGroups = (await node.ofctl('-O', 'OpenFlow13', 'dump-groups', node.bridge)).split('\n').filter((line) => line.includes('group_id=')).length;
    await daemon.stop();
    await sending;
    return {
      seconds,
      reportsPerSecondAsked: rate,
      reportsSent: Number(stdout.trim()),
      recordsPerReport: records,
      ...cycles,
      daemonPeakRssMiB: peakRss,
      daemonStartRssMiB,
      daemonCpuPercent: ((ticksAfter.daemon - ticksBefore.daemon) / CLK_TCK / elapsedS) * 100,
      vswitchdCpuPercent: ((ticksAfter.vswitchd - ticksBefore.vswitchd) / CLK_TCK / elapsedS) * 100,
      daemonGroups,
      ovsGroups,
    };
  } finally {
    await lab.destroy();
  }
}

function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function floodReport(figures: FloodFigures): string[] {
  const ms = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(2)} ms`);
  const ratio = (value: number | undefined) => (value === undefined ? 'n/a' : `${(value * 100).toFixed(1)} %`);
  const records = figures.reportsSent * figures.recordsPerReport;
  return [
    `  attacker: ${figures.reportsSent.toLocaleString('en-US')} IGMPv3 reports × ${figures.recordsPerReport} fresh groups in ${figures.seconds} s` +
      ` (${Math.round(records / figures.seconds).toLocaleString('en-US')} records/s; asked ${figures.reportsPerSecondAsked.toLocaleString('en-US')} reports/s)`,
    `  victim, ${figures.deliveryRatios.length} join cycles: join → first datagram p50 ${ms(percentile(figures.joinMs, 50))}, p99 ${ms(percentile(figures.joinMs, 99))};` +
      ` ${figures.joinsWithoutData} joins without data`,
    `    delivery from ${SETTLE_MS / 1000} s after the join on: min ${ratio(percentile(figures.deliveryRatios, 0))}, p50 ${ratio(percentile(figures.deliveryRatios, 50))}` +
      ` (target: at least 99 %)`,
    `  daemon: RSS ${figures.daemonStartRssMiB.toFixed(1)} MiB at start, peak ${figures.daemonPeakRssMiB.toFixed(1)} MiB (target: at most 150);` +
      ` CPU ${figures.daemonCpuPercent.toFixed(0)} % of one core (target: at most 50)`,
    `  ovs-vswitchd: CPU ${figures.vswitchdCpuPercent.toFixed(0)} % of one core`,
    `  at the end: the daemon holds ${figures.daemonGroups ?? 'n/a'} groups, OVS ${figures.ovsGroups.toLocaleString('en-US')} OVS groups`,
  ];
}

export function floodOptionsFromEnv(): FloodOptions {
  const number = (name: string) => (process.env[name] === undefined ? undefined : Number(process.env[name]));
  const args = process.env.BENCH_FLOOD_DAEMON_ARGS?.split(' ').filter((word) => word !== '');
  return {
    seconds: number('BENCH_FLOOD_S'),
    reportsPerSecond: number('BENCH_FLOOD_REPORTS'),
    records: number('BENCH_FLOOD_RECORDS'),
    ...(args === undefined ? {} : { daemonArgs: args }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const line of floodReport(await benchFlood(floodOptionsFromEnv()))) console.log(line);
}
