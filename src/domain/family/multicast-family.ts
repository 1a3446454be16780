/**
 * What the pipeline and the group id allocation need to know of an address family: how
 * the switch tells its packets and its membership messages, its multicast and link-scope
 * ranges, and where its groups prefer to sit in the OVS group id range. Everything else
 * in the domain is keyed by GroupAddress and asks `familyOf(group)` for these facts; the
 * flows every group relies on are built once for each of FAMILIES (families.ts).
 */
import type { AddressFamily, GroupAddress } from '../../wire/ip-address.js';

/** The destination part of a flow match, in the pipeline's FlowMatch fields. */
interface DestinationMatch {
  ethType: number;
  ipDst: string;
  /** Absent: an exact match. */
  ipDstMask?: string;
}

/** A membership message as the switch tells it: IGMP by its IP protocol, MLD by its ICMPv6 type too. */
interface MembershipMatch {
  ethType: number;
  ipProto: number;
  icmpv6Type?: number;
}

export interface MulticastFamily {
  readonly name: AddressFamily;
  /** The membership protocol of the family, as logs and metrics name it. */
  readonly protocol: 'igmp' | 'mld';
  readonly etherType: number;
  /**
   * Every kind of membership message the switch sends to the controller: one match for
   * IGMP (all of IP protocol 2), one per message type for MLD (ICMPv6 carries Neighbor
   * Discovery too, which must stay in the switch's own forwarding).
   */
  readonly membershipMatches: readonly MembershipMatch[];
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
