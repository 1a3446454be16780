/**
 * What the pipeline and the group id allocation need to know of an address family: how
 * the switch tells its packets and its membership messages, its multicast and link-scope
 * ranges, and where its groups prefer to sit in the OVS group id range. Everything else
 * in the domain is keyed by GroupAddress and asks `familyOf(group)` for these facts, so a
 * second family (IPv6 with MLD) is one more module of this shape, not edits throughout.
 */
import type { AddressFamily, GroupAddress } from '../../wire/ip-address.js';

/** The destination part of a flow match, in the pipeline's FlowMatch fields. */
interface DestinationMatch {
  ethType: number;
  ipv4Dst: string;
  /** Absent: an exact match. */
  ipv4DstMask?: string;
}

export interface MulticastFamily {
  readonly name: AddressFamily;
  /** The membership protocol of the family, as logs and metrics name it. */
  readonly protocol: 'igmp';
  readonly etherType: number;
  /** The IP protocol number of the membership messages the switch sends to the controller. */
  readonly membershipIpProto: number;
  /** The group every host of the link belongs to: general queries go there. */
  readonly allSystemsGroup: GroupAddress;
  /** One group's traffic. */
  groupMatch(group: GroupAddress): DestinationMatch;
  /** All of the family's multicast (the unknown-group flow). */
  readonly multicastMatch: DestinationMatch;
  /** The link-scope control groups, flooded and never snooped. */
  readonly linkScopeMatch: DestinationMatch;
  /**
   * Where `group` would like its OVS group: a slot of the group id range (below
   * GROUP_ID_BLOCK). Groups whose preferred slots collide get the next free one; the
   * switch remembers which (group-ids.ts).
   */
  preferredSlot(group: GroupAddress): number;
  /** The 32 bits a group flow's cookie carries, for a person reading a flow dump. */
  cookieValue(group: GroupAddress): number;
}
