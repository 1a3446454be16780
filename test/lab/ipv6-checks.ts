/**
 * What the IPv6 daemon tests check with, beside the lab: the OVS group an IPv6 group's
 * flow points to, an ICMPv6 echo (this machine has no `ping`), a pcap reader of their own
 * for IPv6 frames (the tests do not trust the project's codecs).
 */
import { readFileSync } from 'node:fs';
import { type Lab, waitUntil } from './lab.js';
import type { OvsNode, OvsPod } from './ovs.js';
import { portsOfFlow } from './switch-checks.js';

/**
 * The output ports of the OVS group that the (*,G) flow for IPv6 `group` (ipv6_dst=group, any source) points to;
 * undefined without such a flow.
 */
export function ovsGroupPorts6(node: OvsNode, group: string): Promise<number[] | undefined> {
  return portsOfFlow(
    node,
    (line) =>
      !line.includes('ipv6_src=') && (line.includes(`ipv6_dst=${group} `) || line.includes(`ipv6_dst=${group},`)),
  );
}

/** Waits until the OVS group of IPv6 `group` forwards to every pod in `pods` and to none of `not`; its ports. */
export function waitForOvsMembers6(
  node: OvsNode,
  group: string,
  pods: readonly OvsPod[],
  not: readonly OvsPod[] = [],
  timeoutMs = 10_000,
): Promise<number[]> {
  return waitUntil(
    `OVS group of ${group} on ${node.name} to forward to ${pods.map((pod) => pod.name).join(',') || 'nobody'}${not.length > 0 ? ` and not to ${not.map((pod) => pod.name).join(',')}` : ''}`,
    async () => {
      const ports = (await ovsGroupPorts6(node, group)) ?? [];
      return pods.every((pod) => ports.includes(pod.ofport)) && !not.some((pod) => ports.includes(pod.ofport))
        ? ports
        : undefined;
    },
    timeoutMs,
  ).catch(async (error: unknown) => {
    // Say what OVS does hold for the group, so that "no flow at all" and "wrong ports" read apart.
    const flows = (await node.ofctl('dump-flows', node.bridge).catch(() => ''))
      .split('\n')
      .filter((line) => line.includes(`ipv6_dst=${group}`))
      .map((line) =>
        line.trim().replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,/g, ''),
      );
    throw new Error(
      `${String(error)}; OVS flows for ${group}: ${flows.length > 0 ? flows.join(' | ') : 'none'}; its group's ports: ${JSON.stringify(await ovsGroupPorts6(node, group).catch(() => undefined))}`,
    );
  });
}

/**
 * argv: address[%iface] count. ICMPv6 echo over a raw socket (this machine has no
 * `ping`; the kernel fills in the ICMPv6 checksum): `count` requests 200 ms apart, each
 * waiting up to 1 s for its reply. Prints "<replies>/<count>"; exit 0 when every one came.
 */
const PING6_PY = `
import os, select, socket, struct, sys, time
target, count = sys.argv[1], int(sys.argv[2])
host, _, scope = target.partition("%")
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
ident = os.getpid() & 0xFFFF
destination = (host, 0, 0, socket.if_nametoindex(scope) if scope else 0)
replies = 0
for seq in range(count):
    s.sendto(struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"mcl-ping", destination)
    deadline = time.time() + 1
    while True:
        left = deadline - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            break
        data, peer = s.recvfrom(2048)
        if len(data) >= 8 and data[0] == 129 and struct.unpack("!HH", data[4:8]) == (ident, seq):
            replies += 1
            break
    if seq + 1 < count:
        time.sleep(0.2)
print(f"{replies}/{count}", flush=True)
sys.exit(0 if replies == count else 1)
`;

/**
 * `ping -6 -c <count> <target>` from `pod`: resolves with "<replies>/<count>"; rejects unless every echo was answered.
 */
export async function ping6(lab: Lab, pod: OvsPod, target: string, count = 3): Promise<string> {
  const { stdout } = await lab.exec(pod.ns, ['python3', '-c', PING6_PY, target, String(count)], { timeoutMs: 15_000 });
  return stdout.trim();
}

