/**
 * The router socket with the IPv6 kit (RouterSocket, MRT6_*, MIFs) against the real kernel: a router namespace with two
 * veths, to a sender and to a receiver, each in its own namespace (made by the Lab harness, IPv6 switched on for
 * exactly these interfaces).
 *
 *   sender (S) ──mif 0── router ──mif 1── receiver
 *
 * The router's IPv6 MFC has (S, G) iif 0 → oifs [1]: real IPv6 UDP multicast from S (hop
 * limit 8) must reach the receiver, and the entry's counters in /proc/net/ip6_mr_cache
 * must grow by the number sent. Traffic for a (S, G') with no entry must produce a NOCACHE
 * upcall naming MIF 0, S and G'. A second MRT6_INIT in the namespace fails with the typed
 * UnavailableError. `mcastctl routes --json` in the router namespace shows both MIFs and
 * the entry with family "ipv6". Closing the router socket empties the tables.
 *
 * The test process stays in the root namespace: everything that touches a socket runs in
 * a child (this file, with MCL_MROUTE6_ROLE set) started with `ip netns exec`. Needs root,
 * and the built CLI (dist/) for the `routes` test. Deadlines only keep a broken kernel
 * path from hanging the suite.
 *
 * Run: npm run --silent build && node --import tsx --test test/routing/mroute6-socket.test.ts
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { McastError } from '../../src/errors.js';
import { MRT6MSG_NOCACHE } from '../../src/protocol/mroute/constants.js';
import { IPV4_KIT, IPV6_KIT } from '../../src/protocol/mroute/family-kits.js';
import { parseMfc6Cache, parseMifTable, readMfc6Cache } from '../../src/protocol/mroute/proc.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { RouterSocket } from '../../src/transport/router-socket.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { Lab, waitUntil } from '../lab/lab.js';
import { enableIpv6 } from '../lab/mld-hosts.js';
import { emitEvent as emit, spawnRole, type RoleChild } from '../lab/role-child.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const THIS_FILE = fileURLToPath(import.meta.url);
const PROJECT_ROOT = path.resolve(path.dirname(THIS_FILE), '../..');

/** Unique local addresses, only inside the lab's namespaces. */
const SENDER = { address: 'fd61:1::2', router: 'fd61:1::1' };
const RECEIVER = { address: 'fd61:2::2', router: 'fd61:2::1' };
/**
 * Global scope, outside the SSM range (an any-source join is enough). Has an MFC entry (S, ROUTED_GROUP) → receiver.
 */
const ROUTED_GROUP = 'ff1e::61:1';
/** Has none: the first packet makes a NOCACHE upcall. */
const UNKNOWN_GROUP = 'ff1e::61:2';
const PORT = 5997;
const COUNT = 6;

// ---------------------------------------------------------------------------------------
// RoleChild roles (this file, run with MCL_MROUTE6_ROLE set inside a namespace)

function errorEvent(error: unknown): Record<string, unknown> {
  if (error instanceof McastError)
    return {
      event: 'error',
      name: error.name,
      code: error.code,
      exitCode: error.exitCode,
      message: error.message,
      hint: error.hint,
    };
  return { event: 'error', name: (error as Error).name, message: String((error as Error).message) };
}

/** The router: MRT6_INIT, two MIFs, one MFC entry; reports upcalls; answers stdin commands. */
async function routerRole(): Promise<void> {
  const [senderIf, receiverIf] = (process.env.MCL_IFACES ?? '').split(',');
  let socket: RouterSocket;
  try {
    socket = RouterSocket.open({ family: IPV6_KIT, init: true });
    socket.onUpcall((upcall) =>
      emit({
        event: 'upcall',
        type: upcall.type,
        mif: upcall.index,
        source: upcall.source,
        group: upcall.group,
        restLength: upcall.rest.length,
      }),
    );
    socket.addInterface({ index: 0, ifindex: ifindexOf(senderIf!) });
    socket.addInterface({ index: 1, ifindex: ifindexOf(receiverIf!) });
    socket.addEntry({ source: SENDER.address, group: ROUTED_GROUP, iif: 0, oifs: [1] });
  } catch (error) {
    emit(errorEvent(error));
    return;
  }
  emit({ event: 'ready' });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'cache') emit({ event: 'cache', rows: await readMfc6Cache() });
    else if (line === 'quit') break;
  }
  socket.close();
  emit({ event: 'closed' });
  process.stdin.destroy();
}

/** Tries MRT6_INIT (while the router holds the namespace). */
function initRole(): void {
  try {
    RouterSocket.open({ family: IPV6_KIT, init: true }).close();
    emit({ event: 'opened' });
  } catch (error) {
    emit(errorEvent(error));
  }
}

