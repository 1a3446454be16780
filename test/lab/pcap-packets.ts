/**
 * IPv4 frames of a capture, read by a reader of the tests' own (they do not trust the
 * project's codecs): their addresses, IGMP messages (with IGMPv3 records) and UDP payloads,
 * and the questions the daemon tests ask of them (a leave, a report, a group-specific
 * query, a datagram of a group).
 */
import { readFileSync } from 'node:fs';

export interface Packet {
  /** Epoch milliseconds. */
  ts: number;
  src: string;
  dst: string;
  proto: number;
  /** IGMP: type, group field, v3 report records. */
  igmp?: {
    type: number;
    group: string;
    length: number;
    records: Array<{ type: number; group: string; sources: number }>;
  };
  /** UDP payload as text. */
  udp?: { dstPort: number; payload: string };
}

const ip4 = (b: Buffer, o: number) => `${b[o]}.${b[o + 1]}.${b[o + 2]}.${b[o + 3]}`;

/** Reads an Ethernet pcap file (possibly still being written: a partial last record is ignored). */
export function readPcap(file: string): Packet[] {
  const data = readFileSync(file);
  if (data.length < 24) return [];
  const magicLE = data.readUInt32LE(0);
  const le = magicLE === 0xa1b2c3d4 || magicLE === 0xa1b23c4d;
  const u32 = (o: number) => (le ? data.readUInt32LE(o) : data.readUInt32BE(o));
  const nanos = (le ? magicLE : data.readUInt32BE(0)) === 0xa1b23c4d;
  const packets: Packet[] = [];
  for (let o = 24; o + 16 <= data.length; ) {
    const sec = u32(o);
    const frac = u32(o + 4);
    const caplen = u32(o + 8);
    if (o + 16 + caplen > data.length) break;
    const frame = data.subarray(o + 16, o + 16 + caplen);
    o += 16 + caplen;
    if (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800) continue;
    const ihl = (frame[14]! & 0x0f) * 4;
    const total = frame.readUInt16BE(16);
    const proto = frame[23]!;
    const l4 = 14 + ihl;
    const end = Math.min(frame.length, 14 + total);
    const packet: Packet = {
      ts: sec * 1000 + (nanos ? frac / 1e6 : frac / 1e3),
      src: ip4(frame, 26),
      dst: ip4(frame, 30),
      proto,
    };
    if (proto === 2 && end - l4 >= 8) {
      const type = frame[l4]!;
      const records: NonNullable<Packet['igmp']>['records'] = [];
      if (type === 0x22 && end - l4 >= 8) {
        let r = l4 + 8;
        for (let n = frame.readUInt16BE(l4 + 6); n > 0 && r + 8 <= end; n--) {
          const sources = frame.readUInt16BE(r + 2);
          records.push({ type: frame[r]!, group: ip4(frame, r + 4), sources });
          r += 8 + frame[r + 1]! * 4 + sources * 4;
        }
      }
      packet.igmp = { type, group: ip4(frame, l4 + 4), length: end - l4, records };
    } else if (proto === 17 && end - l4 >= 8) {
      packet.udp = { dstPort: frame.readUInt16BE(l4 + 2), payload: frame.subarray(l4 + 8, end).toString('latin1') };
    }
    packets.push(packet);
  }
  return packets;
}

/** An IGMP message from `host` that leaves `group`: a v2 leave or a v3 TO_IN({}) record. */
export const isLeave = (packet: Packet, host: string, group: string) =>
  packet.src === host &&
  packet.igmp !== undefined &&
  ((packet.igmp.type === 0x17 && packet.igmp.group === group) ||
    (packet.igmp.type === 0x22 &&
      packet.igmp.records.some((record) => record.type === 3 && record.group === group && record.sources === 0)));

/** An IGMP report from `host` that keeps `group` (v1/v2 report, v3 IS_EX/TO_EX record). */
export const isReport = (packet: Packet, host: string, group: string) =>
  packet.src === host &&
  packet.igmp !== undefined &&
  (((packet.igmp.type === 0x12 || packet.igmp.type === 0x16) && packet.igmp.group === group) ||
    (packet.igmp.type === 0x22 &&
      packet.igmp.records.some((record) => (record.type === 2 || record.type === 4) && record.group === group)));

export const isGroupQuery = (packet: Packet, group: string) =>
  packet.igmp?.type === 0x11 && packet.igmp.group === group;

export const isData = (packet: Packet, group: string, port: number) =>
  packet.dst === group && packet.udp?.dstPort === port;
