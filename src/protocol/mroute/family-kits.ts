/**
 * The two family kits (family-kit.ts says what a kit holds): IPv4's raw IGMP socket with
 * MRT_*, VIFs, vifctl, mfcctl and igmpmsg, IPv6's raw ICMPv6 socket with MRT6_*, MIFs,
 * mif6ctl, mf6cctl and mrt6msg, each with its /proc tables and membership options.
 */
import type { AddressFamily } from '../../wire/ip-address.js';
import * as c from './constants.js';
import type { FamilyKit } from './family-kit.js';
import { groupFilter, groupSourceReq } from './group-req.js';
import * as igmpmsg from './igmpmsg.js';
import * as ipMreqn from './ip-mreqn.js';
import * as ipv6Mreq from './ipv6-mreq.js';
import * as mf6cctl from './mf6cctl.js';
import * as mfcctl from './mfcctl.js';
import * as mif6ctl from './mif6ctl.js';
import * as mrt6msg from './mrt6msg.js';
import {
  readIgmpMemberships,
  readMfc6Cache,
  readMfcCache,
  readMifTable,
  readMldMemberships,
  readVifTable,
} from './proc.js';
import * as vifctl from './vifctl.js';

/** RFC 3678's options: the same numbers in both families, at the family's level. */
const MEMBERSHIP_OPTIONS = { joinSource: c.MCAST_JOIN_SOURCE_GROUP, filter: c.MCAST_MSFILTER } as const;

const IPV4_PROC = {
  interfaces: '/proc/net/ip_mr_vif',
  cache: '/proc/net/ip_mr_cache',
  memberships: '/proc/net/igmp',
  mcForwarding: '/proc/sys/net/ipv4/conf/all/mc_forwarding',
} as const;

const IPV6_PROC = {
  interfaces: '/proc/net/ip6_mr_vif',
  cache: '/proc/net/ip6_mr_cache',
  memberships: '/proc/net/igmp6',
  mcForwarding: '/proc/sys/net/ipv6/conf/all/mc_forwarding',
} as const;

