/**
 * `mcastctl daemon` under an IGMP flood, on a lab node's real OVS. Attacker pods (one by
 * default) write IGMPv3 reports of their own through a packet socket, each joining fresh
 * groups (a range of its own per attacker, so the per-port limits and meters apply to
 * each), at a set rate; meanwhile a victim pod, apart from the attackers, joins and leaves
 * one group, again and again, and a sender pod sends to that group all the time. The
 * daemon runs with short membership timers (BENCH_FLOOD_QUERY_INTERVAL_S and friends) so
 * that the attackers' groups expire soon after the flood. Printed:
 *
 * - the victim's join latency: from its report on the wire to the first datagram it
 *   reads (the kernel's timestamps of both frames, seen by a packet socket in the pod),
 *   and from its join call (which adds the kernel's delay before the report); the
 *   sender's 1 ms interval is the resolution;
 * - its delivery ratio from 1 s after each join on: the datagrams it read against those
 *   the sender numbered in that second;
 * - the daemon's peak RSS and mean CPU, ovs-vswitchd's mean CPU, over the flood;
 * - the round trip of a FLOW_MOD + barrier to ovs-vswitchd, on a connection of the
 *   bench's own, every 100 ms of the flood (p50, p99, max; target: under 10 ms), and the
 *   same for 10 s before it: what the machine gives without a flood;
 * - the daemon's metrics at the end of the flood: the IGMP meter's drops on the
 *   attackers' ports (mcastctl_igmp_meter_drops_total, n/a when the daemon has none, e.g.
 *   run with --no-igmp-meter) and its refusals by reason (mcastctl_igmp_refused_total);
 * - how many of the attackers' groups the daemon and OVS hold at the end of the flood;
 * - after it: the time until the daemon held none of the attackers' groups, against the
 *   group membership interval (robustness × query interval + query response interval;
 *   watched until GMI + 15 s), and the daemon's RSS at start, at peak, at the end and 20 s
 *   later (the daemon gives a flood's memory back 5 s after its groups stop expiring),
 *   with its V8 heap (in use, and taken from the system) and its memory outside the heap
 *   at start, at the flood's end and then;
 * - the group syncs the daemon did and how many were still waiting at the flood's end.
 *
 *   node --import tsx bench/flood.ts      (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_FLOOD_S (flood seconds, default 60), BENCH_FLOOD_ATTACKERS (attacker
 * pods, default 1, each at the full rate), BENCH_FLOOD_REPORTS (reports a second per
 * attacker, default 2,000), BENCH_FLOOD_RECORDS (records a report, default 10),
 * BENCH_FLOOD_QUERY_INTERVAL_S (default 10), BENCH_FLOOD_QUERY_RESPONSE_INTERVAL_S
 * (default 5), BENCH_FLOOD_ROBUSTNESS (default 2): the daemon's timers, from which the
 * GMI is reckoned (set them here, not in the daemon flags), BENCH_FLOOD_DAEMON_ARGS (more
 * daemon flags, after the bench's own: e.g. `--no-igmp-meter` to compare without the
 * meter, `--max-groups-per-port 1000000 --max-groups 1000000` to see the flood without
 * the limits), BENCH_FLOOD_CPU_PROFILE (a directory: the daemon's CPU profile is written
 * there when it stops, node --cpu-prof).
 */
import { ControlClient } from '../src/transport/control/control-client.js';
import { startDaemon } from '../test/lab/daemon.js';
import { Lab, sleep } from '../test/lab/lab.js';
import { OvsNode, type OvsPod } from '../test/lab/ovs.js';
import {
  cpuPercent,
  type Expiry,
  type FlowModRoundTrips,
  type MeterAndRefusals,
  percentile,
  procTicks,
  rssMiB,
  scrapeMeterAndRefusals,
  startFlowModProbe,
  scrapeHeapUsedMiB,
  watchExpiry,
} from './flood-probes.js';
import { FLOOD_PY, SEND_PY, VICTIM_PY } from './flood-scripts.js';

const VICTIM_GROUP = '239.77.0.1';
const UDP_PORT = 5000;
/** The sender's pause between datagrams: 1,000 a second, the ratio's resolution. */
const SEND_INTERVAL_MS = 1;
/** One join cycle of the victim: joined for this long, then away for LEFT_MS. */
const JOINED_MS = 2_000;
const LEFT_MS = 500;
/** Delivery counts from this long after the join call on. */
const SETTLE_MS = 1_000;
/**
 * How long after the attackers' groups are gone the RSS is read again (the daemon gives memory back 5 s after expiry
 * stops; V8 shrinks its heap in the seconds after).
 */
