/**
 * What the per-source forwarding tests need in a lab: a member that joins with IGMPv3
 * source filters and reports what its sockets receive (a typed wrapper of
 * source_member.py), an independent reader of what a pod's capture saw (IGMPv3 records
 * with their sources, UDP datagrams with their senders), and the (S,G) flows a bridge
 * holds, read with ovs-ofctl.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Lab } from './lab.js';
import type { OvsNode, OvsPod } from './ovs.js';

const SOURCE_MEMBER_PY = fileURLToPath(new URL('./source_member.py', import.meta.url));

/** A datagram one of the member's sockets received. */
export interface SourceDatagram {
  /** The group whose socket got it. */
  group: string;
  from: string;
  fromPort: number;
  /** `<tag> <sequence>` as the lab's senders send it. */
  payload: string;
}

interface Pending {
  command: string;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** A long-running source_member.py in a pod; every method resolves once the setsockopt call returned. */
export class SourceMember {
  /** Every datagram received so far, in order. */
  readonly received: SourceDatagram[] = [];
  private readonly pending: Pending[] = [];
  private closed: Error | undefined;
  private stderr = '';

  private constructor(
    readonly pod: OvsPod,
    private readonly child: ChildProcess,
  ) {}

  /** Starts the member in `pod`'s namespace, its sockets bound to UDP `port`, and waits until it is ready. */
  static async start(lab: Lab, pod: OvsPod, port: number): Promise<SourceMember> {
    const child = lab.spawn(pod.ns, ['python3', '-u', SOURCE_MEMBER_PY, '--addr', pod.address, '--port', String(port)]);
    const member = new SourceMember(pod, child);
    const ready = new Promise<void>((resolve, reject) => member.pending.push({ command: 'start', resolve, reject }));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      member.stderr = (member.stderr + chunk).slice(-4000);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => member.onLine(line));
    child.once('exit', (code, signal) =>
      member.fail(new Error(`source_member.py in ${pod.ns} exited (${signal ?? code}): ${member.stderr.trim()}`)),
    );
    child.once('error', (error) => member.fail(error));
    child.stdin!.on('error', () => undefined); // EPIPE after exit: reported through 'exit'
    await ready;
    return member;
  }

  private onLine(line: string): void {
    if (line.startsWith('rx ')) {
      this.received.push(JSON.parse(line.slice(3)) as SourceDatagram);
      return;
    }
    const waiting = this.pending.shift();
    if (waiting === undefined) return;
    if (line === 'ready' || line.startsWith('ok ')) waiting.resolve();
    else waiting.reject(new Error(`${waiting.command} in ${this.pod.name}: ${line}`));
  }

  private fail(error: Error): void {
    this.closed ??= error;
    for (const waiting of this.pending.splice(0)) waiting.reject(error);
  }

  private send(...words: string[]): Promise<void> {
    const command = words.join(' ');
    if (this.closed !== undefined) return Promise.reject(this.closed);
    if (words.some((word) => !/^[\w.-]+$/.test(word)))
      return Promise.reject(new RangeError(`bad member command ${JSON.stringify(command)}`));
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ command, resolve, reject });
      this.child.stdin!.write(`${command}\n`);
    });
  }

  /** IP_ADD_MEMBERSHIP: any source (IGMPv3 TO_EX {}). */
  join(group: string): Promise<void> {
    return this.send('join', group);
  }

  /** IP_DROP_MEMBERSHIP. */
  leave(group: string): Promise<void> {
    return this.send('leave', group);
  }

  /** IP_ADD_SOURCE_MEMBERSHIP (IGMPv3 ALLOW {source}, include mode). */
  joinSource(group: string, source: string): Promise<void> {
    return this.send('join-source', group, source);
  }

  /** IP_DROP_SOURCE_MEMBERSHIP (IGMPv3 BLOCK {source}; the last source leaves the group). */
  dropSource(group: string, source: string): Promise<void> {
    return this.send('drop-source', group, source);
  }

  /** IP_BLOCK_SOURCE after a join (IGMPv3 BLOCK {source}, exclude mode). */
  block(group: string, source: string): Promise<void> {
    return this.send('block', group, source);
  }

  /** IP_UNBLOCK_SOURCE (IGMPv3 ALLOW {source}). */
  unblock(group: string, source: string): Promise<void> {
    return this.send('unblock', group, source);
  }

  /** The senders of the datagrams tagged `tag` that this member's sockets got, each once, sorted. */
  sendersOf(tag: string): string[] {
    return [
      ...new Set(
        this.received.filter((datagram) => datagram.payload.startsWith(`${tag} `)).map((datagram) => datagram.from),
      ),
    ].sort();
  }

  /** Closes every socket (the kernel leaves every group) and waits for the process to exit. */
  async quit(): Promise<void> {
    if (this.closed !== undefined) return;
    const exited = new Promise<void>((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve();
      else this.child.once('exit', () => resolve());
    });
    await this.send('quit').catch(() => undefined);
    this.child.stdin!.end();
    await exited;
  }
}

// --- captures (an independent reader: the tests do not trust the project's codecs) ------

/** One IGMPv3 group record. */
export interface CapturedRecord {
  /** 1 IS_IN, 2 IS_EX, 3 TO_IN, 4 TO_EX, 5 ALLOW, 6 BLOCK. */
  type: number;
  group: string;
  sources: string[];
}

export interface CapturedPacket {
  /** Epoch milliseconds. */
  ts: number;
  src: string;
  dst: string;
  /** IGMPv3 reports only: their group records. */
  igmpV3Records?: CapturedRecord[];
  /** UDP: destination port and payload as text. */
  udp?: { dstPort: number; payload: string };
}

