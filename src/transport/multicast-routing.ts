/**
 * One address family's kernel multicast routing, as the daemon's router uses it: the same
 * few calls over the family's router socket and /proc tables, so that one router serves
 * both families. Both are built by one function from the family's kit
 * (protocol/mroute/family-kits.ts), which holds all that differs: the kernel's word for a
 * routing interface, the table size, the upcall, where the tables are read, and the
 * sysctls that bound the memberships one socket may hold.
 */
import { readFileSync } from 'node:fs';
import { isSystemError, type McastError, UnavailableError } from '../errors.js';
import { boundSetting, type FamilyKit, type MembershipBound } from '../protocol/mroute/family-kit.js';
import { FAMILY_KITS } from '../protocol/mroute/family-kits.js';
import type { ForwardingCacheRow, InterfaceMembershipRow, RoutingInterfaceRow } from '../protocol/mroute/proc.js';
import type { AddressFamily } from '../wire/ip-address.js';
import { type Membership, RouterSocket, type SourceFilterSetting, type SourceMembership } from './router-socket.js';

export type { ForwardingCacheRow, RoutingInterfaceRow };

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
    if (isSystemError(error) && error.code === 'ENOENT') throw noMulticastRouting(FAMILY_KITS[family], table, error);
    throw error;
  }
}

/** The error of a kernel without multicast routing for the kit's family. */
function noMulticastRouting(kit: FamilyKit, table: string, cause?: unknown): UnavailableError {
  const option = kit.kernelOption;
  return new UnavailableError(
    `this kernel has no ${kit.name} multicast routing (${table} is missing: it was built without ${option})`,
    {
      code: 'no-multicast-routing',
      hint: `routing between the pods and the outside needs a kernel with ${option}; without multicastInterfaces (snooping only, or tunnels between nodes) none is needed`,
      cause,
    },
  );
}

/**
 * The family's routing interfaces and entries, over the router socket: the calls both the router's and a static socket
 * make.
 */
function routingCalls(socket: RouterSocket): Pick<StaticRoutingSocket, 'addInterface' | 'addRoute' | 'delRoute'> {
  return {
    addInterface: ({ index, ifindex }) => socket.addInterface({ index, ifindex }),
    addRoute: ({ source, group, iif, oifs }) => socket.addEntry({ source, group, iif, oifs }),
    delRoute: ({ source, group }) => socket.delEntry({ source, group }),
  };
}

/** MulticastRoutingKernel of the kit's family. */
function routingKernel(kit: FamilyKit): MulticastRoutingKernel {
  return {
    family: kit.family,
    interfaceWord: kit.interfaceWord,
    maxInterfaces: kit.maxInterfaces,
    interfaceTable: kit.proc.interfaces,
    openRouter() {
      const socket = RouterSocket.open({ family: kit, init: true });
      return {
        ...routingCalls(socket),
        onNoCache: (listener) => {
          socket.onUpcall((upcall) => {
            if (upcall.type === kit.upcall.types.noCache)
              listener({ index: upcall.index, source: upcall.source, group: upcall.group });
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
    openMembershipSocket: () => RouterSocket.open({ family: kit, init: false }),
    openStatic() {
      const socket = RouterSocket.open({ family: kit, init: false });
      return {
        ...routingCalls(socket),
        delInterface: (index) => socket.delInterface(index),
        close: () => socket.close(),
      };
    },
    routerActive: () => procFlag(kit.proc.mcForwarding),
    async readInterfaces() {
      return (await routingTable(() => kit.readInterfaceTable(), kit.family, kit.proc.interfaces)).map((row) => ({
        index: row.index,
        name: row.name,
        static: row.static,
        ...(row.ifindex === undefined ? {} : { ifindex: row.ifindex }),
      }));
    },
    readMemberships: () => kit.readMemberships(),
    async readRoutes() {
      return (await routingTable(() => kit.readCacheTable(), kit.family, kit.proc.cache)).map((row) => ({
        source: row.source,
        group: row.group,
        iif: row.iif,
        oifs: row.oifs.map((oif) => oif.index),
        packets: row.packets,
        bytes: row.bytes,
      }));
    },
    membershipBounds: () => ({
      perSocket: boundValue(kit.memberships.perSocket),
      maxSources: boundValue(kit.memberships.maxSources),
      maxSourcesSetting: boundSetting(kit.memberships.maxSources),
    }),
  };
}

export const MULTICAST_ROUTING: Readonly<Record<AddressFamily, MulticastRoutingKernel>> = {
  ipv4: routingKernel(FAMILY_KITS.ipv4),
  ipv6: routingKernel(FAMILY_KITS.ipv6),
};

/** Whether a /proc flag reads 1 (false where the file is missing: no multicast routing in this kernel). */
function procFlag(path: string): boolean {
  try {
    return readFileSync(path, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * A bound's value: its sysctl's (a positive integer under /proc/sys), or its fallback when that cannot be read; a fixed
 * bound as it is.
 */
function boundValue(bound: MembershipBound): number {
  if (!('sysctl' in bound)) return bound.fixed;
  try {
    const value = Number(readFileSync(`/proc/sys/${bound.sysctl.replaceAll('.', '/')}`, 'utf8').trim());
    return Number.isInteger(value) && value > 0 ? value : bound.fallback;
  } catch {
    return bound.fallback;
  }
}
