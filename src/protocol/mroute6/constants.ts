/**
 * Constants of the kernel's IPv6 multicast-routing API (linux/mroute6.h, linux/in6.h,
 * linux/in.h), checked against the installed headers with a C program on x86_64.
 *
 * The mroute6 socket is a raw ICMPv6 socket (the kernel refuses every MRT6_* option on any
 * other with EOPNOTSUPP); its options live at level IPPROTO_IPV6.
 */

/** setsockopt level of every option here. */
export const IPPROTO_IPV6 = 41;
/** The protocol of the mroute6 socket: a raw ICMPv6 socket. */
export const IPPROTO_ICMPV6 = 58;
export const AF_INET6 = 10;

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

// RFC 3678's protocol-independent API: the same numbers as IPv4's, here at level IPPROTO_IPV6.

/** struct group_req. */
export const MCAST_JOIN_GROUP = 42;
/** struct group_source_req. */
export const MCAST_BLOCK_SOURCE = 43;
export const MCAST_UNBLOCK_SOURCE = 44;
/** struct group_req. */
export const MCAST_LEAVE_GROUP = 45;
/** struct group_source_req. */
export const MCAST_JOIN_SOURCE_GROUP = 46;
export const MCAST_LEAVE_SOURCE_GROUP = 47;
/** struct group_filter. */
export const MCAST_MSFILTER = 48;
