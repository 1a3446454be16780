/**
 * Membership reports forged into a tunnel: a Geneve datagram sent from a host on the
 * underlay (an ordinary UDP socket to port 6081 of a node's underlay address), holding an
 * Ethernet frame with an IGMPv3 or MLDv2 report whose inner source names whoever the
 * forger likes. Built byte by byte here (checksums too), not with the project's codecs,
 * so that a test does not trust what it tests.
 */
import type { Lab } from './lab.js';
import { TUNNEL_LAB } from './tunnel-lab.js';

/**
 * argv: node-address kind(igmp|mld) inner-source group record-type(number) [count per-second]; sends one Geneve
 * datagram, or `count` of them at `per-second` (a flood), and prints how many went.
 */
const FORGER_PY = String.raw`
import socket, struct, sys

node, kind, source, group, record_type = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return (~total) & 0xffff

def igmp_frame():
    record = struct.pack("!BBH4s", record_type, 0, 0, socket.inet_aton(group))
    igmp = struct.pack("!BBHHH", 0x22, 0, 0, 0, 1) + record
    igmp = igmp[:2] + struct.pack("!H", checksum(igmp)) + igmp[4:]
    options = struct.pack("!BBH", 0x94, 4, 0)
    header = struct.pack("!BBHHHBBH4s4s", 0x46, 0xC0, 24 + len(igmp), 0, 0x4000, 1, 2, 0, socket.inet_aton(source), socket.inet_aton("224.0.0.22")) + options
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return bytes.fromhex("01005e000016" "020000000066" "0800") + header + igmp

def mld_frame():
    src, dst = socket.inet_pton(socket.AF_INET6, source), socket.inet_pton(socket.AF_INET6, "ff02::16")
    record = struct.pack("!BBH16s", record_type, 0, 0, socket.inet_pton(socket.AF_INET6, group))
    mld = struct.pack("!BBHHH", 143, 0, 0, 0, 1) + record
    pseudo = src + dst + struct.pack("!I3xB", len(mld), 58)
    mld = mld[:2] + struct.pack("!H", checksum(pseudo + mld)) + mld[4:]
    hop_by_hop = struct.pack("!BB", 58, 0) + bytes([5, 2, 0, 0, 1, 0])
    header = struct.pack("!IHBB", 6 << 28, len(hop_by_hop) + len(mld), 0, 1) + src + dst
    return bytes.fromhex("333300000016" "020000000066" "86dd") + header + hop_by_hop + mld

frame = igmp_frame() if kind == "igmp" else mld_frame()
geneve = struct.pack("!BBHI", 0, 0, 0x6558, 0)
import time
count = int(sys.argv[6]) if len(sys.argv) > 6 else 1
per_second = float(sys.argv[7]) if len(sys.argv) > 7 else 0
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
datagram, target, sent = geneve + frame, (node, ${TUNNEL_LAB.geneveUdpPort}), 0
started = time.monotonic()
while sent < count:
    for _ in range(min(1000, count - sent)):
        try:
            s.sendto(datagram, target)
        except BlockingIOError:
            pass
        sent += 1
    if per_second > 0:
        ahead = started + sent / per_second - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
print("sent", sent, flush=True)
`;

/** The record types of RFC 3376 §4.2.12 (and RFC 3810 §5.2.12) a forger uses. */
export const FORGED_RECORD = { MODE_IS_EXCLUDE: 2, CHANGE_TO_EXCLUDE_MODE: 4, CHANGE_TO_INCLUDE_MODE: 3 } as const;

export interface ForgedReport {
  /** The node whose tunnel port gets it (its underlay address). */
  to: string;
  /** IGMPv3 for an IPv4 group, MLDv2 for an IPv6 one. */
  kind: 'igmp' | 'mld';
  /** The inner packet's source: another node's address, to pass for it. */
  innerSource: string;
  group: string;
  record: keyof typeof FORGED_RECORD;
  /** A flood: this many copies (default 1), at `perSecond`. */
  flood?: { count: number; perSecond: number };
}

/** Sends one forged report into the tunnel from inside `ns` (a host on the underlay), or a flood of copies. */
export async function sendForgedReport(lab: Lab, ns: string, report: ForgedReport): Promise<void> {
  const flood = report.flood === undefined ? [] : [String(report.flood.count), String(report.flood.perSecond)];
  const timeoutMs =
    report.flood === undefined ? undefined : (report.flood.count / report.flood.perSecond) * 1000 + 30_000;
  await lab.exec(
    ns,
    [
      'python3',
      '-c',
      FORGER_PY,
      report.to,
      report.kind,
      report.innerSource,
      report.group,
      String(FORGED_RECORD[report.record]),
      ...flood,
    ],
    timeoutMs === undefined ? {} : { timeoutMs },
  );
}
