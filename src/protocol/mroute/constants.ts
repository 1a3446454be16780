/**
 * Constants of the kernel's multicast-routing API of both families (linux/mroute.h,
 * linux/mroute6.h, linux/in.h, linux/in6.h), checked against the installed headers with a C
 * program (sizeof/offsetof) on x86_64. What tells the families apart is gathered in
 * family-kit.ts; these are the numbers it is made of.
 */

export const AF_INET = 2;
export const AF_INET6 = 10;

// ---------------------------------------------------------------------------------------
// IPv4: a raw IGMP socket, every option at level IPPROTO_IP.

/** setsockopt level of every IPv4 option here. */
export const IPPROTO_IP = 0;
/** The protocol of the IPv4 routing socket: a raw IGMP socket. */
export const IPPROTO_IGMP = 2;

export const MRT_INIT = 200;
export const MRT_DONE = 201;
export const MRT_ADD_VIF = 202;
export const MRT_DEL_VIF = 203;
export const MRT_ADD_MFC = 204;
export const MRT_DEL_MFC = 205;
export const MRT_FLUSH = 212;

/** MRT_FLUSH flags (an int). */
export const MRT_FLUSH_MFC = 1;
export const MRT_FLUSH_MFC_STATIC = 2;
export const MRT_FLUSH_VIFS = 4;
export const MRT_FLUSH_VIFS_STATIC = 8;

/** Size of the kernel's VIF table and of mfcctl's TTL array. */
export const MAXVIFS = 32;

/** vifctl flags. */
export const VIFF_TUNNEL = 0x1;
export const VIFF_SRCRT = 0x2;
export const VIFF_REGISTER = 0x4;
export const VIFF_USE_IFINDEX = 0x8;
/**
 * Shown in /proc/net/ip_mr_vif (and ip6_mr_vif) for a static interface: one added by a
 * socket that did not do MRT_INIT (with CAP_NET_ADMIN). Static interfaces and entries
 * outlive that socket and the router socket, but carry traffic only while some socket holds
 * MRT_INIT (kernel-internal flag, the same for MIFs).
 */
export const VIFF_STATIC = 0x8000;

/** igmpmsg.im_msgtype. */
export const IGMPMSG_NOCACHE = 1;
export const IGMPMSG_WRONGVIF = 2;
export const IGMPMSG_WHOLEPKT = 3;
export const IGMPMSG_WRVIFWHOLE = 4;

/** struct ip_mreqn. */
export const IP_ADD_MEMBERSHIP = 35;
export const IP_DROP_MEMBERSHIP = 36;

// ---------------------------------------------------------------------------------------
// IPv6: a raw ICMPv6 socket (the kernel refuses every MRT6_* option on any other with
// EOPNOTSUPP), its options at level IPPROTO_IPV6.

/** setsockopt level of every IPv6 option here. */
export const IPPROTO_IPV6 = 41;
/** The protocol of the IPv6 routing socket: a raw ICMPv6 socket. */
export const IPPROTO_ICMPV6 = 58;

/** The int argument of MRT6_INIT (any value: the kernel only checks optlen ≥ sizeof(int)). */
export const MRT6_INIT = 200;
export const MRT6_DONE = 201;
/** struct mif6ctl. */
export const MRT6_ADD_MIF = 202;
/** A mifi_t (u16). */
export const MRT6_DEL_MIF = 203;
/** struct mf6cctl; the (S,G) entry with any incoming MIF is replaced. */
export const MRT6_ADD_MFC = 204;
export const MRT6_DEL_MFC = 205;
/** getsockopt only: an int, 0x0305 on every Linux so far. */
export const MRT6_VERSION = 206;
/** An int: report WRONGMIF upcalls. */
export const MRT6_ASSERT = 207;
/** An int: PIM mode (MRT6MSG_WRMIFWHOLE asks for WRMIFWHOLE upcalls too). */
export const MRT6_PIM = 208;
/** A u32: the table this socket's later options act on (needs CONFIG_IPV6_MROUTE_MULTIPLE_TABLES). */
export const MRT6_TABLE = 209;
/** struct mf6cctl for a (*,*|G) entry: the lookup also matches mf6cc_parent. */
export const MRT6_ADD_MFC_PROXY = 210;
export const MRT6_DEL_MFC_PROXY = 211;
/** An int of MRT6_FLUSH_* flags; the kernel refuses any optlen but sizeof(int). */
export const MRT6_FLUSH = 212;

/** What getsockopt(MRT6_VERSION) returns. */
export const MRT6_VERSION_VALUE = 0x0305;

/** MRT6_FLUSH flags. */
export const MRT6_FLUSH_MFC = 1;
export const MRT6_FLUSH_MFC_STATIC = 2;
export const MRT6_FLUSH_MIFS = 4;
export const MRT6_FLUSH_MIFS_STATIC = 8;

/** Size of the kernel's MIF table: mif6c_mifi and mf6cc_parent must be below it (else ENFILE). */
export const MAXMIFS = 32;
/** mifi_t's "every MIF" value. */
export const ALL_MIFS = 0xffff;
/** Bits in mf6cctl's if_set; the kernel reads only the first MAXMIFS of them. */
export const IF_SETSIZE = 256;

/** mif6ctl flags: 0 (a MIF on mif6c_pifi) or MIFF_REGISTER (the PIM register MIF); anything else is EINVAL. */
export const MIFF_REGISTER = 0x1;

/** mrt6msg.im6_msgtype. */
export const MRT6MSG_NOCACHE = 1;
export const MRT6MSG_WRONGMIF = 2;
export const MRT6MSG_WHOLEPKT = 3;
export const MRT6MSG_WRMIFWHOLE = 4;

/** struct ipv6_mreq (any-source join on one interface, the pre-RFC 3678 API). */
export const IPV6_ADD_MEMBERSHIP = 20;
export const IPV6_DROP_MEMBERSHIP = 21;

/** linux/icmpv6.h: at level IPPROTO_ICMPV6, struct icmp6_filter (256 bits, a set bit blocks that type). */
export const ICMPV6_FILTER = 1;

// ---------------------------------------------------------------------------------------
// RFC 3678's protocol-independent API: the same numbers in both families, at the family's
// level (IPPROTO_IP or IPPROTO_IPV6).

/** struct group_req. */
export const MCAST_JOIN_GROUP = 42;
/** struct group_source_req. */
export const MCAST_BLOCK_SOURCE = 43;
export const MCAST_UNBLOCK_SOURCE = 44;
/** struct group_req. */
export const MCAST_LEAVE_GROUP = 45;
/** Source-specific multicast, by ifindex: struct group_source_req. */
export const MCAST_JOIN_SOURCE_GROUP = 46;
export const MCAST_LEAVE_SOURCE_GROUP = 47;
/** A socket's whole source filter for one group on one interface at once: struct group_filter. */
export const MCAST_MSFILTER = 48;

/** group_filter.gf_fmode. */
export const MCAST_EXCLUDE = 0;
export const MCAST_INCLUDE = 1;
