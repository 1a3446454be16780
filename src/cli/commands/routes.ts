/**
 * `mcastctl routes`: the kernel's multicast routing tables of both families, as `ip mroute` shows them, with counters.
 */
import type { Command } from 'commander';
import { NO_ROUTER_WARNING } from '../../controllers/static/static-routes.js';
import { type FamilyKit, readRouteTables, type RouteTables } from '../../protocol/mroute/family-kit.js';
import { FAMILY_KITS } from '../../protocol/mroute/family-kits.js';
import { ifindexOf } from '../../transport/interface-index.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import { Output } from '../render/output.js';

interface RoutesFlags {
  json?: boolean;
}

const NO_ROUTER_WARNINGS: Readonly<Record<AddressFamily, string>> = {
  ipv4: NO_ROUTER_WARNING,
  ipv6: 'no IPv6 multicast router is active in this network namespace: the kernel keeps static IPv6 routes but forwards nothing until one runs',
};

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
  kit: FamilyKit;
  routerActive: boolean;
  vifs: VifView[];
  routes: RouteView[];
}

/**
 * The interface's ifindex: the table's where it tells one; where the table never does
 * (ip6_mr_vif), the device's, looked up by name in this namespace (null for the register
 * interface, for "none" or for a device that vanished).
 */
function ifindexOfRow(kit: FamilyKit, row: RouteTables['interfaces'][number]): number | null {
  if (row.ifindex !== undefined) return row.ifindex;
  if (kit.tableShowsIfindex || row.register) return null;
  try {
    return ifindexOf(row.name);
  } catch {
    return null;
  }
}

function familyView(kit: FamilyKit, tables: RouteTables): FamilyView {
  const { family } = kit;
  const vifs = tables.interfaces.map((row) => ({
    family,
    vif: row.index,
    name: row.name,
    ifindex: ifindexOfRow(kit, row),
    static: row.static,
    packetsIn: row.packetsIn,
    packetsOut: row.packetsOut,
    bytesIn: row.bytesIn,
    bytesOut: row.bytesOut,
  }));
  const vifName = new Map(vifs.map((vif) => [vif.vif, vif.name]));
  const routes = tables.routes.map((row) => ({
    family,
    group: row.group,
    source: row.source,
    iif: { vif: row.iif, name: vifName.get(row.iif) ?? null },
    oifs: row.oifs.map((oif) => ({ vif: oif.index, name: vifName.get(oif.index) ?? null, ttl: oif.ttl })),
    packets: row.packets,
    bytes: row.bytes,
    wrong: row.wrong,
  }));
  return { kit, routerActive: tables.routerActive, vifs, routes };
}

function printFamily(output: Output, view: FamilyView): void {
  const { kit } = view;
  const label = `${kit.qualifier}multicast router`;
  output.line(
    view.routerActive
      ? `${label}: active (routes forward)`
      : output.style.yellow(`${label}: none (routes do not forward)`),
  );
  if (view.vifs.length > 0) {
    output.table({
      head: [
        kit.interfaceWord.toUpperCase(),
        'Interface',
        'Static',
        'Packets in',
        'Packets out',
        'Bytes in',
        'Bytes out',
      ],
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
  const unit = kit.interfaceWord;
  if (view.routes.length === 0) output.line(`no ${kit.qualifier}(S,G) routes`);
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
      // IPv4 first, in every list.
      const kits = [FAMILY_KITS.ipv4, FAMILY_KITS.ipv6];
      const tables = await Promise.all(kits.map((kit) => readRouteTables(kit)));
      const views = kits.flatMap((kit, at) => {
        const found = tables[at];
        return found === undefined ? [] : [familyView(kit, found)];
      });
      // IPv6 is shown once it is in use: an idle IPv6 table would only add noise to every
      // IPv4 answer, and an IPv4-only namespace keeps the document it always had.
      const ipv6InUse = views.some(
        (view) => view.kit.family === 'ipv6' && (view.routerActive || view.vifs.length > 0 || view.routes.length > 0),
      );
      if (output.json) {
        output.document({
          routerActive: tables[0]?.routerActive ?? false,
          ...(ipv6InUse
            ? { routerActiveByFamily: Object.fromEntries(views.map((view) => [view.kit.family, view.routerActive])) }
            : {}),
          vifs: views.flatMap((view) => view.vifs),
          routes: views.flatMap((view) => view.routes),
        });
        return;
      }
      for (const view of views) if (view.kit.family === 'ipv4' || ipv6InUse) printFamily(output, view);
      if (views.length === 0)
        output.line('no multicast routing in this kernel (no /proc/net/ip_mr_vif or /proc/net/ip6_mr_vif)');
      output.flush();
      for (const view of views) {
        if (view.routerActive || view.routes.length === 0) continue;
        output.warn(NO_ROUTER_WARNINGS[view.kit.family]);
      }
    });
}
