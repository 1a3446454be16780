/**
 * Acceptance of `mcastctl daemon` for IPv6 multicast across nodes: the two-node lab
 * dual-stack (real OVS per node, real kernels routing IPv6 multicast between the gateway
 * and the uplink with the daemon's MIFs and MFC6 entries, an underlay Linux bridge with
 * MLD snooping and an MLDv2 querier, an external host), joins through real sockets, real
 * IPv6 UDP multicast, the built CLI.
 *
 * Delivery is proved as in daemon.test.ts: every numbered datagram at the members'
 * sockets, and nothing on a non-member's eth0 (tcpdump). The routes are read from the
 * daemons' logs, and the upstream memberships from the underlay bridge's snooping table
 * and the node's /proc/net/igmp6.
 *
 * Needs root, iproute2, ethtool, tcpdump, python3, Open vSwitch and the built CLI
 * (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { routedUplinks, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { isData, ping6, readPcap6, waitForOvsMembers6 } from '../lab/ipv6-checks.js';
import { Lab, primeRoutedFlow, sleep, waitUntil } from '../lab/lab.js';
import { buildMulticastLab, type MulticastLab, waitForUnderlayMember } from '../lab/multicast-lab.js';
import { missingSequences, sequences, type OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];

/** The groups interface `iface` of `node` is a member of, from /proc/net/igmp6 (32 hex digits each). */
async function igmp6Groups(node: OvsNode, iface: string): Promise<string[]> {
  const { stdout } = await node.exec(['cat', '/proc/net/igmp6']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1] === iface && fields[2] !== undefined)
    .map((fields) => fields[2]!);
}

/** The eight 4-digit words of an IPv6 address (no "::"), as /proc/net prints them. */
function words16(address: string): string[] {
  const halves = address.split('::');
  const words = (text: string | undefined) => (text === undefined || text === '' ? [] : text.split(':'));
  const head = words(halves[0]);
  const tail = words(halves[1]);
  return [...head, ...Array.from({ length: 8 - head.length - tail.length }, () => '0'), ...tail].map((word) =>
    word.padStart(4, '0'),
  );
}

/** `group` as /proc/net/igmp6 prints it: 32 hex digits. */
const hex32 = (group: string) => words16(group).join('');
/** An address as /proc/net/ip6_mr_cache prints it: every word in full. */
const expanded6 = (address: string) => words16(address).join(':');

