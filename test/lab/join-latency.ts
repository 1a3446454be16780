/**
 * How long a pod's join takes as the pod sees it on its own wire (tcpdump on its eth0,
 * kernel timestamps): from its report to the first datagram of the group, while a sender
 * streams to the group every 2 ms. The tests' measure of a join under load (a flood, say);
 * `npm run bench -- daemon` has the fuller one, leg by leg.
 */
import { waitUntil, sleep, type Lab } from './lab.js';
import type { OvsPod } from './ovs.js';
import { isData, isReport, readPcap } from './pcap-packets.js';

export interface JoinLatencyOptions {
  lab: Lab;
  sender: OvsPod;
  member: OvsPod;
  /** Joined one after the other, each left before the next. */
  groups: readonly string[];
  port: number;
  /** Names the capture file. */
  tag: string;
}

/** The sender's datagrams a join waits for: 2 ms apart, so a join is measured to within 2 ms. */
const STREAM_INTERVAL_MS = 2;
const STREAM_COUNT = 400;

/** Each group's join latency in milliseconds, in the order of `groups`; throws when a join got no datagram. */
export async function joinLatencies(options: JoinLatencyOptions): Promise<number[]> {
  const { lab, sender, member, groups, port, tag } = options;
  const capture = await lab.startTcpdump(member.ns, member.iface, lab.file(`${tag}-joins.pcap`), {
    filter: ['igmp', 'or', 'udp', 'port', String(port)],
  });
  try {
    for (const group of groups) {
      const streaming = sender.send(group, port, STREAM_COUNT, { intervalMs: STREAM_INTERVAL_MS, tag });
      // The stream runs before the join: its first datagram after the report is the join's.
      await sleep(100);
      const receiver = await member.listen(group, port);
      await waitUntil(`${member.name} to get ${group}`, async () => receiver.received.length > 0, 3000).catch(
        () => undefined,
      );
      await receiver.stop();
      await streaming;
    }
  } finally {
    await capture.stop();
  }
  const packets = readPcap(capture.file);
  return groups.map((group) => {
    const report = packets.find((packet) => isReport(packet, member.address, group));
    if (report === undefined) throw new Error(`no report of ${member.name} for ${group} on its wire`);
    const first = packets.find((packet) => packet.ts >= report.ts && isData(packet, group, port));
    if (first === undefined) throw new Error(`no datagram of ${group} reached ${member.name} after its report`);
    return first.ts - report.ts;
  });
}

/** The nearest-rank percentile `p` (0 to 100) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}
