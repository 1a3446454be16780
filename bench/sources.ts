/**
 * Per-source forwarding of `mcastctl daemon` on a lab node's real OVS:
 *
 * 1. join latency of a source-specific join (IP_ADD_SOURCE_MEMBERSHIP of (S, G1)) against
 *    a plain one (IP_ADD_MEMBERSHIP of G2), in the same run: two cyclers in one receiver
 *    pod, side by side, while a sender pod S sends to both groups all the time; from one
 *    capture on the receiver's eth0, the report on the wire → the first datagram from S;
 * 2. scale: P pods, each in G groups from N sources each (INCLUDE mode, so every group
 *    has N entries of its own beside its (*,G) entry): the time from the daemon's first
 *    general query on the wire until every group's sync held every pod for every source
 *    (OVS's groups, polled), the OVS flows and groups read back, the daemon's RSS.
 *
 *   node --import tsx bench/sources.ts      (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_SOURCES_JOINS (joins of each kind, default 100), BENCH_SOURCES_PODS
 * (10), BENCH_SOURCES_GROUPS (1,000), BENCH_SOURCES_SOURCES (10, at most the kernel's
 * net.ipv4.igmp_max_msf).
 */
import { readFileSync } from 'node:fs';
import { ControlClient } from '../src/transport/control/control-client.js';
import { startDaemon } from '../test/lab/daemon.js';
import { Lab, sleep } from '../test/lab/lab.js';
import { OvsNode, type OvsPod } from '../test/lab/ovs.js';
import {
  CYCLER_PY,
  type Distribution,
  distribution,
  firstQueryMs,
  SENDER_PY,
  SOURCE_CYCLER_PY,
  type WireEvent,
  wireEvents,
} from './pod-processes.js';
import { HOLDER_PY, stopChild, waitForLine } from '../test/lab/group-holders.js';

const SOURCE_GROUP = '239.79.0.1';
const PLAIN_GROUP = '239.79.0.2';
const UDP_PORT = 5000;
const SEND_INTERVAL_MS = 0.25;
const JOINED_MS = 60;
const LEFT_MS = 80;
const CONVERGENCE_TIMEOUT_MS = 60_000;
const QUERY_RESPONSE_INTERVAL_S = 2;

export interface SourcesBenchOptions {
  joins?: number;
  pods?: number;
  groups?: number;
  sources?: number;
}

interface JoinFigures {
  joins: number;
  joinsWithoutData: number;
  /** ms from the report on the wire to the first datagram. */
  join: Distribution;
}

export interface SourcesFigures {
  sourceSpecific: JoinFigures;
  plain: JoinFigures;
  scale: {
    pods: number;
    groups: number;
    sources: number;
    /** From the first general query on the wire to the last group complete; undefined: not converged (see problem). */
    convergenceMs: number | undefined;
    problem: string | undefined;
    entriesComplete: number;
    /**
     * How often OVS was read while waiting (each read takes a while with this many groups: the figure's resolution).
     */
    polls: number;
    syncs: number;
    sourceFlows: number;
    groupFlows: number;
    ovsGroups: number;
    rssStartMiB: number;
    rssMiB: number;
    memberships: number;
  };
  totalSeconds: number;
}

function joinFigures(events: readonly WireEvent[]): JoinFigures {
  const latencies: number[] = [];
  let joins = 0;
  let withoutData = 0;
  let joinedAt: number | undefined;
  let member = false;
  for (const event of events) {
    if (event.kind === 'join') {
      // The host repeats its report (robustness): only the first after a leave is the join.
      if (member) continue;
      member = true;
      joins++;
      joinedAt = event.ts;
    } else if (event.kind === 'leave') {
      if (!member) continue;
      if (joinedAt !== undefined) withoutData++;
      member = false;
      joinedAt = undefined;
    } else if (joinedAt !== undefined) {
      latencies.push((event.ts - joinedAt) * 1000);
      joinedAt = undefined;
    }
  }
  return { joins, joinsWithoutData: withoutData, join: distribution(latencies) };
}

function rssMiB(pid: number): number {
  const kib = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib ?? NaN) / 1024;
}