export const IPV4_KIT = {
  family: 'ipv4',
  name: 'IPv4',
  qualifier: '',
  kernelOption: 'CONFIG_IP_MROUTE',
  socket: { ipVersion: 4, protocol: c.IPPROTO_IGMP, protocolName: 'IGMP', level: c.IPPROTO_IP },
  optionPrefix: 'MRT',
  options: {
    init: c.MRT_INIT,
    done: c.MRT_DONE,
    addInterface: c.MRT_ADD_VIF,
    delInterface: c.MRT_DEL_VIF,
    addEntry: c.MRT_ADD_MFC,
    delEntry: c.MRT_DEL_MFC,
    flush: c.MRT_FLUSH,
  },
  flushAll: c.MRT_FLUSH_MFC | c.MRT_FLUSH_VIFS,
  interfaceWord: 'vif',
  maxInterfaces: c.MAXVIFS,
  entryThresholds: true,
  structs: {
    interface: vifctl,
    entry: mfcctl,
    upcall: igmpmsg,
    membership: ipMreqn,
    sourceMembership: groupSourceReq.ipv4,
    filter: groupFilter.ipv4,
  },
  upcall: {
    length: igmpmsg.IGMPMSG_LENGTH,
    mbzOffset: igmpmsg.IGMPMSG_MBZ_OFFSET,
    types: {
      noCache: c.IGMPMSG_NOCACHE,
      wrongInterface: c.IGMPMSG_WRONGVIF,
      wholePacket: c.IGMPMSG_WHOLEPKT,
      wrongInterfaceWhole: c.IGMPMSG_WRVIFWHOLE,
    },
    decode(packet, width) {
      const { type, vif, source, group } = igmpmsg.decode(packet, 0, packet.length, { vifWidth: width });
      return { type, index: vif, source, group };
    },
    kernelWidth: () => igmpmsg.kernelVifWidth(),
  },
  memberships: {
    join: c.IP_ADD_MEMBERSHIP,
    leave: c.IP_DROP_MEMBERSHIP,
    ...MEMBERSHIP_OPTIONS,
    perSocket: { sysctl: 'net.ipv4.igmp_max_memberships', fallback: 20 },
    maxSources: { sysctl: 'net.ipv4.igmp_max_msf', fallback: 10 },
  },
  proc: IPV4_PROC,
  tableShowsIfindex: true,
  hints: {
    knownRouters: 'smcroute, pimd, the mcastctl daemon?',
    findRouter: '`ss -awp` (a raw socket on 0.0.0.0:igmp, with its process)',
    unusableDevice: ', or it cannot carry multicast',
  },
  interfaceArgument: ({ index, ifindex, threshold }) =>
    vifctl.encode({
      vif: index,
      flags: c.VIFF_USE_IFINDEX,
      threshold,
      rateLimit: 0,
      local: { kind: 'ifindex', ifindex },
      remoteAddress: '0.0.0.0',
    }),
  interfaceKeyArgument: (index) =>
    vifctl.encode({
      vif: index,
      flags: c.VIFF_USE_IFINDEX,
      threshold: 0,
      rateLimit: 0,
      local: { kind: 'ifindex', ifindex: 0 },
      remoteAddress: '0.0.0.0',
    }),
  entryArgument({ source, group, iif, oifs, ttl }) {
    const ttls = new Array<number>(c.MAXVIFS).fill(0);
    for (const oif of oifs) ttls[oif] = ttl;
    return mfcctl.encode({ origin: source, group, parent: iif, ttls, packets: 0, bytes: 0, wrongIf: 0, expire: 0 });
  },
  entryKeyArgument: ({ source, group }) =>
    mfcctl.encode({ origin: source, group, parent: 0, ttls: [], packets: 0, bytes: 0, wrongIf: 0, expire: 0 }),
  membershipArgument: ({ group, ifindex }) => ipMreqn.encode({ group, address: '0.0.0.0', ifindex }),
  async readInterfaceTable(path = IPV4_PROC.interfaces) {
    return (await readVifTable(path)).map((row) => ({
      index: row.vif,
      name: row.name,
      ...(row.local.kind === 'ifindex' ? { ifindex: row.local.ifindex } : {}),
      static: row.static,
      register: (row.flags & c.VIFF_REGISTER) !== 0,
      packetsIn: row.packetsIn,
      packetsOut: row.packetsOut,
      bytesIn: row.bytesIn,
      bytesOut: row.bytesOut,
    }));
  },
  async readCacheTable(path = IPV4_PROC.cache) {
    return (await readMfcCache(path)).map(({ origin, oifs, ...row }) => ({
      source: origin,
      ...row,
      oifs: oifs.map(({ vif, ttl }) => ({ index: vif, ttl })),
    }));
  },
  readMemberships: (path = IPV4_PROC.memberships) => readIgmpMemberships(path),
} as const satisfies FamilyKit;

/** linux/icmpv6.h's struct icmp6_filter with every bit set: every ICMPv6 type blocked. */
const ICMP6_FILTER_BLOCK_ALL = new Uint8Array(32).fill(0xff);

