/**
 * The daemon's switch side in tunnel mode against real OVS, without the daemon: on the
 * three-node tunnel lab (test/lab/tunnel-lab.ts), each node's br-int is programmed by its
 * own bridge client, wrapped around its OpenFlow connection as the daemon's wiring does:
 * - node 1's group with a local pod member and peer node 2 reaches node 2's member pod
 *   once per datagram, node 1's own member too, and node 3 (a member there too) not at all;
 * - without the peer, node 2 gets nothing more;
 * - a report sent to the peers arrives on node 2 as a packet-in from the tunnel port, with
 *   node 1's underlay address as its outer source and the inner source as sent;
 * - a new connection and client (a restarted daemon) reads the peers back, and the same
 *   sync then changes nothing.
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3 and Open vSwitch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { ovsPipeline } from '../../src/adapters/ovs/read-back.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { encodeReportFrame } from '../../src/domain/peers/report-packet.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { OpenFlowConnection } from '../../src/transport/openflow/connection.js';
import { type HostAddress, parseGroupAddress, parseHostAddress } from '../../src/wire/ip-address.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import type { Datagram } from '../lab/ovs.js';
import { buildTunnelLab, TUNNEL_LAB, type TunnelLab, type TunnelLabNode } from '../lab/tunnel-lab.js';

/** The tunnel's base flows on `node`: its port, and every other node of the lab as a peer. */
const baseTunnelOf = (node: TunnelLabNode) => ({
  ofport: node.tunnel.ofport,
  peers: TUNNEL_LAB.underlayAddresses.filter((address) => address !== node.underlayAddress),
});

const GROUP = parseGroupAddress('239.1.2.3')!;
/** DLT_EN10MB: packet-ins carry Ethernet frames. */
const ETHERNET = 1;

