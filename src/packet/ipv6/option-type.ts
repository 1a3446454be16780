/**
 * IPv6 hop-by-hop and destination option types (IANA "Destination Options and Hop-by-Hop
 * Options"): the two high bits say what a node that does not know the option does, the
 * third whether it may change en route (RFC 8200 §4.2).
 */
export const Ipv6OptionType = {
  /** One octet of padding: no length, no data. */
  Pad1: 0,
  /** Two octets or more of padding: type, length, zeros. */
  PadN: 1,
  /** RFC 2711; 0x05 = skip if unknown, does not change en route. */
  RouterAlert: 5,
  /** RFC 2675 jumbo payload, for payload lengths the 16-bit field cannot hold. */
  JumboPayload: 0xc2,
} as const;

/** The Router Alert values of RFC 2711 §2.1 that this tool meets. */
export const RouterAlertValue = {
  /** "Datagram contains a Multicast Listener Discovery message". */
  Mld: 0,
} as const;
