/**
 * The node's upstream memberships with source filters, against a real kernel: the
 * UpstreamMemberships the daemon's KernelRouter uses, on raw IGMP sockets in a lab
 * namespace, joined on one end of a veth pair (the uplink). After each step the
 * namespace's /proc/net/mcfilter (the kernel's per-socket source filters) must show
 * exactly the filter asked for, widened past net.ipv4.igmp_max_msf (10 by default).
 *
 * Then the KernelRouter itself, as the daemon's multicast router of a node namespace with a
 * gateway and an uplink: told that the group's members want S1 only, the uplink holds
 * INCLUDE(S1), and of two senders on the uplink's network only S1's entry gets the
 * gateway (S2's has no outgoing VIF); told S2 instead, the existing entries are re-pointed.
 *
 * The daemon end to end (pods join (S1,G) only → the uplink's filter shows S1 for G) also
 * needs the daemon to hand the merged filter to the router; this file checks the kernel
 * side that it relies on.
 *
 * Needs root, iproute2, ethtool and python3. Run: node --import tsx --test test/e2e/daemon-sources-upstream.test.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { KernelRouter } from '../../src/adapters/kernel-router.js';
import { UpstreamMemberships } from '../../src/adapters/upstream-memberships.js';
import { MULTICAST_ROUTING } from '../../src/transport/multicast-routing.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import { ifindexOf } from '../../src/transport/mroute-socket.js';
import { sourceAddress } from '../../src/wire/ip-address.js';
import { Lab } from '../lab/lab.js';
import { NO_IPV4_ROUTING } from '../lab/kernel.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const ROLE_VARIABLE = 'MCL_UPSTREAM_ROLE';
const ROUTER_ROLE_VARIABLE = 'MCL_UPSTREAM_ROUTER_ROLE';
/** Two sources on the uplink's network: the node's members want the first only. */
const SENDERS = ['10.251.0.2', '10.251.0.3'] as const;

const SSM_GROUP = '232.1.1.1';
const ASM_GROUP = '239.7.1.1';
const S = ['10.0.0.1', '10.0.0.2', '10.0.0.3'] as const;
/** One more than the kernel's default net.ipv4.igmp_max_msf. */
const MANY = Array.from({ length: 11 }, (_, index) => `10.1.0.${index + 1}`);

interface Step {
  name: string;
  /** `${group} ${source} include|exclude` per /proc/net/mcfilter row of the uplink, sorted. */
  rows: string[];
  notices: string[];
}

// ---------------------------------------------------------------------------------------
// The role, run in the lab namespace: a fixed sequence of joins, the filters after each.

/** The kernel prints at most 6 characters of the device name, so rows are matched by ifindex. */
function mcfilterRows(ifindex: number): string[] {
  const dotted = (hex: string): string => {
    const value = Number.parseInt(hex, 16);
    return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
  };
  return readFileSync('/proc/net/mcfilter', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[0] === String(ifindex))
    .map(([, , group, source, inc]) => `${dotted(group!)} ${dotted(source!)} ${inc === '1' ? 'include' : 'exclude'}`)
    .sort();
}

function roleMain(iface: string): void {
  const ifindex = ifindexOf(iface);
  const notices: string[] = [];
  const memberships = new UpstreamMemberships({
    perSocket: 20,
    maxSources: 10,
    openSocket: () => MULTICAST_ROUTING.ipv4.openMembershipSocket(),
    onFailure: (error) => notices.push(`failure: ${error.message}`),
    onError: (error) => notices.push((error as { reason?: string }).reason ?? error.message),
  });
  const filter = (mode: 'include' | 'exclude', sources: readonly string[]): SourceFilter => ({ mode, sources: new Set(sources.map(sourceAddress)) });
  const steps: Array<[string, () => void]> = [
    ['include S1', () => memberships.join(SSM_GROUP, ifindex, filter('include', [S[0]]))],
    ['include S1,S3', () => memberships.join(SSM_GROUP, ifindex, filter('include', [S[0], S[2]]))],
    ['asm exclude S2', () => memberships.join(ASM_GROUP, ifindex, filter('exclude', [S[1]]))],
    ['asm include S2', () => memberships.join(ASM_GROUP, ifindex, filter('include', [S[1]]))],
    ['include 11', () => memberships.join(SSM_GROUP, ifindex, filter('include', MANY))],
    ['exclude 11', () => memberships.join(SSM_GROUP, ifindex, filter('exclude', MANY))],
    ['leave', () => [SSM_GROUP, ASM_GROUP].forEach((group) => memberships.leave(group, ifindex))],
  ];
  for (const [name, action] of steps) {
    action();
    const step: Step = { name, rows: mcfilterRows(ifindex), notices: notices.splice(0) };
    process.stdout.write(`${JSON.stringify(step)}\n`);
  }
  memberships.close();
}

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
  while (router.routeCount < SENDERS.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  const printRoutes = async (event: string): Promise<void> => {
    const routes = (await router.routeViews()).map((route) => ({ source: route.source, group: route.group, oifs: route.oifs }));
    process.stdout.write(`${JSON.stringify({ event, routes })}\n`);
  };
  await printRoutes('routes');
  // The members now want the other source: the existing entries are re-pointed.
  router.setLocalMembers(SSM_GROUP, true, { mode: 'include', sources: new Set([sourceAddress(SENDERS[1])]) });
  await printRoutes('re-pointed');
  router.close();
}

