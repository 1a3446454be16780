/**
 * Smoke test of the three-node tunnel lab (test/lab/tunnel-lab.ts), without the daemon:
 * br-int is programmed by hand with ovs-ofctl (OpenFlow 1.3), to prove the facts tunnel
 * mode rests on before any daemon code does:
 * - the underlay carries unicast between the nodes' br-phy addresses, and no IPv4
 *   multicast at all (its nftables rule drops and counts it);
 * - an ALL group whose bucket is `set_field:<peer>->tun_dst,output:tun0` carries a pod's
 *   multicast to that peer only, and one group can hold a bucket per peer;
 * - the encapsulation costs 50 octets: with 1,500 everywhere the largest datagram that
 *   crosses is 1,422 octets; a pod MTU of 1,450 leaves room for what the pod sends, and
 *   so does an underlay MTU of 1,600 for pods at 1,500.
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3 and Open vSwitch. No dist/ needed.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { Lab, sleep } from '../lab/lab.js';
import { ping } from '../lab/multicast-lab.js';
import type { Datagram, OvsPod } from '../lab/ovs.js';
import { tsharkFrameCount } from '../lab/tshark.js';
import {
  buildTunnelLab,
  sendSized,
  setPodMtu,
  setUnderlayMtu,
  TUNNEL_LAB,
  type TunnelLab,
  type TunnelLabNode,
} from '../lab/tunnel-lab.js';

const GROUP = '239.1.2.3';
/** Sent on the underlay itself, to prove it drops multicast. */
const UNDERLAY_PROBE_GROUP = '239.255.0.1';
const GROUP_ID = 1;
const FLOW_PRIORITY = 100;

/** Payloads of `datagrams` as `<from> <payload>`. */
const lines = (datagrams: readonly Datagram[]) => datagrams.map((d) => `${d.from} ${d.payload}`);
/** The same, without the padding of sized datagrams (`<tag> <i> xxx...`). */
const sizedLines = (datagrams: readonly Datagram[]) =>
  datagrams.map((d) => `${d.from} ${d.payload.split(' ', 2).join(' ')}`);
