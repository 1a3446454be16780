/**
 * One family's kernel multicast routing in memory (MulticastRoutingKernel), as one network
 * namespace holds it: its devices, the routing interfaces (VIFs or MIFs) and forwarding
 * entries, who holds the router, and each membership socket's groups. It refuses what the
 * kernel refuses, with the errors the real sockets give (the same argument checks of the
 * family's kit, then MrouteError by errno); test/contracts/routing-kernel.ts holds it to the real kernel's
 * answers. A test plays the kernel's NOCACHE upcalls with miss() and moves packet counters.
 */
import { type McastError, UnavailableError } from '../../src/errors.js';
import {
  boundSetting,
  checkFamilyAddress,
  checkIndex,
  checkInterfaceIfindex,
  type FamilyKit,
} from '../../src/protocol/mroute/family-kit.js';
import { FAMILY_KITS } from '../../src/protocol/mroute/family-kits.js';
import type { InterfaceMembershipRow } from '../../src/protocol/mroute/proc.js';
import { MrouteError } from '../../src/protocol/mroute/mroute-error.js';
import type {
  ForwardingCacheRow,
  MembershipSocket,
  MulticastRoutingKernel,
  MulticastRoutingSocket,
  NoCacheMiss,
  RouteEntry,
  RoutingInterfaceRow,
  StaticRoutingSocket,
} from '../../src/transport/multicast-routing.js';
import type { AddressFamily } from '../../src/wire/ip-address.js';

/** A routing interface as the fake's table holds it: who added it decides whether it stays. */
interface TableInterface {
  index: number;
  ifindex: number;
  /** Added by a socket without MRT_INIT: kept when sockets close. */
  static: boolean;
}

interface TableRoute extends RouteEntry {
  static: boolean;
  packets: number;
}

export interface FakeRoutingKernelOptions {
  /** The namespace's devices by ifindex (default: lo, ifindex 1, as in every namespace). */
  devices?: Record<number, string>;
}

export class FakeRoutingKernel implements MulticastRoutingKernel {
  readonly interfaceWord: 'vif' | 'mif';
  readonly maxInterfaces: number;
  readonly interfaceTable: string;
  /** The namespace's devices, by ifindex: what an interface may be added on, and the names memberships are read by. */
  readonly devices: Map<number, string>;
  /** Interfaces present before the router opens, as another program left them (a test adds them). */
  readonly staticInterfaces: RoutingInterfaceRow[] = [];
  /** The interfaces added through this fake's sockets, in order. */
  readonly interfaces: TableInterface[] = [];
  /** Forwarding entries by "source>group". */
  readonly routes = new Map<string, TableRoute>();
  /** Membership calls, in order: "join ff05::1 on 1", "source ff3e::1 2001:db8::1 on 1", ... */
  readonly memberships: string[] = [];
  #held = new Map<symbol, Set<string>>();
  #router: symbol | undefined;
  #noCache: ((miss: NoCacheMiss) => void) | undefined;
  #closed = false;
  readonly #kit: FamilyKit;

  constructor(
    readonly family: AddressFamily,
    options: FakeRoutingKernelOptions = {},
  ) {
    this.#kit = FAMILY_KITS[family];
    this.interfaceWord = this.#kit.interfaceWord;
    this.maxInterfaces = this.#kit.maxInterfaces;
    this.interfaceTable = this.#kit.proc.interfaces;
    this.devices = new Map(
      Object.entries(options.devices ?? { 1: 'lo' }).map(([ifindex, name]) => [Number(ifindex), name]),
    );
  }

  /** Whether the last router opened has closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The kernel holds a packet of (source, group) that came in on interface `index`. */
  miss(miss: NoCacheMiss): void {
    this.#noCache?.(miss);
  }

  openRouter(): MulticastRoutingSocket {
    if (this.#router !== undefined) {
      throw new UnavailableError(
        `cannot become the multicast router of this network namespace: another multicast router holds it (${this.#init}: EADDRINUSE)`,
      );
    }
    const owner = Symbol('router');
    this.#router = owner;
    this.#closed = false;
    let closed = false;
    return {
      addInterface: (options) => this.#addInterface(options, false),
      addRoute: (route) => this.#addRoute(route, false),
      delRoute: (key) => this.#delRoute(key),
      onNoCache: (listener) => {
        this.#noCache = listener;
      },
      onError: (_listener: (error: McastError) => void) => undefined,
      get closed() {
        return closed;
      },
      close: () => {
        if (closed) return;
        closed = true;
        // The kernel takes away what the router added; static entries stay.
        for (let at = this.interfaces.length - 1; at >= 0; at--)
          if (!this.interfaces[at]!.static) this.interfaces.splice(at, 1);
        for (const [key, route] of this.routes) if (!route.static) this.routes.delete(key);
        this.#router = undefined;
        this.#noCache = undefined;
        this.#closed = true;
      },
    };
  }

  /** A socket without MRT_INIT: what it adds, the kernel marks static and keeps. */
  openStatic(): StaticRoutingSocket {
    return {
      addInterface: (options) => this.#addInterface(options, true),
      delInterface: (index) => {
        this.#checkIndex(index, this.interfaceWord.toUpperCase());
        const at = this.interfaces.findIndex((entry) => entry.index === index);
        if (at < 0)
          throw new MrouteError(
            `cannot delete ${this.interfaceWord.toUpperCase()} ${index}: EADDRNOTAVAIL`,
            'EADDRNOTAVAIL',
          );
        this.interfaces.splice(at, 1);
      },
      addRoute: (route) => this.#addRoute(route, true),
      delRoute: (key) => this.#delRoute(key),
      close: () => undefined,
    };
  }

