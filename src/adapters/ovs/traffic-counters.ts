/**
 * What each pod port received from and sent to each group, from the switch's own
 * counters, read when asked (no packet of the traffic reaches the daemon):
 *
 * - sent: the pod's sender counting flows (kind SendCounter), one per entry of the group,
 *   summed.
 * - received: every entry of the group ((*,G) and each (S,G)) is a chain of OVS groups
 *   whose output buckets are its ports; GROUP statistics count each bucket, in the order
 *   of the group's buckets, which is the order the mirror of what is installed holds them.
 *   OVS counts a bucket for every packet the group takes, also the one whose output it
 *   skips because the packet came in on that very port: a pod's bucket counts what the
 *   pod sent too. So a pod's figure, entry by entry, is its bucket's count less what its
 *   counting flow of that entry sent; without such a flow (counting off, or past the
 *   bound) nothing can be taken off, and what the pod sent is in what it received.
 *
 * OVS counts what it forwards as whole Ethernet frames without the FCS (a UDP datagram of
 * 200 octets of payload over IPv4 is 200 + 8 + 20 + 14 = 242).
 */
import { parseGroupAddress, parseSourceAddress, type GroupAddress } from '../../wire/ip-address.js';
import { forwardingKey } from '../../domain/pipeline/forwarding-key.js';
import { decodeFlowCookie, FlowKind } from '../../domain/pipeline/flow-cookie.js';
import type { InstalledGroup, MulticastPipeline } from '../../domain/pipeline/multicast-pipeline.js';
import { flowEntryOf } from '../../domain/pipeline/openflow-entries.js';
import type { FlowStats } from '../../protocol/openflow/flow-stats.js';
import type { GroupStats } from '../../protocol/openflow/group-stats.js';

export interface TrafficCount {
  packets: bigint;
  bytes: bigint;
}

export interface PortGroupTraffic {
  group: GroupAddress;
  ofport: number;
  received: TrafficCount;
  /** Absent: the port has no sender counting flow for the group. */
  sent?: TrafficCount;
}

export interface TrafficReading {
  pipeline: MulticastPipeline;
  /** The entries of ours on the switch (the daemon's mirror, ./pipeline-sync.ts). */
  entries: readonly InstalledGroup[];
  groupStats: readonly GroupStats[];
  /** Our flows, with their counters. */
  flows: readonly FlowStats[];
}

/**
 * What the switch counted of one entry's bucket and sending row for one port, raw: the
 * bucket since its OVS group was last written, the row since it was added.
 */
interface EntryPortCounters {
  group: GroupAddress;
  /** The entry's forwarding key: with the port, what a carry is kept by. */
  entryKey: string;
  ofport: number;
  bucket?: TrafficCount;
  sent?: TrafficCount;
}

/**
 * What a rewrite of an OVS group takes with it: OVS starts a modified group's bucket
 * counters again from zero (a member joins or leaves, the group is rewritten), while the
 * sending rows go on. So the daemon's sync reads an entry's counters just before it
 * rewrites its groups (on the same connection, so the switch answers with what it counted
 * up to the change) and carries what each port received so far; a port's received since the
 * rewrite is its bucket less what it sent since then. Packets the switch had not yet
 * credited when the group was rewritten (the user-space datapath credits its counters
 * every few hundred ms) are lost to the count.
 */
export class TrafficCarry {
  /** By entry, then port: a sync keeps or forgets one entry's carries without a look at the others'. */
  private readonly byEntry = new Map<string, Map<number, { received: TrafficCount; sentAtRewrite: TrafficCount }>>();

  /** What the port received from the entry, carried and since the last rewrite. */
  received(counters: EntryPortCounters): TrafficCount {
    const carry = this.byEntry.get(counters.entryKey)?.get(counters.ofport);
    const bucket = counters.bucket ?? ZERO;
    // Without a sending row nothing can be taken off: the pod's own sends are in its bucket's count.
    const sentSince = counters.sent === undefined ? ZERO : minus(counters.sent, carry?.sentAtRewrite ?? ZERO);
    return plus(carry?.received ?? ZERO, minus(bucket, sentSince));
  }

  /** The entries' counters as read just before their groups were rewritten: carried from now on. */
  rewritten(counters: readonly EntryPortCounters[]): void {
    for (const entry of counters) {
      const carried = { received: this.received(entry), sentAtRewrite: entry.sent ?? ZERO };
      const ports = this.byEntry.get(entry.entryKey);
      if (ports === undefined) this.byEntry.set(entry.entryKey, new Map([[entry.ofport, carried]]));
      else ports.set(entry.ofport, carried);
    }
  }