const role = process.env[ROLE_VARIABLE];
const routerRole = process.env[ROUTER_ROLE_VARIABLE];
if (role !== undefined) roleMain(role);
else if (routerRole !== undefined) {
  const [gateway, uplink] = routerRole.split(',');
  await routerRoleMain(gateway!, uplink!);
} else {
  describe('upstream memberships with source filters on a real kernel', { concurrency: 1 }, () => {
    let lab: Lab;
    let steps: Map<string, Step>;

    before(async () => {
      lab = Lab.create();
      const node = await lab.namespace('node');
      const net = await lab.namespace('net');
      const uplink = lab.ifname('up');
      await lab.vethPair({ ns: node, name: uplink }, { ns: net, name: lab.ifname('net') });
      await lab.ip(node, 'addr', 'add', '10.250.0.1/24', 'dev', uplink);
      const output = await lab.exec(node, ['env', `${ROLE_VARIABLE}=${uplink}`, process.execPath, '--import', 'tsx', THIS_FILE], { timeoutMs: 60_000 });
      steps = new Map(
        output.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Step)
          .map((step) => [step.name, step]),
      );
    });

    after(async () => {
      await lab?.destroy();
    });

    test('INCLUDE(S1): only S1 for the group, in include mode', () => {
      assert.deepEqual(steps.get('include S1')?.rows, [`${SSM_GROUP} ${S[0]} include`]);
    });

    test('a source added: the whole new filter', () => {
      assert.deepEqual(steps.get('include S1,S3')?.rows, [`${SSM_GROUP} ${S[0]} include`, `${SSM_GROUP} ${S[2]} include`]);
    });

    test('EXCLUDE(S2) of another group, then its mode changed to INCLUDE(S2)', () => {
      assert.ok(steps.get('asm exclude S2')?.rows.includes(`${ASM_GROUP} ${S[1]} exclude`));
      assert.ok(steps.get('asm include S2')?.rows.includes(`${ASM_GROUP} ${S[1]} include`));
    });

    test('past igmp_max_msf: INCLUDE widens to any source, EXCLUDE keeps the first 10; told once', () => {
      const widened = steps.get('include 11')!;
      assert.deepEqual(
        widened.rows.filter((row) => row.startsWith(SSM_GROUP)),
        [],
      );
      assert.deepEqual(widened.notices, ['upstream-filter-widened']);
      const excluded = steps.get('exclude 11')!;
      assert.deepEqual(
        excluded.rows.filter((row) => row.startsWith(SSM_GROUP)),
        MANY.slice(0, 10)
          .map((source) => `${SSM_GROUP} ${source} exclude`)
          .sort(),
      );
      assert.deepEqual(excluded.notices, []);
    });

    test('leave: no filter is left', () => {
      assert.deepEqual(steps.get('leave')?.rows, []);
    });
  });

  describe('KernelRouter with a filter: the upstream join and the inbound routes follow it', { concurrency: 1, skip: NO_IPV4_ROUTING }, () => {
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
      await lab.routedLink({ ns: node, name: uplink, address: '10.251.0.1' }, { ns: net, name: lab.ifname('rnet'), address: SENDERS[0] });
      await lab.ip(net, 'addr', 'add', `${SENDERS[1]}/24`, 'dev', lab.ifname('rnet'));
      await lab.routedLink({ ns: node, name: gateway, address: '10.252.0.1' }, { ns: pods, name: lab.ifname('rpod'), address: '10.252.0.2' });
      for (const key of ['all', 'default', uplink, gateway]) await lab.sysctl(node, `net.ipv4.conf.${key}.rp_filter`, 0);
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
        lab.exec(node, ['env', `${ROUTER_ROLE_VARIABLE}=${gateway},${uplink}`, process.execPath, '--import', 'tsx', THIS_FILE], { timeoutMs: 60_000 }),
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
      const oifsOf = (source: string) => routes.find((route) => route.source === source && route.group === SSM_GROUP)?.oifs;
      assert.deepEqual(oifsOf(SENDERS[0]), [gatewayName], JSON.stringify(routes));
      assert.deepEqual(oifsOf(SENDERS[1]), []);
    });

    test('a filter change re-points the existing entries', () => {
      const oifsOf = (source: string) => rePointed.find((route) => route.source === source && route.group === SSM_GROUP)?.oifs;
      assert.deepEqual(oifsOf(SENDERS[0]), [], JSON.stringify(rePointed));
      assert.deepEqual(oifsOf(SENDERS[1]), [gatewayName]);
    });
  });
}