  routerActive(): boolean {
    return this.#router !== undefined;
  }

  openMembershipSocket(): MembershipSocket {
    const owner = Symbol('memberships');
    const held = new Set<string>();
    this.#held.set(owner, held);
    const log = (line: string) => void this.memberships.push(line);
    const join = (group: string, ifindex: number, line: string) => {
      this.#checkGroup(group);
      const key = `${group} ${ifindex}`;
      if (held.has(key)) throw new MrouteError(`cannot join ${group}: EADDRINUSE`, 'EADDRINUSE');
      held.add(key);
      log(line);
    };
    return {
      joinGroup: ({ group, ifindex }) => join(group, ifindex, `join ${group} on ${ifindex}`),
      leaveGroup: ({ group, ifindex }) => {
        this.#checkGroup(group);
        if (!held.delete(`${group} ${ifindex}`))
          throw new MrouteError(`cannot leave ${group}: EADDRNOTAVAIL`, 'EADDRNOTAVAIL');
        log(`leave ${group} on ${ifindex}`);
      },
      joinSourceGroup: ({ group, source, ifindex }) => {
        this.#checkGroup(group);
        held.add(`${group} ${ifindex}`);
        log(`source ${group} ${source} on ${ifindex}`);
      },
      setSourceFilter: ({ group, mode, sources, ifindex }) => {
        this.#checkGroup(group);
        if (mode === 'include' && sources.length === 0) held.delete(`${group} ${ifindex}`);
        else held.add(`${group} ${ifindex}`);
        log(`filter ${group} ${mode} ${sources.join(',')} on ${ifindex}`);
      },
      onError: () => undefined,
      close: () => void this.#held.delete(owner),
    };
  }

  async readInterfaces(): Promise<RoutingInterfaceRow[]> {
    return [
      ...this.staticInterfaces,
      ...this.interfaces.map((entry) => ({
        index: entry.index,
        name: this.devices.get(entry.ifindex) ?? String(entry.ifindex),
        static: entry.static,
        ...(this.#kit.tableShowsIfindex ? { ifindex: entry.ifindex } : {}),
      })),
    ];
  }

  /** The entries, as the kernel's cache shows them: outgoing interfaces that do not exist are left out. */
  async readRoutes(): Promise<ForwardingCacheRow[]> {
    const present = new Set([...this.staticInterfaces, ...this.interfaces].map((entry) => entry.index));
    return [...this.routes.values()].map(({ source, group, iif, oifs, packets }) => ({
      source,
      group,
      iif,
      oifs: oifs.filter((oif) => present.has(oif)),
      packets,
      bytes: packets * 100,
    }));
  }

  /** The groups the open membership sockets hold, by the device's name. */
  async readMemberships(): Promise<InterfaceMembershipRow[]> {
    const rows = new Map<string, InterfaceMembershipRow>();
    for (const held of this.#held.values()) {
      for (const key of held) {
        const [group, ifindex] = key.split(' ') as [string, string];
        const name = this.devices.get(Number(ifindex)) ?? ifindex;
        rows.set(`${name} ${group}`, { name, group });
      }
    }
    return [...rows.values()];
  }

  membershipBounds() {
    return { perSocket: 16, maxSources: 64, maxSourcesSetting: boundSetting(this.#kit.memberships.maxSources) };
  }

  get #init(): string {
    return `${this.#kit.optionPrefix}_INIT`;
  }

  #checkIndex(index: number, what: string): void {
    checkIndex(this.#kit, index, what);
  }

  #checkGroup(group: string): void {
    checkFamilyAddress(this.#kit, group, 'group', true);
  }

  #addInterface({ index, ifindex }: { index: number; ifindex: number }, isStatic: boolean): void {
    const word = this.interfaceWord.toUpperCase();
    this.#checkIndex(index, word);
    checkInterfaceIfindex(this.#kit, ifindex);
    if ([...this.staticInterfaces, ...this.interfaces].some((entry) => entry.index === index)) {
      throw new MrouteError(`cannot add ${word} ${index}: EADDRINUSE`, 'EADDRINUSE');
    }
    if (!this.devices.has(ifindex))
      throw new MrouteError(`cannot add ${word} ${index}: EADDRNOTAVAIL (no device ${ifindex})`, 'EADDRNOTAVAIL');
    this.interfaces.push({ index, ifindex, static: isStatic });
  }

  #addRoute(route: RouteEntry, isStatic: boolean): void {
    const word = this.interfaceWord.toUpperCase();
    checkFamilyAddress(this.#kit, route.source, 'source', false);
    this.#checkGroup(route.group);
    this.#checkIndex(route.iif, `incoming ${word}`);
    for (const oif of route.oifs) this.#checkIndex(oif, `outgoing ${word}`);
    this.routes.set(`${route.source}>${route.group}`, {
      ...route,
      oifs: [...route.oifs],
      static: isStatic,
      packets: 0,
    });
  }

  #delRoute({ source, group }: { source: string; group: string }): void {
    checkFamilyAddress(this.#kit, source, 'source', false);
    this.#checkGroup(group);
    if (!this.routes.delete(`${source}>${group}`))
      throw new MrouteError(`cannot delete (${source}, ${group}): ENOENT`, 'ENOENT');
  }
}
