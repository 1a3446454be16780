/**
 * The per-pod traffic series of the metrics (mcastctl_pod_group_*): what each counted
 * pod received from and sent to each group, read from the switch's counters at each
 * scrape through the view's `stats` (one read a scrape, shared by the series). Only the
 * counted (pod, group) pairs have series, so their number is bounded by maxTrafficCounters.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DaemonView, TrafficStatsView } from '../../../transport/control/daemon-view.js';

type Figure = (stats: TrafficStatsView['entries'][number]) => number | undefined;

const SERIES: ReadonlyArray<{ name: string; help: string; figure: Figure }> = [
  {
    name: 'mcastctl_pod_group_received_packets_total',
    help: "Multicast frames of a group OVS delivered to a pod (its port's buckets in the group's OVS groups), by pod and group.",
    figure: (entry) => entry.received.packets,
  },
  {
    name: 'mcastctl_pod_group_received_bytes_total',
    help: 'Bytes of those frames as OVS counts them: whole Ethernet frames without the FCS (a UDP datagram of 200 octets is 242).',
    figure: (entry) => entry.received.bytes,
  },
  {
    name: 'mcastctl_pod_group_sent_packets_total',
    help: 'Multicast frames a pod sent to a group (its sender counting flows; only with trafficCounters on), by pod and group.',
    figure: (entry) => entry.sent?.packets,
  },
  {
    name: 'mcastctl_pod_group_sent_bytes_total',
    help: 'Bytes of those frames as OVS counts them: whole Ethernet frames without the FCS.',
    figure: (entry) => entry.sent?.bytes,
  },
];

export function registerTrafficMetrics(view: DaemonView, registers: Registry[]): void {
  // The series are collected together: they share the read in flight.
  let reading: Promise<TrafficStatsView | undefined> | undefined;
  const read = (): Promise<TrafficStatsView | undefined> =>
    (reading ??= Promise.resolve()
      .then(() => view.stats())
      // A switch that does not answer now (a reconnect) shows no series rather than failing the scrape.
      .catch(() => undefined)
      .finally(() => setImmediate(() => (reading = undefined))));
  for (const { name, help, figure } of SERIES) {
    new Counter({
      name,
      help,
      labelNames: ['pod', 'group'],
      registers,
      async collect() {
        const stats = await read();
        this.reset();
        for (const entry of stats?.entries ?? []) {
          const value = figure(entry);
          if (value !== undefined) this.inc({ pod: entry.port.pod ?? entry.port.name, group: entry.group }, value);
        }
      },
    });
  }
  new Gauge({
    name: 'mcastctl_pod_group_uncounted',
    help: '(pod, group) member pairs left out of the per-pod traffic counters past maxTrafficCounters: above 0, those figures are partial.',
    registers,
    async collect() {
      this.set((await read())?.uncounted ?? 0);
    },
  });
}