const SETTLED_AFTER_MS = 20_000;
/** The attackers' groups: 239.200.0.0 and up, split in equal ranges, one per attacker. */
const ATTACKER_GROUP_BASE = 0xefc80000;
const ATTACKER_GROUP_SPAN = 0x370000;
/** How long after the GMI the expiry is watched. */
const EXPIRY_GRACE_S = 15;
/** The pause between two FLOW_MOD probes. */
const FLOW_MOD_INTERVAL_MS = 100;
/** How long the flow-mod probe runs before the flood, for the machine's own figure. */
const IDLE_PROBE_MS = 10_000;
/** Attacker i is 10.7.0.(FIRST_ATTACKER_HOST + i). */
const FIRST_ATTACKER_HOST = 21;
const MAX_ATTACKERS = 200;
export interface FloodFigures {
  seconds: number;
  attackers: number;
  /** Per attacker. */
  reportsPerSecondAsked: number;
  /** Reports each attacker sent. */
  reportsSent: number[];
  recordsPerReport: number;
  /** ms from the victim's report on the wire to its first datagram, one per join cycle (kernel timestamps). */
  joinMs: number[];
  /**
   * ms from the victim's join call to its first datagram: joinMs plus the kernel's delay before it sends the report.
   */
  joinCallMs: number[];
  /** Joins after which no datagram came within the joined time. */
  joinsWithoutData: number;
  /** Per join cycle: datagrams read / datagrams numbered, from SETTLE_MS after the join on. */
  deliveryRatios: number[];
  daemonPeakRssMiB: number;
  daemonStartRssMiB: number;
  /**
   * The daemon's V8 heap in use at start and at the end of the watch after the flood (what RSS keeps beyond it is
   * memory V8 holds, not state).
   */
  heapUsedMiB: { start: HeapFigures | undefined; floodEnd: HeapFigures | undefined; end: HeapFigures | undefined };
  /** The daemon's RSS SETTLED_AFTER_MS after the watch ended. */
  settledRssMiB: number;
  daemonCpuPercent: number;
  vswitchdCpuPercent: number;
  flowMods: FlowModRoundTrips;
  /** The same probe for IDLE_PROBE_MS before the flood, the daemon up: what the machine itself gives. */
  idleFlowMods: FlowModRoundTrips;
  /** Scraped at the end of the flood. */
  metrics: MeterAndRefusals;
  /** At the end of the flood. */
  daemonGroups: number | undefined;
  /** Groups waiting for (or retrying) their sync to OVS. */
  pendingSyncs: number | undefined;
  /** Group syncs done and failed from the daemon's start to the end of the flood. */
  syncs: { done: number; failed: number } | undefined;
  ovsGroups: number;
  /** s from the first report to the end of the last attacker's flood. */
  floodElapsedS: number;
  /** The group membership interval the daemon ran with, s. */
  gmiS: number;
  expiry: Expiry;
}

type HeapFigures = { heap: number; committed: number; external: number };

/** The sequence number a datagram of the sender carries (`<tag> <i>`). */
/** The victim's join cycles (VICTIM_PY), each timed inside the pod from its join call to its first datagram. */
async function joinCycles(
  lab: Lab,
  victim: OvsPod,
  seconds: number,
): Promise<{ joinMs: number[]; joinCallMs: number[]; joinsWithoutData: number; deliveryRatios: number[] }> {
  const args = [
    victim.iface,
    VICTIM_GROUP,
    String(UDP_PORT),
    String(JOINED_MS),
    String(LEFT_MS),
    String(SETTLE_MS),
    String(seconds),
  ];
  const { stdout } = await lab.exec(victim.ns, ['python3', '-c', VICTIM_PY, ...args], {
    timeoutMs: (seconds + 30) * 1000,
  });
  const joinMs: number[] = [];
  const joinCallMs: number[] = [];
  const deliveryRatios: number[] = [];
  let joinsWithoutData = 0;
  for (const line of stdout.split('\n').filter((text) => text.startsWith('{'))) {
    const cycle = JSON.parse(line) as { joinMs: number | null; joinCallMs: number | null; numbers: number[] };
    if (cycle.joinCallMs === null) joinsWithoutData++;
    else joinCallMs.push(cycle.joinCallMs);
    if (cycle.joinMs !== null) joinMs.push(cycle.joinMs);
    // Against what the sender numbered from the first to the last it read (none read: 0).
    const span = cycle.numbers.length === 0 ? 1 : Math.max(...cycle.numbers) - Math.min(...cycle.numbers) + 1;
    deliveryRatios.push(new Set(cycle.numbers).size / span);
  }
  return { joinMs, joinCallMs, joinsWithoutData, deliveryRatios };
}

