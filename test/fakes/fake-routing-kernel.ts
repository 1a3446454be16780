/**
 * One family's kernel multicast routing in memory (MulticastRoutingKernel): it records the
 * interfaces, routes and memberships the router asks for, and lets a test play the
 * kernel's NOCACHE upcalls and move packet counters.
 */
import type { McastError } from '../../src/errors.js';
import type {
  MembershipSocket,
  MulticastRoutingKernel,
  MulticastRoutingSocket,
  NoCacheMiss,
  StaticRoutingSocket,
  ForwardingCacheRow,
  RouteEntry,
  RoutingInterfaceRow,
} from '../../src/transport/multicast-routing.js';
import type { AddressFamily } from '../../src/wire/ip-address.js';
import type { InterfaceMembershipRow } from '../../src/protocol/mroute/proc.js';

export class FakeRoutingKernel implements MulticastRoutingKernel {
  readonly interfaceWord: 'vif' | 'mif';
  readonly maxInterfaces = 32;
  readonly interfaceTable: string;
  /** Interfaces present before the router opens (static ones). */
  readonly staticInterfaces: RoutingInterfaceRow[] = [];
  readonly interfaces: Array<{ index: number; ifindex: number }> = [];
  readonly routes = new Map<string, RouteEntry & { packets: number }>();
  /** Membership calls, in order: "join ff05::1 on 1", "source ff3e::1 2001:db8::1 on 1", ... */
  readonly memberships: string[] = [];
  /** Interface names by ifindex, for readMemberships (a test sets them). */
  readonly interfaceNames = new Map<number, string>();
  #noCache: ((miss: NoCacheMiss) => void) | undefined;
  #closed = false;

  constructor(readonly family: AddressFamily) {
    this.interfaceWord = family === 'ipv4' ? 'vif' : 'mif';
    this.interfaceTable = family === 'ipv4' ? '/proc/net/ip_mr_vif' : '/proc/net/ip6_mr_vif';
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The kernel holds a packet of (source, group) that came in on interface `index`. */
  miss(miss: NoCacheMiss): void {
    this.#noCache?.(miss);
  }

  openRouter(): MulticastRoutingSocket {
    const kernel = this;
    return {
      addInterface: (options) => void kernel.interfaces.push(options),
      addRoute: (route) => void kernel.routes.set(`${route.source}>${route.group}`, { ...route, oifs: [...route.oifs], packets: 0 }),
      delRoute: (key) => void kernel.routes.delete(`${key.source}>${key.group}`),
      onNoCache: (listener) => {
        kernel.#noCache = listener;
      },
      onError: (_listener: (error: McastError) => void) => undefined,
      get closed() {
        return kernel.#closed;
      },
      close: () => {
        kernel.#closed = true;
      },
    };
  }

  /** A static socket's calls land in the same tables (the kernel would mark them static). */
  openStatic(): StaticRoutingSocket {
    return {
      addInterface: (options) => void this.interfaces.push(options),
      delInterface: (index) =>
        void this.interfaces.splice(
          this.interfaces.findIndex((entry) => entry.index === index),
          1,
        ),
      addRoute: (route) => void this.routes.set(`${route.source}>${route.group}`, { ...route, oifs: [...route.oifs], packets: 0 }),
      delRoute: (key) => void this.routes.delete(`${key.source}>${key.group}`),
      close: () => undefined,
    };
  }

  routerActive(): boolean {
    return !this.#closed;
  }

  openMembershipSocket(): MembershipSocket {
    const log = (line: string) => void this.memberships.push(line);
    return {
      joinGroup: ({ group, ifindex }) => log(`join ${group} on ${ifindex}`),
      leaveGroup: ({ group, ifindex }) => log(`leave ${group} on ${ifindex}`),
      joinSourceGroup: ({ group, source, ifindex }) => log(`source ${group} ${source} on ${ifindex}`),
      setSourceFilter: ({ group, mode, sources, ifindex }) => log(`filter ${group} ${mode} ${sources.join(',')} on ${ifindex}`),
      onError: () => undefined,
      close: () => undefined,
    };
  }

  async readInterfaces(): Promise<RoutingInterfaceRow[]> {
    return [...this.staticInterfaces];
  }

  async readRoutes(): Promise<ForwardingCacheRow[]> {
    return [...this.routes.values()].map(({ source, group, iif, oifs, packets }) => ({ source, group, iif, oifs: [...oifs], packets, bytes: packets * 100 }));
  }

  /** The joins the membership sockets hold, by the interface's name (`interfaceNames`, else its ifindex). */
  async readMemberships(): Promise<InterfaceMembershipRow[]> {
    const held = new Map<string, InterfaceMembershipRow>();
    for (const line of this.memberships) {
      const match = /^(join|leave|source|filter) (\S+) .*on (\d+)$/.exec(line);
      if (match === null) continue;
      const [, op, group, ifindex] = match as unknown as [string, string, string, string];
      const name = this.interfaceNames.get(Number(ifindex)) ?? ifindex;
      if (op === 'leave') held.delete(`${name} ${group}`);
      else held.set(`${name} ${group}`, { name, group });
    }
    return [...held.values()];
  }

  membershipBounds() {
    return { perSocket: 16, maxSources: 64, maxSourcesSetting: this.family === 'ipv4' ? 'net.ipv4.igmp_max_msf' : 'net.ipv6.mld_max_msf' };
  }
}