async function joinLatencies(
  lab: Lab,
  sender: OvsPod,
  receiver: OvsPod,
  joins: number,
): Promise<{ sourceSpecific: JoinFigures; plain: JoinFigures }> {
  const pcap = lab.file('joins.pcap');
  const capture = await lab.startTcpdump(receiver.ns, receiver.iface, pcap, { filter: ['igmp', 'or', 'udp'] });
  const senders = [SOURCE_GROUP, PLAIN_GROUP].map((group) =>
    lab.spawn(sender.ns, ['python3', '-u', '-c', SENDER_PY, group, String(UDP_PORT), String(SEND_INTERVAL_MS)]),
  );
  await Promise.all(senders.map((child) => waitForLine(child, 'ready', 10_000, 'sender')));
  const source = sender.address;
  const cyclers = [
    lab.spawn(receiver.ns, [
      'python3',
      '-u',
      '-c',
      SOURCE_CYCLER_PY,
      SOURCE_GROUP,
      source,
      String(joins),
      String(JOINED_MS),
      String(LEFT_MS),
    ]),
    lab.spawn(receiver.ns, [
      'python3',
      '-u',
      '-c',
      CYCLER_PY,
      PLAIN_GROUP,
      String(joins),
      String(JOINED_MS),
      String(LEFT_MS),
    ]),
  ];
  await Promise.all(
    cyclers.map((child) => waitForLine(child, 'done', joins * (JOINED_MS + LEFT_MS) * 2 + 10_000, 'cycler')),
  );
  for (const child of senders) await stopChild(child);
  await sleep(100);
  await capture.stop();
  return {
    sourceSpecific: joinFigures(await wireEvents(pcap, SOURCE_GROUP, source)),
    plain: joinFigures(await wireEvents(pcap, PLAIN_GROUP)),
  };
}