function memory(figure: HeapFigures | undefined, part: keyof HeapFigures): string {
  return figure === undefined ? 'n/a' : `${figure[part].toFixed(1)} MiB`;
}

export interface FloodOptions {
  seconds?: number;
  /** Attacker pods, each flooding at `reportsPerSecond` (default 1). */
  attackers?: number;
  reportsPerSecond?: number;
  records?: number;
  /** The daemon's --query-interval, s (default 10). */
  queryIntervalS?: number;
  /** The daemon's --query-response-interval, s (default 5). */
  queryResponseIntervalS?: number;
  /** The daemon's --robustness (default 2). */
  robustness?: number;
  /** More daemon flags, e.g. limits raised to see the flood without them, or --no-igmp-meter. */
  daemonArgs?: string[];
  /** Where the daemon's CPU profile goes (node --cpu-prof); none: not profiled. */
  cpuProfileDir?: string;
}

export async function benchFlood(options: FloodOptions = {}): Promise<FloodFigures> {
  const seconds = options.seconds ?? 60;
  const attackerCount = options.attackers ?? 1;
  if (!Number.isInteger(attackerCount) || attackerCount < 1 || attackerCount > MAX_ATTACKERS) {
    throw new RangeError(`BENCH_FLOOD_ATTACKERS: ${attackerCount} is not an integer from 1 to ${MAX_ATTACKERS}`);
  }
  const rate = options.reportsPerSecond ?? 2_000;
  const records = options.records ?? 10;
  const queryIntervalS = options.queryIntervalS ?? 10;
  const queryResponseIntervalS = options.queryResponseIntervalS ?? 5;
  const robustness = options.robustness ?? 2;
  const gmiS = robustness * queryIntervalS + queryResponseIntervalS;
  const lab = Lab.create();
  try {
    const node = await OvsNode.start(lab, 'f');
    await node.addGateway({ address: '10.7.0.1/24' });
    const [victim, sender, ...attackers] = await Promise.all([
      node.addPod('vic', { address: '10.7.0.12/24' }),
      node.addPod('snd', { address: '10.7.0.13/24' }),
      ...Array.from({ length: attackerCount }, (_, i) =>
        node.addPod(`atk${i}`, { address: `10.7.0.${FIRST_ATTACKER_HOST + i}/24` }),
      ),
    ]);
    const timers = [
      '--query-interval',
      `${queryIntervalS}s`,
      '--query-response-interval',
      `${queryResponseIntervalS}s`,
      '--robustness',
      String(robustness),
    ];
    // With a profile directory, node writes the daemon's CPU profile there when it stops.
    const profile =
      options.cpuProfileDir === undefined
        ? {}
        : {
            wrapper: ['sh', '-c', 'exec "$0" --cpu-prof --cpu-prof-dir="$PROFILE_DIR" "$@"'],
            env: { PROFILE_DIR: options.cpuProfileDir },
          };
    const daemon = startDaemon(node, {
      multicastInterfaces: [],
      ...profile,
      args: ['--fast-leave', ...timers, ...(options.daemonArgs ?? [])],
    });
    const listening = await daemon.ready();
    const metricsUrl = typeof listening['metrics'] === 'string' ? listening['metrics'] : undefined;
    const vswitchd = node.pids.vswitchd;
    if (vswitchd === undefined) throw new Error('ovs-vswitchd is not running');
    const daemonStartRssMiB = rssMiB(daemon.pid);
    const heapAtStartMiB = await scrapeHeapUsedMiB(node, metricsUrl);
    const idleProbe = await startFlowModProbe(node, FLOW_MOD_INTERVAL_MS);
    await sleep(IDLE_PROBE_MS);
    const idleFlowMods = await idleProbe.stop();
    const flowModProbe = await startFlowModProbe(node, FLOW_MOD_INTERVAL_MS);

    const sending = lab
      .exec(
        sender!.ns,
        ['python3', '-c', SEND_PY, VICTIM_GROUP, String(UDP_PORT), String(SEND_INTERVAL_MS), String(seconds + 3)],
        {
          timeoutMs: (seconds + 30) * 1000,
        },
      )
      .catch(() => undefined);
    const started = performance.now();
    const ticksBefore = { daemon: procTicks(daemon.pid), vswitchd: procTicks(vswitchd) };
    const span = Math.floor(ATTACKER_GROUP_SPAN / attackerCount);
    const floods = attackers.map((attacker, i) =>
      lab.exec(
        attacker.ns,
        [
          'python3',
          '-c',
          FLOOD_PY,
          attacker.iface,
          attacker.address,
          attacker.mac,
          String(rate),
          String(records),
          String(seconds),
          String(ATTACKER_GROUP_BASE + i * span),
          String(span),
        ],
        { timeoutMs: (seconds + 30) * 1000 },
      ),
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
    const cycles = await joinCycles(lab, victim!, seconds - 2);
    const outputs = await Promise.all(floods);
    const floodEndedAt = performance.now();
    const elapsedS = (floodEndedAt - started) / 1000;
    const ticksAfter = { daemon: procTicks(daemon.pid), vswitchd: procTicks(vswitchd) };
    clearInterval(sampler);
    peakRss = Math.max(peakRss, rssMiB(daemon.pid));
    const flowMods = await flowModProbe.stop();
    const attackerPorts = new Set(attackers.map((attacker) => attacker.port));
    const metrics =
      metricsUrl === undefined
        ? {
            attackerMeterDrops: undefined,
            otherMeterDrops: undefined,
            refusedByReason: {},
            scrapeError: 'the daemon serves no metrics',
          }
        : await scrapeMeterAndRefusals(node, metricsUrl, attackerPorts);

    const client = await ControlClient.connect(daemon.controlSocket);
    let daemonGroups: number | undefined;
    let pendingSyncs: number | undefined;
    let syncs: { done: number; failed: number } | undefined;
    try {
      const status = await client.request<{
        groups: number;
        pendingSyncs: number;
        counters: { syncs: number; syncErrors: number };
      }>('status');
      ({ groups: daemonGroups, pendingSyncs } = status);
      syncs = { done: status.counters.syncs, failed: status.counters.syncErrors };
    } finally {
      client.close();
    }
    const heapAtFloodEndMiB = await scrapeHeapUsedMiB(node, metricsUrl);
    const ovsGroups = (await node.ofctl('-O', 'OpenFlow13', 'dump-groups', node.bridge))
      .split('\n')
      .filter((line) => line.includes('group_id=')).length;
    const expiry = await watchExpiry({
      controlSocket: daemon.controlSocket,
      pid: daemon.pid,
      keep: VICTIM_GROUP,
      floodEndedAt,
      limitS: gmiS + EXPIRY_GRACE_S,
    });
    // The daemon gives the memory of expired groups back after a quiet spell of 5 s.
    await sleep(SETTLED_AFTER_MS);
    const settledRssMiB = rssMiB(daemon.pid);
    const heapAtEndMiB = await scrapeHeapUsedMiB(node, metricsUrl);
    await daemon.stop();
    await sending;
    return {
      seconds,
      attackers: attackerCount,
      reportsPerSecondAsked: rate,
      reportsSent: outputs.map(({ stdout }) => Number(stdout.trim())),
      recordsPerReport: records,
      ...cycles,
      daemonPeakRssMiB: peakRss,
      daemonStartRssMiB,
      heapUsedMiB: { start: heapAtStartMiB, floodEnd: heapAtFloodEndMiB, end: heapAtEndMiB },
      settledRssMiB,
      daemonCpuPercent: cpuPercent(ticksBefore.daemon, ticksAfter.daemon, elapsedS),
      vswitchdCpuPercent: cpuPercent(ticksBefore.vswitchd, ticksAfter.vswitchd, elapsedS),
      flowMods,
      idleFlowMods,
      metrics,
      daemonGroups,
      pendingSyncs,
      syncs,
      ovsGroups,
      floodElapsedS: elapsedS,
      gmiS,
      expiry,
    };
  } finally {
    await lab.destroy();
  }
}

const count = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(2)} ms`);
const ratio = (value: number | undefined) => (value === undefined ? 'n/a' : `${(value * 100).toFixed(1)} %`);
const mib = (value: number) => `${value.toFixed(1)} MiB`;
const orNa = (value: number | undefined) => (value === undefined ? 'n/a' : count(value));

function refusals(figures: FloodFigures): string {
  const entries = Object.entries(figures.metrics.refusedByReason);
  if (entries.length === 0)
    return `n/a${figures.metrics.scrapeError === undefined ? '' : ` (${figures.metrics.scrapeError})`}`;
  return entries.map(([reason, value]) => `${reason} ${count(value)}`).join(', ');
}

function expiryLine(figures: FloodFigures): string {
  const { expiry } = figures;
  // A held group expires a GMI after its last report, which came at some time in the flood (the per-port limit
  // admits new groups only as held ones expire): gone within a GMI of the flood's end is on schedule.
  if (expiry.goneAfterS !== undefined) {
    return `${expiry.goneAfterS.toFixed(1)} s after the flood's end, ${(expiry.goneAfterS + figures.floodElapsedS).toFixed(1)} s after its start (GMI ${figures.gmiS} s)`;
  }
  return `not gone: ${count(expiry.groupsLeft)} left ${figures.gmiS + EXPIRY_GRACE_S} s after the flood (GMI ${figures.gmiS} s)`;
}

