/**
 * One address family's kernel multicast routing, as the daemon's router uses it: the
 * same few calls over the IPv4 socket (MRT_*, VIFs, /proc/net/ip_mr_*) and the IPv6 one
 * (MRT6_*, MIFs, /proc/net/ip6_mr_*), so that one router serves both families. What
 * differs is named here once: the kernel's word for a routing interface, the table size,
 * the upcall's field names, where the tables are read, and the sysctls that bound the
 * memberships one socket may hold.
 */
import { readFileSync } from 'node:fs';
import { isSystemError, type McastError, UnavailableError } from '../errors.js';
import { IGMPMSG_NOCACHE, MAXVIFS } from '../protocol/mroute/constants.js';
import { type InterfaceMembershipRow, readIgmpMemberships, readMfcCache, readVifTable } from '../protocol/mroute/proc.js';
import { MAXMIFS, MRT6MSG_NOCACHE } from '../protocol/mroute6/constants.js';
import { readMfc6Cache, readMifTable, readMldMemberships } from '../protocol/mroute6/proc6.js';
import type { AddressFamily } from '../wire/ip-address.js';
import { type Membership, MrouteSocket, type SourceFilterSetting, type SourceMembership } from './mroute-socket.js';
import { Mroute6Socket } from './mroute6-socket.js';

/** A routing interface the kernel has now (a VIF or a MIF). */
export interface RoutingInterfaceRow {
  index: number;
  /** The device's name as the kernel's table prints it. */
  name: string;
  /** Its ifindex, where the table tells it (IPv4 VIFs added by ifindex). */
  ifindex?: number;
  /** Added by a socket without MRT_INIT: it stays when sockets close. */
  static: boolean;
}

/** One forwarding-cache entry (MFC or MFC6), its interfaces and counters. */
export interface ForwardingCacheRow {
  source: string;
  group: string;
  /** Incoming interface (-1 for an unresolved entry). */
  iif: number;
  oifs: number[];
  packets: number;
  bytes: number;
}

/** The kernel holds a packet for an (S,G) it has no entry for (NOCACHE), which came in on routing interface `index`. */
export interface NoCacheMiss {
  index: number;
  source: string;
  group: string;
}

export interface RouteEntry {
  source: string;
  group: string;
  iif: number;
  oifs: readonly number[];
}

/** The namespace's routing socket for one family, after MRT_INIT or MRT6_INIT. */
export interface MulticastRoutingSocket {
  addInterface(options: { index: number; ifindex: number }): void;
  /** Adds or replaces the entry for (source, group). */
  addRoute(route: RouteEntry): void;
  delRoute(key: { source: string; group: string }): void;
  onNoCache(listener: (miss: NoCacheMiss) => void): void;
  onError(listener: (error: McastError) => void): void;
  readonly closed: boolean;
  /** The kernel removes the interfaces and entries this socket added. */
  close(): void;
}

/**
 * A routing socket without MRT_INIT (a one-shot command's): what it adds, the kernel marks
 * static and keeps after it closes, and forwards with only while a router holds MRT_INIT.
 */
export interface StaticRoutingSocket {
  addInterface(options: { index: number; ifindex: number }): void;
  delInterface(index: number): void;
  addRoute(route: RouteEntry): void;
  delRoute(key: { source: string; group: string }): void;
  close(): void;
}

/** A socket that holds group memberships on interfaces (IGMP or MLD reports go out for them). */
export interface MembershipSocket {
  joinGroup(options: Membership): void;
  leaveGroup(options: Membership): void;
  joinSourceGroup(options: SourceMembership): void;
  setSourceFilter(options: SourceFilterSetting): void;
  onError(listener: (error: McastError) => void): unknown;
  close(): void;
}

export interface MembershipBounds {
  /** Memberships one socket may hold. */
  perSocket: number;
  /** Sources one filter may hold. */
  maxSources: number;
  /** The sysctl that sets maxSources, for the notice that a filter was widened. */
  maxSourcesSetting: string;
}

