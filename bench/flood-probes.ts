/**
 * The probes of bench/flood.ts that are not the victim: the daemon's and ovs-vswitchd's
 * CPU and memory from /proc, a FLOW_MOD round trip to ovs-vswitchd on a connection of
 * its own, the daemon's Prometheus metrics, and the expiry of the attackers' groups after
 * the flood.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ChildProcess, fork } from 'node:child_process';
import type { GroupView } from '../src/transport/control/daemon-view.js';
import { ControlClient } from '../src/transport/control/control-client.js';
import { sleep } from '../test/lab/lab.js';
import type { OvsNode } from '../test/lab/ovs.js';

const CLK_TCK = 100;

/** utime + stime of `pid`, in clock ticks. */
export function procTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime
}

/** Percent of one core `pid` used between two procTicks() readings `elapsedS` apart. */
export function cpuPercent(ticksBefore: number, ticksAfter: number, elapsedS: number): number {
  return ((ticksAfter - ticksBefore) / CLK_TCK / elapsedS) * 100;
}

export function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ---------------------------------------------------------------------------------------
// FLOW_MOD round trip

export interface FlowModRoundTrips {
  /** ms from sending the FLOW_MOD to the barrier's reply, one per probe. */
  roundTripsMs: number[];
  /** Probes the switch refused or that failed (the connection lost, a timeout). */
  failures: number;
}

export interface FlowModProbe {
  /** Stops probing (after the one in flight) and closes the connection. */
  stop(): Promise<FlowModRoundTrips>;
}

/**
 * Every `intervalMs`, one FLOW_MOD ADD of the same flow in table 200 (a table the daemon
 * never programs; after the first, OVS replaces the flow) and a barrier, on an OpenFlow
 * connection of its own to `node`'s bridge, timed from send to the barrier's reply. It
 * measures how long ovs-vswitchd keeps a controller's flow mods waiting while the flood
 * goes on: the daemon's own flow mods queue behind the same main loop. The loop runs in a
 * process of its own (flow-mod-probe-process.ts), out of the way of the bench's own work.
 */
export async function startFlowModProbe(node: OvsNode, intervalMs = 100): Promise<FlowModProbe> {
  // fork() runs it with this process's node flags (--import tsx).
  const probe = fork(fileURLToPath(new URL('./flow-mod-probe-process.ts', import.meta.url)), [
    node.openflowEndpoint,
    String(intervalMs),
  ]);
  await nextMessage(probe); // connected, probing
  return {
    async stop() {
      const figures = nextMessage(probe);
      probe.send('stop');
      return (await figures) as FlowModRoundTrips;
    },
  };
}

/** The probe's next message; rejects if it fails or ends first. */
function nextMessage(probe: ChildProcess): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const done = (settle: () => void) => {
      probe.off('message', onMessage).off('error', onError).off('exit', onExit);
      settle();
    };
    const onMessage = (message: unknown) => done(() => resolve(message));
    const onError = (error: Error) => done(() => reject(error));
    const onExit = (code: number | null) => done(() => reject(new Error(`the FLOW_MOD probe ended (exit ${code})`)));
    probe.on('message', onMessage).on('error', onError).on('exit', onExit);
  });
}

// ---------------------------------------------------------------------------------------
// Metrics

