/**
 * What the tests of sealed peer messages need: peer key files (written whole, mode 0600),
 * a key's id, the seal of a captured report read and checked by the tests' own code, and
 * Geneve datagrams sent under ANOTHER node's outer address from a host on the underlay.
 *
 * A forger with an ordinary UDP socket (./tunnel-forgery.ts) sends from its own address,
 * which the switch sheds before the daemon sees it. Here the outer IPv4 header is the
 * test's (a raw socket, IPPROTO_RAW): the frame arrives as a peer's would, and only the
 * seal can tell it apart. The seal is computed here from the layout alone (HMAC-SHA-256,
 * the labels and fields in order), not with the project's code, so that a test does not
 * trust what it tests.
 *
 * Such a datagram has a side effect that is no business of the daemon's: Open vSwitch's
 * native tunnelling (3.1, user-space datapath) learns a tunnel endpoint's MAC from a packet
 * of its address that reaches it as an upcall, so the receiving node then encapsulates
 * toward that peer for the forger's MAC (its traffic for the peer goes to the forger), until
 * told otherwise (restoreTunnelNeighbour). The peer's own packets, which hit a cached
 * datapath flow, do not teach it back.
 */
import { createHash, createHmac } from 'node:crypto';
import { chmodSync, renameSync, writeFileSync } from 'node:fs';
import { IGMPV3_RECORD, igmpV3ReportFrame } from './igmp-frames.js';
import type { Lab } from './lab.js';
import { readPcap } from './pcap-packets.js';
import { TUNNEL_LAB, type TunnelLabNode } from './tunnel-lab.js';

/** "MCS1", then the key id, the counter and the 16 octets of the code. */
export const SEAL = { magic: 0x4d435331, length: 32, codeOffset: 16 } as const;

/** The id a seal made with `hexKey` carries, as `status --json` shows it (`0x` and 8 hex digits). */
export function peerKeyId(hexKey: string): string {
  const digest = createHash('sha256').update('mcastctl peer key id\0').update(Buffer.from(hexKey, 'hex')).digest();
  return `0x${digest.subarray(0, 4).toString('hex')}`;
}

/**
 * Writes a peer key file of `keys` (the sealing key first) under a temporary name and renames it into place: a daemon
 * reloading meanwhile reads the old file or the new one, never half of one.
 */
export function writePeerKeyFile(path: string, keys: readonly string[], mode = 0o600): void {
  const temporary = `${path}.new`;
  writeFileSync(temporary, `# peer keys, the sealing key first\n\n${keys.join('\n')}\n`, { mode });
  // The umask may have taken bits away (or a test wants a mode the daemon refuses).
  chmodSync(temporary, mode);
  renameSync(temporary, path);
}

/** Where a Geneve payload's inner IPv4 packet is: its start, its payload's start, its end (by its total length). */
interface InnerIpv4 {
  start: number;
  payloadStart: number;
  end: number;
}

function innerIpv4Of(payload: Buffer): InnerIpv4 | undefined {
  const frameAt = 8 + (payload[0]! & 0x3f) * 4;
  if (payload.length < frameAt + 34 || payload.readUInt16BE(2) !== 0x6558) return undefined;
  if (payload.readUInt16BE(frameAt + 12) !== 0x0800) return undefined;
  const start = frameAt + 14;
  const end = start + payload.readUInt16BE(start + 2);
  const payloadStart = start + (payload[start]! & 0x0f) * 4;
  return end <= payload.length && payloadStart < end ? { start, payloadStart, end } : undefined;
}

/** A captured peer report's seal, as the test reads it. */
export interface CapturedSeal {
  keyId: string;
  /** Wall-clock milliseconds × 1000 at the sender. */
  counter: bigint;
  /** Where the seal's code ends in the Geneve payload (its last octet is at codeEnd - 1). */
  codeEnd: number;
}

/** The seal of a Geneve payload holding a sealed IGMPv3 report; undefined for anything else. */
export function sealOf(payload: Buffer): CapturedSeal | undefined {
  const ip = innerIpv4Of(payload);
  if (ip === undefined || payload[ip.start + 9] !== 2 || payload[ip.payloadStart] !== 0x22) return undefined;
  const at = ip.end - SEAL.length;
  if (at < ip.payloadStart + 8 || payload.readUInt32BE(at) !== SEAL.magic) return undefined;
  return {
    keyId: `0x${payload.subarray(at + 4, at + 8).toString('hex')}`,
    counter: payload.readBigUInt64BE(at + 8),
    codeEnd: ip.end,
  };
}

/** The code the sender should have put in `payload`'s seal, computed from the seal's layout with `hexKey`. */
export function expectedCode(payload: Buffer, hexKey: string, sender: string): Buffer {
  const ip = innerIpv4Of(payload)!;
  const at = ip.end - SEAL.length;
  return createHmac('sha256', Buffer.from(hexKey, 'hex'))
    .update('mcastctl peer seal v1\0')
    .update(`${sender}\0`)
    .update(payload.subarray(ip.payloadStart, at))
    .update(payload.subarray(at, at + SEAL.codeOffset))
    .digest()
    .subarray(0, 16);
}

