/**
 * `mcastctl install GROUP --source S --iif IF --oif IF2`, `uninstall` and `routes`: static
 * kernel multicast routes on a real kernel, in lab namespaces.
 *
 *   sender (S) ──rs── router ──ra── receiver A
 *                       └─────rb── receiver B
 *
 * Acceptance: a static route installed by a one-shot `install` is still in the kernel's
 * table after the command has exited; `routes` shows it and whether a router is active;
 * it forwards nothing while no socket holds MRT_INIT, and forwards (to A, not B, with the
 * counters growing) while the test's own holder (a child that opened
 * `RouterSocket.open({ family: IPV4_KIT, init: true })` in the router namespace) is open; the static entries
 * survive the holder opening and closing; `uninstall` removes it. Bad input exits 64 and
 * changes nothing; without CAP_NET_ADMIN (setpriv to nobody) `install` exits 77.
 *
 * The CLI runs inside the router namespace (`mcastctl(args, { ns })`, i.e. the built
 * dist/: build first). The holder, the receivers and the sender are this file run again
 * with MCL_ROUTES_ROLE set, inside their namespaces. /proc/net/ip_mr_{vif,cache}, read
 * with `cat` in the namespace, is the independent view the CLI's output is checked
 * against. Needs root. The lab is always torn down (after(), and the lab's exit handler).
 *
 * Run: npx tsc -p tsconfig.build.json && node --import tsx --test test/routing/routes.test.ts
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { IPV4_KIT } from '../../src/protocol/mroute/family-kits.js';
import { RouterSocket } from '../../src/transport/router-socket.js';
import { parseMfcCache, parseVifTable, type MfcRow, type VifRow } from '../../src/protocol/mroute/proc.js';
import { cliMissing, mcastctl, type CliResult } from '../lab/cli.js';
import { Lab, sleep } from '../lab/lab.js';
import { emitEvent as emit, spawnRole, type RoleChild } from '../lab/role-child.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const THIS_FILE = fileURLToPath(import.meta.url);
const PROJECT_ROOT = path.resolve(path.dirname(THIS_FILE), '../..');

const SENDER = { address: '10.94.0.2', router: '10.94.0.1' };
const RECEIVER_A = { address: '10.95.0.2', router: '10.95.0.1' };
const RECEIVER_B = { address: '10.96.0.2', router: '10.96.0.1' };
/** Routed S → A by the route under test. */
const GROUP = '239.62.0.1';
/** A second route, S → B, installed with human output and uninstalled again. */
const GROUP_B = '239.62.0.2';
/** Joined by both receivers and never routed: with a router but no route, nothing crosses. */
const GROUP_NONE = '239.62.0.9';
const PORT = 5998;
const COUNT = 5;
const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

// ---------------------------------------------------------------------------------------
// RoleChild roles (this file, run with MCL_ROUTES_ROLE set inside a namespace)

/** The test's router: holds MRT_INIT (and adds nothing) until told to quit. */
async function holderRole(): Promise<void> {
  let socket: RouterSocket;
  try {
    socket = RouterSocket.open({ family: IPV4_KIT, init: true });
  } catch (error) {
    emit({ event: 'error', message: String((error as Error).message) });
    return;
  }
  emit({ event: 'ready' });
  for await (const line of createInterface({ input: process.stdin })) if (line === 'quit') break;
  socket.close();
  emit({ event: 'closed' });
  process.stdin.destroy();
}

/** Joins GROUP and GROUP_B on its interface and reports every datagram. */
async function receiverRole(): Promise<void> {
  const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  socket.on('message', (data, rinfo) => emit({ event: 'datagram', from: rinfo.address, data: data.toString() }));
  await new Promise<void>((resolve) => socket.bind(PORT, resolve));
  socket.addMembership(GROUP, process.env.MCL_ADDRESS);
  socket.addMembership(GROUP_B, process.env.MCL_ADDRESS);
  socket.addMembership(GROUP_NONE, process.env.MCL_ADDRESS);
  emit({ event: 'ready' });
  for await (const line of createInterface({ input: process.stdin })) if (line === 'quit') break;
  socket.close();
  process.stdin.destroy();
}