const ip4 = (bytes: Buffer, at: number) => `${bytes[at]}.${bytes[at + 1]}.${bytes[at + 2]}.${bytes[at + 3]}`;

/** Reads an Ethernet pcap file that may still be being written (a partial last record is ignored). */
export function readCapture(file: string): CapturedPacket[] {
  const data = readFileSync(file);
  if (data.length < 24) return [];
  const magic = data.readUInt32LE(0);
  const littleEndian = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  const u32 = (at: number) => (littleEndian ? data.readUInt32LE(at) : data.readUInt32BE(at));
  const nanos = (littleEndian ? magic : data.readUInt32BE(0)) === 0xa1b23c4d;
  const packets: CapturedPacket[] = [];
  for (let at = 24; at + 16 <= data.length; ) {
    const seconds = u32(at);
    const fraction = u32(at + 4);
    const caplen = u32(at + 8);
    if (at + 16 + caplen > data.length) break;
    const frame = data.subarray(at + 16, at + 16 + caplen);
    at += 16 + caplen;
    if (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800) continue;
    const l4 = 14 + (frame[14]! & 0x0f) * 4;
    const end = Math.min(frame.length, 14 + frame.readUInt16BE(16));
    const proto = frame[23]!;
    const packet: CapturedPacket = {
      ts: seconds * 1000 + (nanos ? fraction / 1e6 : fraction / 1e3),
      src: ip4(frame, 26),
      dst: ip4(frame, 30),
    };
    if (proto === 2 && end - l4 >= 8 && frame[l4] === 0x22) {
      const records: CapturedRecord[] = [];
      let r = l4 + 8;
      for (let n = frame.readUInt16BE(l4 + 6); n > 0 && r + 8 <= end; n--) {
        const count = frame.readUInt16BE(r + 2);
        const sources = Array.from({ length: count }, (_, i) => r + 8 + i * 4)
          .filter((s) => s + 4 <= end)
          .map((s) => ip4(frame, s));
        records.push({ type: frame[r]!, group: ip4(frame, r + 4), sources });
        r += 8 + frame[r + 1]! * 4 + count * 4;
      }
      packet.igmpV3Records = records;
    } else if (proto === 17 && end - l4 >= 8) {
      packet.udp = { dstPort: frame.readUInt16BE(l4 + 2), payload: frame.subarray(l4 + 8, end).toString('latin1') };
    }
    packets.push(packet);
  }
  return packets;
}

/** The senders of the datagrams to `group` tagged `tag` in a capture, each once, sorted. */
export function wireSenders(packets: readonly CapturedPacket[], group: string, tag: string): string[] {
  return [
    ...new Set(
      packets
        .filter((packet) => packet.dst === group && packet.udp?.payload.startsWith(`${tag} `))
        .map((packet) => packet.src),
    ),
  ].sort();
}

/** The IGMPv3 reports `host` sent that hold a record for `group`, in order, each with that group's records only. */
export function reportsFrom(
  packets: readonly CapturedPacket[],
  host: string,
  group: string,
): { ts: number; records: CapturedRecord[] }[] {
  return packets.flatMap((packet) => {
    const records = packet.src === host ? (packet.igmpV3Records ?? []).filter((record) => record.group === group) : [];
    return records.length === 0 ? [] : [{ ts: packet.ts, records }];
  });
}

/** The capture times of the datagrams to `group` tagged `tag` that `sender` sent, in order. */
export function datagramTimes(
  packets: readonly CapturedPacket[],
  sender: string,
  group: string,
  tag: string,
): number[] {
  return packets
    .filter((packet) => packet.src === sender && packet.dst === group && packet.udp?.payload.startsWith(`${tag} `))
    .map((packet) => packet.ts);
}

/** The IGMPv3 records for `group` that `host` sent, in order. */
export function recordsFrom(packets: readonly CapturedPacket[], host: string, group: string): CapturedRecord[] {
  return packets
    .filter((packet) => packet.src === host)
    .flatMap((packet) => (packet.igmpV3Records ?? []).filter((record) => record.group === group));
}

// --- what the bridge holds -----------------------------------------------------------------

/**
 * A flow of the bridge that matches `nw_dst=group`: its source match (absent: any source) and the ports of the OVS
 * group it points to.
 */
export interface GroupFlow {
  source: string | undefined;
  groupId: number | undefined;
  ports: number[];
  line: string;
}

/** Every flow for `group` (nw_dst), with the output ports of its OVS group (one link, as ovs-ofctl prints it). */
export async function groupFlows(node: OvsNode, group: string): Promise<GroupFlow[]> {
  const flows = (await node.ofctl('dump-flows', node.bridge))
    .split('\n')
    .filter((line) => new RegExp(`nw_dst=${group.replaceAll('.', '\\.')}[ ,]`).test(line));
  const groups = (await node.ofctl('dump-groups', node.bridge)).split('\n');
  return flows.map((line) => {
    const id = line.match(/actions=.*group:(\d+)/)?.[1];
    const entry = id === undefined ? undefined : groups.find((text) => text.includes(`group_id=${id},`));
    return {
      source: line.match(/nw_src=([\d.]+)/)?.[1],
      groupId: id === undefined ? undefined : Number(id),
      ports: entry === undefined ? [] : [...entry.matchAll(/output:(\d+)/g)].map((match) => Number(match[1])),
      line: line.trim(),
    };
  });
}

/** How many OVS groups the bridge holds. */
export async function ovsGroupCount(node: OvsNode): Promise<number> {
  return (await node.ofctl('dump-groups', node.bridge)).split('\n').filter((line) => line.includes('group_id=')).length;
}
