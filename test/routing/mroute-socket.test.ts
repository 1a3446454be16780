/**
 * The router socket with the IPv4 kit (RouterSocket, MRT_*, VIFs) against the real kernel: a router namespace with
 * three veths, to a sender and to two receivers, each in its own namespace (all made by the Lab harness).
 *
 *   sender (S) ──vif 0── router ──vif 1── receiver A
 *                           └─────vif 2── receiver B
 *
 * The router's MFC has (S, G) iif 0 → oifs [1]: real UDP multicast from S (TTL 8) must
 * reach A and not B, and the entry's counters in /proc/net/ip_mr_cache must grow by the
 * number sent. Traffic for a (S, G') with no entry must produce a NOCACHE upcall naming
 * VIF 0, S and G'. A second MRT_INIT in the namespace fails with the clear EADDRINUSE
 * error; without privileges (setpriv to nobody) opening fails with PermissionError.
 * Closing the router socket empties the tables; then every other operation (delete,
 * join/leave, flush, done) runs once, and each kernel refusal is checked for its typed error.
 *
 * The test process stays in the root namespace: everything that touches a socket runs in
 * a child (this file, with MCL_MROUTE_ROLE set) started with `ip netns exec` through
 * lab.spawn. Needs root. Nothing here measures time: deadlines only keep a broken kernel
 * path from hanging the suite.
 *
 * Run: node --import tsx --test test/routing/mroute-socket.test.ts
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { McastError } from '../../src/errors.js';
import { IGMPMSG_NOCACHE, VIFF_USE_IFINDEX } from '../../src/protocol/mroute/constants.js';
import { IPV4_KIT } from '../../src/protocol/mroute/family-kits.js';
import { MrouteError } from '../../src/protocol/mroute/mroute-error.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { RouterSocket } from '../../src/transport/router-socket.js';
import {
  parseMfcCache,
  parseVifTable,
  readMfcCache,
  readVifTable,
  type MfcRow,
  type VifRow,
} from '../../src/protocol/mroute/proc.js';
import { Lab } from '../lab/lab.js';
import { emitEvent as emit, spawnRole, type RoleChild } from '../lab/role-child.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const THIS_FILE = fileURLToPath(import.meta.url);
const PROJECT_ROOT = path.resolve(path.dirname(THIS_FILE), '../..');

/** TEST-NET-style private addressing, only inside the lab's namespaces. */
const SENDER = { address: '10.91.0.2', router: '10.91.0.1' };
const RECEIVER_A = { address: '10.92.0.2', router: '10.92.0.1' };
const RECEIVER_B = { address: '10.93.0.2', router: '10.93.0.1' };
/** Has an MFC entry (S, ROUTED_GROUP) → A. */
const ROUTED_GROUP = '239.61.0.1';
/** Has none: the first packet makes a NOCACHE upcall. */
const UNKNOWN_GROUP = '239.61.0.2';
const PORT = 5999;
const COUNT = 7;

// ---------------------------------------------------------------------------------------
// RoleChild roles (this file, run with MCL_MROUTE_ROLE set inside a namespace)

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

/** The router: MRT_INIT, three VIFs, one MFC entry; reports upcalls; answers stdin commands. */
async function routerRole(): Promise<void> {
  const [senderIf, aIf, bIf] = (process.env.MCL_IFACES ?? '').split(',');
  const socket = RouterSocket.open({ family: IPV4_KIT, init: true });
  socket.onUpcall((upcall) =>
    emit({
      event: 'upcall',
      type: upcall.type,
      vif: upcall.index,
      source: upcall.source,
      group: upcall.group,
      restLength: upcall.rest.length,
    }),
  );
  socket.addInterface({ index: 0, ifindex: ifindexOf(senderIf!) });
  socket.addInterface({ index: 1, ifindex: ifindexOf(aIf!) });
  socket.addInterface({ index: 2, ifindex: ifindexOf(bIf!) });
  socket.addEntry({ source: SENDER.address, group: ROUTED_GROUP, iif: 0, oifs: [1] });
  emit({ event: 'ready', upcallIndexWidth: socket.upcallIndexWidth });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'cache') emit({ event: 'cache', rows: await readMfcCache() });
    else if (line === 'quit') break;
  }
  socket.close();
  emit({ event: 'closed' });
  process.stdin.destroy();
}

