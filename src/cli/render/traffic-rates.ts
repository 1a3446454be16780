/**
 * `mcastctl top`'s figures and screen: the per-pod traffic counters read twice, turned into
 * packets and bytes a second per pod and per group (a group's is what its pods received
 * in all), busiest first; and the lines that show them in a terminal of a given size.
 */
import type { ChalkInstance } from 'chalk';
import type { PodTrafficView, TrafficCountView, TrafficStatsView } from '../../transport/control/daemon-view.js';

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
  /** Seconds between the two reads. */
  intervalSeconds: number;
  /** Whether what pods send is counted (trafficCounters). */
  counting: boolean;
  /** (pod, group) pairs past maxTrafficCounters, not counted: above 0 the figures are partial. */
  uncounted: number;
  /** Busiest first (received packets a second), then by address. */
  groups: GroupRate[];
}

const ZERO: TrafficCountView = { packets: 0, bytes: 0 };

/**
 * The rates between two reads `seconds` apart. A pair new in `after` counts from zero; a
 * counter that went down was started again (its OVS group rewritten) and counts from zero.
 */
export function trafficRatesOf(before: TrafficStatsView, after: TrafficStatsView, seconds: number): TrafficRates {
  const key = (entry: PodTrafficView) => `${entry.group} ${entry.port.ofport}`;
  const earlier = new Map(before.entries.map((entry) => [key(entry), entry]));
  const rate = (now: TrafficCountView, then: TrafficCountView | undefined): Rate => {
    const base = then === undefined || now.packets < then.packets || now.bytes < then.bytes ? ZERO : then;
    return {
      packetsPerSecond: (now.packets - base.packets) / seconds,
      bytesPerSecond: (now.bytes - base.bytes) / seconds,
    };
  };
  const groups = new Map<string, GroupRate>();
  for (const entry of after.entries) {
    const then = earlier.get(key(entry));
    const pod: PodRate = {
      pod: entry.port.pod ?? entry.port.name,
      port: entry.port.name,
      received: rate(entry.received, then?.received),
      ...(entry.sent === undefined ? {} : { sent: rate(entry.sent, then?.sent) }),
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
    intervalSeconds: seconds,
    counting: after.counting,
    uncounted: after.uncounted,
    groups: [...groups.values()].sort((a, b) => busiest(a, b) || a.group.localeCompare(b.group)),
  };
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
  const heading = `mcastctl top: ${rates.groups.length} group${rates.groups.length === 1 ? '' : 's'}, every ${Number(rates.intervalSeconds.toFixed(1))} s, ${now.toISOString().slice(11, 19)} UTC; q quits`;
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
