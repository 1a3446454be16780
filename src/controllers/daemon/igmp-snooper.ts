/**
 * From an IGMP packet-in to what the group state must hear: the snooper of the daemon
 * (Antrea's "discovery"). Pure: a frame and the port it came in on go in; out come the
 * decoded event (for the event stream and the counters) and the membership calls to make.
 */
import type { GroupRecord } from '../../packet/igmp/message.js';
import { decodeFrame, ipv4Locator, type FrameEvent } from '../../packet/frame-decoder.js';
import { LinkType } from '../../packet/pcap/link-type.js';
import { isMulticastIPv4, parseIPv4 } from '../../wire/ipv4-address.js';

/** What one IGMP message asks of the group state. */
export type MembershipCall =
  | { op: 'report'; group: string; host: string; version: 1 | 2 }
  | { op: 'record'; host: string; record: GroupRecord }
  | { op: 'leave'; group: string; host: string };

export interface SnoopedIgmp {
  event: FrameEvent;
  /** The counter label: `report`, `leave`, `query`, `other` or `malformed`. */
  type: string;
  /** The IGMP version (0 for a malformed message). */
  version: number;
  calls: MembershipCall[];
}

const locateEthernet = ipv4Locator(LinkType.ETHERNET);

/**
 * Decodes an Ethernet frame sent to the controller. Undefined when it holds no IGMP
 * (only IGMP is sent up, so this is rare: a flow of someone else's).
 */
export function snoopFrame(frame: Uint8Array, meta: { frame: number; ts: number }): SnoopedIgmp | undefined {
  const event = decodeFrame(locateEthernet, frame, meta);
  if (event === undefined) return undefined;
  if (event.kind === 'malformed') return { event, type: 'malformed', version: 0, calls: [] };
  const { message, src } = event;
  switch (message.kind) {
    case 'report':
      if (message.version === 3) {
        const calls = message.records.filter((record) => isRoutableGroup(record.group)).map((record): MembershipCall => ({ op: 'record', host: src, record }));
        return { event, type: 'report', version: 3, calls };
      }
      return {
        event,
        type: 'report',
        version: message.version,
        calls: isRoutableGroup(message.group) ? [{ op: 'report', group: message.group, host: src, version: message.version }] : [],
      };
    case 'leave':
      return { event, type: 'leave', version: 2, calls: isRoutableGroup(message.group) ? [{ op: 'leave', group: message.group, host: src }] : [] };
    case 'query':
      // A querier among the pods: noted, but the daemon is the querier of its ports.
      return { event, type: 'query', version: message.version, calls: [] };
    case 'other':
      return { event, type: 'other', version: 0, calls: [] };
  }
}

/**
 * Groups worth tracking: multicast, and not 224.0.0.0/24, whose link-local control
 * traffic is flooded and never needs membership (RFC 4541 §2.1.2).
 */
export function isRoutableGroup(group: string): boolean {
  const address = parseIPv4(group);
  return address !== undefined && isMulticastIPv4(group) && address >>> 8 !== 0xe00000;
}
