/**
 * `mcastctl top`'s figures and screen: the per-pod traffic counters read again and again,
 * turned into packets and bytes a second per pod and per group (a group's is what its pods
 * received in all) over a window of the last few seconds, busiest first; and the lines
 * that show them in a terminal of a given size.
 *
 * Why a window and not the last interval: Open vSwitch adds what its datapath counted to
 * the counters it reports only every half second or so (when its revalidators next walk
 * the datapath's flows). A read one second after another holds one, two or three of those
 * additions, so a steady 100 packets a second reads 50, 100 or 150. Over five seconds the
 * error is a tenth at most.
 */
import type { ChalkInstance } from 'chalk';
import type { PodTrafficView, TrafficCountView, TrafficStatsView } from '../../transport/control/daemon-view.js';

/** The least span the rates are averaged over (a longer read interval is the span itself). */
export const RATE_WINDOW_SECONDS = 5;

interface Rate {
  packetsPerSecond: number;
  bytesPerSecond: number;
}

interface PodRate {
  /** "namespace/name", or the port's name where it names no pod. */
  pod: string;
  port: string;
  received: Rate;
  /** Absent while sent is not counted (trafficCounters off). */
  sent?: Rate;
}

interface GroupRate {
  group: string;
  /** What its pods received, in all. */
  received: Rate;
  /** What its pods sent to it, in all (absent while not counted). */
  sent?: Rate;
  /** Busiest first. */
  pods: PodRate[];
}

/** What `top --once --json` prints. */
export interface TrafficRates {
  /** Seconds between the first and the last read the rates come from. */
  windowSeconds: number;
  /** Whether what pods send is counted (trafficCounters). */
  counting: boolean;
  /** (pod, group) pairs past maxTrafficCounters, not counted: above 0 the figures are partial. */
  uncounted: number;
  /** Busiest first (received packets a second), then by address. */
  groups: GroupRate[];
}

const ZERO: TrafficCountView = { packets: 0, bytes: 0 };

/** What a (pod, group) pair counted since the window first saw it, whatever restarts its counters had. */
interface PairTotals {
  received: TrafficCountView;
  sent?: TrafficCountView;
}

interface WindowRead {
  /** Seconds, on the caller's clock. */
  at: number;
  stats: TrafficStatsView;
  totals: Map<string, PairTotals>;
}

const pairKey = (entry: PodTrafficView) => `${entry.group} ${entry.port.ofport}`;

/**
 * The reads of the last `seconds` (and the one just before them), each pair's counters made
 * to only grow: a pair new to the window counts from zero, and a counter that went down
 * was started again (its OVS group rewritten) and counts on from zero.
 */
export class TrafficRateWindow {
  readonly #seconds: number;
  readonly #reads: WindowRead[] = [];

  constructor(options: { seconds: number }) {
    this.#seconds = options.seconds;
  }

  /** The least span of the reads the rates are averaged over. */
  get seconds(): number {
    return this.#seconds;
  }