/** Sends MCL_COUNT datagrams tagged MCL_TAG to MCL_GROUP, with a TTL that survives the router. */
async function senderRole(): Promise<void> {
  const group = process.env.MCL_GROUP!;
  const count = Number(process.env.MCL_COUNT ?? '1');
  const tag = process.env.MCL_TAG ?? 'x';
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, SENDER.address, resolve));
  socket.setMulticastTTL(8);
  socket.setMulticastInterface(SENDER.address);
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) =>
      socket.send(`${tag}-${i}`, PORT, group, (error) => (error ? reject(error) : resolve())),
    );
  }
  socket.close();
  emit({ event: 'sent', count });
}

// ---------------------------------------------------------------------------------------
// Test side

/** `routes --json`, as the contract describes it. */
interface RoutesJson {
  routerActive: boolean;
  vifs: Array<{
    vif: number;
    name: string;
    ifindex: number;
    static: boolean;
    packetsIn: number;
    packetsOut: number;
    bytesIn: number;
    bytesOut: number;
  }>;
  routes: Array<{
    group: string;
    source: string;
    iif: { vif: number; name: string };
    oifs: Array<{ vif: number; name: string; ttl: number }>;
    packets: number;
    bytes: number;
    wrong: number;
  }>;
}

function describeResult(result: CliResult): string {
  return `exit ${result.code} (${result.signal ?? 'no signal'})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

function parseJson<T>(result: CliResult, what: string): T {
  assert.equal(result.code, 0, `${what}: ${describeResult(result)}`);
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    assert.fail(`${what}: stdout is not one JSON document: ${result.stdout.slice(0, 500)}`);
  }
}

function routeTests(): void {
  describe('static kernel routes: install, routes, uninstall (lab namespaces, real kernel)', {
    timeout: 240_000,
  }, () => {
    let lab: Lab;
    let routerNs: string;
    let senderNs: string;
    let aNs: string;
    let bNs: string;
    let receiverA: RoleChild;
    let receiverB: RoleChild;
    let holder: RoleChild | undefined;
    const ifaces = { rs: '', ra: '', rb: '', s: '', a: '', b: '' };

    const child = (ns: string, role: string, env: Record<string, string> = {}): RoleChild =>
      spawnRole({ lab, ns, file: THIS_FILE, roleVariable: 'MCL_ROUTES_ROLE', role, env, cwd: PROJECT_ROOT });

    const link = (
      iface: string,
      peerNs: string,
      peerIface: string,
      routerSide: string,
      hostSide: string,
    ): Promise<void> =>
      lab.routedLink(
        { ns: routerNs, name: iface, address: routerSide },
        { ns: peerNs, name: peerIface, address: hostSide },
      );

    /** `mcastctl ARGS` inside the router namespace. */
    const cli = (args: string[], wrapper?: string[]): Promise<CliResult> =>
      mcastctl(args, { ns: routerNs, ...(wrapper ? { wrapper } : {}) });

    async function routes(): Promise<RoutesJson> {
      return parseJson<RoutesJson>(await cli(['routes', '--json']), 'routes --json');
    }

    /** The kernel's own view (cat /proc in the namespace), independent of the CLI. */
    async function kernel(): Promise<{ vifs: VifRow[]; cache: MfcRow[]; mcForwarding: string }> {
      const vifs = parseVifTable((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_vif'])).stdout);
      const cache = parseMfcCache((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_cache'])).stdout);
      const mcForwarding = (
        await lab.exec(routerNs, ['cat', '/proc/sys/net/ipv4/conf/all/mc_forwarding'])
      ).stdout.trim();
      return { vifs, cache, mcForwarding };
    }

    const routeOf = (table: RoutesJson, group: string) =>
      table.routes.find((r) => r.group === group && r.source === SENDER.address);
    const vifNamed = (table: RoutesJson, name: string) => table.vifs.find((v) => v.name === name);

    /** Checks `routes --json` against /proc: same VIFs (name, static, counters), same entries. */
    async function assertAgreesWithKernel(table: RoutesJson): Promise<void> {
      const k = await kernel();
      assert.equal(
        table.routerActive,
        k.mcForwarding === '1',
        `routerActive ${table.routerActive}, mc_forwarding ${k.mcForwarding}`,
      );
      assert.deepEqual(
        table.vifs.map((v) => ({ vif: v.vif, name: v.name, static: v.static })),
        k.vifs.map((v) => ({ vif: v.vif, name: v.name, static: v.static })),
      );
      const nameOf = new Map(k.vifs.map((v) => [v.vif, v.name]));
      assert.deepEqual(
        table.routes
          .map((r) => ({ group: r.group, source: r.source, iif: r.iif, oifs: r.oifs }))
          .sort((x, y) => x.group.localeCompare(y.group)),
        k.cache
          .map((row) => ({
            group: row.group,
            source: row.origin,
            iif: { vif: row.iif, name: nameOf.get(row.iif) },
            oifs: row.oifs.map((o) => ({ vif: o.vif, name: nameOf.get(o.vif), ttl: o.ttl })),
          }))
          .sort((x, y) => x.group.localeCompare(y.group)),
      );
    }

    /** Sends COUNT datagrams tagged `tag` to `group` from the sender; resolves once they are sent. */
    async function send(group: string, tag: string): Promise<void> {
      const sender = child(senderNs, 'sender', { MCL_GROUP: group, MCL_COUNT: String(COUNT), MCL_TAG: tag });
      assert.equal(await sender.exit(), 0, sender.stderr);
    }

    const received = (receiver: RoleChild, tag: string) =>
      receiver.events.filter((e) => e.event === 'datagram' && String(e.data).startsWith(`${tag}-`));

    before(async () => {
      const missing = cliMissing();
      if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
      lab = Lab.create();
      routerNs = await lab.namespace('router');
      senderNs = await lab.namespace('sender');
      aNs = await lab.namespace('recva');
      bNs = await lab.namespace('recvb');
      Object.assign(ifaces, {
        rs: lab.ifname('rs'),
        ra: lab.ifname('ra'),
        rb: lab.ifname('rb'),
        s: lab.ifname('s'),
        a: lab.ifname('a'),
        b: lab.ifname('b'),
      });
      await link(ifaces.rs, senderNs, ifaces.s, SENDER.router, SENDER.address);
      await link(ifaces.ra, aNs, ifaces.a, RECEIVER_A.router, RECEIVER_A.address);
      await link(ifaces.rb, bNs, ifaces.b, RECEIVER_B.router, RECEIVER_B.address);
      for (const key of ['all', 'default', ifaces.rs, ifaces.ra, ifaces.rb])
        await lab.sysctl(routerNs, `net.ipv4.conf.${key}.rp_filter`, 0);
      receiverA = child(aNs, 'receiver', { MCL_ADDRESS: RECEIVER_A.address });
      receiverB = child(bNs, 'receiver', { MCL_ADDRESS: RECEIVER_B.address });
      await receiverA.waitFor('receiver A ready', (e) => e.event === 'ready');
      await receiverB.waitFor('receiver B ready', (e) => e.event === 'ready');
    });

    after(async () => {
      for (const c of [holder, receiverA, receiverB]) c?.send('quit');
      await lab?.destroy();
    });

    test('a fresh namespace: no VIFs, no routes, no router', async () => {
      const table = await routes();
      assert.deepEqual(table, { routerActive: false, vifs: [], routes: [] });
    });

    test('install (one-shot, --json) exits 0 and reports the route and that no router is active', async () => {
      const result = await cli([
        'install',
        GROUP,
        '--source',
        SENDER.address,
        '--iif',
        ifaces.rs,
        '--oif',
        ifaces.ra,
        '--json',
      ]);
      const output = parseJson<{
        route: { group: string; source: string; iif: string; oifs: string[] };
        routerActive: boolean;
        outcome?: unknown;
      }>(result, 'install --json');
      // The contract's keys; an `outcome` beside them (added/updated/unchanged) is welcome.
      assert.deepEqual(
        { route: output.route, routerActive: output.routerActive },
        { route: { group: GROUP, source: SENDER.address, iif: ifaces.rs, oifs: [ifaces.ra] }, routerActive: false },
      );
      assert.deepEqual(
        Object.keys(output).filter((key) => !['route', 'routerActive', 'outcome'].includes(key)),
        [],
      );
      if ('outcome' in output) assert.equal(output.outcome, 'added');
    });

    test('install (human output) of a second route says plainly that no router is active', async () => {
      const result = await cli([
        'install',
        GROUP_B,
        '--source',
        SENDER.address,
        '--iif',
        ifaces.rs,
        '--oif',
        ifaces.rb,
      ]);
      assert.equal(result.code, 0, describeResult(result));
      assert.match(result.stdout + result.stderr, /no multicast router is active in this network namespace/);
      assert.match(result.stdout + result.stderr, /forwards nothing until one runs/);
    });

    test('after install has exited, routes --json shows the static routes and routerActive false, as /proc does', async () => {
      const table = await routes();
      assert.equal(table.routerActive, false);
      for (const name of [ifaces.rs, ifaces.ra, ifaces.rb]) {
        const vif = vifNamed(table, name);
        assert.ok(vif, `a VIF for ${name}: ${JSON.stringify(table.vifs)}`);
        assert.equal(vif.static, true, `VIF ${name} is static (added without MRT_INIT)`);
        const ifindex = Number((await lab.exec(routerNs, ['cat', `/sys/class/net/${name}/ifindex`])).stdout);
        assert.equal(vif.ifindex, ifindex, `ifindex of ${name}`);
      }
      const route = routeOf(table, GROUP);
      assert.ok(route, JSON.stringify(table.routes));
      assert.equal(route.iif.name, ifaces.rs);
      assert.deepEqual(
        route.oifs.map((o) => o.name),
        [ifaces.ra],
      );
      assert.equal(route.iif.vif, vifNamed(table, ifaces.rs)!.vif);
      assert.deepEqual(
        route.oifs.map((o) => o.vif),
        [vifNamed(table, ifaces.ra)!.vif],
      );
      assert.deepEqual(
        routeOf(table, GROUP_B)?.oifs.map((o) => o.name),
        [ifaces.rb],
      );
      assert.deepEqual([route.packets, route.bytes, route.wrong], [0, 0, 0]);
      await assertAgreesWithKernel(table);
      // Human output names the route too.
      const human = await cli(['routes']);
      assert.equal(human.code, 0, describeResult(human));
      assert.ok(human.stdout.includes(GROUP) && human.stdout.includes(SENDER.address), human.stdout);
    });

    test('with no router socket, traffic from the sender reaches nobody and the counters stay', async () => {
      await send(GROUP, 'norouter');
      // Nothing to wait for: give a forwarded datagram ample time to show up if it were forwarded.
      await sleep(1000);
      assert.deepEqual(received(receiverA, 'norouter'), []);
      assert.deepEqual(received(receiverB, 'norouter'), []);
      const route = routeOf(await routes(), GROUP);
      assert.ok(route);
      assert.equal(route.packets, 0, 'the kernel does not consult the MFC while mc_forwarding is 0');
    });

    test('a router socket opens in the namespace: the static entries survive it and routerActive is true', async () => {
      const before = await routes();
      holder = child(routerNs, 'holder');
      await holder.waitFor('holder ready', (e) => e.event === 'ready' || e.event === 'error');
      assert.equal(holder.events[0]?.event, 'ready', `holder: ${JSON.stringify(holder.events)}\n${holder.stderr}`);
      const table = await routes();
      assert.equal(table.routerActive, true);
      assert.deepEqual(
        { ...table, routerActive: false },
        before,
        'the same VIFs and routes as before the router opened',
      );
      await assertAgreesWithKernel(table);
    });

    test('while the router socket is open, the static route forwards: to A, not B, and the counters grow', async () => {
      const before = await routes();
      await send(GROUP, 'routed');
      await receiverA.waitFor(
        `datagram ${COUNT - 1} at A`,
        (e) => e.event === 'datagram' && e.data === `routed-${COUNT - 1}`,
      );
      assert.deepEqual(
        received(receiverA, 'routed').map((e) => e.data),
        Array.from({ length: COUNT }, (_, i) => `routed-${i}`),
      );
      assert.ok(received(receiverA, 'routed').every((e) => e.from === SENDER.address));
      const after = await routes();
      const [was, now] = [routeOf(before, GROUP)!, routeOf(after, GROUP)];
      assert.ok(now);
      assert.equal(now.packets - was.packets, COUNT);
      assert.ok(now.bytes - was.bytes >= COUNT * (20 + 8 + 'routed-0'.length), `bytes ${was.bytes} → ${now.bytes}`);
      assert.equal(now.wrong, was.wrong);
      const out = (table: RoutesJson, name: string) => vifNamed(table, name)!.packetsOut;
      assert.equal(out(after, ifaces.ra) - out(before, ifaces.ra), COUNT);
      assert.equal(out(after, ifaces.rb) - out(before, ifaces.rb), 0);
      assert.equal(vifNamed(after, ifaces.rs)!.packetsIn - vifNamed(before, ifaces.rs)!.packetsIn, COUNT);
      // B's socket saw none of them (its VIF counter above already says nothing left towards it).
      assert.deepEqual(received(receiverB, 'routed'), []);
      await assertAgreesWithKernel(after);
    });

    test('while the router socket is open, a group without a route crosses to nobody', async () => {
      await send(GROUP_NONE, 'unrouted');
      await sleep(1000);
      assert.deepEqual(received(receiverA, 'unrouted'), []);
      assert.deepEqual(received(receiverB, 'unrouted'), []);
    });

    test('the router socket closes: the static routes stay, routerActive is false again', async () => {
      holder!.send('quit');
      await holder!.waitFor('holder closed', (e) => e.event === 'closed');
      assert.equal(await holder!.exit(), 0, holder!.stderr);
      holder = undefined;
      const table = await routes();
      assert.equal(table.routerActive, false);
      assert.ok(routeOf(table, GROUP), JSON.stringify(table.routes));
      assert.ok(routeOf(table, GROUP_B), JSON.stringify(table.routes));
      assert.ok(table.vifs.every((v) => v.static));
      await assertAgreesWithKernel(table);
    });

    test('bad input exits 64 and changes nothing', async () => {
      const before = await routes();
      const kernelBefore = await kernel();
      const nowhere = lab.ifname('zz');
      const cases: Array<[string, string[]]> = [
        [
          'a group that is not multicast',
          ['install', '10.62.0.1', '--source', SENDER.address, '--iif', ifaces.rs, '--oif', ifaces.ra],
        ],
        [
          'a group that is not an address',
          ['install', '239.62.0', '--source', SENDER.address, '--iif', ifaces.rs, '--oif', ifaces.ra],
        ],
        [
          'a multicast source',
          ['install', '239.62.0.9', '--source', '239.1.1.1', '--iif', ifaces.rs, '--oif', ifaces.ra],
        ],
        [
          'the broadcast address as source',
          ['install', '239.62.0.9', '--source', '255.255.255.255', '--iif', ifaces.rs, '--oif', ifaces.ra],
        ],
        [
          'an unknown incoming interface',
          ['install', '239.62.0.9', '--source', SENDER.address, '--iif', nowhere, '--oif', ifaces.ra],
        ],
        [
          'an unknown outgoing interface',
          ['install', '239.62.0.9', '--source', SENDER.address, '--iif', ifaces.rs, '--oif', `${ifaces.ra},${nowhere}`],
        ],
        [
          'the iif among the oifs',
          [
            'install',
            '239.62.0.9',
            '--source',
            SENDER.address,
            '--iif',
            ifaces.rs,
            '--oif',
            `${ifaces.ra},${ifaces.rs}`,
          ],
        ],
        ['uninstall of a group that is not multicast', ['uninstall', '10.62.0.1', '--source', SENDER.address]],
        ['uninstall of a multicast source', ['uninstall', GROUP, '--source', '239.1.1.1']],
      ];
      const failures: string[] = [];
      for (const [what, args] of cases) {
        for (const json of [false, true]) {
          const result = await cli(json ? [...args, '--json'] : args);
          if (result.code !== 64) failures.push(`${what}${json ? ' (--json)' : ''}: ${describeResult(result)}`);
          else if (result.stderr.trim() === '') failures.push(`${what}: exit 64 but nothing on stderr`);
        }
      }
      assert.deepEqual(failures, []);
      assert.deepEqual(await routes(), before, 'routes --json before and after are identical');
      assert.deepEqual(await kernel(), kernelBefore, '/proc before and after are identical');
    });

    test('without CAP_NET_ADMIN (nobody), install exits 77 and changes nothing', async () => {
      const before = await kernel();
      const result = await cli(
        ['install', '239.62.0.9', '--source', SENDER.address, '--iif', ifaces.rs, '--oif', ifaces.ra],
        NOBODY,
      );
      assert.equal(result.code, 77, describeResult(result));
      assert.match(result.stderr, /CAP_NET_ADMIN|root/);
      assert.deepEqual(await kernel(), before);
    });

    test('uninstall removes the route; a second uninstall finds it absent', async () => {
      const result = await cli(['uninstall', GROUP, '--source', SENDER.address, '--json']);
      const output = parseJson<{ route: { group: string; source: string }; outcome: string; routerActive: boolean }>(
        result,
        'uninstall --json',
      );
      assert.equal(output.outcome, 'removed');
      assert.equal(output.routerActive, false);
      assert.deepEqual(
        { group: output.route.group, source: output.route.source },
        { group: GROUP, source: SENDER.address },
      );
      let table = await routes();
      assert.equal(routeOf(table, GROUP), undefined, JSON.stringify(table.routes));
      assert.ok(routeOf(table, GROUP_B), 'the other route is untouched');
      await assertAgreesWithKernel(table);

      const again = parseJson<{ outcome: string }>(
        await cli(['uninstall', GROUP, '--source', SENDER.address, '--json']),
        'second uninstall --json',
      );
      assert.equal(again.outcome, 'absent');

      const human = await cli(['uninstall', GROUP_B, '--source', SENDER.address]);
      assert.equal(human.code, 0, describeResult(human));
      table = await routes();
      assert.deepEqual(table.routes, []);
      assert.deepEqual((await kernel()).cache, []);
    });
  });
}

async function runChild(role: string): Promise<void> {
  switch (role) {
    case 'holder':
      return holderRole();
    case 'receiver':
      return receiverRole();
    case 'sender':
      return senderRole();
    default:
      throw new Error(`unknown role ${role}`);
  }
}

// A child runs its role and nothing else: registering tests would make it a test run.
const role = process.env.MCL_ROUTES_ROLE;
if (role !== undefined) await runChild(role);
else routeTests();
