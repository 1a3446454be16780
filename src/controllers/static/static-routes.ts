/**
 * Static (S,G) routes in the kernel's multicast routing table, for one-shot commands.
 *
 * They are written through a raw IGMP socket that does NOT hold MRT_INIT: the kernel
 * then marks the VIFs static and keeps them, and the MFC entry, after the socket closes
 * (docs/architecture.md, "The kernel"). But it forwards multicast only while some socket holds MRT_INIT in the
 * namespace (a router: the daemon), so every result says whether one is active.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { MAXVIFS } from '../../protocol/mroute/constants.js';
import { ifindexOf, MrouteSocket } from '../../transport/mroute-socket.js';
import { readMfcCache, readVifTable, type MfcRow, type VifRow } from '../../protocol/mroute/proc.js';
import { checkGroupAddress, checkSourceAddress, checkSourceGroupFamily } from '../../domain/declared-state/group-address.js';
import { addressFamily } from '../../wire/ip-address.js';

export interface StaticRoute {
  group: string;
  source: string;
  /** Interface names. */
  iif: string;
  oifs: string[];
}

export interface RouteTables {
  /** Some socket holds MRT_INIT here (net.ipv4.conf.all.mc_forwarding = 1): routes forward. */
  routerActive: boolean;
  vifs: VifRow[];
  routes: MfcRow[];
}

export type RouteOutcome = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent';

function routerActive(path = '/proc/sys/net/ipv4/conf/all/mc_forwarding'): boolean {
  try {
    return readFileSync(path, 'utf8').trim() === '1';
  } catch {
    return false; // no multicast routing in this kernel at all
  }
}

export async function readRouteTables(): Promise<RouteTables> {
  const [vifs, routes] = await Promise.all([readVifTable(), readMfcCache()]);
  return { routerActive: routerActive(), vifs, routes };
}

/** Checks a route as given on the command line; UsageError (nothing changed) for anything wrong. */
export function checkRoute(route: StaticRoute): { ifindexes: Map<string, number> } {
  checkSourceGroup(route);
  if (route.oifs.length === 0) throw new UsageError('--oif needs at least one interface');
  if (route.oifs.includes(route.iif)) throw new UsageError(`--oif: ${route.iif} is also the incoming interface (--iif)`);
  if (new Set(route.oifs).size !== route.oifs.length) throw new UsageError('--oif names an interface twice');
  const ifindexes = new Map<string, number>();
  for (const name of [route.iif, ...route.oifs]) ifindexes.set(name, ifindexOf(name));
  return { ifindexes };
}

/** Adds (or replaces) a static (S,G) route; VIFs are added for interfaces that have none. */
export async function installRoute(route: StaticRoute): Promise<{ outcome: RouteOutcome; routerActive: boolean }> {
  const { ifindexes } = checkRoute(route);
  const before = await readRouteTables();
  const vifOf = new Map<number, number>(); // ifindex → VIF
  for (const row of before.vifs) if (row.local.kind === 'ifindex') vifOf.set(row.local.ifindex, row.vif);
  const used = new Set(before.vifs.map((row) => row.vif));
  const socket = MrouteSocket.open({ init: false });
  try {
    for (const ifindex of ifindexes.values()) {
      if (vifOf.has(ifindex)) continue;
      let vif = 0;
      while (used.has(vif)) vif++;
      if (vif >= MAXVIFS) throw new UsageError(`no free VIF: the kernel has ${MAXVIFS}, all in use (/proc/net/ip_mr_vif)`);
      socket.addVif({ vif, ifindex });
      used.add(vif);
      vifOf.set(ifindex, vif);
    }
    const iif = vifOf.get(ifindexes.get(route.iif)!)!;
    const oifs = route.oifs.map((name) => vifOf.get(ifindexes.get(name)!)!).sort((a, b) => a - b);
    const existing = before.routes.find((row) => row.group === route.group && row.origin === route.source);
    if (existing !== undefined && existing.iif === iif && sameOifs(existing, oifs)) return { outcome: 'unchanged', routerActive: before.routerActive };
    socket.addMfc({ source: route.source, group: route.group, iif, oifs });
    return { outcome: existing === undefined ? 'added' : 'updated', routerActive: before.routerActive };
  } finally {
    socket.close();
  }
}

/** Removes the (S,G) route, and the static VIFs that no route uses any more. */
export async function uninstallRoute(route: Pick<StaticRoute, 'group' | 'source'>): Promise<{ outcome: RouteOutcome; routerActive: boolean }> {
  checkSourceGroup(route);
  const before = await readRouteTables();
  const existing = before.routes.find((row) => row.group === route.group && row.origin === route.source);
  if (existing === undefined) return { outcome: 'absent', routerActive: before.routerActive };
  const socket = MrouteSocket.open({ init: false });
  try {
    socket.delMfc({ source: route.source, group: route.group });
    // The static VIFs this route used that no other entry uses go too, but never while a
    // router runs: it may have taken one of them for its own (the daemon reuses a static
    // VIF on its interface), and its own VIFs are its business anyway.
    if (!before.routerActive) {
      const remaining = before.routes.filter((row) => row !== existing);
      const inUse = new Set(remaining.flatMap((row) => [row.iif, ...row.oifs.map((oif) => oif.vif)]));
      const used = new Set([existing.iif, ...existing.oifs.map((oif) => oif.vif)]);
      for (const vif of before.vifs) if (vif.static && used.has(vif.vif) && !inUse.has(vif.vif)) socket.delVif(vif.vif);
    }
    return { outcome: 'removed', routerActive: before.routerActive };
  } finally {
    socket.close();
  }
}

/**
 * A multicast group that can be routed, and a unicast source host, both IPv4: the kernel's
 * IPv6 multicast routing (ip6mr, its own socket and tables) is not written yet, so an
 * IPv6 route is refused before anything changes.
 */
function checkSourceGroup(route: Pick<StaticRoute, 'group' | 'source'>): void {
  const group = checkGroupAddress(route.group, 'GROUP');
  const source = checkSourceAddress(route.source, '--source');
  checkSourceGroupFamily(source, group, 'the route');
  if (addressFamily(group) === 'ipv6') {
    throw new UsageError(
      `kernel route (${source}, ${group}): static IPv6 kernel routes are not supported yet (mcastctl routes only IPv4 through the kernel's multicast routing)`,
      { code: 'bad-address', hint: 'for an IPv6 (S,G) entry on the bridge, use --source S --ports LIST instead of --iif and --oif' },
    );
  }
}

function sameOifs(row: MfcRow, oifs: readonly number[]): boolean {
  const current = row.oifs.map((oif) => oif.vif).sort((a, b) => a - b);
  return current.length === oifs.length && current.every((vif, index) => vif === oifs[index]);
}

/** The plain statement every route command makes when no router runs. */
export const NO_ROUTER_WARNING =
  'no multicast router is active in this network namespace: the kernel keeps static routes but forwards nothing until one runs (mcastctl daemon)';
