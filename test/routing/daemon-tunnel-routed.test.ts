/**
 * Acceptance of `mcastctl daemon` with tunnel mode and underlay routing both on, on the
 * three-node tunnel lab (test/lab/tunnel-lab.ts); tunnel mode over VXLAN is in
 * test/e2e/daemon-tunnel-vxlan.test.ts.
 *
 * The underlay carries multicast (counted, let through) and has an outside host; each
 * daemon has tunnel mode and `--gateway gw0 --multicast-interfaces br-phy --cluster-cidrs
 * 10.20.0.0/16`. A pod's datagram then reaches the other nodes twice: through the tunnel,
 * and routed by its node's kernel onto the underlay. The second copy must stop at the
 * receiving kernel (an (S,G) route without outgoing VIFs), and what the outside host sends
 * must reach each node's members once, from its own uplink, never through the tunnel.
 * Tunnel mode with multicast interfaces and no cluster CIDRs is refused at the start.
 *
 * Delivery is proved at the members' sockets (every numbered datagram, exactly once),
 * the non-members' sockets, the kernels' (S,G) entries (/proc, as `mcastctl routes` reads
 * them) and tcpdump on the wire (the underlay end of each node's uplink, the inner IPv4
 * destination decoded by tshark).
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3, Open vSwitch and the built
 * CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { errorEntries, startDaemon, type ExitStatus, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import type { OvsNode, OvsPod, Receiver } from '../lab/ovs.js';
import { ovsGroupPorts } from '../lab/switch-checks.js';
import { tsharkFrameCount } from '../lab/tshark.js';
import {
  buildTunnelLab,
  captureTunnelFrames,
  deliveryFaults,
  encapsulatedFor,
  TUNNEL_LAB,
  tunnelDaemonArgs,
  waitForTunnelDestinations,
  type TunnelLab,
  type TunnelLabNode,
} from '../lab/tunnel-lab.js';
import { parseMfcCache, parseVifTable, type MfcRow } from '../../src/protocol/mroute/proc.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const [, A2] = TUNNEL_LAB.underlayAddresses;
/** One block that holds every node's pod subnet. */
const CLUSTER_CIDRS = '10.20.0.0/16';
/** Hops enough for a node's kernel to route a datagram (the senders' default, 1, is not). */
const ROUTED_TTL = 8;
const ms = (value: number) => `${Math.round(value)} ms`;

/** Asserts that `receiver` got datagrams 0..count-1 of `tag`, each exactly once. */
function assertExactlyOnce(receiver: Receiver, tag: string, count: number, who: string): void {
  assert.deepEqual(
    deliveryFaults(receiver.received, tag, count),
    { lost: [], duplicated: [] },
    `${who}: datagrams of ${tag} lost or duplicated`,
  );
}

/** Waits until node's OVS forwards `group` to `pod`'s port. */
async function waitForLocalMember(pod: OvsPod, group: string): Promise<void> {
  await waitUntil(`OVS of ${pod.node.name} to forward ${group} to ${pod.name}`, async () =>
    ((await ovsGroupPorts(pod.node, group)) ?? []).includes(pod.ofport),
  );
}

/** The VIF number of interface `name` in node's kernel. */
async function vifOf(node: OvsNode, name: string): Promise<number> {
  const vif = parseVifTable((await node.exec(['cat', '/proc/net/ip_mr_vif'])).stdout).find((row) => row.name === name);
  assert.ok(vif, `${node.name}'s kernel has no VIF for ${name}`);
  return vif.vif;
}

/** Waits for node's kernel (S,G) entry of `source` and `group` whose incoming VIF is `iif`; resolves with it. */
function waitForMfc(node: OvsNode, source: string, group: string, iif: number): Promise<MfcRow> {
  return waitUntil(
    `${node.name}'s kernel route (${source}, ${group}) in from VIF ${iif}`,
    async () =>
      parseMfcCache((await node.exec(['cat', '/proc/net/ip_mr_cache'])).stdout).find(
        (row) => row.group === group && row.origin === source && row.iif === iif,
      ),
    3000,
    50,
  );
}