describe('mcastctl daemon: IPv6 multicast across nodes and to the outside', { concurrency: 1 }, () => {
  let lab: Lab;
  let ml: MulticastLab;
  let daemonA: RunningDaemon;
  let daemonB: RunningDaemon;
  const receivers: Receiver[] = [];

  before(async () => {
    lab = Lab.create();
    ml = await buildMulticastLab(lab, { podsPerNode: 2, external: true, ipv6: true });
    const [a, b] = ml.nodes;
    daemonA = startDaemon(a.node, { multicastInterfaces: routedUplinks(a.node), args: SHORT_TIMERS });
    daemonB = startDaemon(b.node, { multicastInterfaces: routedUplinks(b.node), args: SHORT_TIMERS });
    await Promise.all([daemonA, daemonB].map((daemon) => daemon.ready()));
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = [daemonA, daemonB].flatMap(
      (daemon) => daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [],
    );
    if (errors.length > 0) console.log('daemon errors (IPv6 routed lab):', errors);
    await lab?.destroy();
  });

  /** A receiver stopped in after() even when a test fails half-way. */
  async function listen(pod: Pick<OvsPod, 'listen'>, group: string, port: number): Promise<Receiver> {
    const receiver = await pod.listen(group, port);
    receivers.push(receiver);
    return receiver;
  }

  it('routing is on for both families: the daemons give the gateway and the uplink a MIF as well as a VIF', async () => {
    for (const [daemon, node] of [
      [daemonA, ml.nodes[0]],
      [daemonB, ml.nodes[1]],
    ] as const) {
      const on = daemon.entries().filter((entry) => entry['msg'] === 'multicast routing on');
      assert.deepEqual(on.map((entry) => entry['family']).sort(), ['ipv4', 'ipv6']);
      const mifs = (await node.node.exec(['cat', '/proc/net/ip6_mr_vif'])).stdout;
      for (const name of ['gw0', node.uplink.name])
        assert.match(mifs, new RegExp(`\\s${name}\\s`), `${name} has a MIF on ${node.node.name}`);
    }
  });

  it('across nodes: a pod on node a sends to an IPv6 group, the member on node b gets every datagram, the non-member none', async () => {
    const [a, b] = ml.nodes;
    const [sender, otherA] = a.pods as [OvsPod, OvsPod];
    const [member, other] = b.pods as [OvsPod, OvsPod];
    const group = 'ff15::6:2:1';
    const port = 5202;
    const captures = await Promise.all(
      [other, otherA].map((pod) =>
        lab.startTcpdump(pod.ns, pod.iface, lab.file(`r2-${pod.name}.pcap`), { filter: ['ip6', 'and', 'udp'] }),
      ),
    );
    const receiver = await listen(member, group, port);
    await waitForOvsMembers6(b.node, group, [member], [other]);
    // Node b joined upstream: its kernel reports the group on the uplink (MLDv2) and the underlay snoops it.
    await waitUntil(
      `node b's uplink to hold ${group}`,
      async () => (await igmp6Groups(b.node, b.uplink.name)).includes(hex32(group)),
      5000,
      100,
    );
    await waitForUnderlayMember(ml, lab, group, b.uplink.peer);
    await primeRoutedFlow(
      `of ${group} to ${member.name}`,
      (tag) => sender.send(group, port, 1, { ttl: 8, tag }),
      receiver,
    );
    await sender.send(group, port, 50, { intervalMs: 10, ttl: 8, tag: 'r2' });
    await sleep(300);
    const got = await receiver.stop();
    await Promise.all(captures.map((capture) => capture.stop()));
    assert.deepEqual(missingSequences(sequences(got, 'r2'), 50), [], `${member.name} on node b missed datagrams`);
    assert.ok(
      got.every((datagram) => datagram.from === sender.address6),
      'datagrams come from the sender on node a',
    );
    for (const [pod, capture] of [
      [other, captures[0]!],
      [otherA, captures[1]!],
    ] as const) {
      const leaked = readPcap6(capture.file).filter((packet) => isData(packet, group, port));
      assert.equal(leaked.length, 0, `${leaked.length} datagrams of ${group} reached the non-member ${pod.name}`);
    }
    // Routed by the kernels: out of node a (gw0 → uplink), into node b (uplink → gw0).
    const routeA = await daemonA.waitForLog(
      (e) => e['msg'] === 'route added' && e['group'] === group && e['iif'] === 'gw0',
      2000,
    );
    assert.deepEqual(routeA['oifs'], [a.uplink.name]);
    assert.equal(routeA['source'], sender.address6);
    const routeB = await daemonB.waitForLog(
      (e) =>
        (e['msg'] === 'route added' || e['msg'] === 'route updated') &&
        e['group'] === group &&
        e['iif'] === b.uplink.name,
      2000,
    );
    assert.ok((routeB['oifs'] as string[]).includes('gw0'));
    const mfc = (await b.node.exec(['cat', '/proc/net/ip6_mr_cache'])).stdout;
    assert.ok(
      mfc.includes(expanded6(group)) && mfc.includes(expanded6(sender.address6!)),
      `node b's ip6_mr_cache holds (${sender.address6}, ${group}):\n${mfc}`,
    );
  });

  it('the external host to a pod (routed in) and a pod to the external host (routed out), over IPv6', async () => {
    const [a, b] = ml.nodes;
    const ext = ml.external!;
    const inGroup = 'ff15::6:3:1';
    const outGroup = 'ff15::6:3:2';
    const port = 5203;

    const member = b.pods[1]!;
    const inbound = await listen(member, inGroup, port);
    await waitForOvsMembers6(b.node, inGroup, [member]);
    await waitForUnderlayMember(ml, lab, inGroup, b.uplink.peer);
    await primeRoutedFlow(
      `of ${inGroup} to ${member.name}`,
      (tag) => ext.send(inGroup, port, 1, { ttl: 8, tag }),
      inbound,
    );
    await ext.send(inGroup, port, 40, { intervalMs: 10, ttl: 8, tag: 'in6' });

    const outbound = await listen(ext, outGroup, port);
    await waitForUnderlayMember(ml, lab, outGroup, ext.port);
    await primeRoutedFlow(
      `of ${outGroup} to the external host`,
      (tag) => a.pods[0]!.send(outGroup, port, 1, { ttl: 8, tag }),
      outbound,
    );
    await a.pods[0]!.send(outGroup, port, 40, { intervalMs: 10, ttl: 8, tag: 'out6' });
    await sleep(300);
    const [gotIn, gotOut] = await Promise.all([inbound.stop(), outbound.stop()]);
    assert.deepEqual(
      missingSequences(sequences(gotIn, 'in6'), 40),
      [],
      `${member.name} missed datagrams from the external host`,
    );
    assert.ok(gotIn.every((datagram) => datagram.from === ext.address6));
    assert.deepEqual(
      missingSequences(sequences(gotOut, 'out6'), 40),
      [],
      'the external host missed datagrams from pod a1',
    );
    assert.ok(gotOut.every((datagram) => datagram.from === a.pods[0]!.address6));
  });

  it('a dual-stack pod on node b in an IPv4 and an IPv6 group gets both from node a; ping -6 crosses the nodes', async () => {
    const [a, b] = ml.nodes;
    const sender = a.pods[1]!;
    const member = b.pods[0]!;
    const group4 = '239.6.4.1';
    const group6 = 'ff15::6:4:1';
    const port = 5204;
    const [r4, r6] = [await listen(member, group4, port), await listen(member, group6, port)];
    await waitForOvsMembers6(b.node, group6, [member]);
    await waitForUnderlayMember(ml, lab, group6, b.uplink.peer);
    await waitForUnderlayMember(ml, lab, group4, b.uplink.peer);
    for (const [group, receiver] of [
      [group4, r4],
      [group6, r6],
    ] as const) {
      await primeRoutedFlow(
        `of ${group} to ${member.name}`,
        (tag) => sender.send(group, port, 1, { ttl: 8, tag }),
        receiver,
      );
    }
    await Promise.all([
      sender.send(group4, port, 30, { intervalMs: 10, ttl: 8, tag: 'd4' }),
      sender.send(group6, port, 30, { intervalMs: 10, ttl: 8, tag: 'd6' }),
    ]);
    await sleep(300);
    const [got4, got6] = await Promise.all([r4.stop(), r6.stop()]);
    assert.deepEqual(missingSequences(sequences(got4, 'd4'), 30), [], 'the IPv4 group');
    assert.deepEqual(missingSequences(sequences(got6, 'd6'), 30), [], 'the IPv6 group');
    assert.equal(await ping6(lab, sender, member.address6!), '3/3');
    assert.equal(await ping6(lab, member, ml.external!.address6!), '3/3');
  });

  it("the underlay's MLDv2 queries are answered for the node: node b's membership outlives the membership interval", async () => {
    const [, b] = ml.nodes;
    const member = b.pods[1]!;
    const group = 'ff15::6:5:1';
    await listen(member, group, 5205);
    await waitForUnderlayMember(ml, lab, group, b.uplink.peer);
    // The underlay forgets a member after 5 s without a report; its queries come every 2 s.
    await sleep(7000);
    await waitForUnderlayMember(ml, lab, group, b.uplink.peer, 100);
  });
});