export function floodReport(figures: FloodFigures): string[] {
  const reportsSent = figures.reportsSent.reduce((total, sent) => total + sent, 0);
  const records = reportsSent * figures.recordsPerReport;
  const roundTrips = figures.flowMods.roundTripsMs;
  const idleRoundTrips = figures.idleFlowMods.roundTripsMs;
  const flowModLine = (probe: FlowModRoundTrips) =>
    `p50 ${ms(percentile(probe.roundTripsMs, 50))}, p99 ${ms(percentile(probe.roundTripsMs, 99))}, max ${ms(percentile(probe.roundTripsMs, 100))}` +
    ` over ${probe.roundTripsMs.length} probes, ${probe.failures} failed`;
  const peakRss = Math.max(figures.daemonPeakRssMiB, figures.expiry.peakRssMiB);
  const lines = [
    `  ${figures.attackers} attacker${figures.attackers === 1 ? '' : 's'}: ${count(reportsSent)} IGMPv3 reports × ${figures.recordsPerReport} fresh groups in ${figures.seconds} s` +
      ` (${count(records / figures.seconds)} records/s; asked ${count(figures.reportsPerSecondAsked)} reports/s each` +
      (figures.attackers === 1 ? ')' : `; fewest sent by one: ${count(Math.min(...figures.reportsSent))})`),
    `  victim, ${figures.deliveryRatios.length} join cycles: report on the wire → first datagram p50 ${ms(percentile(figures.joinMs, 50))},` +
      ` p99 ${ms(percentile(figures.joinMs, 99))} (target: p50 at most 5 ms); ${figures.joinsWithoutData} joins without data`,
    `    join call → first datagram (with the kernel's delay before its report) p50 ${ms(percentile(figures.joinCallMs, 50))}, p99 ${ms(percentile(figures.joinCallMs, 99))}`,
    `    delivery from ${SETTLE_MS / 1000} s after the join on: min ${ratio(percentile(figures.deliveryRatios, 0))}, p50 ${ratio(percentile(figures.deliveryRatios, 50))}` +
      ` (target: at least 99 %)`,
    `  daemon: RSS ${mib(figures.daemonStartRssMiB)} at start, peak ${mib(figures.daemonPeakRssMiB)} during the flood (target: at most 150);` +
      ` CPU ${figures.daemonCpuPercent.toFixed(0)} % of one core (target: at most 50)`,
    `  ovs-vswitchd: CPU ${figures.vswitchdCpuPercent.toFixed(0)} % of one core`,
    `  FLOW_MOD + barrier to ovs-vswitchd every ${FLOW_MOD_INTERVAL_MS} ms of the flood: ${flowModLine(figures.flowMods)} (target: under 10 ms)`,
    `    the same for ${IDLE_PROBE_MS / 1000} s before the flood (the daemon up, no flood): ${flowModLine(figures.idleFlowMods)}`,
    `  IGMP meter drops at the end of the flood: attackers ${orNa(figures.metrics.attackerMeterDrops)}, other ports ${orNa(figures.metrics.otherMeterDrops)}`,
    `  IGMP refused by the daemon: ${refusals(figures)}`,
    `  at the end of the flood: the daemon holds ${figures.daemonGroups ?? 'n/a'} groups (${figures.pendingSyncs ?? 'n/a'} waiting for a sync), OVS ${count(figures.ovsGroups)} OVS groups;` +
      ` group syncs since the start: ${figures.syncs === undefined ? 'n/a' : `${count(figures.syncs.done)} done, ${count(figures.syncs.failed)} failed`}`,
    `  after it: the attackers' ${count(figures.expiry.groupsAtFloodEnd)} groups gone ${expiryLine(figures)};` +
      ` RSS ${mib(figures.daemonStartRssMiB)} at start, peak ${mib(peakRss)}, ${mib(figures.expiry.endRssMiB)} at the end`,
    '',
    '  summary:',
    `    attackers: ${figures.attackers} × ${count(figures.reportsPerSecondAsked)} reports/s × ${figures.recordsPerReport} records, ${figures.seconds} s`,
    `    reports sent: ${count(reportsSent)} (${count(records / figures.seconds)} records/s)`,
    `    victim join p50 / p99: ${ms(percentile(figures.joinMs, 50))} / ${ms(percentile(figures.joinMs, 99))}, ${figures.joinsWithoutData} without data`,
    `    victim delivery min / p50: ${ratio(percentile(figures.deliveryRatios, 0))} / ${ratio(percentile(figures.deliveryRatios, 50))}`,
    `    daemon CPU: ${figures.daemonCpuPercent.toFixed(0)} %`,
    `    ovs-vswitchd CPU: ${figures.vswitchdCpuPercent.toFixed(0)} %`,
    `    flow mod p50 / p99 / max: ${ms(percentile(roundTrips, 50))} / ${ms(percentile(roundTrips, 99))} / ${ms(percentile(roundTrips, 100))}` +
      ` (before the flood: ${ms(percentile(idleRoundTrips, 50))} / ${ms(percentile(idleRoundTrips, 99))} / ${ms(percentile(idleRoundTrips, 100))})`,
    `    meter drops (attackers): ${orNa(figures.metrics.attackerMeterDrops)}`,
    `    refused: ${refusals(figures)}`,
    `    groups at flood end (daemon / OVS / waiting for a sync): ${figures.daemonGroups ?? 'n/a'} / ${count(figures.ovsGroups)} / ${figures.pendingSyncs ?? 'n/a'}`,
    `    attackers' groups gone: ${expiryLine(figures)}`,
    `    RSS start / peak / end: ${mib(figures.daemonStartRssMiB)} / ${mib(peakRss)} / ${mib(figures.expiry.endRssMiB)}`,
    `    RSS ${SETTLED_AFTER_MS / 1000} s after the attackers' groups were gone: ${mib(figures.settledRssMiB)}`,
    ...(['heap', 'committed', 'external'] as const).map((part) => {
      const { start, floodEnd, end } = figures.heapUsedMiB;
      const what = {
        heap: 'V8 heap in use',
        committed: 'V8 heap taken from the system',
        external: 'memory outside the V8 heap (buffers)',
      }[part];
      return `    ${what}, start / flood end / settled: ${memory(start, part)} / ${memory(floodEnd, part)} / ${memory(end, part)}`;
    }),
  ];
  return lines;
}

export function floodOptionsFromEnv(): FloodOptions {
  const number = (name: string) => (process.env[name] === undefined ? undefined : Number(process.env[name]));
  const args = process.env.BENCH_FLOOD_DAEMON_ARGS?.split(' ').filter((word) => word !== '');
  return {
    seconds: number('BENCH_FLOOD_S'),
    attackers: number('BENCH_FLOOD_ATTACKERS'),
    reportsPerSecond: number('BENCH_FLOOD_REPORTS'),
    records: number('BENCH_FLOOD_RECORDS'),
    queryIntervalS: number('BENCH_FLOOD_QUERY_INTERVAL_S'),
    queryResponseIntervalS: number('BENCH_FLOOD_QUERY_RESPONSE_INTERVAL_S'),
    robustness: number('BENCH_FLOOD_ROBUSTNESS'),
    ...(args === undefined ? {} : { daemonArgs: args }),
    ...(process.env.BENCH_FLOOD_CPU_PROFILE === undefined
      ? {}
      : { cpuProfileDir: process.env.BENCH_FLOOD_CPU_PROFILE }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const line of floodReport(await benchFlood(floodOptionsFromEnv()))) console.log(line);
}
