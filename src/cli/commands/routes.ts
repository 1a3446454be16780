/** `mcastctl routes`: the kernel's multicast routing tables, as `ip mroute` shows them, with counters. */
import type { Command } from 'commander';
import { NO_ROUTER_WARNING, readRouteTables } from '../../controllers/static/static-routes.js';
import { Output } from '../render/output.js';

interface RoutesFlags {
  json?: boolean;
}

export function registerRoutes(program: Command): void {
  program
    .command('routes')
    .summary("show the kernel's multicast routes (VIFs and (S,G) entries) with counters")
    .description(
      "Read the kernel's IPv4 multicast routing tables of this network namespace (/proc/net/ip_mr_vif and " +
        '/proc/net/ip_mr_cache; no privilege and no router socket needed) and say whether a multicast router ' +
        'is active: without one, the kernel forwards nothing, static routes included.',
    )
    .option('--json', 'print one JSON document')
    .addHelpText('after', '\nSee mcastctl-routes(1).')
    .action(async (flags: RoutesFlags) => {
      const output = new Output({ json: flags.json === true });
      const tables = await readRouteTables();
      const vifName = new Map(tables.vifs.map((vif) => [vif.vif, vif.name]));
      const vifs = tables.vifs.map((vif) => ({
        vif: vif.vif,
        name: vif.name,
        ifindex: vif.local.kind === 'ifindex' ? vif.local.ifindex : null,
        static: vif.static,
        packetsIn: vif.packetsIn,
        packetsOut: vif.packetsOut,
        bytesIn: vif.bytesIn,
        bytesOut: vif.bytesOut,
      }));
      const routes = tables.routes.map((route) => ({
        group: route.group,
        source: route.origin,
        iif: { vif: route.iif, name: vifName.get(route.iif) ?? null },
        oifs: route.oifs.map((oif) => ({ vif: oif.vif, name: vifName.get(oif.vif) ?? null, ttl: oif.ttl })),
        packets: route.packets,
        bytes: route.bytes,
        wrong: route.wrong,
      }));
      if (output.json) {
        output.document({ routerActive: tables.routerActive, vifs, routes });
        return;
      }
      output.line(tables.routerActive ? 'multicast router: active (routes forward)' : output.style.yellow('multicast router: none (routes do not forward)'));
      if (vifs.length > 0) {
        output.table({
          head: ['VIF', 'Interface', 'Static', 'Packets in', 'Packets out', 'Bytes in', 'Bytes out'],
          rows: vifs.map((vif) => [
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
      if (routes.length === 0) output.line('no (S,G) routes');
      else {
        output.table({
          head: ['Group', 'Source', 'In', 'Out', 'Packets', 'Bytes', 'Wrong if'],
          rows: routes.map((route) => [
            route.group,
            route.source,
            route.iif.name ?? `vif ${route.iif.vif}`,
            route.oifs.map((oif) => oif.name ?? `vif ${oif.vif}`).join(', '),
            String(route.packets),
            String(route.bytes),
            String(route.wrong),
          ]),
          alignRight: [4, 5, 6],
        });
      }
      output.flush();
      if (!tables.routerActive && routes.length > 0) output.warn(NO_ROUTER_WARNING);
    });
}