/** Tries MRT_INIT (while the router holds the namespace, or without privileges). */
function initRole(): void {
  try {
    RouterSocket.open({ family: IPV4_KIT, init: true }).close();
    emit({ event: 'opened' });
  } catch (error) {
    emit(errorEvent(error));
  }
}

/** Runs each operation once against the kernel and reports what happened (ok, or the typed error). */
async function lifecycleRole(): Promise<void> {
  const [firstIf, secondIf] = (process.env.MCL_IFACES ?? '').split(',');
  const first = ifindexOf(firstIf!);
  const second = ifindexOf(secondIf!);
  const socket = RouterSocket.open({ family: IPV4_KIT, init: true });
  const step = async (name: string, action: () => unknown): Promise<void> => {
    try {
      await action();
      emit({ event: 'step', step: name, ok: true });
    } catch (error) {
      const errno = error instanceof MrouteError ? error.errno : undefined;
      emit({ event: 'step', step: name, ok: false, error: { ...errorEvent(error), errno } });
    }
  };
  const sg = { source: SENDER.address, group: ROUTED_GROUP };
  await step('addVif 0', () => socket.addInterface({ index: 0, ifindex: first }));
  await step('addVif 1', () => socket.addInterface({ index: 1, ifindex: second, threshold: 3 }));
  await step('addVif 0 again', () => socket.addInterface({ index: 0, ifindex: first }));
  await step('addVif 0x7fff ifindex', () => socket.addInterface({ index: 5, ifindex: 0x7fff }));
  await step('addVif 32', () => socket.addInterface({ index: 32, ifindex: first }));
  await step('addMfc', () => socket.addEntry({ ...sg, iif: 0, oifs: [1], ttl: 4 }));
  await step('addMfc unicast group', () =>
    socket.addEntry({ source: SENDER.address, group: '10.0.0.1', iif: 0, oifs: [1] }),
  );
  await step('cache after addMfc', async () =>
    emit({ event: 'cache', rows: await readMfcCache(), vifs: await readVifTable() }),
  );
  await step('delMfc', () => socket.delEntry(sg));
  await step('delMfc again', () => socket.delEntry(sg));
  await step('delVif 1', () => socket.delInterface(1));
  await step('delVif 1 again', () => socket.delInterface(1));
  await step('joinGroup', () => socket.joinGroup({ group: '239.61.0.9', ifindex: first }));
  await step('joinGroup again', () => socket.joinGroup({ group: '239.61.0.9', ifindex: first }));
  await step('leaveGroup', () => socket.leaveGroup({ group: '239.61.0.9', ifindex: first }));
  await step('leaveGroup again', () => socket.leaveGroup({ group: '239.61.0.9', ifindex: first }));
  await step('addMfc before flush', () => socket.addEntry({ ...sg, iif: 0, oifs: [] }));
  await step('flush', () => socket.flush());
  await step('tables after flush', async () =>
    emit({ event: 'flushed', rows: await readMfcCache(), vifs: await readVifTable() }),
  );
  await step('done', () => socket.done());
  await step('init by another socket after done', () => RouterSocket.open({ family: IPV4_KIT, init: true }).close());
  socket.close();
}

/** Joins a group on its interface and reports every datagram. */
async function receiverRole(): Promise<void> {
  const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  socket.on('message', (data, rinfo) => emit({ event: 'datagram', from: rinfo.address, data: data.toString() }));
  await new Promise<void>((resolve) => socket.bind(PORT, resolve));
  socket.addMembership(ROUTED_GROUP, process.env.MCL_ADDRESS);
  socket.addMembership(UNKNOWN_GROUP, process.env.MCL_ADDRESS);
  emit({ event: 'ready' });
  for await (const line of createInterface({ input: process.stdin })) if (line === 'quit') break;
  socket.close();
  process.stdin.destroy();
}