const expected = (from: string, tag: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${from} ${tag} ${i}`);

describe('tunnel lab (three OVS nodes, flow-based Geneve on br-int, an underlay without multicast)', () => {
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;

  /**
   * Replaces br-int's flows and groups on every node: on n1, the first pod's traffic to
   * GROUP goes to one ALL group with a tunnel bucket per node of `peers`; on n2 and n3,
   * GROUP from the tunnel goes to the first pod (so a node that got anything would deliver it).
   */
  const program = async (peers: readonly TunnelLabNode[]) => {
    for (const n of tl.nodes) {
      await n.node.ofctl('del-flows', n.node.bridge);
      await n.node.ofctl('del-groups', n.node.bridge);
    }
    const tun = n1.tunnel.ofport;
    const buckets = peers.map((peer) => `bucket=actions=set_field:${peer.underlayAddress}->tun_dst,output:${tun}`);
    await n1.node.ofctl('add-group', n1.node.bridge, [`group_id=${GROUP_ID}`, 'type=all', ...buckets].join(','));
    await n1.node.ofctl(
      'add-flow',
      n1.node.bridge,
      `priority=${FLOW_PRIORITY},in_port=${n1.pods[0]!.ofport},ip,nw_dst=${GROUP},actions=group:${GROUP_ID}`,
    );
    for (const n of [n2, n3]) {
      await n.node.ofctl(
        'add-flow',
        n.node.bridge,
        `priority=${FLOW_PRIORITY},in_port=${n.tunnel.ofport},ip,nw_dst=${GROUP},actions=output:${n.pods[0]!.ofport}`,
      );
    }
  };

  /** Captures the Geneve frames that reach each node of `nodes` on the wire (the underlay end of its uplink). */
  const captureGeneve = (nodes: readonly TunnelLabNode[], label: string) =>
    Promise.all(
      nodes.map((n) =>
        lab.startTcpdump(tl.underlayNs, n.uplinkPeer, lab.file(`${label}-${n.node.name}.pcap`), {
          filter: ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort)],
        }),
      ),
    );
  /** Geneve frames of a capture whose inner IPv4 destination is GROUP (the outer one is a node's unicast address). */
  const encapsulatedForGroup = (file: string) => tsharkFrameCount(file, `geneve && ip.dst == ${GROUP}`);

  before(async () => {
    lab = Lab.create();
    const started = Date.now();
    tl = await buildTunnelLab(lab);
    [n1, n2, n3] = tl.nodes;
    console.log(`tunnel lab up in ${Date.now() - started} ms`);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('has the documented addressing, a flow-based Geneve port and names within the lab prefix', async () => {
    assert.deepEqual(
      tl.nodes.map((n) => [n.underlayAddress, n.gateway.address, n.tunnel.name, n.pods.map((p) => p.address)]),
      [
        ['192.168.60.11', '10.20.1.1', 'tun0', ['10.20.1.11', '10.20.1.12']],
        ['192.168.60.12', '10.20.2.1', 'tun0', ['10.20.2.11', '10.20.2.12']],
        ['192.168.60.13', '10.20.3.1', 'tun0', ['10.20.3.11', '10.20.3.12']],
      ],
    );
    for (const n of tl.nodes) {
      assert.match((await n.node.vsctl('get', 'interface', 'tun0', 'type')).trim(), /^"?geneve"?$/);
      assert.match((await n.node.vsctl('get', 'interface', 'tun0', 'options')).trim(), /^\{remote_ip=flow\}$/);
      assert.match(
        (await n.node.vsctl('get', 'bridge', TUNNEL_LAB.physBridge, 'datapath_type')).trim(),
        /^"?netdev"?$/,
      );
      const { stdout } = await lab.ip(n.node.ns, '-j', 'addr', 'show', TUNNEL_LAB.physBridge);
      assert.ok(stdout.includes(`"local":"${n.underlayAddress}"`), stdout);
      for (const name of [n.uplink, n.uplinkPeer, ...n.pods.map((p) => p.port)])
        assert.ok(name.startsWith(lab.prefix) && name.length <= 15, name);
    }
  });

  it('routes unicast between the br-phy addresses, and the underlay drops and counts every IPv4 multicast packet', async () => {
    await Promise.all([
      ping(lab, n1.node.ns, n2.underlayAddress),
      ping(lab, n1.node.ns, n3.underlayAddress),
      ping(lab, n2.node.ns, n3.underlayAddress),
    ]);
    const port = 5101;
    const leaving = await lab.startTcpdump(tl.underlayNs, n1.uplinkPeer, lab.file('probe-n1.pcap'), {
      filter: ['udp', 'and', 'dst', 'host', UNDERLAY_PROBE_GROUP],
    });
    const receivers = await Promise.all(
      [n2, n3].map((n) => n.node.udp(n.underlayAddress).listen(UNDERLAY_PROBE_GROUP, port)),
    );
    // The receivers' own IGMP reports are multicast too: let them be dropped before the count starts.
    await sleep(300);
    const droppedBefore = await tl.multicastDropped();
    await n1.node.udp(n1.underlayAddress).send(UNDERLAY_PROBE_GROUP, port, 3, { tag: 'underlay' });
    await sleep(300);
    const droppedAfter = await tl.multicastDropped();
    const heard = await Promise.all(receivers.map((r) => r.stop()));
    await leaving.stop();
    assert.equal(await tsharkFrameCount(leaving.file, 'udp'), 3, 'the probes left node 1 onto the underlay');
    assert.ok(droppedAfter - droppedBefore >= 3, `drop counter went from ${droppedBefore} to ${droppedAfter}`);
    assert.deepEqual(heard, [[], []]);
  });

  it("carries a pod's multicast through tun0 to the one peer its ALL group's bucket names, and nowhere else", async () => {
    await program([n2]);
    const groups = await n1.node.ofctl('dump-groups', n1.node.bridge);
    assert.match(
      groups,
      new RegExp(`set_field:${n2.underlayAddress.replaceAll('.', '\\.')}->tun_dst,output:${n1.tunnel.ofport}`),
      groups,
    );
    const port = 5102;
    const captures = await captureGeneve([n2, n3], 'one-peer');
    const [member, nonMember, node3] = await Promise.all([
      n2.pods[0]!.listen(GROUP, port),
      n2.pods[1]!.listen(GROUP, port),
      n3.pods[0]!.listen(GROUP, port),
    ]);
    const sender = n1.pods[0]!;
    await sender.send(GROUP, port, 20, { tag: 'tunnel', intervalMs: 5 });
    await sleep(300);
    const [atMember, atNonMember, atNode3] = await Promise.all([member.stop(), nonMember.stop(), node3.stop()]);
    await Promise.all(captures.map((c) => c.stop()));
    assert.deepEqual(lines(atMember), expected(sender.address, 'tunnel', 20));
    assert.deepEqual(atNonMember, []);
    assert.deepEqual(atNode3, []);
    const [toNode2, toNode3] = await Promise.all(captures.map((c) => encapsulatedForGroup(c.file)));
    assert.equal(toNode2, 20, 'one Geneve frame per datagram on node 2 uplink');
    assert.equal(toNode3, 0, 'no Geneve frame for the group on node 3 uplink');
  });

  it('carries one copy to each peer of an ALL group with a tun_dst bucket per peer', async () => {
    await program([n2, n3]);
    const port = 5103;
    const captures = await captureGeneve([n2, n3], 'two-peers');
    const receivers = await Promise.all([n2, n3].map((n) => n.pods[0]!.listen(GROUP, port)));
    const sender = n1.pods[0]!;
    await sender.send(GROUP, port, 10, { tag: 'both', intervalMs: 5 });
    await sleep(300);
    const heard = await Promise.all(receivers.map((r) => r.stop()));
    await Promise.all(captures.map((c) => c.stop()));
    for (const datagrams of heard) assert.deepEqual(lines(datagrams), expected(sender.address, 'both', 10));
    assert.deepEqual(await Promise.all(captures.map((c) => encapsulatedForGroup(c.file))), [10, 10]);
  });

  it('needs 50 octets of room: at 1,500 everywhere 1,472 octets do not cross and 1,422 do; with pod MTU 1,450, 1,400 octets cross', async () => {
    await program([n2]);
    const sender = n1.pods[0]!;
    const member = n2.pods[0]!;
    const port = 5104;
    const send = (size: number, tag: string) =>
      sendSized(sender, { group: GROUP, port, count: 3, size, tag, intervalMs: 5 });
    const podsOf12: OvsPod[] = [...n1.pods, ...n2.pods];

    // 1,500 everywhere: the inner IPv4 packet may be at most 1,500 - 50 octets, i.e. a 1,422-octet datagram.
    let receiver = await member.listen(GROUP, port);
    await send(1472, 'full');
    await send(1423, 'over');
    await send(1422, 'fits');
    await sleep(200);
    let heard = await receiver.stop();
    assert.deepEqual(sizedLines(heard), expected(sender.address, 'fits', 3));
    assert.ok(heard.every((d) => d.payload.length === 1422));
    const log = readFileSync(join(n1.node.logdir, 'ovs-vswitchd.log'), 'utf8');
    assert.match(
      log,
      new RegExp(`error sending Ethernet packet on ${n1.uplink}: Message too long`),
      'ovs-vswitchd says why the large ones were dropped',
    );

    try {
      for (const pod of podsOf12) await setPodMtu(pod, 1450);
      receiver = await member.listen(GROUP, port);
      await send(1400, 'mtu1450');
      await sleep(200);
      heard = await receiver.stop();
      assert.deepEqual(sizedLines(heard), expected(sender.address, 'mtu1450', 3));
      assert.ok(heard.every((d) => d.payload.length === 1400));
    } finally {
      for (const pod of podsOf12) await setPodMtu(pod, 1500);
    }
  });

  it('with an underlay MTU of 1,600, carries 1,472-octet datagrams from pods at 1,500', async () => {
    await program([n2]);
    const sender = n1.pods[0]!;
    const port = 5105;
    try {
      await setUnderlayMtu(tl, 1600);
      const receiver = await n2.pods[0]!.listen(GROUP, port);
      await sendSized(sender, { group: GROUP, port, count: 3, size: 1472, tag: 'underlay1600', intervalMs: 5 });
      await sleep(200);
      const heard = await receiver.stop();
      assert.deepEqual(sizedLines(heard), expected(sender.address, 'underlay1600', 3));
      assert.ok(heard.every((d) => d.payload.length === 1472));
    } finally {
      await setUnderlayMtu(tl, 1500);
    }
  });
});