export interface MulticastRoutingKernel {
  readonly family: AddressFamily;
  /** The kernel's word for a routing interface: 'vif' or 'mif'. */
  readonly interfaceWord: 'vif' | 'mif';
  readonly maxInterfaces: number;
  /** The table the interfaces are read from, for messages. */
  readonly interfaceTable: string;
  /** Becomes the namespace's router for this family. Throws UnavailableError while another holds it. */
  openRouter(): MulticastRoutingSocket;
  openMembershipSocket(): MembershipSocket;
  openStatic(): StaticRoutingSocket;
  /** Some socket holds MRT_INIT (MRT6_INIT) in this namespace: routes forward. */
  routerActive(): boolean;
  readInterfaces(): Promise<RoutingInterfaceRow[]>;
  readRoutes(): Promise<ForwardingCacheRow[]>;
  /** The groups each interface of the namespace has joined now (/proc/net/igmp, /proc/net/igmp6). */
  readMemberships(): Promise<InterfaceMembershipRow[]>;
  /** Read once, when the router opens. */
  membershipBounds(): MembershipBounds;
}

/**
 * A kernel built without multicast routing (CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE unset) has
 * no /proc/net/ip_mr_* (ip6_mr_*) tables in any namespace: reading one then says so, as an
 * unavailable service, instead of a bare ENOENT.
 */
export async function routingTable<T>(read: () => Promise<T>, family: AddressFamily, table: string): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') throw noMulticastRouting(family, table, error);
    throw error;
  }
}

/** The error of a kernel without multicast routing for `family`. */
function noMulticastRouting(family: AddressFamily, table: string, cause?: unknown): UnavailableError {
  const option = family === 'ipv4' ? 'CONFIG_IP_MROUTE' : 'CONFIG_IPV6_MROUTE';
  const name = family === 'ipv4' ? 'IPv4' : 'IPv6';
  return new UnavailableError(`this kernel has no ${name} multicast routing (${table} is missing: it was built without ${option})`, {
    code: 'no-multicast-routing',
    hint: `routing between the pods and the outside needs a kernel with ${option}; without multicastInterfaces (snooping only, or tunnels between nodes) none is needed`,
    cause,
  });
}

const IPV4: MulticastRoutingKernel = {
  family: 'ipv4',
  interfaceWord: 'vif',
  maxInterfaces: MAXVIFS,
  interfaceTable: '/proc/net/ip_mr_vif',
  openRouter() {
    const socket = MrouteSocket.open({ init: true });
    return {
      addInterface: ({ index, ifindex }) => socket.addVif({ vif: index, ifindex }),
      addRoute: (route) => socket.addMfc({ ...route, oifs: [...route.oifs] }),
      delRoute: (key) => socket.delMfc(key),
      onNoCache: (listener) => {
        socket.onUpcall((upcall) => {
          if (upcall.type === IGMPMSG_NOCACHE) listener({ index: upcall.vif, source: upcall.source, group: upcall.group });
        });
      },
      onError: (listener) => {
        socket.onError(listener);
      },
      get closed() {
        return socket.closed;
      },
      close: () => socket.close(),
    };
  },
  openMembershipSocket: () => MrouteSocket.open({ init: false }),
  openStatic() {
    const socket = MrouteSocket.open({ init: false });
    return {
      addInterface: ({ index, ifindex }) => socket.addVif({ vif: index, ifindex }),
      delInterface: (index) => socket.delVif(index),
      addRoute: (route) => socket.addMfc({ ...route, oifs: [...route.oifs] }),
      delRoute: (key) => socket.delMfc(key),
      close: () => socket.close(),
    };
  },
  routerActive: () => procFlag('/proc/sys/net/ipv4/conf/all/mc_forwarding'),
  async readInterfaces() {
    return (await routingTable(() => readVifTable(), 'ipv4', '/proc/net/ip_mr_vif')).map((row) => ({
      index: row.vif,
      name: row.name,
      static: row.static,
      ...(row.local.kind === 'ifindex' ? { ifindex: row.local.ifindex } : {}),
    }));
  },
  readMemberships: () => readIgmpMemberships(),
  async readRoutes() {
    return (await routingTable(() => readMfcCache(), 'ipv4', '/proc/net/ip_mr_cache')).map((row) => ({
      source: row.origin,
      group: row.group,
      iif: row.iif,
      oifs: row.oifs.map((oif) => oif.vif),
      packets: row.packets,
      bytes: row.bytes,
    }));
  },
  membershipBounds: () => ({
    perSocket: positiveSysctl('ipv4/igmp_max_memberships', 20),
    maxSources: positiveSysctl('ipv4/igmp_max_msf', 10),
    maxSourcesSetting: 'net.ipv4.igmp_max_msf',
  }),
};

