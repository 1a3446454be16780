/**
 * Constants of the kernel's IPv4 multicast-routing API (linux/mroute.h, linux/in.h),
 * checked against the installed header with a C program (sizeof/offsetof) on x86_64.
 */

/** setsockopt level of every option here. */
export const IPPROTO_IP = 0;
/** The protocol of the mroute socket: a raw IGMP socket. */
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
 * Shown in /proc/net/ip_mr_vif for a static VIF: one added by a socket that did not do
 * MRT_INIT (with CAP_NET_ADMIN). Static VIFs and MFC entries outlive that socket and the
 * router socket, but carry traffic only while some socket holds MRT_INIT (kernel-internal flag).
 */
export const VIFF_STATIC = 0x8000;

/** igmpmsg.im_msgtype. */
export const IGMPMSG_NOCACHE = 1;
export const IGMPMSG_WRONGVIF = 2;
export const IGMPMSG_WHOLEPKT = 3;
export const IGMPMSG_WRVIFWHOLE = 4;

export const IP_ADD_MEMBERSHIP = 35;
export const IP_DROP_MEMBERSHIP = 36;

/** Source-specific multicast (RFC 3678's protocol-independent API), by ifindex: struct group_source_req. */
export const MCAST_JOIN_SOURCE_GROUP = 46;
export const MCAST_LEAVE_SOURCE_GROUP = 47;
/** A socket's whole source filter for one group on one interface at once: struct group_filter. */
export const MCAST_MSFILTER = 48;

/** group_filter.gf_fmode. */
export const MCAST_EXCLUDE = 0;
export const MCAST_INCLUDE = 1;
