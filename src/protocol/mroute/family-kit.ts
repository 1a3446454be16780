/**
 * What sets the two families' kernel multicast routing apart, in one object a family: the
 * socket (a raw IGMP socket at level IPPROTO_IP, a raw ICMPv6 one at IPPROTO_IPV6), the
 * option numbers (MRT_*, MRT6_*), the kernel's word for a routing interface (VIF, MIF) and
 * its table size, the structs the options take and the upcall the kernel sends, the /proc
 * tables, the membership options and their bounds, and the words of the messages. The
 * router socket (src/transport/router-socket.ts) is written once against this and given a
 * kit (family-kits.ts has the two); nothing above this folder asks which family it holds to
 * pick a constant.
 */
import { readFile } from 'node:fs/promises';

import { isSystemError } from '../../errors.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import { checkAddress, checkIfindex, checkInterfaceIndex, type IfindexLimit } from './arguments.js';
import type { StructCodec } from './common.js';
import type { FilterModeName, GroupFilter, GroupSourceReq } from './group-req.js';
import type { InterfaceMembershipRow } from './proc.js';

/** The width of the upcall's interface field: igmpmsg's is 16 bits since Linux 5.10 (8 before), mrt6msg's always 16. */
export type UpcallIndexWidth = 8 | 16;

/** One upcall, in either family's terms. */
export interface RouterUpcall {
  /** One of the kit's upcall.types. */
  type: number;
  /** The routing interface the packet came in on (igmpmsg's im_vif, mrt6msg's im6_mif). */
  index: number;
  source: string;
  group: string;
  /**
   * What follows the struct: a header of the packet (NOCACHE, WRONGVIF: IPv4 gives 8 octets, IPv6 40 undefined ones) or
   * the whole packet (WHOLEPKT).
   */
  rest: Uint8Array;
}

/** A routing interface on a device, by ifindex. */
export interface InterfaceSpec {
  index: number;
  ifindex: number;
  /** The minimum TTL (hop limit) of the packets it forwards. */
  threshold: number;
}

export interface SourceGroup {
  source: string;
  group: string;
}

/** An (S,G) entry: packets from `source` to `group` arriving on `iif` leave through `oifs`. */
export interface EntrySpec extends SourceGroup {
  iif: number;
  oifs: readonly number[];
  /**
   * The TTL threshold of every oif (IPv4 only: mf6cctl carries none, its MIFs forward what has a hop limit above 1).
   */
  ttl: number;
}

export interface Membership {
  group: string;
  ifindex: number;
}

export interface SourceMembership extends Membership {
  source: string;
}

/**
 * A socket's whole source filter for one group on one interface (INCLUDE with no sources is a leave, for the kernel
 * too).
 */
export interface SourceFilterSetting extends Membership {
  mode: FilterModeName;
  sources: readonly string[];
}

/** A bound of one membership socket: a sysctl read when the router opens, or a number the family holds to. */
export type MembershipBound = { sysctl: string; fallback: number } | { fixed: number; limitedBy: string };

/** A routing interface as its family's table shows it, with counters. */
export interface InterfaceTableRow {
  index: number;
  name: string;
  /** Where the table tells it (IPv4 VIFs added by ifindex); IPv6's never does. */
  ifindex?: number;
  static: boolean;
  /** The PIM register interface (VIFF_REGISTER, MIFF_REGISTER): no device of its own. */
  register: boolean;
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  bytesOut: number;
}

/** A forwarding-cache entry as its family's table shows it, with counters. */
export interface CacheTableRow {
  source: string;
  group: string;
  /** -1 for an unresolved entry. */
  iif: number;
  oifs: Array<{ index: number; ttl: number }>;
  packets: number;
  bytes: number;
  wrong: number;
}

/** Any struct module of this folder, whatever value it encodes. */
interface KernelStruct {
  encodingLength(value: never): number;
  encode(value: never, buf?: Uint8Array, offset?: number): Uint8Array;
  decode(bytes: Uint8Array, start?: number, end?: number): unknown;
}

