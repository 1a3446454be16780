/**
 * From an IGMP or MLD packet-in to what the group state must hear: the snooper of the
 * daemon (Antrea's "discovery"). Pure: a frame and the port it came in on go in; out come
 * the decoded event (for the event stream and the counters) and the membership calls to
 * make. MLD makes the same calls as IGMP: its records are IGMPv3's (RFC 3810 §5.2.12), an
 * MLDv1 host is treated as an IGMPv2 one (RFC 3810 §8.3.2 mirrors RFC 3376 §7.3.2), and
 * an MLDv1 Done is a leave.
 */
import type { GroupRecord, IgmpVersion } from '../../../packet/igmp/message.js';
import type { MldRecord } from '../../../packet/mld/message.js';
import {
  decodeFrame,
  ipLocator,
  type FrameEvent,
  type MembershipProtocol,
  type MldFrameEvent,
} from '../../../packet/frame-decoder.js';
import { LinkType } from '../../../packet/pcap/link-type.js';
import type {
  MembershipEffect,
  MembershipRecord,
  MembershipTable,
} from '../../../domain/membership/membership-table.js';
import {
  type GroupAddress,
  type HostAddress,
  isLinkScopeGroup,
  parseGroupAddress,
  parseHostAddress,
  parseSourceAddress,
  type SourceAddress,
} from '../../../wire/ip-address.js';

/** What one IGMP message asks of the group state. */
export type MembershipCall =
  | { op: 'report'; group: GroupAddress; host: HostAddress; version: Exclude<IgmpVersion, 3> }
  | { op: 'record'; host: HostAddress; record: MembershipRecord }
  | { op: 'leave'; group: GroupAddress; host: HostAddress };

export interface SnoopedIgmp {
  event: FrameEvent;
  /** The membership protocol the message is of: IGMP (IPv4) or MLD (IPv6). */
  protocol: MembershipProtocol;
  /** The counter label: `report`, `leave`, `query`, `other` or `malformed`. */
  type: string;
  /** The version of the message's protocol, IGMP's or MLD's (0 for a malformed message). */
  version: number;
  calls: MembershipCall[];
  /** A general query (group 0.0.0.0 or ::): its source, for the querier election. */
  generalQueryFrom?: string;
}

/**
 * The MLD version whose host compatibility is IGMPv2's: an MLDv1 report is an IGMPv2 report to the table (RFC 3810
 * §8.3.2).
 */
const MLDV1_AS_IGMP_VERSION = 2;

const locateEthernet = ipLocator(LinkType.ETHERNET);

/**
 * Decodes an Ethernet frame sent to the controller. Undefined when it holds no IGMP
 * (only IGMP is sent up, so this is rare: a flow of someone else's).
 */
export function snoopFrame(frame: Uint8Array, meta: { frame: number; ts: number }): SnoopedIgmp | undefined {
  const event = decodeFrame(locateEthernet, frame, meta);
  if (event === undefined) return undefined;
  if (event.kind === 'malformed') return { event, protocol: event.protocol, type: 'malformed', version: 0, calls: [] };
  if (event.kind === 'mld') return snoopMld(event);
  const { message } = event;
  // A sender whose address is a group's is no host: its message changes no membership.
  const host = parseHostAddress(event.src);
  switch (message.kind) {
    case 'report': {
      if (message.version === 3) {
        const calls: MembershipCall[] = [];
        for (const record of host === undefined ? [] : message.records) {
          const checked = membershipRecord(record);
          if (checked !== undefined && host !== undefined) calls.push({ op: 'record', host, record: checked });
        }
        return { event, protocol: 'igmp', type: 'report', version: 3, calls };
      }
      const group = routableGroup(message.group);
      return {
        event,
        protocol: 'igmp',
        type: 'report',
        version: message.version,
        calls:
          group === undefined || host === undefined ? [] : [{ op: 'report', group, host, version: message.version }],
      };
    }
    case 'leave': {
      const group = routableGroup(message.group);
      return {
        event,
        protocol: 'igmp',
        type: 'leave',
        version: 2,
        calls: group === undefined || host === undefined ? [] : [{ op: 'leave', group, host }],
      };
    }
    case 'query':
      // A querier among the pods changes no membership; its general queries take part in the querier election.
      return {
        event,
        protocol: 'igmp',
        type: 'query',
        version: message.version,
        calls: [],
        ...(message.group === '0.0.0.0' && host !== undefined ? { generalQueryFrom: host } : {}),
      };
    case 'other':
      return { event, protocol: 'igmp', type: 'other', version: 0, calls: [] };
  }
}

/**
 * The calls of one MLD message. A listener without a link-local address yet (duplicate
 * address detection) reports from `::` (RFC 3810 §5.2.13): that names no host behind the
 * port, and changes no membership. Whether the source is link-local at all, and the hop
 * limit, are the guard's to check (they are counted as refusals, not hidden here).
 */
function snoopMld(event: MldFrameEvent): SnoopedIgmp {
  const { message } = event;
  const parsed = parseHostAddress(event.src);
  const host = parsed === UNSPECIFIED_IPV6 ? undefined : parsed;
  switch (message.kind) {
    case 'report': {
      if (message.version === 2) {
        const calls: MembershipCall[] = [];
        for (const record of host === undefined ? [] : message.records) {
          const checked = membershipRecord(record);
          if (checked !== undefined && host !== undefined) calls.push({ op: 'record', host, record: checked });
        }
        return { event, protocol: 'mld', type: 'report', version: 2, calls };
      }
      const group = routableGroup(message.group);
      const calls: MembershipCall[] =
        group === undefined || host === undefined
          ? []
          : [{ op: 'report', group, host, version: MLDV1_AS_IGMP_VERSION }];
      return { event, protocol: 'mld', type: 'report', version: 1, calls };
    }
    case 'leave': {
      const group = routableGroup(message.group);
      return {
        event,
        protocol: 'mld',
        type: 'leave',
        version: 1,
        calls: group === undefined || host === undefined ? [] : [{ op: 'leave', group, host }],
      };
    }
    case 'query':
      return {
        event,
        protocol: 'mld',
        type: 'query',
        version: message.version,
        calls: [],
        ...(message.group === '::' && host !== undefined ? { generalQueryFrom: host } : {}),
      };
  }
}

const UNSPECIFIED_IPV6 = '::';

/** Makes one membership call on the table of group state. */
export function callTable(table: MembershipTable, port: number, call: MembershipCall): MembershipEffect[] {
  switch (call.op) {
    case 'report':
      return table.report(port, call.host, call.group, call.version);
    case 'record':
      return table.record(port, call.host, call.record);
    case 'leave':
      return table.leave(port, call.host, call.group);
  }
}

/**
 * Groups worth tracking: multicast, and not link-scope, whose control traffic is flooded
 * and never needs membership (RFC 4541 §2.1.2).
 */
export function routableGroup(text: string): GroupAddress | undefined {
  const group = parseGroupAddress(text);
  return group === undefined || isLinkScopeGroup(group) ? undefined : group;
}

/**
 * A v3 (or MLDv2) record with its addresses checked: a source that is no unicast address is dropped, a record for no
 * routable group is.
 */
function membershipRecord(record: GroupRecord | MldRecord): MembershipRecord | undefined {
  const group = routableGroup(record.group);
  if (group === undefined) return undefined;
  const sources: SourceAddress[] = [];
  for (const text of record.sources) {
    const source = parseSourceAddress(text);
    if (source !== undefined) sources.push(source);
  }
  return { type: record.type, group, sources };
}
