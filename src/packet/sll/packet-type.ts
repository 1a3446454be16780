/**
 * The "packet type" of the Linux cooked-capture headers: the kernel's sll_pkttype
 * (PACKET_HOST ... PACKET_OUTGOING in <linux/if_packet.h>), i.e. who sent the packet to whom.
 * SLL carries it in 16 bits, SLL2 in 8; the values are the same.
 */
export const SllPacketType = {
  /** Sent to us by somebody else. */
  host: 0,
  /** Broadcast by somebody else. */
  broadcast: 1,
  /** Multicast (not broadcast) by somebody else: IGMP reports and queries we receive. */
  multicast: 2,
  /** Sent to somebody else by somebody else (seen in promiscuous mode). */
  otherhost: 3,
  /** Sent by us. */
  outgoing: 4,
} as const;

export type SllPacketTypeName = keyof typeof SllPacketType;

const NAMES: readonly SllPacketTypeName[] = ['host', 'broadcast', 'multicast', 'otherhost', 'outgoing'];

/** The name of a packet type value; undefined for values the spec does not define. */
export function sllPacketTypeName(value: number): SllPacketTypeName | undefined {
  return NAMES[value];
}

/** A few ARPHRD_ values (<linux/if_arp.h>): the cooked headers' arphrdType, and an interface's hardware type. */
export const ArphrdType = {
  ETHER: 1,
  LOOPBACK: 772,
  IPGRE: 778,
  /** Bare IP with no link-layer header (some cellular modems). */
  RAWIP: 519,
  /** Interfaces with no link-layer header, e.g. tun and WireGuard. */
  NONE: 0xfffe,
} as const;