/**
 * Adds a static IPv4 VIF (no MRT_INIT: it stays after the socket closes), so that `routes` has rows of both families.
 */
function vif4Role(): void {
  const socket = RouterSocket.open({ family: IPV4_KIT, init: false });
  try {
    socket.addInterface({ index: 0, ifindex: ifindexOf(process.env.MCL_IFACE!) });
    emit({ event: 'added' });
  } catch (error) {
    emit(errorEvent(error));
  } finally {
    socket.close();
  }
}

/** Joins both groups on its interface and reports every datagram. */
async function receiverRole(): Promise<void> {
  const iface = process.env.MCL_IFACE!;
  const socket = dgram.createSocket({ type: 'udp6', reuseAddr: true });
  socket.on('message', (data, rinfo) => emit({ event: 'datagram', from: rinfo.address, data: data.toString() }));
  await new Promise<void>((resolve) => socket.bind(PORT, resolve));
  socket.addMembership(ROUTED_GROUP, `::%${iface}`);
  socket.addMembership(UNKNOWN_GROUP, `::%${iface}`);
  emit({ event: 'ready' });
  for await (const line of createInterface({ input: process.stdin })) if (line === 'quit') break;
  socket.close();
  process.stdin.destroy();
}

/** Sends MCL_COUNT datagrams to MCL_GROUP out of its interface, with a hop limit that survives the router. */
async function senderRole(): Promise<void> {
  const group = process.env.MCL_GROUP!;
  const count = Number(process.env.MCL_COUNT ?? '1');
  const socket = dgram.createSocket('udp6');
  await new Promise<void>((resolve) => socket.bind(0, SENDER.address, resolve));
  socket.setMulticastTTL(8);
  socket.setMulticastInterface(`::%${process.env.MCL_IFACE!}`);
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) =>
      socket.send(`mcl6-${group}-${i}`, PORT, group, (error) => (error ? reject(error) : resolve())),
    );
  }
  socket.close();
  emit({ event: 'sent', count });
}

// ---------------------------------------------------------------------------------------
// Test side

/** `routes --json`, the parts checked here. */
interface RoutesJson {
  routerActive: boolean;
  routerActiveByFamily: Record<string, boolean>;
  vifs: Array<{ family: string; vif: number; name: string; ifindex: number | null; static: boolean }>;
  routes: Array<{
    family: string;
    group: string;
    source: string;
    iif: { vif: number; name: string | null };
    oifs: Array<{ vif: number; name: string | null; ttl: number }>;
  }>;
}

