/**
 * Smoke test of the two-node multicast lab (test/lab/multicast-lab.ts), without the
 * daemon: gateways, uplinks and unicast routing through the underlay work; UDP from a
 * node's own kernel out of its gateway port reaches a pod's socket (checksums filled);
 * the underlay bridge snoops and its IGMPv3 querier queries; and, with OVS in its default
 * NORMAL mode, multicast floods between pods of one node but never crosses to the other
 * node or the external host (that is the daemon's job).
 *
 * Needs root, iproute2, ethtool, tcpdump, python3 and Open vSwitch. No dist/ needed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { Lab, run, sleep, type Tcpdump } from '../lab/lab.js';
import type { Datagram } from '../lab/ovs.js';
import { buildMulticastLab, MULTICAST_LAB, ping as labPing, type MulticastLab } from '../lab/multicast-lab.js';

const GROUP = '239.10.0.1';
const UDP_PORT = 5010;

describe('multicast lab (two OVS nodes, underlay, external host)', () => {
  let lab: Lab;
  let ml: MulticastLab;
  let queries: Tcpdump;

  const ping = async (ns: string, address: string) => {
    try {
      await labPing(lab, ns, address);
    } catch (error) {
      assert.fail(`ping ${address} from ${ns} failed: ${String(error)}`);
    }
  };

  before(async () => {
    lab = Lab.create();
    const started = Date.now();
    ml = await buildMulticastLab(lab);
    // Capture what node a hears of the underlay's IGMP from now on (checked by the querier test).
    const [a] = ml.nodes;
    queries = await lab.startTcpdump(a.node.ns, a.uplink.name, lab.file('uplink-a-igmp.pcap'), { filter: ['igmp'] });
    console.log(`multicast lab up in ${Date.now() - started} ms`);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('has the documented addressing and names within the lab prefix and 15 characters', () => {
    const [a, b] = ml.nodes;
    assert.deepEqual(
      ml.nodes.map((n) => [
        n.gateway.name,
        n.gateway.address,
        n.uplink.address,
        n.podSubnet,
        n.pods.map((p) => p.address),
      ]),
      [
        ['gw0', '10.10.1.1', '192.168.50.11', '10.10.1.0/24', ['10.10.1.11', '10.10.1.12']],
        ['gw0', '10.10.2.1', '192.168.50.12', '10.10.2.0/24', ['10.10.2.11', '10.10.2.12']],
      ],
    );
    assert.equal(ml.external?.address, MULTICAST_LAB.external);
    const names = [
      ml.underlay.name,
      a.uplink.name,
      a.uplink.peer,
      b.uplink.name,
      b.uplink.peer,
      ml.external!.iface,
      ml.external!.port,
      ...[...a.pods, ...b.pods].map((p) => p.port),
    ];
    for (const name of names) assert.ok(name.startsWith(lab.prefix) && name.length <= 15, name);
    assert.equal(new Set(names).size, names.length);
    for (const n of ml.nodes) assert.ok(n.gateway.ofport > 0 && n.gateway.ifindex > 0);
  });

  it('every pod pings its gateway (the OVS internal port, a tap in the node namespace)', async () => {
    await Promise.all(ml.nodes.flatMap((n) => n.pods.map((pod) => ping(pod.ns, n.gateway.address))));
    for (const n of ml.nodes) {
      assert.match((await n.node.vsctl('get', 'interface', 'gw0', 'type')).trim(), /^"?internal"?$/);
      const { stdout } = await lab.exec(n.node.ns, ['ethtool', '-k', 'gw0']);
      assert.match(stdout, /tx-checksumming: off/);
      assert.equal((await n.node.exec(['sysctl', '-n', 'net.ipv4.ip_forward'])).stdout.trim(), '1');
    }
  });

  it('routes unicast: node to node, external to both uplinks, pod to pod across the underlay', async () => {
    const [a, b] = ml.nodes;
    await Promise.all([
      ping(a.node.ns, b.uplink.address),
      ping(b.node.ns, a.uplink.address),
      ping(ml.external!.ns, a.uplink.address),
      ping(ml.external!.ns, b.uplink.address),
      ping(a.pods[0]!.ns, b.pods[0]!.address),
      ping(b.pods[1]!.ns, a.pods[1]!.address),
      ping(ml.external!.ns, a.pods[0]!.address),
      ping(ml.external!.ns, b.pods[1]!.address),
    ]);
  });

  it('delivers UDP from a node kernel out of gw0, and routed UDP, to pod sockets', async () => {
    const [a, b] = ml.nodes;
    const [a1, a2] = a.pods as [(typeof a.pods)[0], (typeof a.pods)[0]];
    const b1 = b.pods[0]!;
    const unicastA1 = await a1.listen(a1.address, UDP_PORT);
    const unicastB1 = await b1.listen(b1.address, UDP_PORT);
    const groupA2 = await a2.listen(GROUP, UDP_PORT);
    // Node a's own kernel: unicast to a1, and multicast out of gw0 (IP_MULTICAST_IF = gw address).
    await a.node.udp().send(a1.address, UDP_PORT, 3, { tag: 'node-a' });
    await a.node.udp().send(GROUP, UDP_PORT, 3, { tag: 'node-a-mc' });
    // The external host: routed via node b's uplink and gw0.
    await ml.external!.send(b1.address, UDP_PORT, 3, { tag: 'ext' });
    await sleep(200);
    const payloads = async (receiver: { stop(): Promise<{ from: string; payload: string }[]> }) =>
      (await receiver.stop()).map((d) => `${d.from} ${d.payload}`);
    assert.deepEqual(
      await payloads(unicastA1),
      [0, 1, 2].map((i) => `10.10.1.1 node-a ${i}`),
    );
    assert.deepEqual(
      await payloads(groupA2),
      [0, 1, 2].map((i) => `10.10.1.1 node-a-mc ${i}`),
    );
    assert.deepEqual(
      await payloads(unicastB1),
      [0, 1, 2].map((i) => `${MULTICAST_LAB.external} ext ${i}`),
    );
  });

  it('floods multicast between pods of one node in NORMAL mode, but not to the other node or outside', async () => {
    const [a, b] = ml.nodes;
    const [a1, a2] = a.pods as [(typeof a.pods)[0], (typeof a.pods)[0]];
    const receivers = await Promise.all([
      a2.listen(GROUP, UDP_PORT),
      b.pods[0]!.listen(GROUP, UDP_PORT),
      ml.external!.listen(GROUP, UDP_PORT),
    ]);
    // TTL 8: only the lack of multicast routing (no daemon) keeps it on node a.
    await a1.send(GROUP, UDP_PORT, 5, { ttl: 8 });
    await sleep(300);
    const [atA2, atB1, atExt] = (await Promise.all(receivers.map((r) => r.stop()))) as [
      Datagram[],
      Datagram[],
      Datagram[],
    ];
    assert.deepEqual(
      atA2.map((d) => [d.from, d.payload]),
      [0, 1, 2, 3, 4].map((i) => [a1.address, `a1 ${i}`]),
    );
    assert.deepEqual(atB1, []);
    assert.deepEqual(atExt, []);
  });

  it('has a snooping underlay bridge whose IGMPv3 querier queries the uplinks', async () => {
    const { stdout } = await lab.ip(ml.underlay.ns, '-d', '-j', 'link', 'show', ml.underlay.name);
    const [link] = JSON.parse(stdout) as { linkinfo: { info_data: Record<string, unknown> } }[];
    const data = link!.linkinfo.info_data;
    assert.equal(data.mcast_snooping, 1);
    assert.equal(data.mcast_querier, 1);
    assert.equal(data.mcast_igmp_version, 3);
    // The capture started when the lab was up; with a 2 s query interval a general query has come by now.
    const deadline = Date.now() + 3000;
    let text = '';
    for (;;) {
      text = (await run(['tcpdump', '-n', '-v', '-r', queries.file])).stdout;
      if (/igmp query v3/.test(text) || Date.now() > deadline) break;
      await sleep(250);
    }
    await queries.stop();
    assert.match(
      text,
      new RegExp(`${MULTICAST_LAB.underlayBridge.replaceAll('.', '\\.')} > 224\\.0\\.0\\.1: igmp query v3`),
      text,
    );
  });
});
