/**
 * IGMPv3 reports crafted byte by byte (Ethernet / IPv4 / IGMP, checksums computed here,
 * not with the project's codecs, so a test does not trust what it tests), and sent from
 * inside a pod out of its interface through an AF_PACKET socket: what the pod's kernel
 * would never send by itself, such as a report with another host's IPv4 source.
 */
import { writeFileSync } from 'node:fs';
import { readPcapFile } from '../../src/packet/pcap/index.js';
import type { OvsPod } from './ovs.js';

/** Record types of an IGMPv3 report (RFC 3376 §4.2.12). */
export const IGMPV3_RECORD = {
  modeIsInclude: 1,
  modeIsExclude: 2,
  changeToInclude: 3,
  changeToExclude: 4,
  allowNewSources: 5,
  blockOldSources: 6,
} as const;

export interface IgmpV3Record {
  type: (typeof IGMPV3_RECORD)[keyof typeof IGMPV3_RECORD];
  group: string;
  sources?: readonly string[];
}

/** All IGMPv3-capable multicast routers (RFC 3376 §4.2.14): where a host sends its reports. */
export const IGMPV3_REPORT_DESTINATION = '224.0.0.22';

const IGMPV3_REPORT_TYPE = 0x22;
const IPPROTO_IGMP = 2;
/** RFC 2113: type 148, length 4, value 0. */
const ROUTER_ALERT = [0x94, 0x04, 0x00, 0x00];

function octets(address: string): number[] {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255)) {
    throw new RangeError(`not an IPv4 address: ${JSON.stringify(address)}`);
  }
  return parts;
}

function macOctets(mac: string): number[] {
  const parts = mac.split(':').map((part) => Number.parseInt(part, 16));
  if (parts.length !== 6 || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255))
    throw new RangeError(`not a MAC address: ${JSON.stringify(mac)}`);
  return parts;
}

