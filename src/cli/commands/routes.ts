/** `mcastctl routes`: the kernel's multicast routing tables of both families, as `ip mroute` shows them, with counters. */
import type { Command } from 'commander';
import { NO_ROUTER_WARNING, readRouteTables, type RouteTables } from '../../controllers/static/static-routes.js';
import { isSystemError } from '../../errors.js';
import { readRoute6Tables, type Route6Tables } from '../../protocol/mroute6/proc6.js';
import { ifindexOf } from '../../transport/mroute-socket.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import { Output } from '../render/output.js';

interface RoutesFlags {
  json?: boolean;
}

const NO_ROUTER6_WARNING =
  'no IPv6 multicast router is active in this network namespace: the kernel keeps static IPv6 routes but forwards nothing until one runs';

/** One VIF (IPv4) or MIF (IPv6) as `routes` shows it; `vif` is the kernel's index in its family's table. */
interface VifView {
  family: AddressFamily;
  vif: number;
  name: string;
  ifindex: number | null;
  static: boolean;
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  bytesOut: number;
}

interface RouteView {
  family: AddressFamily;
  group: string;
  source: string;
  iif: { vif: number; name: string | null };
  oifs: Array<{ vif: number; name: string | null; ttl: number }>;
  packets: number;
  bytes: number;
  wrong: number;
}

/** One family's tables, in the shape both print modes use. */
interface FamilyView {
  family: AddressFamily;
  routerActive: boolean;
  vifs: VifView[];
  routes: RouteView[];
}