export interface FamilyKit {
  readonly family: AddressFamily;
  /** 'IPv4' or 'IPv6', for messages. */
  readonly name: string;
  /** What qualifies "multicast" in messages: nothing for IPv4, whose messages came first, 'IPv6 ' for IPv6. */
  readonly qualifier: '' | 'IPv6 ';
  /** The kernel option that builds this family's routing in, named when it is missing. */
  readonly kernelOption: string;
  readonly socket: {
    readonly ipVersion: 4 | 6;
    readonly protocol: number;
    readonly protocolName: string;
    /** setsockopt level of every routing and membership option. */
    readonly level: number;
    /** An option set once the socket is open, before anything else. */
    readonly setup?: {
      readonly level: number;
      readonly option: number;
      readonly value: Uint8Array;
      readonly what: string;
    };
  };
  /** 'MRT' or 'MRT6': what the options' names start with, for messages. */
  readonly optionPrefix: string;
  readonly options: {
    readonly init: number;
    readonly done: number;
    readonly addInterface: number;
    readonly delInterface: number;
    readonly addEntry: number;
    readonly delEntry: number;
    readonly flush: number;
  };
  /** The flush of everything not static: entries and interfaces. */
  readonly flushAll: number;
  /** The kernel's word for a routing interface. */
  readonly interfaceWord: 'vif' | 'mif';
  /** The size of the kernel's table of them (MAXVIFS, MAXMIFS). */
  readonly maxInterfaces: number;
  /** The ifindex the interface struct can hold, when not any positive one. */
  readonly ifindexLimit?: IfindexLimit;
  /** Whether an entry carries a TTL threshold per outgoing interface. */
  readonly entryThresholds: boolean;
  readonly structs: {
    readonly interface: KernelStruct;
    readonly entry: KernelStruct;
    readonly upcall: KernelStruct;
    readonly membership: KernelStruct;
    readonly sourceMembership: StructCodec<GroupSourceReq>;
    readonly filter: StructCodec<GroupFilter>;
  };
  readonly upcall: {
    readonly length: number;
    /** The octet that is 0 in an upcall and never in the other messages the socket receives. */
    readonly mbzOffset: number;
    readonly types: {
      readonly noCache: number;
      readonly wrongInterface: number;
      readonly wholePacket: number;
      readonly wrongInterfaceWhole: number;
    };
    /** The upcall's fields, from a packet long enough to hold it. */
    decode(packet: Uint8Array, width: UpcallIndexWidth): Omit<RouterUpcall, 'rest'>;
    /** The width the running kernel writes. */
    kernelWidth(): UpcallIndexWidth;
  };
  readonly memberships: {
    readonly join: number;
    readonly leave: number;
    readonly joinSource: number;
    readonly filter: number;
    readonly perSocket: MembershipBound;
    readonly maxSources: MembershipBound;
  };
  readonly proc: {
    readonly interfaces: string;
    readonly cache: string;
    readonly memberships: string;
    /** 1 while some socket holds the INIT option. */
    readonly mcForwarding: string;
  };
  /**
   * Whether the interface table tells an interface's ifindex (ip_mr_vif does for a VIF added by one; ip6_mr_vif never
   * does, only the device's name).
   */
  readonly tableShowsIfindex: boolean;
  /**
   * Hint words that no other field gives: who may hold the router, how to find it, why a device may not take an
   * interface.
   */
  readonly hints: { readonly knownRouters: string; readonly findRouter: string; readonly unusableDevice: string };
  /** The option values: the structs encoded from what the socket's caller gave. */
  interfaceArgument(spec: InterfaceSpec): Uint8Array;
  interfaceKeyArgument(index: number): Uint8Array;
  entryArgument(spec: EntrySpec): Uint8Array;
  entryKeyArgument(key: SourceGroup): Uint8Array;
  membershipArgument(membership: Membership): Uint8Array;
  readInterfaceTable(path?: string): Promise<InterfaceTableRow[]>;
  readCacheTable(path?: string): Promise<CacheTableRow[]>;
  readMemberships(path?: string): Promise<InterfaceMembershipRow[]>;
}

/** The routing interface index, checked against the family's table (UsageError). */
export function checkIndex(kit: FamilyKit, index: number, what?: string): void {
  checkInterfaceIndex(index, { word: kit.interfaceWord.toUpperCase(), size: kit.maxInterfaces }, what);
}

/** An address of the kit's family; with `multicast`, a multicast one (UsageError). */
export function checkFamilyAddress(kit: FamilyKit, address: string, what: string, multicast: boolean): void {
  checkAddress(kit.family, address, what, multicast);
}

/** An ifindex a routing interface of the family can be on (UsageError). */
export function checkInterfaceIfindex(kit: FamilyKit, ifindex: number): void {
  checkIfindex(ifindex, kit.ifindexLimit);
}

/** The setting a membership bound names in messages: its sysctl, or the one it is drawn from. */
export function boundSetting(bound: MembershipBound): string {
  return 'sysctl' in bound ? bound.sysctl : bound.limitedBy;
}

/**
 * One message from the routing socket: an upcall, or undefined for the family's own traffic the socket also receives.
 */
export function readUpcall(kit: FamilyKit, packet: Uint8Array, width: UpcallIndexWidth): RouterUpcall | undefined {
  const { length, mbzOffset } = kit.upcall;
  if (packet.length < length || packet[mbzOffset] !== 0) return undefined;
  return { ...kit.upcall.decode(packet, width), rest: packet.subarray(length) };
}

/** Where readRouteTables reads (the defaults are the kit's, this process's namespace; tests point them at files). */
export interface RouteTablePaths {
  interfaces?: string;
  cache?: string;
  mcForwarding?: string;
}

/** One family's routing tables, as `mcastctl routes` shows them. */
export interface RouteTables {
  /** Some socket holds the family's INIT option here: routes forward. */
  routerActive: boolean;
  interfaces: InterfaceTableRow[];
  routes: CacheTableRow[];
}

/**
 * The family's multicast routing tables of this namespace, or undefined when the kernel has
 * none to show (no CONFIG_IP_MROUTE or CONFIG_IPV6_MROUTE, or no IPv6: the /proc files are
 * absent). That is not an error: such a host simply has no routes of the family.
 */
export async function readRouteTables(kit: FamilyKit, paths: RouteTablePaths = {}): Promise<RouteTables | undefined> {
  let interfaces: InterfaceTableRow[];
  let routes: CacheTableRow[];
  try {
    [interfaces, routes] = await Promise.all([
      kit.readInterfaceTable(paths.interfaces),
      kit.readCacheTable(paths.cache),
    ]);
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined;
    throw error;
  }
  let routerActive = false;
  try {
    routerActive = (await readFile(paths.mcForwarding ?? kit.proc.mcForwarding, 'utf8')).trim() === '1';
  } catch {
    // No such sysctl: the kernel cannot route the family's multicast at all.
  }
  return { routerActive, interfaces, routes };
}