/**
 * IPv6 has no sysctl for the groups one socket may join: they, and their source lists, are
 * drawn from the socket's option memory (net.core.optmem_max, 20 KiB at its smallest
 * default). Sixteen groups with full 64-source filters fit in that.
 */
const IPV6_MEMBERSHIPS_PER_SOCKET = 16;

const IPV6: MulticastRoutingKernel = {
  family: 'ipv6',
  interfaceWord: 'mif',
  maxInterfaces: MAXMIFS,
  interfaceTable: '/proc/net/ip6_mr_vif',
  openRouter() {
    const socket = Mroute6Socket.open({ init: true });
    return {
      addInterface: ({ index, ifindex }) => socket.addMif({ mif: index, ifindex }),
      addRoute: (route) => socket.addMfc({ ...route, oifs: [...route.oifs] }),
      delRoute: (key) => socket.delMfc(key),
      onNoCache: (listener) => {
        socket.onUpcall((upcall) => {
          if (upcall.type === MRT6MSG_NOCACHE) listener({ index: upcall.mif, source: upcall.source, group: upcall.group });
        });
      },
      onError: (listener) => {
        socket.onError(listener);
      },
      get closed() {
        return socket.closed;
      },
      close: () => socket.close(),
    };
  },
  openMembershipSocket: () => Mroute6Socket.open({ init: false }),
  openStatic() {
    const socket = Mroute6Socket.open({ init: false });
    return {
      addInterface: ({ index, ifindex }) => socket.addMif({ mif: index, ifindex }),
      delInterface: (index) => socket.delMif(index),
      addRoute: (route) => socket.addMfc({ ...route, oifs: [...route.oifs] }),
      delRoute: (key) => socket.delMfc(key),
      close: () => socket.close(),
    };
  },
  routerActive: () => procFlag('/proc/sys/net/ipv6/conf/all/mc_forwarding'),
  async readInterfaces() {
    return (await routingTable(() => readMifTable(), 'ipv6', '/proc/net/ip6_mr_vif')).map((row) => ({ index: row.mif, name: row.name, static: row.static }));
  },
  readMemberships: () => readMldMemberships(),
  async readRoutes() {
    return (await routingTable(() => readMfc6Cache(), 'ipv6', '/proc/net/ip6_mr_cache')).map((row) => ({
      source: row.origin,
      group: row.group,
      iif: row.iif,
      oifs: row.oifs.map((oif) => oif.mif),
      packets: row.packets,
      bytes: row.bytes,
    }));
  },
  membershipBounds: () => ({
    perSocket: IPV6_MEMBERSHIPS_PER_SOCKET,
    maxSources: positiveSysctl('ipv6/mld_max_msf', 64),
    maxSourcesSetting: 'net.ipv6.mld_max_msf',
  }),
};

export const MULTICAST_ROUTING: Readonly<Record<AddressFamily, MulticastRoutingKernel>> = { ipv4: IPV4, ipv6: IPV6 };

/** Whether a /proc flag reads 1 (false where the file is missing: no multicast routing in this kernel). */
function procFlag(path: string): boolean {
  try {
    return readFileSync(path, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/** A positive integer sysctl under /proc/sys/net, or `fallback` when it cannot be read. */
function positiveSysctl(name: string, fallback: number): number {
  try {
    const value = Number(readFileSync(`/proc/sys/net/${name}`, 'utf8').trim());
    return Number.isInteger(value) && value > 0 ? value : fallback;
  } catch {
    return fallback;
  }
}
