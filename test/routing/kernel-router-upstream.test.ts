/**
 * The daemon's KernelRouter with source filters, as the multicast router of a node
 * namespace with a gateway and an uplink, on the real kernel: told that the group's members
 * want S1 only, the uplink holds INCLUDE(S1), and of two senders on the uplink's network
 * only S1's entry gets the gateway (S2's has no outgoing VIF); told S2 instead, the
 * existing entries are re-pointed. The upstream memberships it relies on are tested in
 * test/e2e/daemon-sources-upstream.test.ts.
 *
 * Needs root, iproute2, python3 and kernel multicast routing. Run: scripts/test.sh routing,
 * or node --import tsx --test test/routing/kernel-router-upstream.test.ts on a kernel with it.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import { KernelRouter } from '../../src/adapters/kernel-router.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { sourceAddress } from '../../src/wire/ip-address.js';
import { after, before, describe, test } from '../helpers/node-test.js';
import { mcfilterRows, requireMulticastRouting } from '../lab/kernel.js';
import { Lab } from '../lab/lab.js';

requireMulticastRouting();

const THIS_FILE = fileURLToPath(import.meta.url);
const ROUTER_ROLE_VARIABLE = 'MCL_UPSTREAM_ROUTER_ROLE';
/** Two sources on the uplink's network: the node's members want the first only. */
const SENDERS = ['10.251.0.2', '10.251.0.3'] as const;
const SSM_GROUP = '232.1.1.1';

/**
 * The router role: KernelRouter told that SSM_GROUP's local members want S1 only; it
 * waits for the upcalls of both senders' traffic, then prints its routes and the uplink's filter.
 */
async function routerRoleMain(gateway: string, uplink: string): Promise<void> {
  const router = await KernelRouter.open({
    gateway,
    multicastInterfaces: [uplink],
    idleTimeoutMs: 60_000,
    clock: () => performance.now(),
    hasLocalMembers: (group) => group === SSM_GROUP,
  });
  router.setLocalMembers(SSM_GROUP, true, { mode: 'include', sources: new Set([sourceAddress(SENDERS[0])]) });
  process.stdout.write(`${JSON.stringify({ event: 'filter', rows: mcfilterRows(ifindexOf(uplink)) })}\n`);
  const deadline = Date.now() + 15_000;
  while (router.routeCount < SENDERS.length && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const printRoutes = async (event: string): Promise<void> => {
    const routes = (await router.routeViews()).map((route) => ({
      source: route.source,
      group: route.group,
      oifs: route.oifs,
    }));
    process.stdout.write(`${JSON.stringify({ event, routes })}\n`);
  };
  await printRoutes('routes');
  // The members now want the other source: the existing entries are re-pointed.
  router.setLocalMembers(SSM_GROUP, true, { mode: 'include', sources: new Set([sourceAddress(SENDERS[1])]) });
  await printRoutes('re-pointed');
  router.close();
}

const routerRole = process.env[ROUTER_ROLE_VARIABLE];
if (routerRole !== undefined) {
  const [gateway, uplink] = routerRole.split(',');
  await routerRoleMain(gateway!, uplink!);
} else {
  describe('KernelRouter with a filter: the upstream join and the inbound routes follow it', { concurrency: 1 }, () => {
    let lab: Lab;
    let filterRows: string[];
    let routes: Array<{ source: string; group: string; oifs: string[] }>;
    let rePointed: typeof routes;
    let gatewayName: string;

    before(async () => {
      lab = Lab.create();
      const node = await lab.namespace('rnode');
      const net = await lab.namespace('rnet');
      const pods = await lab.namespace('rpods');
      const [uplink, gateway] = [lab.ifname('rup'), lab.ifname('rgw')];
      gatewayName = gateway;
      await lab.routedLink(
        { ns: node, name: uplink, address: '10.251.0.1' },
        { ns: net, name: lab.ifname('rnet'), address: SENDERS[0] },
      );
      await lab.ip(net, 'addr', 'add', `${SENDERS[1]}/24`, 'dev', lab.ifname('rnet'));
      await lab.routedLink(
        { ns: node, name: gateway, address: '10.252.0.1' },
        { ns: pods, name: lab.ifname('rpod'), address: '10.252.0.2' },
      );
      for (const key of ['all', 'default', uplink, gateway])
        await lab.sysctl(node, `net.ipv4.conf.${key}.rp_filter`, 0);
      const sender = [
        'import socket, sys, time',
        'socks = []',
        'for src in sys.argv[1:]:',
        '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
        '    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 8)',
        '    s.bind((src, 0))',
        '    socks.append(s)',
        'for _ in range(40):',
        '    for s in socks: s.sendto(b"x", ("' + SSM_GROUP + '", 5400))',
        '    time.sleep(0.1)',
      ].join('\n');
      const [output] = await Promise.all([
        lab.exec(
          node,
          ['env', `${ROUTER_ROLE_VARIABLE}=${gateway},${uplink}`, process.execPath, '--import', 'tsx', THIS_FILE],
          { timeoutMs: 60_000 },
        ),
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, 1500));
          await lab.exec(net, ['python3', '-c', sender, ...SENDERS], { timeoutMs: 30_000 });
        })(),
      ]);
      const events = output.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { event: string; rows?: string[]; routes?: typeof routes });
      filterRows = events.find((event) => event.event === 'filter')?.rows ?? [];
      routes = events.find((event) => event.event === 'routes')?.routes ?? [];
      rePointed = events.find((event) => event.event === 're-pointed')?.routes ?? [];
    });

    after(async () => {
      await lab?.destroy();
    });

    test('the uplink holds INCLUDE(S1) for the group', () => {
      assert.deepEqual(filterRows, [`${SSM_GROUP} ${SENDERS[0]} include`]);
    });

    test('the source wanted is routed to the gateway, the other gets an entry without outgoing VIF', () => {
      const oifsOf = (source: string) =>
        routes.find((route) => route.source === source && route.group === SSM_GROUP)?.oifs;
      assert.deepEqual(oifsOf(SENDERS[0]), [gatewayName], JSON.stringify(routes));
      assert.deepEqual(oifsOf(SENDERS[1]), []);
    });

    test('a filter change re-points the existing entries', () => {
      const oifsOf = (source: string) =>
        rePointed.find((route) => route.source === source && route.group === SSM_GROUP)?.oifs;
      assert.deepEqual(oifsOf(SENDERS[0]), [], JSON.stringify(rePointed));
      assert.deepEqual(oifsOf(SENDERS[1]), [gatewayName]);
    });
  });
}