export interface Packet6 {
  /** Epoch milliseconds. */
  ts: number;
  src: string;
  dst: string;
  /** ICMPv6 (past any extension headers): type; MLD: the group of a v1 message, the records of a v2 report. */
  icmp6?: { type: number; group?: string; records: Array<{ type: number; group: string; sources: number }> };
  /** UDP: destination port and payload as text. */
  udp?: { dstPort: number; payload: string };
}

/** 16 octets as text in RFC 5952 form (the WHATWG URL parser's serialiser, not the project's). */
export function ip6(b: Buffer, o: number): string {
  const words = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(o + 2 * i).toString(16));
  return new URL(`http://[${words.join(':')}]/`).hostname.slice(1, -1);
}

/** Reads an Ethernet pcap file's IPv6 frames (the file may still be written: a partial last record is ignored). */
export function readPcap6(file: string): Packet6[] {
  const data = readFileSync(file);
  if (data.length < 24) return [];
  const magicLE = data.readUInt32LE(0);
  const le = magicLE === 0xa1b2c3d4 || magicLE === 0xa1b23c4d;
  const u32 = (o: number) => (le ? data.readUInt32LE(o) : data.readUInt32BE(o));
  const nanos = (le ? magicLE : data.readUInt32BE(0)) === 0xa1b23c4d;
  const packets: Packet6[] = [];
  for (let o = 24; o + 16 <= data.length; ) {
    const sec = u32(o);
    const frac = u32(o + 4);
    const caplen = u32(o + 8);
    if (o + 16 + caplen > data.length) break;
    const frame = data.subarray(o + 16, o + 16 + caplen);
    o += 16 + caplen;
    if (frame.length < 54 || frame.readUInt16BE(12) !== 0x86dd) continue;
    const end = Math.min(frame.length, 54 + frame.readUInt16BE(18));
    const packet: Packet6 = {
      ts: sec * 1000 + (nanos ? frac / 1e6 : frac / 1e3),
      src: ip6(frame, 22),
      dst: ip6(frame, 38),
    };
    let next = frame[20]!;
    let l4 = 54;
    // Hop-by-hop (MLD's Router Alert), routing and destination options: skip to the upper layer.
    while ((next === 0 || next === 43 || next === 60) && l4 + 8 <= end) {
      next = frame[l4]!;
      l4 += (frame[l4 + 1]! + 1) * 8;
    }
    if (next === 58 && end - l4 >= 4) {
      const type = frame[l4]!;
      const records: NonNullable<Packet6['icmp6']>['records'] = [];
      let group: string | undefined;
      if ((type === 130 || type === 131 || type === 132) && end - l4 >= 24) group = ip6(frame, l4 + 8);
      if (type === 143 && end - l4 >= 8) {
        let r = l4 + 8;
        for (let n = frame.readUInt16BE(l4 + 6); n > 0 && r + 20 <= end; n--) {
          const sources = frame.readUInt16BE(r + 2);
          records.push({ type: frame[r]!, group: ip6(frame, r + 4), sources });
          r += 20 + sources * 16 + frame[r + 1]! * 4;
        }
      }
      packet.icmp6 = { type, records, ...(group === undefined ? {} : { group }) };
    } else if (next === 17 && end - l4 >= 8) {
      packet.udp = { dstPort: frame.readUInt16BE(l4 + 2), payload: frame.subarray(l4 + 8, end).toString('latin1') };
    }
    packets.push(packet);
  }
  return packets;
}

/** An MLD message from `host` that leaves `group`: a v1 done, or a v2 record CHANGE_TO_INCLUDE({}). */
export const isLeave = (packet: Packet6, host: string, group: string) =>
  packet.src === host &&
  packet.icmp6 !== undefined &&
  ((packet.icmp6.type === 132 && packet.icmp6.group === group) ||
    (packet.icmp6.type === 143 &&
      packet.icmp6.records.some((record) => record.type === 3 && record.group === group && record.sources === 0)));

export const isData = (packet: Packet6, group: string, port: number) =>
  packet.dst === group && packet.udp?.dstPort === port;