const lines = (datagrams: readonly Datagram[]) => datagrams.map((d) => `${d.from} ${d.payload}`);
const expected = (from: string, tag: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${from} ${tag} ${i}`);

interface NodeSwitch {
  node: TunnelLabNode;
  connection: OpenFlowConnection;
  vswitch: BridgeClient;
}

/** The node's switch as the daemon wires it: one connection, its client, read back. */
async function connect(node: TunnelLabNode): Promise<NodeSwitch> {
  const connection = await OpenFlowConnection.connect({ endpoint: node.node.openflowEndpoint });
  const vswitch = BridgeClient.wrap({
    bridge: node.node.bridge,
    openflow: connection,
    pipeline: ovsPipeline(DEFAULT_PIPELINE_CONFIG),
  });
  await vswitch.refresh();
  return { node, connection, vswitch };
}

describe('the bridge client in tunnel mode on three OVS nodes', () => {
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;
  const switches: NodeSwitch[] = [];
  let s1: NodeSwitch;
  let node2Address: HostAddress;

  const tunnelOf = (n: TunnelLabNode, peers: readonly HostAddress[]) => ({ ofport: n.tunnel.ofport, peers });
  /** Node 1's group: its second pod, its gateway, and `peers`. */
  const syncNode1 = (peers: readonly HostAddress[]) =>
    s1.vswitch.syncForwarding({
      group: GROUP,
      ports: [n1.pods[1]!.ofport, n1.gateway.ofport],
      bySource: [],
      tunnel: tunnelOf(n1, peers),
    });

  /**
   * Node 1's first pod sends `count` datagrams; what each member pod (node 1's, 2's and 3's first) and a non-member
   * heard.
   */
  const sendAndHear = async (port: number, tag: string, count: number) => {
    const receivers = await Promise.all(
      [n1.pods[1]!, n2.pods[0]!, n3.pods[0]!, n2.pods[1]!].map((pod) => pod.listen(GROUP, port)),
    );
    await n1.pods[0]!.send(GROUP, port, count, { tag, intervalMs: 5 });
    await sleep(300);
    const [atNode1, atNode2, atNode3, atNonMember] = await Promise.all(receivers.map((receiver) => receiver.stop()));
    return { atNode1: atNode1!, atNode2: atNode2!, atNode3: atNode3!, atNonMember: atNonMember! };
  };

  before(async () => {
    lab = Lab.create();
    tl = await buildTunnelLab(lab);
    [n1, n2, n3] = tl.nodes;
    node2Address = parseHostAddress(n2.underlayAddress)!;
    for (const n of tl.nodes) {
      await n.node.ofctl('del-flows', n.node.bridge);
      await n.node.ofctl('del-groups', n.node.bridge);
      switches.push(await connect(n));
    }
    s1 = switches[0]!;
    for (const s of switches) await s.vswitch.installBase(s.node.gateway.ofport, baseTunnelOf(s.node));
    // Nodes 2 and 3 have the group's member locally (their first pod) and no peer: what
    // comes in from the tunnel reaches that pod through their ingress flow.
    for (const s of switches.slice(1)) {
      const ports = [s.node.pods[0]!.ofport, s.node.gateway.ofport];
      assert.equal(
        await s.vswitch.syncForwarding({ group: GROUP, ports, bySource: [], tunnel: tunnelOf(s.node, []) }),
        'added',
      );
    }
  });

  after(async () => {
    await Promise.allSettled(switches.map((s) => s.connection.close()));
    await lab?.destroy();
  });

  it('installs the base with the catch-all drops of the tunnel and the gateway', async () => {
    const flows = await n1.node.ofctl('dump-flows', n1.node.bridge);
    assert.match(
      flows,
      new RegExp(`priority=260,ip,in_port=${n1.tunnel.ofport},nw_dst=224\\.0\\.0\\.0/4 actions=drop`),
      flows,
    );
    assert.match(
      flows,
      new RegExp(`priority=245,ip,in_port=${n1.gateway.ofport},nw_dst=224\\.0\\.0\\.0/4 actions=drop`),
      flows,
    );
  });

  it("forwards node 1's group to its local member and once to peer node 2, never to node 3", async () => {
    assert.equal(await syncNode1([node2Address]), 'added');
    const groups = await n1.node.ofctl('dump-groups', n1.node.bridge);
    assert.match(
      groups,
      new RegExp(`set_field:${n2.underlayAddress.replaceAll('.', '\\.')}->tun_dst,output:${n1.tunnel.ofport}`),
      groups,
    );
    const flows = await n1.node.ofctl('dump-flows', n1.node.bridge);
    assert.equal(
      (flows.match(/priority=270,/g) ?? []).length,
      2,
      `an ingress flow from the tunnel and one from the gateway:\n${flows}`,
    );
    // The first packet into the tunnel toward a peer is dropped while OVS resolves the
    // peer's underlay address (its own neighbour table): warm the path before counting.
    await n1.pods[0]!.send(GROUP, 5200, 3, { tag: 'warm', intervalMs: 50 });
    await sleep(300);
    const heard = await sendAndHear(5201, 'peer', 20);
    const sender = n1.pods[0]!.address;
    assert.deepEqual(lines(heard.atNode1), expected(sender, 'peer', 20));
    assert.deepEqual(lines(heard.atNode2), expected(sender, 'peer', 20), 'every datagram exactly once');
    assert.deepEqual(heard.atNode3, []);
    assert.deepEqual(heard.atNonMember, []);
  });

  it('stops sending to node 2 once the peer is gone', async () => {
    assert.equal(await syncNode1([]), 'updated');
    const heard = await sendAndHear(5202, 'nopeer', 10);
    assert.deepEqual(lines(heard.atNode1), expected(n1.pods[0]!.address, 'nopeer', 10));
    assert.deepEqual(heard.atNode2, []);
    assert.deepEqual(heard.atNode3, []);
  });

  it("delivers a report sent to the peers as a packet-in from node 2's tunnel port, with node 1 as outer and inner source", async () => {
    const s2 = switches[1]!;
    const heard: Array<{ frame: Uint8Array; ofport: number | undefined; tunnelSource: string | undefined }> = [];
    s2.vswitch.onPacketIn((frame, ofport, tunnelSource) => heard.push({ frame, ofport, tunnelSource }));
    await s2.vswitch.enablePacketIn();
    const node1Address = parseHostAddress(n1.underlayAddress)!;
    const identification = 0x4d31;
    const frame = encodeReportFrame(
      {
        report: { kind: 'report', version: 3, records: [{ type: 'MODE_IS_EXCLUDE', group: GROUP, sources: [] }] },
        source: node1Address,
        identification,
      },
      n1.gateway.mac,
    );
    assert.deepEqual(await s1.vswitch.sendToPeers(frame, n1.tunnel.ofport, [node2Address]), { sent: 1, refused: [] });
    const fromTunnel = () => heard.filter((packet) => packet.ofport === n2.tunnel.ofport);
    await waitUntil(
      "node 1's report as a packet-in on node 2",
      async () =>
        fromTunnel().some(
          (packet) => decodeFrame(ipLocator(ETHERNET), packet.frame, { frame: 0, ts: 0 })?.kind === 'igmp',
        ),
      5000,
    );
    const ours = fromTunnel()
      .map((packet) => ({ packet, event: decodeFrame(ipLocator(ETHERNET), packet.frame, { frame: 0, ts: 0 }) }))
      .filter(({ event }) => event?.kind === 'igmp' && event.ip.identification === identification);
    assert.equal(ours.length, 1, 'exactly one copy');
    const [{ packet, event }] = ours as [(typeof ours)[number]];
    assert.equal(packet.tunnelSource, n1.underlayAddress);
    assert.ok(event?.kind === 'igmp');
    assert.equal(event.src, n1.underlayAddress);
    assert.equal(event.dst, '224.0.0.22');
    assert.deepEqual(
      event.message.kind === 'report' && event.message.version === 3
        ? event.message.records.map((record) => record.group)
        : [],
      [GROUP],
    );
  });

  it('reads the peers back over a new connection, and the same sync is then unchanged', async () => {
    assert.equal(await syncNode1([node2Address]), 'updated');
    await s1.connection.close();
    s1 = await connect(n1);
    switches[0] = s1;
    assert.deepEqual(
      s1.vswitch.learnedGroups.map(({ group, ports, peers }) => ({ group, ports, peers })),
      [{ group: GROUP, ports: [n1.gateway.ofport, n1.pods[1]!.ofport].sort((a, b) => a - b), peers: [node2Address] }],
    );
    await s1.vswitch.installBase(n1.gateway.ofport, baseTunnelOf(n1));
    assert.equal(await syncNode1([node2Address]), 'unchanged');
    const heard = await sendAndHear(5203, 'restarted', 10);
    assert.deepEqual(lines(heard.atNode2), expected(n1.pods[0]!.address, 'restarted', 10));
    assert.deepEqual(heard.atNode3, []);
  });
});
