/**
 * What reconcile reads of the node's multicast routes before it plans: the kernel's entries
 * of both families, and which of them belong to a running router (the daemon's own list, or
 * the router's interfaces), since reconcile must leave a router's routes alone.
 */
import { McastError, UnavailableError } from '../../errors.js';
import type { RouteState } from '../../domain/reconcile-plan.js';
import { ControlClient } from '../../transport/control/control-client.js';
import type { RouteView } from '../../transport/control/daemon-view.js';
import {
  type ForwardingCacheRow,
  MULTICAST_ROUTING,
  type RoutingInterfaceRow,
} from '../../transport/multicast-routing.js';
import type { AddressFamily } from '../../wire/ip-address.js';

/** The (S,G) entries the running daemon added, or undefined when no daemon answers here. */
export async function daemonLearnedRoutes(path: string): Promise<RouteView[] | undefined> {
  let client: ControlClient;
  try {
    client = await ControlClient.connect(path);
  } catch (error) {
    if (error instanceof UnavailableError) return undefined; // no daemon: every route is static
    throw error;
  }
  try {
    return await client.request<RouteView[]>('routes');
  } finally {
    client.close();
  }
}

export interface KernelRoutes {
  /** Per family: some socket holds MRT_INIT (MRT6_INIT) here. */
  routerActive: Record<AddressFamily, boolean>;
  /** The resolved entries of both families, interfaces by name. */
  routes: RouteState[];
  /** Keys (`source>group`) of entries whose incoming interface is a running router's own (not static). */
  onRouterInterfaces: Set<string>;
}

/**
 * The kernel's multicast entries of both families. Unresolved entries (no incoming
 * interface yet: the kernel waits for the router) are nobody's routes. An entry on a
 * VIF (MIF) that is gone is static: its router stopped, and only a static entry outlives
 * it. A family without tables (no CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE) is fine unless
 * routes of it are declared.
 */
export async function readKernelRoutes(declaredFamilies: ReadonlySet<AddressFamily>): Promise<KernelRoutes> {
  const result: KernelRoutes = {
    routerActive: { ipv4: false, ipv6: false },
    routes: [],
    onRouterInterfaces: new Set(),
  };
  for (const family of ['ipv4', 'ipv6'] as const) {
    const kernel = MULTICAST_ROUTING[family];
    let tables: [RoutingInterfaceRow[], ForwardingCacheRow[]];
    try {
      tables = await Promise.all([kernel.readInterfaces(), kernel.readRoutes()]);
    } catch (error) {
      if (!(error instanceof McastError) || error.code !== 'no-multicast-routing') throw error;
      // Routes declared for a family the kernel cannot route: the error says which and why.
      if (declaredFamilies.has(family)) throw error;
      continue;
    }
    const [interfaces, rows] = tables;
    const active = kernel.routerActive();
    result.routerActive[family] = active;
    const names = new Map(interfaces.map((row) => [row.index, row.name]));
    const statics = new Set(interfaces.filter((row) => row.static).map((row) => row.index));
    const name = (index: number) => names.get(index) ?? `${kernel.interfaceWord}${index}`;
    for (const row of rows) {
      if (row.iif < 0) continue;
      result.routes.push({ source: row.source, group: row.group, iif: name(row.iif), oifs: row.oifs.map(name).sort() });
      if (active && names.has(row.iif) && !statics.has(row.iif))
        result.onRouterInterfaces.add(`${row.source}>${row.group}`);
    }
  }
  return result;
}
