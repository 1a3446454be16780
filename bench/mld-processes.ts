/**
 * The IPv6 side of the pods' helpers in pod-processes.ts: a paced UDP stream to an IPv6
 * group, a membership cycled through the kernel's own socket options (so that the kernel
 * sends the MLDv2), and the joins, leaves and datagrams of a group in a pod's capture.
 */
import { canonicalIPv6 } from '../src/wire/ipv6-address.js';
import { decode as decodeIpv6 } from '../src/packet/ipv6/header.js';
import { decode as decodeMld, isMldType, type MldMessage } from '../src/packet/mld/index.js';
import { readPcapFile } from '../src/packet/pcap/index.js';
import type { WireEvent } from './pod-processes.js';

/**
 * Sends UDP to [group]:port out of `iface` every `intervalMs` (paced on a monotonic clock)
 * until killed. argv: group, port, interval ms, interface. Hop limit 1, no loopback, as
 * SENDER_PY does for IPv4.
 */
export const SENDER6_PY = `
import socket, struct, sys, time
group, port, interval, iface = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, sys.argv[4]
ifindex = socket.if_nametoindex(iface)
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, ifindex)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
print("ready", flush=True)
payload = b"x" * 18
destination = (group, port, 0, ifindex)
nxt = time.perf_counter()
while True:
    s.sendto(payload, destination)
    nxt += interval
    delay = nxt - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    elif delay < -0.05:
        nxt = time.perf_counter()
`;

/**
 * Joins and leaves the IPv6 `group` on `iface` `count` times (IPV6_JOIN_GROUP /
 * IPV6_LEAVE_GROUP, struct ipv6_mreq: the address and the interface index), then prints
 * "done". argv: group, count, joined ms, left ms, interface.
 */
export const CYCLER6_PY = `
import socket, struct, sys, time
group, count, joined, left, iface = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, float(sys.argv[4]) / 1000, sys.argv[5]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
mreq = struct.pack("=16sI", socket.inet_pton(socket.AF_INET6, group), socket.if_nametoindex(iface))
time.sleep(left)
for i in range(count):
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
    time.sleep(joined)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_LEAVE_GROUP, mreq)
    time.sleep(left)
print("done", flush=True)
`;

const ETHERTYPE_IPV6 = 0x86dd;
const ETHERNET_HEADER_LENGTH = 14;
const IP_PROTOCOL_UDP = 17;
const IP_PROTOCOL_ICMPV6 = 58;

/**
 * The MLD state changes for the IPv6 `group` and the UDP datagrams to it in a pcap of an
 * Ethernet interface, in order: the IPv6 counterpart of wireEvents. An MLDv2 record
 * TO_EX{} (or IS_EX{} answering a query) is a join, TO_IN{} (or IS_IN{}) a leave; an
 * MLDv1 report and done count too. Frames that do not decode (or fail MLD's checksum)
 * are skipped.
 */
export async function wireEvents6(file: string, group: string): Promise<WireEvent[]> {
  const wanted = canonicalIPv6(group);
  if (wanted === undefined) throw new RangeError(`${group} is no IPv6 address`);
  const events: WireEvent[] = [];
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (b.length < ETHERNET_HEADER_LENGTH + 40 || ((b[12]! << 8) | b[13]!) !== ETHERTYPE_IPV6) return;
    let message: MldMessage;
    try {
      const ip = decodeIpv6(b, ETHERNET_HEADER_LENGTH, b.length);
      if (ip.upperProtocol === IP_PROTOCOL_UDP) {
        if (ip.header.dst === wanted) events.push({ ts: record.ts, kind: 'data' });
        return;
      }
      if (
        ip.upperProtocol !== IP_PROTOCOL_ICMPV6 ||
        ip.payloadEnd <= ip.payloadStart ||
        !isMldType(b[ip.payloadStart]!)
      )
        return;
      message = decodeMld(b, ip.payloadStart, ip.payloadEnd, ip);
    } catch {
      return;
    }
    if (message.kind === 'leave' && message.group === wanted) events.push({ ts: record.ts, kind: 'leave' });
    else if (message.kind === 'report') {
      if (message.version === 1) {
        if (message.group === wanted) events.push({ ts: record.ts, kind: 'join' });
        return;
      }
      for (const r of message.records) {
        if (r.group !== wanted) continue;
        if (r.type === 'CHANGE_TO_EXCLUDE_MODE' || r.type === 'MODE_IS_EXCLUDE')
          events.push({ ts: record.ts, kind: 'join' });
        else if ((r.type === 'CHANGE_TO_INCLUDE_MODE' || r.type === 'MODE_IS_INCLUDE') && r.sources.length === 0)
          events.push({ ts: record.ts, kind: 'leave' });
      }
    }
  });
  return events;
}