export interface MeterAndRefusals {
  /**
   * Sum of mcastctl_igmp_meter_drops_total over the attackers' ports; undefined when the daemon exports no such metric.
   */
  attackerMeterDrops: number | undefined;
  /** The same over every other port (the victim, the sender): expected 0. */
  otherMeterDrops: number | undefined;
  /** mcastctl_igmp_refused_total by reason; empty when the scrape failed. */
  refusedByReason: Record<string, number>;
  /** Why the scrape failed, if it did. */
  scrapeError: string | undefined;
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]!] = label[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * Scrapes `url` (the daemon's `metrics` URL, from its 'listening' log line) inside `node`'s namespace. Never throws.
 */
export async function scrapeMeterAndRefusals(
  node: OvsNode,
  url: string,
  attackerPorts: ReadonlySet<string>,
): Promise<MeterAndRefusals> {
  let text: string;
  try {
    text = (await node.exec(['curl', '-sf', '--max-time', '5', url])).stdout;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return { attackerMeterDrops: undefined, otherMeterDrops: undefined, refusedByReason: {}, scrapeError: reason };
  }
  const samples = parseExposition(text);
  const drops = samples.filter((sample) => sample.name === 'mcastctl_igmp_meter_drops_total');
  const sum = (of: Sample[]) => of.reduce((total, sample) => total + sample.value, 0);
  const exported = text.includes('mcastctl_igmp_meter_drops_total');
  const refusedByReason: Record<string, number> = {};
  for (const sample of samples.filter((s) => s.name === 'mcastctl_igmp_refused_total'))
    refusedByReason[sample.labels['reason'] ?? '?'] = sample.value;
  return {
    attackerMeterDrops: exported
      ? sum(drops.filter((sample) => attackerPorts.has(sample.labels['port'] ?? '')))
      : undefined,
    otherMeterDrops: exported
      ? sum(drops.filter((sample) => !attackerPorts.has(sample.labels['port'] ?? '')))
      : undefined,
    refusedByReason,
    scrapeError: undefined,
  };
}

/**
 * The daemon's V8 heap in use and taken from the system (committed), and its memory outside the heap (buffers), MiB,
 * from prom-client's process metrics; undefined when they cannot be read.
 */
export async function scrapeHeapUsedMiB(
  node: OvsNode,
  url: string | undefined,
): Promise<{ heap: number; committed: number; external: number } | undefined> {
  if (url === undefined) return undefined;
  try {
    const samples = parseExposition((await node.exec(['curl', '-sf', '--max-time', '5', url])).stdout);
    const mib = (name: string) => (samples.find((entry) => entry.name === name)?.value ?? Number.NaN) / 2 ** 20;
    return {
      heap: mib('nodejs_heap_size_used_bytes'),
      committed: mib('nodejs_heap_size_total_bytes'),
      external: mib('nodejs_external_memory_bytes'),
    };
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// After the flood

export interface Expiry {
  /** The attackers' groups the daemon held when the flood ended. */
  groupsAtFloodEnd: number;
  /** s from the end of the flood until the daemon held none of them; undefined: still some at the end of the watch. */
  goneAfterS: number | undefined;
  /** The attackers' groups left at the end of the watch. */
  groupsLeft: number;
  /** The daemon's RSS when the watch ended. */
  endRssMiB: number;
  /** The highest RSS seen during the watch. */
  peakRssMiB: number;
}

/**
 * Once a second, how many groups other than `keep` the daemon holds (the control socket's
 * `groups`, what `mcastctl groups --json` shows) and its RSS, until none is left or
 * `limitS` has passed since `floodEndedAt` (a performance.now() time).
 */
export async function watchExpiry(options: {
  controlSocket: string;
  pid: number;
  keep: string;
  floodEndedAt: number;
  limitS: number;
}): Promise<Expiry> {
  const client = await ControlClient.connect(options.controlSocket);
  const attackerGroups = async () =>
    (await client.request<GroupView[]>('groups')).filter((view) => view.group !== options.keep).length;
  try {
    const groupsAtFloodEnd = await attackerGroups();
    let groupsLeft = groupsAtFloodEnd;
    let goneAfterS: number | undefined;
    let rss = rssMiB(options.pid);
    let peakRssMiB = rss;
    while (groupsLeft > 0) {
      const sinceEndS = (performance.now() - options.floodEndedAt) / 1000;
      if (sinceEndS > options.limitS) break;
      await sleep(1_000);
      groupsLeft = await attackerGroups();
      rss = rssMiB(options.pid);
      peakRssMiB = Math.max(peakRssMiB, rss);
      if (groupsLeft === 0) goneAfterS = (performance.now() - options.floodEndedAt) / 1000;
    }
    if (groupsAtFloodEnd === 0) goneAfterS = 0;
    return { groupsAtFloodEnd, goneAfterS, groupsLeft, endRssMiB: rss, peakRssMiB };
  } finally {
    client.close();
  }
}
