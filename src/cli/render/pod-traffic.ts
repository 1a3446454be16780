/** How `groups --stats` shows the per-pod traffic counters: one row per pod and group. */
import type { TrafficCountView, TrafficStatsView } from '../../transport/control/daemon-view.js';
import type { Output } from './output.js';

/** `n` with thousands grouped, as people read counters. */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Its packets and bytes, or dashes for a figure not counted. */
function cells(figure: TrafficCountView | undefined, dim: (text: string) => string): [string, string] {
  return figure === undefined ? [dim('-'), dim('-')] : [count(figure.packets), count(figure.bytes)];
}

export function printPodTraffic(output: Output, stats: TrafficStatsView): void {
  const style = output.style;
  if (stats.entries.length === 0) output.line('no pod is counted in any group');
  else {
    const rows = stats.entries.map((entry) => [
      entry.group,
      entry.port.pod ?? '-',
      `${entry.port.name} (${entry.port.ofport})`,
      ...cells(entry.received, style.dim),
      ...cells(entry.sent, style.dim),
    ]);
    output.table({ head: ['Group', 'Pod', 'Port', 'Rx packets', 'Rx bytes', 'Tx packets', 'Tx bytes'], rows });
  }
  output.line(style.dim('bytes as OVS counts them: whole Ethernet frames, without the FCS'));
  if (!stats.counting) output.line(style.dim('sent: not counted (trafficCounters is off)'));
  if (stats.uncounted > 0)
    output.line(
      style.yellow(
        `partial: ${stats.uncounted} (pod, group) pair${stats.uncounted === 1 ? '' : 's'} past maxTrafficCounters (${stats.limit}) not counted`,
      ),
    );
}
