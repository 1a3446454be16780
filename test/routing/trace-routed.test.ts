/**
 * `mcastctl trace` on a node that routes: node a of the two-node multicast lab, its daemon
 * with the uplink as a multicast interface, the external host on the underlay a real
 * sender from outside. Two healthy cases pass every stage, and the member really gets the
 * UDP: the external host through the underlay (--from-address), whose (S,G) route in the
 * kernel the outside stage must show, and a sender pod on the node (--from), whose traffic
 * the node also routes off it (in on the gateway, out on the uplink), as the sender stage
 * must show. The cases of a node that routes nothing are in test/e2e/trace.test.ts.
 *
 * Needs root, iproute2, ethtool, python3, Open vSwitch, the built CLI and kernel multicast
 * routing. Run: scripts/test.sh routing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { errorEntries, routedUplinks, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { requireMulticastRouting } from '../lab/kernel.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import {
  buildMulticastLab,
  type ExternalHost,
  MULTICAST_LAB,
  type MulticastLab,
  type MulticastLabNode,
  waitForUnderlayMember,
} from '../lab/multicast-lab.js';
import type { OvsPod, Receiver } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import { assertPodPortStage, podName, stageOf, traceOn, type TraceRun } from '../lab/trace-checks.js';
import { parseMfcCache } from '../../src/protocol/mroute/proc.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the trace tests run the built CLI: ${missing}`);

const G = {
  local: '239.73.6.1',
  outside: '239.73.7.1',
} as const;
const PORT = 5473;
/** The daemon queries the pods every 2 s, as the underlay's querier does, so that reports show quickly. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const CASE_TIMEOUT_MS = 20_000;

describe('mcastctl trace on a node that routes: the outside stage and the route off the node', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let ml: MulticastLab;
  let nodeA: MulticastLabNode;
  let external: ExternalHost;
  /** pf: the local member, pg its sender; ph: the member of the external host's group. */
  let pf: OvsPod;
  let pg: OvsPod;
  let ph: OvsPod;
  let daemon: RunningDaemon;
  let trace: TraceRun;
  const receivers: Receiver[] = [];

  const listen = async (pod: OvsPod, group: string): Promise<Receiver> => {
    const receiver = await pod.listen(group, PORT);
    receivers.push(receiver);
    return receiver;
  };

  before(async () => {
    lab = Lab.create();
    ml = await buildMulticastLab(lab, { podsPerNode: 0 });
    nodeA = ml.nodes[0];
    external = ml.external!;
    const subnet = MULTICAST_LAB.podSubnets[0].split('.').slice(0, 3).join('.');
    [pf, pg, ph] = (await Promise.all(
      ['pf', 'pg', 'ph'].map((name, index) =>
        nodeA.node.addPod(name, {
          address: `${subnet}.${MULTICAST_LAB.firstPodHost + index}/24`,
          gateway: nodeA.gateway.address,
        }),
      ),
    )) as [OvsPod, OvsPod, OvsPod];
    daemon = startDaemon(nodeA.node, { multicastInterfaces: routedUplinks(nodeA.node), args: SHORT_TIMERS });
    await daemon.ready();
    trace = traceOn(nodeA.node, daemon);
    await Promise.all([listen(pf, G.local), listen(ph, G.outside)]);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = errorEntries([daemon]);
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  it('a sender pod on the node (--from): delivered, and the sender stage shows its route off the node', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitForOvsMembers(nodeA.node, G.local, [pf]);
    // The kernel holds at most 4 packets of an (S,G) it has no entry for while the daemon adds
    // it (a slow machine loses the rest, uncounted): the route is made first, by a datagram
    // not counted, and the counter is read before the 10 that are.
    const routeOut = async () =>
      parseMfcCache((await nodeA.node.exec(['cat', '/proc/net/ip_mr_cache'])).stdout).find(
        (row) => row.group === G.local && row.origin === pg.address,
      );
    await waitUntil('the kernel route of pg to the group', async () => {
      await pg.send(G.local, PORT, 1, { tag: 'prime' });
      await sleep(100);
      return routeOut();
    });
    const before = (await routeOut())!.packets;
    const receiver = receivers.find((entry) => entry.group === G.local)!;
    await pg.send(G.local, PORT, 10, { tag: 'local' });
    await waitUntil(
      'pf to receive 10 datagrams from pg',
      async () => receiver.received.filter((datagram) => datagram.payload.startsWith('local ')).length === 10,
      3000,
    );
    const result = await trace(G.local, pf, ['--from', podName(pg)]);
    const { report } = result;
    assert.equal(result.code, 0, result.context);
    assert.equal(report.verdict, 'delivered', result.context);
    assertPodPortStage(report, pf);
    const sender = stageOf(report, 'sender').facts as {
      sendAllowed: boolean;
      route: { iif: string; oifs: string[]; packets: number } | null;
    };
    assert.equal(sender.sendAllowed, true, result.context);
    // The node routes the pod's traffic off it too: in on the gateway, out on the uplink.
    assert.ok(sender.route !== null, result.context);
    assert.equal(sender.route.iif, nodeA.gateway.name, result.context);
    assert.ok(sender.route.oifs.includes(nodeA.uplink.name), result.context);
    assert.ok(sender.route.packets - before >= 10, `${before} packets before the 10; ${result.context}`);
  });

  it('healthy, the external host through the underlay (--from-address): every stage passes, the (S,G) route carries it', {
    timeout: 30_000,
  }, async () => {
    await waitForOvsMembers(nodeA.node, G.outside, [ph]);
    await waitForUnderlayMember(ml, lab, G.outside, nodeA.uplink.peer);
    const receiver = receivers.find((entry) => entry.group === G.outside)!;
    // The underlay may still flood or hold back for a moment after the join: send until datagrams come through.
    let round = 0;
    await waitUntil(
      'the external host to reach ph',
      async () => {
        round += 1;
        await external.send(G.outside, PORT, 5, { ttl: 8, intervalMs: 10, tag: `ext${round}` });
        await sleep(200);
        return receiver.received.some((datagram) => datagram.payload.startsWith(`ext${round} `));
      },
      10_000,
      0,
    );
    await external.send(G.outside, PORT, 10, { ttl: 8, intervalMs: 10, tag: 'outside' });
    await sleep(300);
    assert.equal(
      receiver.received.filter((datagram) => datagram.payload.startsWith('outside ')).length,
      10,
      'ph got the 10 datagrams of the external host',
    );
    assert.ok(receiver.received.every((datagram) => datagram.from === external.address));

    const result = await trace(G.outside, ph, ['--from-address', external.address]);
    const { report } = result;
    assert.equal(result.code, 0, result.context);
    assert.equal(report.verdict, 'delivered', result.context);
    assert.equal(report.blockedAt, null, result.context);
    assert.equal(report.source, external.address, result.context);
    assert.deepEqual(
      report.sender,
      {
        kind: 'outside',
        address: external.address,
        via: 'gateway',
        port: { ofport: nodeA.gateway.ofport, name: nodeA.gateway.name },
      },
      result.context,
    );
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [5, 'outside', 'pass'],
      ],
      result.context,
    );
    assertPodPortStage(report, ph);
    assert.equal(stageOf(report, 'membership').facts['member'], true, result.context);
    const ovs = stageOf(report, 'ovs').facts;
    assert.equal(ovs['bucket'], true, result.context);
    const ovsTrace = ovs['trace'] as { inPort: number; outputs: number[]; reachesPod: boolean };
    assert.equal(ovsTrace.inPort, nodeA.gateway.ofport, result.context);
    assert.ok(ovsTrace.outputs.includes(ph.ofport), result.context);
    assert.equal(ovsTrace.reachesPod, true, result.context);
    const outside = stageOf(report, 'outside').facts as {
      routerActive: boolean;
      vifs: string[];
      upstreamJoins: Array<{ interface: string; joined: boolean }>;
      route: { iif: string; oifs: string[]; packets: number; bytes: number } | null;
    };
    assert.equal(outside.routerActive, true, result.context);
    assert.ok(outside.vifs.includes(nodeA.uplink.name) && outside.vifs.includes(nodeA.gateway.name), result.context);
    assert.deepEqual(outside.upstreamJoins, [{ interface: nodeA.uplink.name, joined: true }], result.context);
    assert.ok(outside.route !== null, result.context);
    assert.equal(outside.route.iif, nodeA.uplink.name, result.context);
    assert.ok(outside.route.oifs.includes(nodeA.gateway.name), result.context);
    assert.ok(outside.route.packets >= 10, `route packets; ${result.context}`);
    assert.ok(outside.route.bytes > 0, result.context);
  });
});
