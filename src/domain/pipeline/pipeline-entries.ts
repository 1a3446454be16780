/**
 * The entries of the multicast pipeline, as the pipeline builds them and reads them back
 * from a switch: flows, OVS groups and their buckets, and a group's membership.
 */
import type { GroupAddress, HostAddress, SourceAddress } from '../../wire/ip-address.js';

/**
 * The fields the pipeline matches on. The addresses are of the family `ethType` says
 * (0x0800: IPv4, OVS's nw_dst; 0x86dd: IPv6, ipv6_dst), in their canonical text.
 */
export interface FlowMatch {
  inPort?: number;
  /** Tunnel mode: the tunnel's outer IPv4 source, exact (tun_src): the peer a frame from the tunnel came from. */
  tunSrc?: string;
  ethType?: number;
  ipProto?: number;
  /** The ICMPv6 type (IPv6's membership messages, MLD, are ICMPv6 messages of four types). */
  icmpv6Type?: number;
  ipDst?: string;
  /** Absent: an exact match. A dotted quad for IPv4, IPv6 text for IPv6 (`ff0f::`). */
  ipDstMask?: string;
  /** An exact match on the source (the (S,G) entries). */
  ipSrc?: string;
}

/** The match's fields in one fixed order, as text: two matches are the same exactly when their keys are. */
export function flowMatchKey(match: FlowMatch): string {
  const { inPort, tunSrc, ethType, ipProto, icmpv6Type, ipSrc, ipDst, ipDstMask } = match;
  return JSON.stringify([inPort, tunSrc, ethType, ipProto, icmpv6Type, ipSrc, ipDst, ipDstMask]);
}

export type FlowAction =
  | { type: 'output'; port: number }
  | { type: 'controller' }
  | { type: 'flood' }
  | { type: 'group'; groupId: number };

export interface FlowEntry {
  table: number;
  priority: number;
  cookie: bigint;
  match: FlowMatch;
  actions: FlowAction[];
  /** The meter the flow's packets go through before its actions (absent: none). */
  meterId?: number;
  /** Seconds until the switch removes the flow by itself (absent: never). */
  hardTimeout?: number;
}

/** The IGMP meter of a pod port: a drop band past `rate` packets a second, with a bucket of `burst` packets. */
export interface PortMeter {
  rate: number;
  burst: number;
}

/**
 * A bucket of an ALL group: one output port, or the next group of a chain. In tunnel mode
 * an output bucket with a `tunnelDestination` is a copy to one peer node:
 * `set_field:PEER->tun_dst, output:PORT` on a flow-based tunnel port (it is no member port).
 */
export type Bucket =
  | { type: 'output'; port: number; tunnelDestination?: HostAddress }
  | { type: 'group'; groupId: number };

export interface GroupEntry {
  groupId: number;
  buckets: Bucket[];
  /** Read back from a switch: an OVS group type other than ALL (ours are all ALL). */
  groupType?: number;
}

/** A multicast group's members on this bridge, by OpenFlow port number. */
export interface GroupMembership {
  group: GroupAddress;
  /** Present: the (S,G) entry of `group` for this source, which takes precedence over the group's (*,G) entry. */
  source?: SourceAddress;
  ports: readonly number[];
  /** Members the daemon learned (its flow's cookie says so), not declared with `install`. */
  learned?: boolean;
  /**
   * Tunnel mode: the flow-based tunnel port and the peer nodes that want the group. Absent:
   * today's layout, entry for entry. Present: `ports` are the pod ports (the gateway and the
   * tunnel port are left out of them if given there too).
   */
  tunnel?: TunnelMembers;
  /**
   * Tunnel mode: the gateway port, in link 0 whenever the group has a member, local or remote. Not read without
   * `tunnel`.
   */
  gateway?: number;
  /** Pod ports whose traffic to this entry gets a counting row of its own (FlowKind.SendCounter); absent: none. */
  counterPorts?: readonly number[];
}

/** The remote side of a group in tunnel mode. */
export interface TunnelMembers {
  /** The OpenFlow port of the flow-based tunnel (options:remote_ip=flow). */
  ofport: number;
  /** Unicast addresses of the nodes that want the group; sorted and deduplicated by the pipeline. */
  peers: readonly HostAddress[];
}

/** The entries that forward one multicast group: its groups (chain tail first) and its flow. */
export interface GroupForwarding {
  group: GroupAddress;
  /** Present: the (S,G) entry of `group` for this source. */
  source?: SourceAddress;
  /** Ordered so that each group exists before a group or flow that points to it. */
  groups: GroupEntry[];
  flow: FlowEntry;
  /**
   * Tunnel mode only: what comes in from the tunnel or the gateway for this group → link 1,
   * its local pods (none when it has no pod member).
   */
  ingress?: FlowEntry[];
  /** One counting row per counter port, by port: forwards as `flow` does (absent: none). */
  counters?: FlowEntry[];
}

export interface PipelineLimits {
  /** Buckets one GROUP_MOD can carry on this switch (see src/openflow). */
  maxBucketsPerGroup: number;
}

export interface InstalledGroup {
  group: GroupAddress;
  /** Present: the (S,G) entry of `group` for this source. */
  source?: SourceAddress;
  ports: number[];
  flow: FlowEntry;
  /** The OVS groups of its chain, head first. */
  groups: GroupEntry[];
  /** Written by the daemon for learned members (FlowCookieFlag.Learned), not by `install`. */
  learned: boolean;
  /** Why this group does not forward as it should (a missing or shared OVS group). */
  problem?: string;
  /** Tunnel mode: the peers of its tunnel buckets, sorted (absent when it has none). */
  peers?: HostAddress[];
  /** Tunnel mode: its ingress flows (absent when it has none). */
  ingress?: FlowEntry[];
  /** Its sender counting rows, by in_port (absent when it has none). */
  counters?: FlowEntry[];
}

export interface InstalledPipeline {
  groups: InstalledGroup[];
  /** Our flows of the other kinds (IGMP, link-local, unknown group). */
  otherFlows: FlowEntry[];
  /** OVS groups in our range that no flow of ours reaches. */
  strayGroups: GroupEntry[];
}