describe('mcastctl daemon: tunnel mode with underlay routing (three nodes, an underlay that carries multicast, an outside host)', {
  concurrency: 1,
}, () => {
  const GROUP = '239.61.1.1';
  const port = 5301;
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;
  const daemons: RunningDaemon[] = [];
  /** The attempt without --cluster-cidrs on node 3 (made before node 3's daemon starts) and what it left. */
  let refused:
    | {
        status: ExitStatus;
        stderr: string;
        tookMs: number;
        switchBefore: unknown;
        switchAfter: unknown;
        vifsAfter: number;
      }
    | undefined;
  let atNode1: Receiver | undefined;
  let atNode2: Receiver | undefined;

  const startRoutedDaemon = (n: TunnelLabNode, extra: readonly string[]): RunningDaemon =>
    startDaemon(n.node, {
      gateway: n.gateway.name,
      multicastInterfaces: [TUNNEL_LAB.physBridge],
      args: [...tunnelDaemonArgs(n), ...extra],
    });

  before(async () => {
    const help = await mcastctl(['daemon', '--help']);
    if (!help.stdout.includes('--cluster-cidrs'))
      throw new Error('this mcastctl daemon has no --cluster-cidrs: build it first');
    lab = Lab.create();
    const started = Date.now();
    tl = await buildTunnelLab(lab, { underlayMulticast: true, outsideHost: true });
    [n1, n2, n3] = tl.nodes;
    const switchBefore = await n3.node.switchState();
    const attemptAt = Date.now();
    const attempt = startDaemon(n3.node, {
      gateway: n3.gateway.name,
      multicastInterfaces: [TUNNEL_LAB.physBridge],
      args: tunnelDaemonArgs(n3),
      stateDir: lab.file('refused-n3/state'),
      controlSocket: lab.file('refused-n3/ctl.sock'),
    });
    const status = await Promise.race([attempt.exited, sleep(10_000).then(() => undefined)]);
    if (status === undefined) await attempt.kill9();
    const vifLines = (await n3.node.exec(['cat', '/proc/net/ip_mr_vif'])).stdout.trim().split('\n').slice(1);
    refused = {
      status: status ?? { code: null, signal: 'SIGKILL' },
      stderr: attempt.logs().join('\n'),
      tookMs: Date.now() - attemptAt,
      switchBefore,
      switchAfter: await n3.node.switchState(),
      vifsAfter: vifLines.length,
    };
    const clusterArgs = ['--cluster-cidrs', CLUSTER_CIDRS];
    daemons.push(...tl.nodes.map((n) => startRoutedDaemon(n, clusterArgs)));
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    console.log(`routed tunnel lab, one refused start and three daemons up in ${ms(Date.now() - started)}`);
  });

  after(async () => {
    await Promise.all([atNode1, atNode2].map((receiver) => receiver?.stop()));
    const errors = errorEntries(daemons);
    if (errors.length > 0) console.log('daemon errors (routed tunnel lab):', errors);
    await lab?.destroy();
  });

  it('tunnel mode with --multicast-interfaces and no --cluster-cidrs: exit 64 naming --cluster-cidrs, nothing left on the bridge or in the kernel', () => {
    assert.ok(refused, 'the attempt did not run');
    console.log(`start without --cluster-cidrs refused in ${ms(refused.tookMs)}`);
    assert.deepEqual(refused.status, { code: 64, signal: null }, `exit status; log:\n${refused.stderr}`);
    assert.ok(refused.stderr.includes('--cluster-cidrs'), `the refusal names --cluster-cidrs: ${refused.stderr}`);
    assert.deepEqual(
      refused.switchAfter,
      refused.switchBefore,
      "node 3's br-int flows and groups changed by the attempt",
    );
    assert.equal(refused.vifsAfter, 0, "node 3's kernel has VIFs left by the attempt");
  });

  it('a pod on node 1 sends: members on nodes 1 and 2 get each datagram once, though a routed copy crossed the underlay, which node 2 drops', async () => {
    const [sender, member1] = n1.pods as [OvsPod, OvsPod];
    const [member2] = n2.pods as [OvsPod];
    atNode1 = await member1.listen(GROUP, port);
    atNode2 = await member2.listen(GROUP, port);
    await waitForLocalMember(member1, GROUP);
    await waitForLocalMember(member2, GROUP);
    await waitForTunnelDestinations(n1.node, GROUP, [A2!]);

    // One datagram first, and node 1's route of it: the count below is of routed copies, not
    // of the kernel's queue for an unresolved route (a few packets), which a slow machine
    // overruns before the daemon has answered the first upcall.
    await sender.send(GROUP, port, 1, { ttl: ROUTED_TTL, tag: 'r0' });
    const out = await waitForMfc(n1.node, sender.address, GROUP, await vifOf(n1.node, n1.gateway.name));
    const countedBefore = await tl.multicastDropped();
    const count = 50;
    await sender.send(GROUP, port, count, { intervalMs: 5, ttl: ROUTED_TTL, tag: 'r1' });
    await sleep(300);
    const crossed = (await tl.multicastDropped()) - countedBefore;
    console.log(`a pod's ${count} datagrams: the underlay counted ${crossed} multicast packets`);

    assertExactlyOnce(atNode1, 'r1', count, `${member1.name} on node 1`);
    assertExactlyOnce(atNode2, 'r1', count, `${member2.name} on node 2`);
    assert.ok(
      crossed >= count,
      `the underlay counted ${crossed} multicast packets: node 1's kernel did not route the ${count} datagrams out`,
    );
    // The second path: node 1's kernel routes gw0 → br-phy.
    const phy1 = await vifOf(n1.node, TUNNEL_LAB.physBridge);
    assert.ok(
      out.oifs.some((oif) => oif.vif === phy1),
      `node 1 routes ${GROUP} out of br-phy (VIF ${phy1}): ${JSON.stringify(out)}`,
    );
    // And its end: node 2's kernel has the copy in from br-phy, to no VIF (a pod source: the tunnel brought it).
    const phy2 = await vifOf(n2.node, TUNNEL_LAB.physBridge);
    const arrived = await waitForMfc(n2.node, sender.address, GROUP, phy2);
    console.log(`node 2's kernel: (${sender.address}, ${GROUP}) in from br-phy, ${arrived.packets} packets, to no VIF`);
    assert.deepEqual(
      arrived.oifs,
      [],
      `node 2's route of (${sender.address}, ${GROUP}) in from br-phy has outgoing VIFs`,
    );
    // The first few copies wait unresolved for the daemon, and more than the kernel's queue holds may be dropped: some,
    // not all, are counted.
    assert.ok(arrived.packets > 0, `node 2's route counted none of the ${count} routed copies`);
  });

  it('the outside host sends: the members on nodes 1 and 2 get each datagram once from their own uplinks, and nothing goes through the tunnel', async () => {
    assert.ok(atNode1 && atNode2, 'the previous test left no members');
    const outside = tl.outside!;
    // One datagram first: each kernel's route exists before the counted ones (an unresolved (S,G) queues only a few).
    await outside.send(GROUP, port, 1, { ttl: ROUTED_TTL, tag: 'warm' });
    const fromGateway = async (n: TunnelLabNode) => {
      const route = await waitForMfc(n.node, outside.address, GROUP, await vifOf(n.node, TUNNEL_LAB.physBridge));
      const gw = await vifOf(n.node, n.gateway.name);
      assert.ok(
        route.oifs.some((oif) => oif.vif === gw),
        `${n.node.name} routes the outside host's ${GROUP} to gw0 (VIF ${gw}): ${JSON.stringify(route)}`,
      );
    };
    await Promise.all([fromGateway(n1), fromGateway(n2)]);

    const wire = await captureTunnelFrames(lab, tl, [n1, n2, n3], 'r2');
    const count = 50;
    await outside.send(GROUP, port, count, { intervalMs: 5, ttl: ROUTED_TTL, tag: 'r2' });
    await sleep(300);
    await Promise.all(wire.map((capture) => capture.stop()));
    assertExactlyOnce(atNode1, 'r2', count, 'the member on node 1');
    assertExactlyOnce(atNode2, 'r2', count, 'the member on node 2');
    assert.ok(
      atNode2.received
        .filter((datagram) => datagram.payload.startsWith('r2 '))
        .every((datagram) => datagram.from === outside.address),
      'the datagrams come from the outside host',
    );
    const tunnelled = await Promise.all(
      [n1, n2, n3].map((n, index) => tsharkFrameCount(wire[index]!.file, encapsulatedFor(tl, GROUP, n))),
    );
    assert.deepEqual(
      tunnelled,
      [0, 0, 0],
      `${tl.tunnelType} frames for ${GROUP} toward nodes 1, 2, 3 while the outside host sent`,
    );
  });
});