export async function benchSources(options: SourcesBenchOptions = {}): Promise<SourcesFigures> {
  const joins = options.joins ?? 100;
  const podCount = options.pods ?? 10;
  const groupCount = options.groups ?? 1000;
  const sourceCount = options.sources ?? 10;
  const started = performance.now();
  const lab = Lab.create();
  try {
    // --- 1: join latency, source-specific and plain ------------------------------------
    const node = await OvsNode.start(lab, 'j');
    await node.addGateway({ address: '10.9.0.1/24' });
    const [sender, receiver] = await Promise.all([
      node.addPod('snd', { address: '10.9.0.11/24' }),
      node.addPod('rcv', { address: '10.9.0.12/24' }),
    ]);
    const daemon = startDaemon(node, { multicastInterfaces: [], args: ['--fast-leave', '--query-interval', '600s'] });
    await daemon.ready(20_000);
    const latencies = await joinLatencies(lab, sender!, receiver!, joins);
    await daemon.stop();

    // --- 2: scale ----------------------------------------------------------------------
    const big = await OvsNode.start(lab, 's');
    await big.addGateway({ address: '10.8.0.1/16' });
    const pods = await Promise.all(
      Array.from({ length: podCount }, (_, i) => big.addPod(`p${i + 1}`, { address: `10.8.1.${i + 11}/16` })),
    );
    const groups = Array.from({ length: groupCount }, (_, i) => `239.80.${Math.floor(i / 200)}.${(i % 200) + 1}`);
    const sources = Array.from({ length: sourceCount }, (_, i) => `10.7.0.${i + 1}`);
    const holder = lab.spawn(big.ns, [
      'python3',
      '-u',
      '-c',
      HOLDER_PY,
      groups.join(','),
      sources.join(','),
      ...pods.map((pod) => pod.ns),
    ]);
    await waitForLine(holder, 'ready', 120_000, 'source holder');
    // The hosts' unsolicited reports and their retransmissions pass before the daemon starts.
    await sleep(1500);

    const queryPcap = lab.file('scale-query.pcap');
    const queryCapture = await lab.startTcpdump(pods[0]!.ns, pods[0]!.iface, queryPcap, { filter: ['igmp'] });
    const podPorts = pods.map((pod) => pod.ofport);
    const wantedEntries = groupCount * sourceCount;
    // Convergence is read from OVS itself, polled: the daemon's event stream would carry
    // megabytes of report and sync events in these seconds, more than a subscriber on a
    // loaded machine reads before the daemon drops it.
    const completeEntries = async () => {
      const dump = await big.ofctl('dump-groups', big.bridge);
      let complete = 0;
      for (const line of dump.split('\n')) {
        if (!line.includes('group_id=')) continue;
        const outputs = new Set([...line.matchAll(/output:(\d+)/g)].map((m) => Number(m[1])));
        if (podPorts.every((port) => outputs.has(port))) complete++;
      }
      return complete;
    };
    const scaleDaemon = startDaemon(big, {
      multicastInterfaces: [],
      args: ['--fast-leave', '--query-response-interval', `${QUERY_RESPONSE_INTERVAL_S}s`, '--query-interval', '600s'],
    });
    await scaleDaemon.ready(20_000);
    const rssStartMiB = rssMiB(scaleDaemon.pid);
    let convergedAt: number | undefined;
    let entriesComplete = 0;
    let polls = 0;
    const pollStarted = Date.now();
    while (Date.now() - pollStarted < CONVERGENCE_TIMEOUT_MS) {
      entriesComplete = await completeEntries();
      polls++;
      if (entriesComplete >= wantedEntries) {
        convergedAt = Date.now();
        break;
      }
      await sleep(50);
    }
    await queryCapture.stop();
    const firstQuery = await firstQueryMs(queryPcap);
    const flows = await big.ofctl('dump-flows', big.bridge);
    const ovsGroups = await big.ofctl('dump-groups', big.bridge);
    const client = await ControlClient.connect(scaleDaemon.controlSocket);
    const status = await client.request<{ members: number; counters: { syncs: number } }>('status');
    client.close();
    await sleep(2000);
    const rss = rssMiB(scaleDaemon.pid);
    await scaleDaemon.stop();
    await stopChild(holder);
    const warnings = [
      ...new Set(
        scaleDaemon
          .entries()
          .filter((entry) => entry['level'] !== 'info' && entry['level'] !== 'debug')
          .map((entry) => `${String(entry.msg)} ${JSON.stringify(entry['error'] ?? '')}`),
      ),
    ].slice(0, 5);
    const problem =
      firstQuery === undefined
        ? 'no general query seen on the first pod'
        : convergedAt === undefined
          ? `not converged: ${entriesComplete} of ${wantedEntries} (S,G) entries complete within ${CONVERGENCE_TIMEOUT_MS / 1000} s` +
            (warnings.length === 0 ? '' : `; daemon warnings: ${warnings.join('; ')}`)
          : undefined;
    return {
      ...latencies,
      scale: {
        pods: podCount,
        groups: groupCount,
        sources: sourceCount,
        convergenceMs: convergedAt === undefined || firstQuery === undefined ? undefined : convergedAt - firstQuery,
        problem,
        entriesComplete,
        polls,
        syncs: status.counters.syncs,
        sourceFlows: flows.split('\n').filter((line) => line.includes('nw_src=')).length,
        groupFlows: flows.split('\n').filter((line) => line.includes('nw_dst=239.80.') && !line.includes('nw_src='))
          .length,
        ovsGroups: ovsGroups.split('\n').filter((line) => line.includes('group_id=')).length,
        rssStartMiB,
        rssMiB: rss,
        memberships: status.members,
      },
      totalSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await lab.destroy();
  }
}

const ms = (value: number) => `${value.toFixed(2)} ms`;
const spread = (d: Distribution) =>
  `p50 ${ms(d.p50)}, p90 ${ms(d.p90)}, p99 ${ms(d.p99)}, max ${ms(d.max)} (n=${d.count})`;

export function sourcesReport(figures: SourcesFigures): string[] {
  const s = figures.scale;
  return [
    `  join latency, report on the wire → first datagram, the two kinds side by side in one receiver (${figures.sourceSpecific.joins} joins each):`,
    `    source-specific (S, ${SOURCE_GROUP}): ${spread(figures.sourceSpecific.join)}; ${figures.sourceSpecific.joinsWithoutData} joins without data`,
    `    plain (*, ${PLAIN_GROUP}):            ${spread(figures.plain.join)}; ${figures.plain.joinsWithoutData} joins without data`,
    `  ${s.pods} pods × ${s.groups.toLocaleString('en-US')} groups × ${s.sources} sources each (INCLUDE), after the daemon's first general query (Max Resp Time ${QUERY_RESPONSE_INTERVAL_S} s):`,
    s.convergenceMs === undefined
      ? `    NO FIGURE: ${s.problem ?? 'unknown'}`
      : `    all ${(s.groups * s.sources).toLocaleString('en-US')} (S,G) entries hold all ${s.pods} pods in OVS ${s.convergenceMs.toFixed(0)} ms after the query on the wire (OVS read ${s.polls} times meanwhile; ${s.syncs.toLocaleString('en-US')} group syncs)`,
    `    OVS: ${s.sourceFlows.toLocaleString('en-US')} (S,G) flows, ${s.groupFlows.toLocaleString('en-US')} (*,G) flows, ${s.ovsGroups.toLocaleString('en-US')} OVS groups`,
    `    daemon: ${s.memberships.toLocaleString('en-US')} memberships, RSS ${s.rssMiB.toFixed(1)} MiB (${s.rssStartMiB.toFixed(1)} MiB at start)`,
    `  (whole benchmark ${figures.totalSeconds.toFixed(0)} s)`,
  ];
}

export function sourcesOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): SourcesBenchOptions {
  return {
    joins: Number(env.BENCH_SOURCES_JOINS ?? 100),
    pods: Number(env.BENCH_SOURCES_PODS ?? 10),
    groups: Number(env.BENCH_SOURCES_GROUPS ?? 1000),
    sources: Number(env.BENCH_SOURCES_SOURCES ?? 10),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(sourcesReport(await benchSources(sourcesOptionsFromEnv())).join('\n'));
}