/** The IPv4 tables, or undefined when the kernel has none (no CONFIG_IP_MROUTE: /proc/net/ip_mr_vif is absent). */
async function readIpv4(): Promise<RouteTables | undefined> {
  try {
    return await readRouteTables();
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** ip6_mr_vif shows no ifindex: the MIF's device, looked up by name in this namespace (null for "none" or a vanished one). */
function ifindexByName(name: string): number | null {
  try {
    return ifindexOf(name);
  } catch {
    return null;
  }
}

function routeViews(
  family: AddressFamily,
  tables: { vifs: readonly VifView[] },
  rows: ReadonlyArray<Omit<RouteView, 'family' | 'iif' | 'oifs'> & { iif: number; oifs: ReadonlyArray<{ vif: number; ttl: number }> }>,
): RouteView[] {
  const vifName = new Map(tables.vifs.map((vif) => [vif.vif, vif.name]));
  return rows.map((row) => ({
    family,
    group: row.group,
    source: row.source,
    iif: { vif: row.iif, name: vifName.get(row.iif) ?? null },
    oifs: row.oifs.map((oif) => ({ vif: oif.vif, name: vifName.get(oif.vif) ?? null, ttl: oif.ttl })),
    packets: row.packets,
    bytes: row.bytes,
    wrong: row.wrong,
  }));
}

function ipv4View(tables: RouteTables): FamilyView {
  const vifs = tables.vifs.map((vif) => ({
    family: 'ipv4' as const,
    vif: vif.vif,
    name: vif.name,
    ifindex: vif.local.kind === 'ifindex' ? vif.local.ifindex : null,
    static: vif.static,
    packetsIn: vif.packetsIn,
    packetsOut: vif.packetsOut,
    bytesIn: vif.bytesIn,
    bytesOut: vif.bytesOut,
  }));
  const rows = tables.routes.map((route) => ({ ...route, source: route.origin, oifs: route.oifs }));
  return { family: 'ipv4', routerActive: tables.routerActive, vifs, routes: routeViews('ipv4', { vifs }, rows) };
}

function ipv6View(tables: Route6Tables): FamilyView {
  const vifs = tables.mifs.map((mif) => ({
    family: 'ipv6' as const,
    vif: mif.mif,
    name: mif.name,
    ifindex: mif.register ? null : ifindexByName(mif.name),
    static: mif.static,
    packetsIn: mif.packetsIn,
    packetsOut: mif.packetsOut,
    bytesIn: mif.bytesIn,
    bytesOut: mif.bytesOut,
  }));
  const rows = tables.routes.map((route) => ({ ...route, source: route.origin, oifs: route.oifs.map((oif) => ({ vif: oif.mif, ttl: oif.ttl })) }));
  return { family: 'ipv6', routerActive: tables.routerActive, vifs, routes: routeViews('ipv6', { vifs }, rows) };
}

function printFamily(output: Output, view: FamilyView): void {
  const ipv6 = view.family === 'ipv6';
  const label = ipv6 ? 'IPv6 multicast router' : 'multicast router';
  output.line(view.routerActive ? `${label}: active (routes forward)` : output.style.yellow(`${label}: none (routes do not forward)`));
  if (view.vifs.length > 0) {
    output.table({
      head: [ipv6 ? 'MIF' : 'VIF', 'Interface', 'Static', 'Packets in', 'Packets out', 'Bytes in', 'Bytes out'],
      rows: view.vifs.map((vif) => [
        String(vif.vif),
        vif.name,
        vif.static ? 'yes' : '',
        String(vif.packetsIn),
        String(vif.packetsOut),
        String(vif.bytesIn),
        String(vif.bytesOut),
      ]),
      alignRight: [0, 3, 4, 5, 6],
    });
  }
  const unit = ipv6 ? 'mif' : 'vif';
  if (view.routes.length === 0) output.line(ipv6 ? 'no IPv6 (S,G) routes' : 'no (S,G) routes');
  else {
    output.table({
      head: ['Group', 'Source', 'In', 'Out', 'Packets', 'Bytes', 'Wrong if'],
      rows: view.routes.map((route) => [
        route.group,
        route.source,
        route.iif.name ?? `${unit} ${route.iif.vif}`,
        route.oifs.map((oif) => oif.name ?? `${unit} ${oif.vif}`).join(', '),
        String(route.packets),
        String(route.bytes),
        String(route.wrong),
      ]),
      alignRight: [4, 5, 6],
    });
  }
}

export function registerRoutes(program: Command): void {
  program
    .command('routes')
    .summary("show the kernel's multicast routes (VIFs, MIFs and (S,G) entries) with counters")
    .description(
      "Read the kernel's IPv4 and IPv6 multicast routing tables of this network namespace (/proc/net/ip_mr_vif, " +
        '/proc/net/ip_mr_cache, /proc/net/ip6_mr_vif and /proc/net/ip6_mr_cache; no privilege and no router socket ' +
        'needed) and say whether a multicast router is active for each: without one, the kernel forwards nothing, ' +
        'static routes included.',
    )
    .option('--json', 'print one JSON document')
    .addHelpText('after', '\nSee mcastctl-routes(1).')
    .action(async (flags: RoutesFlags) => {
      const output = new Output({ json: flags.json === true });
      const [ipv4, ipv6] = await Promise.all([readIpv4(), readRoute6Tables()]);
      // IPv4 first, in every list.
      const views = [ipv4 && ipv4View(ipv4), ipv6 && ipv6View(ipv6)].filter((view): view is FamilyView => view !== undefined);
      // IPv6 is shown once it is in use: an idle IPv6 table would only add noise to every
      // IPv4 answer, and an IPv4-only namespace keeps the document it always had.
      const ipv6InUse = views.some((view) => view.family === 'ipv6' && (view.routerActive || view.vifs.length > 0 || view.routes.length > 0));
      if (output.json) {
        output.document({
          routerActive: ipv4?.routerActive ?? false,
          ...(ipv6InUse ? { routerActiveByFamily: Object.fromEntries(views.map((view) => [view.family, view.routerActive])) } : {}),
          vifs: views.flatMap((view) => view.vifs),
          routes: views.flatMap((view) => view.routes),
        });
        return;
      }
      for (const view of views) if (view.family === 'ipv4' || ipv6InUse) printFamily(output, view);
      if (views.length === 0) output.line('no multicast routing in this kernel (no /proc/net/ip_mr_vif or /proc/net/ip6_mr_vif)');
      output.flush();
      for (const view of views) {
        if (view.routerActive || view.routes.length === 0) continue;
        output.warn(view.family === 'ipv6' ? NO_ROUTER6_WARNING : NO_ROUTER_WARNING);
      }
    });
}