function kernelTests(): void {
  describe('the IPv6 router socket on a real kernel (lab namespaces)', { timeout: 120_000 }, () => {
    let lab: Lab;
    let routerNs: string;
    let senderNs: string;
    let receiverNs: string;
    let router: RoleChild;
    let receiver: RoleChild;
    const ifaces = { rs: '', rr: '', s: '', r: '' };

    const child = (ns: string, role: string, env: Record<string, string> = {}): RoleChild =>
      spawnRole({ lab, ns, file: THIS_FILE, roleVariable: 'MCL_MROUTE6_ROLE', role, env, cwd: PROJECT_ROOT });

    /** A veth from the router to a host, IPv6 on at both ends, a /64 on each (no DAD: nothing else is on the link). */
    async function link(
      routerIf: string,
      hostNs: string,
      hostIf: string,
      addresses: { router: string; address: string },
    ): Promise<void> {
      await lab.vethPair({ ns: routerNs, name: routerIf }, { ns: hostNs, name: hostIf });
      for (const [ns, iface, address] of [
        [routerNs, routerIf, addresses.router],
        [hostNs, hostIf, addresses.address],
      ] as const) {
        await enableIpv6(lab, ns, iface, 0);
        await lab.ip(ns, '-6', 'addr', 'add', `${address}/64`, 'dev', iface, 'nodad');
        // With transmit checksum offload on, UDP leaves a veth with its checksum unfilled.
        await lab.exec(ns, ['ethtool', '-K', iface, 'tx', 'off']);
      }
    }

    const procMifs = async () => parseMifTable((await lab.exec(routerNs, ['cat', '/proc/net/ip6_mr_vif'])).stdout);
    const procCache = async () => parseMfc6Cache((await lab.exec(routerNs, ['cat', '/proc/net/ip6_mr_cache'])).stdout);
    const mcForwarding = async () =>
      (await lab.exec(routerNs, ['cat', '/proc/sys/net/ipv6/conf/all/mc_forwarding'])).stdout.trim();

    before(async () => {
      lab = Lab.create();
      routerNs = await lab.namespace('router6');
      senderNs = await lab.namespace('sender6');
      receiverNs = await lab.namespace('recv6');
      Object.assign(ifaces, { rs: lab.ifname('rs'), rr: lab.ifname('rr'), s: lab.ifname('s'), r: lab.ifname('r') });
      await link(ifaces.rs, senderNs, ifaces.s, SENDER);
      await link(ifaces.rr, receiverNs, ifaces.r, RECEIVER);
      await lab.sysctl(routerNs, 'net.ipv6.conf.all.forwarding', 1);
      assert.equal(await mcForwarding(), '0', 'no IPv6 multicast router before the test starts one');

      receiver = child(receiverNs, 'receiver', { MCL_IFACE: ifaces.r });
      router = child(routerNs, 'router', { MCL_IFACES: [ifaces.rs, ifaces.rr].join(',') });
      await receiver.waitFor('receiver ready', (e) => e.event === 'ready');
      await router.waitFor('router ready', (e) => e.event === 'ready' || e.event === 'error');
      assert.equal(router.events[0]?.event, 'ready', `router: ${JSON.stringify(router.events)}\n${router.stderr}`);
    });

    after(async () => {
      for (const c of [router, receiver]) c?.send('quit');
      await lab?.destroy();
    });

    async function cache(): Promise<ReturnType<typeof parseMfc6Cache>> {
      const before = router.events.length;
      router.send('cache');
      const event = await router.waitFor(
        'cache dump',
        (e) => e.event === 'cache' && router.events.indexOf(e) >= before,
      );
      return event.rows as ReturnType<typeof parseMfc6Cache>;
    }

    test('MRT6_INIT makes the namespace an IPv6 multicast router (mc_forwarding 1)', async () => {
      assert.equal(await mcForwarding(), '1');
    });

    test('the kernel shows the two MIFs and the (S,G) entry', async () => {
      const mifs = await procMifs();
      assert.deepEqual(
        mifs.map((m) => [m.mif, m.name, m.register, m.static]),
        [
          [0, ifaces.rs, false, false],
          [1, ifaces.rr, false, false],
        ],
      );
      const entry = (await procCache()).find((row) => row.group === ROUTED_GROUP && row.origin === SENDER.address);
      assert.ok(entry, JSON.stringify(await procCache()));
      assert.equal(entry.iif, 0);
      assert.deepEqual(entry.oifs, [{ mif: 1, ttl: 1 }]);
    });

    test('routed IPv6 multicast reaches the receiver and the counters grow by the number sent', async () => {
      const entryOf = (rows: Awaited<ReturnType<typeof cache>>) =>
        rows.find((row) => row.group === ROUTED_GROUP && row.origin === SENDER.address);
      const before = entryOf(await cache());
      assert.ok(before);
      const sender = child(senderNs, 'sender', {
        MCL_GROUP: ROUTED_GROUP,
        MCL_COUNT: String(COUNT),
        MCL_IFACE: ifaces.s,
      });
      assert.equal(await sender.exit(), 0, sender.stderr);
      await receiver.waitFor(
        `datagram ${COUNT - 1}`,
        (e) => e.event === 'datagram' && e.data === `mcl6-${ROUTED_GROUP}-${COUNT - 1}`,
      );
      const received = receiver.events.filter(
        (e) => e.event === 'datagram' && String(e.data).startsWith(`mcl6-${ROUTED_GROUP}-`),
      );
      assert.deepEqual(
        received.map((e) => e.data),
        Array.from({ length: COUNT }, (_, i) => `mcl6-${ROUTED_GROUP}-${i}`),
      );
      assert.ok(
        received.every((e) => e.from === SENDER.address),
        JSON.stringify(received),
      );
      const after = entryOf(await cache());
      assert.ok(after);
      assert.equal(after.packets - before.packets, COUNT);
      assert.ok(after.bytes - before.bytes >= COUNT * (40 + 8 + `mcl6-${ROUTED_GROUP}-0`.length));
      assert.equal(after.wrong, before.wrong);
      const mifs = await procMifs();
      assert.equal(mifs.find((m) => m.mif === 0)?.packetsIn, COUNT);
      assert.equal(mifs.find((m) => m.mif === 1)?.packetsOut, COUNT);
    });

    test('an unknown (S,G) produces a NOCACHE upcall with MIF 0, the source and the group', async () => {
      const sender = child(senderNs, 'sender', { MCL_GROUP: UNKNOWN_GROUP, MCL_COUNT: '1', MCL_IFACE: ifaces.s });
      assert.equal(await sender.exit(), 0, sender.stderr);
      const upcall = await router.waitFor('NOCACHE upcall', (e) => e.event === 'upcall' && e.group === UNKNOWN_GROUP);
      assert.deepEqual(
        { type: upcall.type, mif: upcall.mif, source: upcall.source, group: upcall.group },
        { type: MRT6MSG_NOCACHE, mif: 0, source: SENDER.address, group: UNKNOWN_GROUP },
      );
      // The routed group, which has its entry, made none.
      assert.ok(
        router.events.filter((e) => e.event === 'upcall').every((e) => e.group === UNKNOWN_GROUP),
        JSON.stringify(router.events),
      );
      // Nothing crossed: the receiver joined UNKNOWN_GROUP too, but there is no route.
      assert.equal(
        receiver.events.filter((e) => e.event === 'datagram' && e.data === `mcl6-${UNKNOWN_GROUP}-0`).length,
        0,
      );
      // The unresolved entry shows in the cache (iif -1, no oifs) while the kernel waits for a route.
      const rows = await cache();
      assert.ok(
        rows.some((row) => row.group === UNKNOWN_GROUP && row.origin === SENDER.address && row.oifs.length === 0),
        JSON.stringify(rows),
      );
    });

    test('a second MRT6_INIT in the namespace: UnavailableError (EADDRINUSE), exit 69', async () => {
      const second = child(routerNs, 'init');
      assert.equal(await second.exit(), 0, second.stderr);
      const result = second.events.find((e) => e.event === 'error');
      assert.deepEqual(
        { name: result?.name, code: result?.code, exitCode: result?.exitCode },
        { name: 'UnavailableError', code: 'unavailable', exitCode: 69 },
        JSON.stringify(second.events),
      );
      assert.match(
        String(result?.message),
        /another multicast router holds this network namespace.*MRT6_INIT: EADDRINUSE/,
      );
    });

    test('`mcastctl routes --json` shows the IPv6 MIFs and the (S,G) entry, after the IPv4 rows', async () => {
      assert.equal(cliMissing(), undefined, 'this test runs the built CLI: run scripts/setup.sh');
      const vif4 = child(routerNs, 'vif4', { MCL_IFACE: ifaces.rr });
      assert.equal(await vif4.exit(), 0, vif4.stderr);
      assert.equal(vif4.events[0]?.event, 'added', JSON.stringify(vif4.events));
      const result = await mcastctl(['routes', '--json'], { ns: routerNs });
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const table = JSON.parse(result.stdout) as RoutesJson;
      assert.equal(table.routerActive, false, 'no IPv4 router here');
      assert.deepEqual(table.routerActiveByFamily, { ipv4: false, ipv6: true });
      const ifindex = async (name: string) =>
        Number((await lab.exec(routerNs, ['cat', `/sys/class/net/${name}/ifindex`])).stdout);
      assert.deepEqual(
        table.vifs.map((v) => ({ family: v.family, vif: v.vif, name: v.name, ifindex: v.ifindex, static: v.static })),
        [
          { family: 'ipv4', vif: 0, name: ifaces.rr, ifindex: await ifindex(ifaces.rr), static: true },
          { family: 'ipv6', vif: 0, name: ifaces.rs, ifindex: await ifindex(ifaces.rs), static: false },
          { family: 'ipv6', vif: 1, name: ifaces.rr, ifindex: await ifindex(ifaces.rr), static: false },
        ],
      );
      const routed = table.routes.find((r) => r.group === ROUTED_GROUP);
      assert.deepEqual(
        { family: routed?.family, source: routed?.source, iif: routed?.iif, oifs: routed?.oifs },
        {
          family: 'ipv6',
          source: SENDER.address,
          iif: { vif: 0, name: ifaces.rs },
          oifs: [{ vif: 1, name: ifaces.rr, ttl: 1 }],
        },
      );
      const human = await mcastctl(['routes'], { ns: routerNs });
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /multicast router: none[\s\S]*IPv6 multicast router: active/);
      assert.ok(human.stdout.includes(ROUTED_GROUP) && human.stdout.includes(SENDER.address), human.stdout);
    });

    test('closing the router socket makes the kernel drop its MIFs and routes', async () => {
      router.send('quit');
      await router.waitFor('router closed', (e) => e.event === 'closed');
      assert.equal(await router.exit(), 0, router.stderr);
      assert.deepEqual(await procMifs(), []);
      // Unresolved entries go with the router too (ip6mr_sk_done flushes them).
      assert.deepEqual(await procCache(), []);
      await waitUntil('mc_forwarding back to 0', async () => (await mcForwarding()) === '0', 5_000);
    });
  });
}

async function runChild(role: string): Promise<void> {
  switch (role) {
    case 'router':
      return routerRole();
    case 'init':
      return initRole();
    case 'receiver':
      return receiverRole();
    case 'sender':
      return senderRole();
    case 'vif4':
      return vif4Role();
    default:
      throw new Error(`unknown role ${role}`);
  }
}

// A child runs its role and nothing else: registering tests would make it a test run.
const role = process.env.MCL_MROUTE6_ROLE;
if (role !== undefined) await runChild(role);
else kernelTests();