  /** Adds a read taken at `at` seconds (later than the one before). */
  add(stats: TrafficStatsView, at: number): void {
    const previous = this.#reads.at(-1);
    const raw = new Map(previous?.stats.entries.map((entry) => [pairKey(entry), entry]));
    const totals = new Map<string, PairTotals>();
    for (const entry of stats.entries) {
      const key = pairKey(entry);
      const [then, total] = [raw.get(key), previous?.totals.get(key)];
      const received = grown(total?.received, then?.received, entry.received);
      const sent = entry.sent === undefined ? undefined : grown(total?.sent, then?.sent, entry.sent);
      totals.set(key, sent === undefined ? { received } : { received, sent });
    }
    this.#reads.push({ at, stats, totals });
    while (this.#reads.length > 2 && at - this.#reads[1]!.at >= this.#seconds) this.#reads.shift();
  }

  /** Seconds of reads still wanted before the first rates (0: they are ready). */
  get waitingSeconds(): number {
    const [first, last] = [this.#reads[0], this.#reads.at(-1)];
    if (first === undefined || last === undefined || first === last) return this.#seconds;
    return Math.max(0, this.#seconds - (last.at - first.at));
  }

  /** The rates over the window, once its reads span `seconds`; until then undefined. */
  rates(): TrafficRates | undefined {
    const [first, last] = [this.#reads[0], this.#reads.at(-1)];
    if (first === undefined || last === undefined || this.waitingSeconds > 0) return undefined;
    const seconds = last.at - first.at;
    // A pair that left the window's reads and came back has a fresh total: it counts from zero.
    const rate = (now: TrafficCountView, then: TrafficCountView | undefined): Rate => {
      const base = then === undefined || now.packets < then.packets || now.bytes < then.bytes ? ZERO : then;
      return {
        packetsPerSecond: (now.packets - base.packets) / seconds,
        bytesPerSecond: (now.bytes - base.bytes) / seconds,
      };
    };
    const groups = new Map<string, GroupRate>();
    for (const entry of last.stats.entries) {
      const [now, then] = [last.totals.get(pairKey(entry))!, first.totals.get(pairKey(entry))];
      const pod: PodRate = {
        pod: entry.port.pod ?? entry.port.name,
        port: entry.port.name,
        received: rate(now.received, then?.received),
        ...(now.sent === undefined ? {} : { sent: rate(now.sent, then?.sent) }),
      };
      const group = groups.get(entry.group) ?? { group: entry.group, received: { ...NO_RATE }, pods: [] };
      group.pods.push(pod);
      group.received = sum(group.received, pod.received);
      if (pod.sent !== undefined) group.sent = sum(group.sent ?? NO_RATE, pod.sent);
      groups.set(entry.group, group);
    }
    const busiest = (a: { received: Rate }, b: { received: Rate }) =>
      b.received.packetsPerSecond - a.received.packetsPerSecond;
    for (const group of groups.values()) group.pods.sort((a, b) => busiest(a, b) || a.pod.localeCompare(b.pod));
    return {
      windowSeconds: seconds,
      counting: last.stats.counting,
      uncounted: last.stats.uncounted,
      groups: [...groups.values()].sort((a, b) => busiest(a, b) || a.group.localeCompare(b.group)),
    };
  }
}

/** `total` grown by what `now` counted since `then` (all of it when the counter is new or started again). */
function grown(total: TrafficCountView | undefined, then: TrafficCountView | undefined, now: TrafficCountView) {
  if (total === undefined || then === undefined) return now;
  const restarted = now.packets < then.packets || now.bytes < then.bytes;
  const base = restarted ? ZERO : then;
  return { packets: total.packets + now.packets - base.packets, bytes: total.bytes + now.bytes - base.bytes };
}

const NO_RATE: Rate = { packetsPerSecond: 0, bytesPerSecond: 0 };

function sum(a: Rate, b: Rate): Rate {
  return {
    packetsPerSecond: a.packetsPerSecond + b.packetsPerSecond,
    bytesPerSecond: a.bytesPerSecond + b.bytesPerSecond,
  };
}

export interface ScreenSize {
  columns: number;
  rows: number;
}

/**
 * The screen: a heading, then a row per group (its totals, bold) and under it a row per
 * pod, as many as fit `size`; every line cut to its width. The last line says how many
 * rows did not fit.
 */
export function topLines(rates: TrafficRates, size: ScreenSize, style: ChalkInstance, now: Date): string[] {
  const head = ['Group / pod', 'Rx pkt/s', 'Rx bytes/s', 'Tx pkt/s', 'Tx bytes/s'];
  const rows: Array<{ cells: string[]; group: boolean }> = [];
  for (const group of rates.groups) {
    rows.push({ cells: [group.group, ...figures(group.received), ...figures(group.sent)], group: true });
    for (const pod of group.pods)
      rows.push({ cells: [`  ${pod.pod}`, ...figures(pod.received), ...figures(pod.sent)], group: false });
  }
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row.cells[column]!.length)));
  const format = (cells: readonly string[]) =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join('  ');
  const cut = (text: string) => (text.length > size.columns ? text.slice(0, size.columns) : text);
  const heading = `mcastctl top: ${groupCount(rates.groups.length)}, a second over the last ${rates.windowSeconds.toFixed(1)} s, ${clockOf(now)}; q quits`;
  const notes = [
    ...(rates.counting ? [] : ['sent: not counted (trafficCounters is off)']),
    ...(rates.uncounted > 0 ? [`partial: ${rates.uncounted} (pod, group) pairs past maxTrafficCounters`] : []),
  ];
  const room = Math.max(0, size.rows - 3 - notes.length);
  const shown = rows.slice(0, rows.length > room ? Math.max(0, room - 1) : room);
  const lines = [
    style.bold(cut(heading)),
    style.bold(cut(format(head))),
    ...shown.map((row) => (row.group ? style.bold(cut(format(row.cells))) : cut(format(row.cells)))),
  ];
  if (rows.length === 0) lines.push(style.dim('no pod is counted in any group'));
  if (shown.length < rows.length) lines.push(style.dim(cut(`… ${rows.length - shown.length} more rows`)));
  for (const note of notes) lines.push(style.dim(cut(note)));
  return lines;
}

function figures(rate: Rate | undefined): [string, string] {
  if (rate === undefined) return ['-', '-'];
  return [rate.packetsPerSecond.toFixed(1), Math.round(rate.bytesPerSecond).toLocaleString('en-US')];
}

/** The screen before the first rates: how many groups, and how long until their rates. */
export function measuringLines(stats: TrafficStatsView, window: TrafficRateWindow, style: ChalkInstance, now: Date) {
  const groups = new Set(stats.entries.map((entry) => entry.group)).size;
  const wait = Math.ceil(window.waitingSeconds);
  return [
    style.bold(`mcastctl top: ${groupCount(groups)}, ${clockOf(now)}; q quits`),
    style.dim(`measuring: rates are averaged over ${window.seconds} s, the first in ${wait} s`),
  ];
}

const groupCount = (count: number) => `${count} group${count === 1 ? '' : 's'}`;
const clockOf = (now: Date) => `${now.toISOString().slice(11, 19)} UTC`;
