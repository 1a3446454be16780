/**
 * Static (S,G) routes in the kernel's multicast routing tables, for one-shot commands, in
 * either family (the group's: IPv4's MFC or IPv6's MFC6).
 *
 * They are written through a raw socket that does NOT hold MRT_INIT (MRT6_INIT): the
 * kernel then marks the VIFs (MIFs) static and keeps them, and the entry, after the socket
 * closes (docs/architecture.md, "The kernel"). But it forwards multicast only while some
 * socket holds MRT_INIT in the namespace (a router: the daemon), so every result says
 * whether one is active.
 */
import { UsageError } from '../../errors.js';
import { ifindexOf } from '../../transport/interface-index.js';
import { MULTICAST_ROUTING, type MulticastRoutingKernel } from '../../transport/multicast-routing.js';
import {
  checkGroupAddress,
  checkSourceAddress,
  checkSourceGroupFamily,
} from '../../domain/declared-state/group-address.js';
import { addressFamily } from '../../wire/ip-address.js';

export interface StaticRoute {
  group: string;
  source: string;
  /** Interface names. */
  iif: string;
  oifs: string[];
}

export type RouteOutcome = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent';

/** Checks a route as given on the command line; UsageError (nothing changed) for anything wrong. */
export function checkRoute(route: StaticRoute): { ifindexes: Map<string, number> } {
  checkSourceGroup(route);
  if (route.oifs.length === 0) throw new UsageError('--oif needs at least one interface');
  if (route.oifs.includes(route.iif))
    throw new UsageError(`--oif: ${route.iif} is also the incoming interface (--iif)`);
  if (new Set(route.oifs).size !== route.oifs.length) throw new UsageError('--oif names an interface twice');
  const ifindexes = new Map<string, number>();
  for (const name of [route.iif, ...route.oifs]) ifindexes.set(name, ifindexOf(name));
  return { ifindexes };
}

/** The kernel calls for the route's family (its group's; checkSourceGroup made sure the source's is the same). */
function kernelOf(route: Pick<StaticRoute, 'group'>): MulticastRoutingKernel {
  return MULTICAST_ROUTING[addressFamily(route.group) ?? 'ipv4'];
}

/** Adds (or replaces) a static (S,G) route; VIFs (MIFs) are added for interfaces that have none. */
export async function installRoute(route: StaticRoute): Promise<{ outcome: RouteOutcome; routerActive: boolean }> {
  const { ifindexes } = checkRoute(route);
  const kernel = kernelOf(route);
  const [interfaces, routes] = await Promise.all([kernel.readInterfaces(), kernel.readRoutes()]);
  const routerActive = kernel.routerActive();
  const indexOf = new Map<string, number>(); // interface name → VIF or MIF
  for (const [name, ifindex] of ifindexes) {
    // IPv4's table tells a VIF's ifindex, IPv6's only the device's name.
    const row = interfaces.find((entry) =>
      entry.ifindex === undefined ? entry.name === name : entry.ifindex === ifindex,
    );
    if (row !== undefined) indexOf.set(name, row.index);
  }
  const used = new Set(interfaces.map((row) => row.index));
  const socket = kernel.openStatic();
  try {
    for (const [name, ifindex] of ifindexes) {
      if (indexOf.has(name)) continue;
      let index = 0;
      while (used.has(index)) index++;
      if (index >= kernel.maxInterfaces) {
        const word = kernel.interfaceWord.toUpperCase();
        throw new UsageError(
          `no free ${word}: the kernel has ${kernel.maxInterfaces}, all in use (${kernel.interfaceTable})`,
        );
      }
      socket.addInterface({ index, ifindex });
      used.add(index);
      indexOf.set(name, index);
    }
    const iif = indexOf.get(route.iif)!;
    const oifs = route.oifs.map((name) => indexOf.get(name)!).sort((a, b) => a - b);
    const existing = routes.find((row) => row.group === route.group && row.source === route.source);
    if (existing !== undefined && existing.iif === iif && sameOifs(existing.oifs, oifs))
      return { outcome: 'unchanged', routerActive };
    socket.addRoute({ source: route.source, group: route.group, iif, oifs });
    return { outcome: existing === undefined ? 'added' : 'updated', routerActive };
  } finally {
    socket.close();
  }
}

/** Removes the (S,G) route, and the static VIFs (MIFs) that no route uses any more. */
export async function uninstallRoute(
  route: Pick<StaticRoute, 'group' | 'source'>,
): Promise<{ outcome: RouteOutcome; routerActive: boolean }> {
  checkSourceGroup(route);
  const kernel = kernelOf(route);
  const [interfaces, routes] = await Promise.all([kernel.readInterfaces(), kernel.readRoutes()]);
  const routerActive = kernel.routerActive();
  const existing = routes.find((row) => row.group === route.group && row.source === route.source);
  if (existing === undefined) return { outcome: 'absent', routerActive };
  const socket = kernel.openStatic();
  try {
    socket.delRoute({ source: route.source, group: route.group });
    // The static interfaces this route used that no other entry uses go too, but never
    // while a router runs: it may have taken one of them for its own (the daemon reuses a
    // static VIF on its interface), and its own are its business anyway.
    if (!routerActive) {
      const remaining = routes.filter((row) => row !== existing);
      const inUse = new Set(remaining.flatMap((row) => [row.iif, ...row.oifs]));
      const used = new Set([existing.iif, ...existing.oifs]);
      for (const row of interfaces)
        if (row.static && used.has(row.index) && !inUse.has(row.index)) socket.delInterface(row.index);
    }
    return { outcome: 'removed', routerActive };
  } finally {
    socket.close();
  }
}

/** A multicast group that can be routed, and a unicast source host of the same family. */
function checkSourceGroup(route: Pick<StaticRoute, 'group' | 'source'>): void {
  const group = checkGroupAddress(route.group, 'GROUP');
  const source = checkSourceAddress(route.source, '--source');
  checkSourceGroupFamily(source, group, 'the route');
}

function sameOifs(current: readonly number[], oifs: readonly number[]): boolean {
  const sorted = [...current].sort((a, b) => a - b);
  return sorted.length === oifs.length && sorted.every((index, position) => index === oifs[position]);
}

/** The plain statement every route command makes when no router runs. */
export const NO_ROUTER_WARNING =
  'no multicast router is active in this network namespace: the kernel keeps static routes but forwards nothing until one runs (mcastctl daemon)';