/** Sends COUNT datagrams (or one) to a group, with a TTL that survives the router. */
async function senderRole(): Promise<void> {
  const group = process.env.MCL_GROUP!;
  const count = Number(process.env.MCL_COUNT ?? '1');
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, SENDER.address, resolve));
  socket.setMulticastTTL(8);
  socket.setMulticastInterface(SENDER.address);
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) =>
      socket.send(`mcl-${group}-${i}`, PORT, group, (error) => (error ? reject(error) : resolve())),
    );
  }
  socket.close();
  emit({ event: 'sent', count });
}

// ---------------------------------------------------------------------------------------
// Test side

function kernelTests(): void {
  describe('the IPv4 router socket on a real kernel (lab namespaces)', () => {
    let lab: Lab;
    let routerNs: string;
    let senderNs: string;
    let aNs: string;
    let bNs: string;
    let router: RoleChild;
    let receiverA: RoleChild;
    let receiverB: RoleChild;
    const ifaces = { rs: '', ra: '', rb: '', s: '', a: '', b: '' };

    const child = (ns: string, role: string, env: Record<string, string> = {}, prefix: string[] = []): RoleChild =>
      spawnRole({ lab, ns, file: THIS_FILE, roleVariable: 'MCL_MROUTE_ROLE', role, env, prefix, cwd: PROJECT_ROOT });

    const link = (
      ns: string,
      iface: string,
      peerNs: string,
      peerIface: string,
      routerSide: string,
      hostSide: string,
    ): Promise<void> =>
      lab.routedLink({ ns, name: iface, address: routerSide }, { ns: peerNs, name: peerIface, address: hostSide });

    before(async () => {
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
      await link(routerNs, ifaces.rs, senderNs, ifaces.s, SENDER.router, SENDER.address);
      await link(routerNs, ifaces.ra, aNs, ifaces.a, RECEIVER_A.router, RECEIVER_A.address);
      await link(routerNs, ifaces.rb, bNs, ifaces.b, RECEIVER_B.router, RECEIVER_B.address);
      // Reverse-path filtering would drop nothing here, but is off so that it cannot.
      for (const key of ['all', 'default', ifaces.rs, ifaces.ra, ifaces.rb])
        await lab.sysctl(routerNs, `net.ipv4.conf.${key}.rp_filter`, 0);

      receiverA = child(aNs, 'receiver', { MCL_ADDRESS: RECEIVER_A.address });
      receiverB = child(bNs, 'receiver', { MCL_ADDRESS: RECEIVER_B.address });
      router = child(routerNs, 'router', { MCL_IFACES: [ifaces.rs, ifaces.ra, ifaces.rb].join(',') });
      await receiverA.waitFor('receiver A ready', (e) => e.event === 'ready');
      await receiverB.waitFor('receiver B ready', (e) => e.event === 'ready');
      await router.waitFor('router ready', (e) => e.event === 'ready' || e.event === 'error');
      assert.equal(router.events[0]?.event, 'ready', `router: ${JSON.stringify(router.events)}\n${router.stderr}`);
    });

    after(async () => {
      for (const c of [router, receiverA, receiverB]) c?.send('quit');
      await lab?.destroy();
    });

    async function cache(): Promise<ReturnType<typeof parseMfcCache>> {
      const before = router.events.length;
      router.send('cache');
      const event = await router.waitFor(
        'cache dump',
        (e) => e.event === 'cache' && router.events.indexOf(e) >= before,
      );
      return event.rows as ReturnType<typeof parseMfcCache>;
    }

    test('the kernel shows the VIFs and the (S,G) entry', async () => {
      const vifs = parseVifTable((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_vif'])).stdout);
      assert.deepEqual(
        vifs.map((v) => [v.vif, v.name]),
        [
          [0, ifaces.rs],
          [1, ifaces.ra],
          [2, ifaces.rb],
        ],
      );
      // Added with VIFF_USE_IFINDEX: the kernel shows the ifindex where the local address would be.
      const routerIfindex = async (name: string) =>
        Number((await lab.exec(routerNs, ['cat', `/sys/class/net/${name}/ifindex`])).stdout);
      assert.deepEqual(vifs[0]?.local, { kind: 'ifindex', ifindex: await routerIfindex(ifaces.rs) });
      assert.ok(vifs.every((v) => v.flags === VIFF_USE_IFINDEX && !v.static));
      const rows = parseMfcCache((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_cache'])).stdout);
      const entry = rows.find((row) => row.group === ROUTED_GROUP && row.origin === SENDER.address);
      assert.ok(entry, JSON.stringify(rows));
      assert.equal(entry.iif, 0);
      assert.deepEqual(entry.oifs, [{ vif: 1, ttl: 1 }]);
    });

    test('routed multicast reaches A, not B, and the counters grow by the number sent', async () => {
      const entryOf = (rows: Awaited<ReturnType<typeof cache>>) =>
        rows.find((row) => row.group === ROUTED_GROUP && row.origin === SENDER.address);
      const before = entryOf(await cache());
      assert.ok(before);
      const sender = child(senderNs, 'sender', { MCL_GROUP: ROUTED_GROUP, MCL_COUNT: String(COUNT) });
      assert.equal(await sender.exit(), 0, sender.stderr);
      await receiverA.waitFor(
        `datagram ${COUNT - 1} at A`,
        (e) => e.event === 'datagram' && e.data === `mcl-${ROUTED_GROUP}-${COUNT - 1}`,
      );
      const atA = receiverA.events.filter(
        (e) => e.event === 'datagram' && String(e.data).startsWith(`mcl-${ROUTED_GROUP}-`),
      );
      assert.deepEqual(
        atA.map((e) => e.data),
        Array.from({ length: COUNT }, (_, i) => `mcl-${ROUTED_GROUP}-${i}`),
      );
      assert.ok(atA.every((e) => e.from === SENDER.address));
      const after = entryOf(await cache());
      assert.ok(after);
      assert.equal(after.packets - before.packets, COUNT);
      assert.ok(after.bytes - before.bytes >= COUNT * (20 + 8 + `mcl-${ROUTED_GROUP}-0`.length));
      assert.equal(after.wrong, before.wrong);
      // Nothing left towards B: the kernel's own per-VIF counters say so (no waiting involved),
      // and B's socket saw no routed datagram.
      const vifs = parseVifTable((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_vif'])).stdout);
      assert.equal(vifs.find((v) => v.vif === 1)?.packetsOut, COUNT);
      assert.equal(vifs.find((v) => v.vif === 2)?.packetsOut, 0);
      assert.equal(vifs.find((v) => v.vif === 0)?.packetsIn, COUNT);
      assert.equal(receiverB.events.filter((e) => e.event === 'datagram').length, 0, JSON.stringify(receiverB.events));
    });

    test('an unknown (S,G) produces a NOCACHE upcall with VIF 0, the source and the group', async () => {
      const sender = child(senderNs, 'sender', { MCL_GROUP: UNKNOWN_GROUP, MCL_COUNT: '1' });
      assert.equal(await sender.exit(), 0, sender.stderr);
      const upcall = await router.waitFor('NOCACHE upcall', (e) => e.event === 'upcall' && e.group === UNKNOWN_GROUP);
      assert.deepEqual(
        {
          type: upcall.type,
          vif: upcall.vif,
          source: upcall.source,
          group: upcall.group,
          restLength: upcall.restLength,
        },
        { type: IGMPMSG_NOCACHE, vif: 0, source: SENDER.address, group: UNKNOWN_GROUP, restLength: 8 },
      );
      // The unresolved entry shows in the cache while the kernel waits for a route.
      const rows = await cache();
      assert.ok(
        rows.some((row) => row.group === UNKNOWN_GROUP && row.origin === SENDER.address),
        JSON.stringify(rows),
      );
    });

    test('a second MRT_INIT in the namespace: the clear EADDRINUSE error, exit 69', async () => {
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
        /another multicast router holds this network namespace \(smcroute, pimd, the mcastctl daemon\?\).*EADDRINUSE/,
      );
      assert.match(String(result?.hint), /ss -awp/);
    });

    test('without privileges (nobody): PermissionError, exit 77', async () => {
      const unprivileged = child(routerNs, 'init', {}, ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']);
      assert.equal(await unprivileged.exit(), 0, unprivileged.stderr);
      const result = unprivileged.events.find((e) => e.event === 'error');
      assert.deepEqual(
        { name: result?.name, code: result?.code, exitCode: result?.exitCode },
        { name: 'PermissionError', code: 'no-permission', exitCode: 77 },
        JSON.stringify(unprivileged.events),
      );
      assert.match(String(result?.message), /EPERM.*CAP_NET_ADMIN/);
    });

    test('closing the router socket makes the kernel drop its VIFs and routes', async () => {
      router.send('quit');
      await router.waitFor('router closed', (e) => e.event === 'closed');
      assert.equal(await router.exit(), 0, router.stderr);
      assert.deepEqual(parseVifTable((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_vif'])).stdout), []);
      assert.deepEqual(parseMfcCache((await lab.exec(routerNs, ['cat', '/proc/net/ip_mr_cache'])).stdout), []);
    });

    test('every operation, and the typed error of each kernel refusal', async () => {
      const run = child(routerNs, 'lifecycle', { MCL_IFACES: [ifaces.rs, ifaces.ra].join(',') });
      assert.equal(await run.exit(), 0, run.stderr);
      const steps = new Map(run.events.filter((e) => e.event === 'step').map((e) => [e.step as string, e]));
      // name/code/errno/exitCode of each step's error: what callers match on.
      const outcome = (name: string) => {
        const step = steps.get(name);
        if (step?.ok === true) return 'ok';
        const e = (step?.error ?? {}) as Record<string, unknown>;
        return `${String(e.name)}/${String(e.code)}/${String(e.errno ?? '-')}/${String(e.exitCode)}`;
      };
      assert.deepEqual(Object.fromEntries([...steps.keys()].map((name) => [name, outcome(name)])), {
        'addVif 0': 'ok',
        'addVif 1': 'ok',
        'addVif 0 again': 'MrouteError/io/EADDRINUSE/1',
        'addVif 0x7fff ifindex': 'MrouteError/io/EADDRNOTAVAIL/1',
        'addVif 32': 'UsageError/usage/-/64',
        addMfc: 'ok',
        'addMfc unicast group': 'UsageError/bad-address/-/64',
        'cache after addMfc': 'ok',
        delMfc: 'ok',
        'delMfc again': 'MrouteError/io/ENOENT/1',
        'delVif 1': 'ok',
        'delVif 1 again': 'MrouteError/io/EADDRNOTAVAIL/1',
        joinGroup: 'ok',
        'joinGroup again': 'MrouteError/io/EADDRINUSE/1',
        leaveGroup: 'ok',
        'leaveGroup again': 'MrouteError/io/EADDRNOTAVAIL/1',
        'addMfc before flush': 'ok',
        flush: 'ok',
        'tables after flush': 'ok',
        done: 'ok',
        'init by another socket after done': 'ok',
      });
      const cached = run.events.find((e) => e.event === 'cache') as { rows: MfcRow[]; vifs: VifRow[] } | undefined;
      assert.deepEqual(cached?.rows, [
        {
          group: ROUTED_GROUP,
          origin: SENDER.address,
          iif: 0,
          packets: 0,
          bytes: 0,
          wrong: 0,
          oifs: [{ vif: 1, ttl: 4 }],
        },
      ]);
      assert.deepEqual(
        cached?.vifs.map((v) => v.vif),
        [0, 1],
      );
      const flushed = run.events.find((e) => e.event === 'flushed') as { rows: MfcRow[]; vifs: VifRow[] } | undefined;
      assert.deepEqual(flushed, { event: 'flushed', rows: [], vifs: [] });
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
    case 'lifecycle':
      return lifecycleRole();
    case 'sender':
      return senderRole();
    default:
      throw new Error(`unknown role ${role}`);
  }
}

// A child runs its role and nothing else: registering tests would make it a test run.
const role = process.env.MCL_MROUTE_ROLE;
if (role !== undefined) await runChild(role);
else kernelTests();