/** The UDP payloads (Geneve and the inner frame) of the sealed IGMPv3 reports of a capture, in order. */
export function sealedReportsIn(file: string): Buffer[] {
  return readPcap(file).flatMap((packet) => {
    if (packet.udp?.dstPort !== TUNNEL_LAB.geneveUdpPort) return [];
    const payload = Buffer.from(packet.udp.payload, 'latin1');
    return sealOf(payload) === undefined ? [] : [payload];
  });
}

/**
 * A Geneve payload (VNI 0, no options) holding an unsealed IGMPv3 report from `source`, one record for each of `groups`
 * (one group, or as many as a report holds).
 */
export function unsealedReport(source: string, groups: string | readonly string[], record: 'join' | 'leave'): Buffer {
  const type = record === 'join' ? IGMPV3_RECORD.changeToExclude : IGMPV3_RECORD.changeToInclude;
  const records = (typeof groups === 'string' ? [groups] : groups).map((group) => ({ type, group }));
  const frame = igmpV3ReportFrame({ sourceMac: '02:00:00:00:00:66', source, records });
  return Buffer.concat([Buffer.from([0, 0, 0x65, 0x58, 0, 0, 0, 0]), frame]);
}

/**
 * argv: outer-source outer-destination udp-port count per-second hex-payload...; sends the payloads in turn, `count`
 * datagrams in all (0: each once) at `per-second` (0: at once), each in a UDP datagram (checksum 0, as tunnels send) in
 * an IPv4 packet whose header is built here; prints "sent <n>".
 */
const RAW_SENDER_PY = `
import socket, struct, sys, time

source, target, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
count, per_second, payloads = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6:]

def checksum(data):
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return (~total) & 0xffff

def packet(n, payload):
    body = bytes.fromhex(payload)
    udp = struct.pack("!HHHH", 50000 + n % 1000, port, 8 + len(body), 0) + body
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), (0x6600 + n) & 0xffff, 0x4000, 64, 17, 0,
                         socket.inet_aton(source), socket.inet_aton(target))
    return header[:10] + struct.pack("!H", checksum(header)) + header[12:] + udp

s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
packets = [packet(n, payload) for n, payload in enumerate(payloads)]
total = count if count > 0 else len(packets)
sent, started = 0, time.monotonic()
while sent < total:
    try:
        s.sendto(packets[sent % len(packets)], (target, 0))
    except BlockingIOError:
        pass
    sent += 1
    if per_second > 0 and sent % 500 == 0:
        ahead = started + sent / per_second - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
print("sent", sent, flush=True)
`;

export interface SendAsPeer {
  /** The outer source written into the IPv4 header: the node the datagrams pass for. */
  from: string;
  /** The node whose tunnel port gets them (its underlay address). */
  to: string;
  /** Geneve payloads (Geneve header and inner frame). */
  payloads: readonly Buffer[];
  /** A flood: `count` datagrams in all, the payloads in turn, at `perSecond`; absent: each payload once. */
  flood?: { count: number; perSecond: number };
}

/** Sends `payloads` from inside `ns` (a host on the underlay) to port 6081 of `to`, under `from`'s outer address. */
export async function sendAsPeer(lab: Lab, ns: string, send: SendAsPeer): Promise<void> {
  const hex = send.payloads.map((payload) => payload.toString('hex'));
  const { count, perSecond } = send.flood ?? { count: 0, perSecond: 0 };
  const argv = [
    ...['python3', '-c', RAW_SENDER_PY, send.from, send.to, String(TUNNEL_LAB.geneveUdpPort)],
    ...[String(count), String(perSecond), ...hex],
  ];
  const timeoutMs = send.flood === undefined ? undefined : (count / perSecond) * 1000 + 30_000;
  const { stdout } = await lab.exec(ns, argv, timeoutMs === undefined ? {} : { timeoutMs });
  const expected = count > 0 ? count : hex.length;
  if (stdout.trim() !== `sent ${expected}`) throw new Error(`the raw sender in ${ns} said: ${stdout.trim()}`);
}

/**
 * Gives node `at`'s OVS the MAC of `peer`'s br-phy for `peer`'s address again, after a datagram sent under that
 * address taught it the forger's (module comment): what `at` then delivers to `peer` is the daemons' doing alone.
 */
export async function restoreTunnelNeighbour(at: TunnelLabNode, peer: TunnelLabNode): Promise<void> {
  const { stdout } = await peer.node.lab.ip(peer.node.ns, '-j', 'link', 'show', TUNNEL_LAB.physBridge);
  const mac = (JSON.parse(stdout) as { address: string }[])[0]!.address;
  await at.node.appctl('tnl/neigh/set', TUNNEL_LAB.physBridge, peer.underlayAddress, mac);
}
