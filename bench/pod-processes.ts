/**
 * What the lab benches (daemon.ts, tunnel.ts) share: the pods' python helpers that send a
 * paced stream, cycle a membership and hold many at once, a child's "ready" line and its stop, and the
 * distribution of a set of latencies, and the joins, leaves and datagrams of a group in a
 * pod's capture.
 */
import { decode as decodeIgmp, type IgmpMessage } from '../src/packet/igmp/index.js';
import { readPcapFile } from '../src/packet/pcap/index.js';

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
  return {
    count: sorted.length,
    p50: at(0.5),
    p90: at(0.9),
    p95: at(0.95),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

/** Sends UDP to group:port every `intervalMs` (paced on a monotonic clock) until killed. */
export const SENDER_PY = `
import socket, sys, time
group, port, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
print("ready", flush=True)
payload = b"x" * 18
nxt = time.perf_counter()
while True:
    s.sendto(payload, (group, port))
    nxt += interval
    delay = nxt - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    elif delay < -0.05:
        nxt = time.perf_counter()
`;

/**
 * Joins and leaves `group` `count` times (IP_ADD/DROP_MEMBERSHIP on the multicast route's interface), then prints
 * "done".
 */
export const CYCLER_PY = `
import socket, sys, time
group, count, joined, left = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, float(sys.argv[4]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
mreq = socket.inet_aton(group) + socket.inet_aton("0.0.0.0")
time.sleep(left)
for i in range(count):
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    time.sleep(joined)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, mreq)
    time.sleep(left)
print("done", flush=True)
`;

/**
 * Joins and leaves (`source`, `group`) `count` times (IP_ADD/DROP_SOURCE_MEMBERSHIP on the
 * multicast route's interface), then prints "done".
 */
export const SOURCE_CYCLER_PY = `
import socket, sys, time
IP_ADD_SOURCE_MEMBERSHIP, IP_DROP_SOURCE_MEMBERSHIP = 39, 40  # linux/in.h (Python's socket module may lack them)
group, source, count, joined, left = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000, float(sys.argv[5]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# struct ip_mreq_source: multiaddr, interface, sourceaddr
mreq = socket.inet_aton(group) + socket.inet_aton("0.0.0.0") + socket.inet_aton(source)
time.sleep(left)
for i in range(count):
    s.setsockopt(socket.IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, mreq)
    time.sleep(joined)
    s.setsockopt(socket.IPPROTO_IP, IP_DROP_SOURCE_MEMBERSHIP, mreq)
    time.sleep(left)
print("done", flush=True)
`;

/** What a pod's wire shows of one group: its joins and leaves, and datagrams to it. */
export type WireEvent = { ts: number; kind: 'join' | 'leave' | 'data' };

/**
 * The IGMP state changes for `group` and the UDP datagrams to it in a pcap of an Ethernet
 * interface, in order. With `source`: the joins and leaves of (source, group) (ALLOW and
 * BLOCK of it), and only datagrams from it.
 */
export async function wireEvents(file: string, group: string, source?: string): Promise<WireEvent[]> {
  const events: WireEvent[] = [];
  const wanted = group.split('.').map(Number);
  const from = source?.split('.').map(Number);
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (b.length < 34 || b[12] !== 0x08 || b[13] !== 0x00) return;
    const ihl = (b[14]! & 0x0f) * 4;
    const total = (b[16]! << 8) | b[17]!;
    const protocol = b[23];
    const end = Math.min(b.length, 14 + total);
    if (protocol === 17) {
      const fromSource =
        from === undefined || (b[26] === from[0] && b[27] === from[1] && b[28] === from[2] && b[29] === from[3]);
      if (fromSource && b[30] === wanted[0] && b[31] === wanted[1] && b[32] === wanted[2] && b[33] === wanted[3])
        events.push({ ts: record.ts, kind: 'data' });
      return;
    }
    if (protocol !== 2) return;
    let message: IgmpMessage;
    try {
      message = decodeIgmp(b, 14 + ihl, end);
    } catch {
      return;
    }
    if (message.kind === 'leave' && message.group === group) events.push({ ts: record.ts, kind: 'leave' });
    else if (message.kind === 'report') {
      if (message.version !== 3) {
        if (message.group === group) events.push({ ts: record.ts, kind: 'join' });
        return;
      }
      for (const r of message.records) {
        if (r.group !== group) continue;
        if (source !== undefined) {
          const names = r.sources.includes(source);
          if (names && r.type === 'ALLOW_NEW_SOURCES') events.push({ ts: record.ts, kind: 'join' });
          else if ((names && r.type === 'BLOCK_OLD_SOURCES') || (!names && r.type === 'CHANGE_TO_INCLUDE_MODE'))
            events.push({ ts: record.ts, kind: 'leave' });
          continue;
        }
        // Any-source join: TO_EX{} (or IS_EX{} answering a query); leave: TO_IN{}.
        if (r.type === 'CHANGE_TO_EXCLUDE_MODE' || r.type === 'MODE_IS_EXCLUDE')
          events.push({ ts: record.ts, kind: 'join' });
        else if ((r.type === 'CHANGE_TO_INCLUDE_MODE' || r.type === 'MODE_IS_INCLUDE') && r.sources.length === 0)
          events.push({ ts: record.ts, kind: 'leave' });
      }
    }
  });
  return events;
}

/** When (ms, the capture's clock) the first IGMP query in a pcap of an Ethernet interface was seen; undefined: none. */
export async function firstQueryMs(file: string): Promise<number | undefined> {
  let first: number | undefined;
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (first !== undefined || b.length < 34 || b[23] !== 2) return;
    const ihl = (b[14]! & 0x0f) * 4;
    if (b[14 + ihl] === 0x11) first = record.ts * 1000;
  });
  return first;
}