export const IPV6_KIT = {
  family: 'ipv6',
  name: 'IPv6',
  qualifier: 'IPv6 ',
  kernelOption: 'CONFIG_IPV6_MROUTE',
  socket: {
    ipVersion: 6,
    protocol: c.IPPROTO_ICMPV6,
    protocolName: 'ICMPv6',
    level: c.IPPROTO_IPV6,
    // The kernel queues upcalls on the socket directly, past this filter: blocking every
    // type keeps the namespace's MLD and Neighbor Discovery from being copied to it for nothing.
    setup: {
      level: c.IPPROTO_ICMPV6,
      option: c.ICMPV6_FILTER,
      value: ICMP6_FILTER_BLOCK_ALL,
      what: 'cannot set the ICMPv6 filter of the multicast routing socket',
    },
  },
  optionPrefix: 'MRT6',
  options: {
    init: c.MRT6_INIT,
    done: c.MRT6_DONE,
    addInterface: c.MRT6_ADD_MIF,
    delInterface: c.MRT6_DEL_MIF,
    addEntry: c.MRT6_ADD_MFC,
    delEntry: c.MRT6_DEL_MFC,
    flush: c.MRT6_FLUSH,
  },
  flushAll: c.MRT6_FLUSH_MFC | c.MRT6_FLUSH_MIFS,
  interfaceWord: 'mif',
  maxInterfaces: c.MAXMIFS,
  ifindexLimit: { max: 0xffff, reason: 'a MIF takes an ifindex from 1 to 65535 (mif6c_pifi is 16 bits)' },
  entryThresholds: false,
  structs: {
    interface: mif6ctl,
    entry: mf6cctl,
    upcall: mrt6msg,
    membership: ipv6Mreq,
    sourceMembership: groupSourceReq.ipv6,
    filter: groupFilter.ipv6,
  },
  upcall: {
    length: mrt6msg.MRT6MSG_LENGTH,
    mbzOffset: mrt6msg.MRT6MSG_MBZ_OFFSET,
    types: {
      noCache: c.MRT6MSG_NOCACHE,
      wrongInterface: c.MRT6MSG_WRONGMIF,
      wholePacket: c.MRT6MSG_WHOLEPKT,
      wrongInterfaceWhole: c.MRT6MSG_WRMIFWHOLE,
    },
    decode(packet) {
      const { type, mif, source, group } = mrt6msg.decode(packet, 0, packet.length);
      return { type, index: mif, source, group };
    },
    kernelWidth: () => 16,
  },
  memberships: {
    join: c.IPV6_ADD_MEMBERSHIP,
    leave: c.IPV6_DROP_MEMBERSHIP,
    ...MEMBERSHIP_OPTIONS,
    // IPv6 has no sysctl for the groups one socket may join: they, and their source lists,
    // are drawn from the socket's option memory (net.core.optmem_max, 20 KiB at its
    // smallest default). Sixteen groups with full 64-source filters fit in that.
    perSocket: { fixed: 16, limitedBy: 'net.core.optmem_max' },
    maxSources: { sysctl: 'net.ipv6.mld_max_msf', fallback: 64 },
  },
  proc: IPV6_PROC,
  tableShowsIfindex: false,
  hints: {
    knownRouters: 'smcroute, pimd, pim6sd, the mcastctl daemon?',
    findRouter: '`ss -awp -A raw` (a raw socket on [::]:ipv6-icmp, with its process)',
    unusableDevice: '',
  },
  interfaceArgument: ({ index, ifindex, threshold }) =>
    mif6ctl.encode({ mif: index, flags: 0, threshold, ifindex, rateLimit: 0 }),
  // MRT6_DEL_MIF takes a bare mifi_t (a host-order u16), not a mif6ctl.
  interfaceKeyArgument(index) {
    const bytes = new Uint8Array(2);
    new DataView(bytes.buffer).setUint16(0, index, true);
    return bytes;
  },
  entryArgument: ({ source, group, iif, oifs }) =>
    mf6cctl.encode({ origin: source, group, parent: iif, oifs: [...oifs] }),
  entryKeyArgument: ({ source, group }) => mf6cctl.encode({ origin: source, group, parent: 0, oifs: [] }),
  membershipArgument: (membership) => ipv6Mreq.encode(membership),
  async readInterfaceTable(path = IPV6_PROC.interfaces) {
    return (await readMifTable(path)).map((row) => ({
      index: row.mif,
      name: row.name,
      static: row.static,
      register: row.register,
      packetsIn: row.packetsIn,
      packetsOut: row.packetsOut,
      bytesIn: row.bytesIn,
      bytesOut: row.bytesOut,
    }));
  },
  async readCacheTable(path = IPV6_PROC.cache) {
    return (await readMfc6Cache(path)).map(({ origin, oifs, ...row }) => ({
      source: origin,
      ...row,
      oifs: oifs.map(({ mif, ttl }) => ({ index: mif, ttl })),
    }));
  },
  readMemberships: (path = IPV6_PROC.memberships) => readMldMemberships(path),
} as const satisfies FamilyKit;

export const FAMILY_KITS: Readonly<Record<AddressFamily, FamilyKit>> = { ipv4: IPV4_KIT, ipv6: IPV6_KIT };