/** The Internet checksum (RFC 1071) of `bytes`. */
function internetChecksum(bytes: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += (bytes[i]! << 8) | (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

const u16 = (value: number) => [(value >>> 8) & 0xff, value & 0xff];

/** An IGMPv3 membership report with `records`, checksum filled in. */
export function igmpV3Report(records: readonly IgmpV3Record[]): number[] {
  const body = records.flatMap((record) => {
    const sources = record.sources ?? [];
    return [record.type, 0, ...u16(sources.length), ...octets(record.group), ...sources.flatMap(octets)];
  });
  const message = [IGMPV3_REPORT_TYPE, 0, 0, 0, 0, 0, ...u16(records.length), ...body];
  const checksum = u16(internetChecksum(message));
  message[2] = checksum[0]!;
  message[3] = checksum[1]!;
  return message;
}

export interface ReportFrameOptions {
  /** The Ethernet source (the pod's own MAC, so that OVS takes the frame as the pod's). */
  sourceMac: string;
  /** The IPv4 source: the pod's address, someone else's (spoofed) or 0.0.0.0. */
  source: string;
  records: readonly IgmpV3Record[];
  /** Default 1, as RFC 3376 §4 requires. */
  ttl?: number;
  /** The IP Router Alert option (default true, as RFC 3376 §4 requires). */
  routerAlert?: boolean;
}

/** A whole Ethernet frame: an IGMPv3 report to 224.0.0.22 (Ethernet 01:00:5e:00:00:16), IPv4 DSCP CS6, DF. */
export function igmpV3ReportFrame(options: ReportFrameOptions): Uint8Array {
  const igmp = igmpV3Report(options.records);
  const ipOptions = options.routerAlert === false ? [] : ROUTER_ALERT;
  const headerLength = 20 + ipOptions.length;
  const ip = [
    0x40 | (headerLength / 4),
    0xc0,
    ...u16(headerLength + igmp.length),
    0,
    0,
    0x40,
    0,
    options.ttl ?? 1,
    IPPROTO_IGMP,
    0,
    0,
    ...octets(options.source),
    ...octets(IGMPV3_REPORT_DESTINATION),
    ...ipOptions,
  ];
  const checksum = u16(internetChecksum(ip));
  ip[10] = checksum[0]!;
  ip[11] = checksum[1]!;
  // RFC 1112 §6.4: 01:00:5e and the group's low 23 bits.
  const [, second = 0, third = 0, fourth = 0] = octets(IGMPV3_REPORT_DESTINATION);
  const destinationMac = [0x01, 0x00, 0x5e, second & 0x7f, third, fourth];
  return Uint8Array.from([...destinationMac, ...macOctets(options.sourceMac), 0x08, 0x00, ...ip, ...igmp]);
}

/** argv: iface hex-frame...; sends each frame once out of iface (AF_PACKET, SOCK_RAW), prints "sent <n>". */
const SEND_FRAMES_PY = `
import socket, sys
iface, frames = sys.argv[1], sys.argv[2:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
for frame in frames:
    s.send(bytes.fromhex(frame))
print(f"sent {len(frames)}", flush=True)
`;

/** Sends `frames` as they are out of the pod's interface, from inside its namespace; resolves when they are written. */
export async function sendFrames(pod: OvsPod, frames: readonly Uint8Array[]): Promise<void> {
  const hex = frames.map((frame) => Buffer.from(frame).toString('hex'));
  const { stdout } = await pod.node.lab.exec(pod.ns, ['python3', '-c', SEND_FRAMES_PY, pod.iface, ...hex]);
  if (stdout.trim() !== `sent ${frames.length}`)
    throw new Error(`sending ${frames.length} frames from ${pod.ns} said ${JSON.stringify(stdout)}`);
}

/**
 * Crafts an IGMPv3 report from `pod` (its MAC; IPv4 source `source`, default its own address) and sends it out of its
 * interface.
 */
export function sendReport(
  pod: OvsPod,
  records: readonly IgmpV3Record[],
  options: { source?: string; routerAlert?: boolean } = {},
): Promise<void> {
  const frame = igmpV3ReportFrame({
    sourceMac: pod.mac,
    source: options.source ?? pod.address,
    records,
    ...(options.routerAlert === undefined ? {} : { routerAlert: options.routerAlert }),
  });
  return sendFrames(pod, [frame]);
}

/**
 * argv: iface frames-file rate; sends the frames of the file (one hex frame a line) out of
 * iface at `rate` a second, each at its own instant from the start (so a late one does not
 * slow the rest), and prints "sent <n> in <seconds>".
 */
const FLOOD_FRAMES_PY = `
import socket, sys, time
iface, path, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
frames = [bytes.fromhex(line) for line in open(path) if line.strip()]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
start = time.monotonic()
for i, frame in enumerate(frames):
    delay = start + i / rate - time.monotonic()
    if delay > 0: time.sleep(delay)
    s.send(frame)
print(f"sent {len(frames)} in {time.monotonic() - start:.3f}", flush=True)
`;

export interface FloodOptions {
  /** Reports a second. */
  ratePerSecond: number;
  /** The IPv4 source of every report (default the pod's own address). */
  source?: string;
}

/**
 * Crafts one IGMPv3 report from `pod` per entry of `reports` and sends them out of its
 * interface at `ratePerSecond`, from inside its namespace; resolves with how many were
 * sent and how long that took (seconds) once the last is written.
 */
export async function floodReports(
  pod: OvsPod,
  reports: readonly (readonly IgmpV3Record[])[],
  options: FloodOptions,
): Promise<{ sent: number; seconds: number }> {
  const frames = reports.map((records) =>
    Buffer.from(igmpV3ReportFrame({ sourceMac: pod.mac, source: options.source ?? pod.address, records })).toString(
      'hex',
    ),
  );
  const { lab } = pod.node;
  const file = lab.file(`flood-${pod.name}-${Date.now()}.hex`);
  writeFileSync(file, `${frames.join('\n')}\n`);
  const timeoutMs = 10_000 + (1000 * frames.length) / options.ratePerSecond;
  const { stdout } = await lab.exec(
    pod.ns,
    ['python3', '-c', FLOOD_FRAMES_PY, pod.iface, file, String(options.ratePerSecond)],
    { timeoutMs },
  );
  const match = /^sent (\d+) in ([\d.]+)$/.exec(stdout.trim());
  if (match === null) throw new Error(`flooding ${frames.length} frames from ${pod.ns} said ${JSON.stringify(stdout)}`);
  return { sent: Number(match[1]), seconds: Number(match[2]) };
}

/** Capture time (ms, wall clock) of the first IGMP query in a pcap of a pod's eth0 (Ethernet, IPv4). */
export async function firstIgmpQueryAt(file: string): Promise<number | undefined> {
  let first: number | undefined;
  await readPcapFile(file, (record) => {
    const b = record.data;
    if (first !== undefined || b.length < 34 || b[12] !== 0x08 || b[13] !== 0x00 || b[23] !== IPPROTO_IGMP) return;
    if (b[14 + (b[14]! & 0x0f) * 4] === 0x11) first = record.ts * 1000;
  });
  return first;
}