  /**
   * Keeps the carries of `entryKey` only among those of `ports` (the others left it, and count afresh should they
   * come back).
   */
  keep(entryKey: string, ports: ReadonlySet<number>): void {
    const carried = this.byEntry.get(entryKey);
    if (carried === undefined) return;
    for (const port of carried.keys()) if (!ports.has(port)) carried.delete(port);
    if (carried.size === 0) this.byEntry.delete(entryKey);
  }

  /** Forgets an entry that is gone. */
  forget(entryKey: string): void {
    this.byEntry.delete(entryKey);
  }
}

const ZERO: TrafficCount = { packets: 0n, bytes: 0n };

function plus(a: TrafficCount, b: TrafficCount): TrafficCount {
  return { packets: a.packets + b.packets, bytes: a.bytes + b.bytes };
}

/** The two counters are read a moment apart: never below zero. */
function minus(a: TrafficCount, b: TrafficCount): TrafficCount {
  const packets = a.packets - b.packets;
  const bytes = a.bytes - b.bytes;
  return { packets: packets < 0n ? 0n : packets, bytes: bytes < 0n ? 0n : bytes };
}

/** The raw counters of each (entry, port) of `reading.entries` with a bucket or a sending row. */
export function entryPortCounters(reading: TrafficReading): EntryPortCounters[] {
  const statsById = new Map(reading.groupStats.map((stats) => [stats.groupId, stats]));
  const byKey = new Map<string, EntryPortCounters>();
  const at = (group: GroupAddress, entryKey: string, ofport: number): EntryPortCounters => {
    const key = `${entryKey} ${ofport}`;
    let entry = byKey.get(key);
    if (entry === undefined) byKey.set(key, (entry = { group, entryKey, ofport }));
    return entry;
  };
  for (const stats of reading.flows) {
    const fields = decodeFlowCookie(stats.cookie, reading.pipeline.config.cookiePrefix);
    if (fields?.kind !== FlowKind.SendCounter) continue;
    const flow = flowEntryOf(stats);
    const group = flow?.match.ipDst === undefined ? undefined : parseGroupAddress(flow.match.ipDst);
    const source = flow?.match.ipSrc === undefined ? undefined : parseSourceAddress(flow.match.ipSrc);
    const ofport = flow?.match.inPort;
    if (group === undefined || ofport === undefined || (flow?.match.ipSrc !== undefined && source === undefined))
      continue;
    // Every row of the port counts, also one of an entry that does not deliver to it (a source its filter leaves out).
    const entry = at(group, forwardingKey(source === undefined ? { group } : { group, source }), ofport);
    entry.sent = plus(entry.sent ?? ZERO, { packets: stats.packetCount, bytes: stats.byteCount });
  }
  for (const installed of reading.entries) {
    const entryKey = forwardingKey(installed);
    for (const link of installed.groups) {
      const stats = statsById.get(link.groupId);
      link.buckets.forEach((bucket, index) => {
        // a chain link or a peer, not a port
        if (bucket.type !== 'output' || bucket.tunnelDestination !== undefined) return;
        const counter = stats?.bucketStats[index];
        const entry = at(installed.group, entryKey, bucket.port);
        if (counter !== undefined)
          entry.bucket = plus(entry.bucket ?? ZERO, { packets: counter.packetCount, bytes: counter.byteCount });
      });
    }
  }
  return [...byKey.values()];
}

/**
 * Each (group, port) with a bucket or a sender counting flow of ours, summed over the group's entries, by group then
 * port.
 */
export function trafficOf(reading: TrafficReading, carry: TrafficCarry = new TrafficCarry()): PortGroupTraffic[] {
  const byKey = new Map<string, PortGroupTraffic>();
  for (const counters of entryPortCounters(reading)) {
    const key = `${counters.ofport} ${counters.group}`;
    let entry = byKey.get(key);
    if (entry === undefined)
      byKey.set(key, (entry = { group: counters.group, ofport: counters.ofport, received: ZERO }));
    entry.received = plus(entry.received, carry.received(counters));
    if (counters.sent !== undefined) entry.sent = plus(entry.sent ?? ZERO, counters.sent);
  }
  return [...byKey.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : a.ofport - b.ofport));
}
