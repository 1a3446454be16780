/**
 * Smoke test of the OVS lab node (test/lab/ovs.ts): a node with its own ovsdb-server and
 * ovs-vswitchd and three pods. With the bridge's default NORMAL flow (no snooping, so
 * multicast floods), UDP multicast from pod1 reaches the sockets of pod2 and pod3; the
 * Interface rows carry the CNI external_ids; and after teardown no daemon, helper or
 * namespace of the lab remains.
 *
 * Needs root, iproute2, ethtool, python3 and Open vSwitch (ovsdb-server, ovs-vswitchd,
 * ovs-vsctl, ovs-ofctl). Never touches the machine's own OVS.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { Lab, run } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const GROUP = '239.77.0.1';
const UDP_PORT = 5001;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('OVS lab node', () => {
  let lab: Lab;
  let node: OvsNode;
  const pods: OvsPod[] = [];

  before(async () => {
    lab = Lab.create();
    const started = Date.now();
    node = await OvsNode.start(lab, 'node');
    for (const [index, name] of ['pod1', 'pod2', 'pod3'].entries()) {
      pods.push(await node.addPod(name, { address: `10.1.0.${11 + index}/24`, podNamespace: 'ns-a' }));
    }
    console.log(`node and 3 pods up in ${Date.now() - started} ms`);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('runs its own daemons, bridge br-int (netdev) and the default NORMAL flow', async () => {
    const pids = node.pids;
    assert.ok(pids.ovsdbServer && processAlive(pids.ovsdbServer));
    assert.ok(pids.vswitchd && processAlive(pids.vswitchd));
    assert.ok(existsSync(node.openflowEndpoint.slice('unix:'.length)));
    assert.equal((await node.vsctl('get', 'bridge', 'br-int', 'datapath_type')).trim(), 'netdev');
    const flows = await node.ofctl('dump-flows', 'br-int');
    assert.match(flows, /priority=0 actions=NORMAL/);
    // The daemons live in the node's namespace, not the machine's.
    const { stdout } = await run(['ip', 'netns', 'pids', node.ns]);
    const inNs = stdout.split(/\s+/).filter(Boolean).map(Number);
    assert.ok(inNs.includes(pids.ovsdbServer) && inNs.includes(pids.vswitchd), `pids in ${node.ns}: ${inNs}`);
  });

  it('gives every pod a bridge port with distinct ofports and the CNI external_ids', async () => {
    const ofports = new Set(pods.map((pod) => pod.ofport));
    assert.equal(ofports.size, 3);
    const show = await node.ofctl('show', 'br-int');
    for (const pod of pods) {
      assert.ok(pod.port.startsWith(lab.prefix), pod.port);
      assert.match(show, new RegExp(`\\b${pod.ofport}\\(${pod.port}\\)`));
      assert.deepEqual(await node.externalIds(pod.port), {
        'attached-mac': pod.mac,
        'iface-id': `ns-a_${pod.name}`,
        'ip-address': pod.address,
        'pod-name': pod.name,
        'pod-namespace': 'ns-a',
      });
      const { stdout } = await lab.exec(pod.ns, ['ethtool', '-k', pod.iface]);
      assert.match(stdout, /tx-checksumming: off/);
    }
  });

  it('floods UDP multicast from pod1 to the sockets of pod2 and pod3', async () => {
    const [pod1, pod2, pod3] = pods as [OvsPod, OvsPod, OvsPod];
    const receivers = await Promise.all([pod2, pod3].map((pod) => pod.listen(GROUP, UDP_PORT)));
    await pod1.send(GROUP, UDP_PORT, 5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const receiver of receivers) {
      const datagrams = await receiver.stop();
      assert.deepEqual(
        datagrams.map((d) => [d.from, d.payload]),
        [0, 1, 2, 3, 4].map((i) => [pod1.address, `pod1 ${i}`]),
      );
    }
  });

  it('restarts ovs-vswitchd (flows lost, ports kept) and ovsdb-server', async () => {
    await node.ofctl('add-flow', 'br-int', 'cookie=0x77,priority=10,ip,nw_dst=239.77.0.9,actions=drop');
    const before = node.pids;
    await node.restartVswitchd();
    assert.notEqual(node.pids.vswitchd, before.vswitchd);
    const flows = await node.ofctl('dump-flows', 'br-int');
    assert.doesNotMatch(flows, /cookie=0x77/);
    assert.match(flows, /actions=NORMAL/);
    const show = await node.ofctl('show', 'br-int');
    for (const pod of pods) assert.match(show, new RegExp(`\\b${pod.ofport}\\(${pod.port}\\)`));

    await node.restartOvsdb();
    assert.notEqual(node.pids.ovsdbServer, before.ovsdbServer);
    assert.equal((await node.vsctl('get', 'interface', pods[0]!.port, 'ofport')).trim(), String(pods[0]!.ofport));
    // Still forwarding after both restarts.
    const receiver = await pods[2]!.listen(GROUP, UDP_PORT);
    await pods[0]!.send(GROUP, UDP_PORT, 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await receiver.stop()).length, 2);
  });

  it('leaves no process or namespace behind after teardown', async () => {
    const pids = node.pids;
    const receiver = await pods[1]!.listen(GROUP, UDP_PORT);
    void receiver;
    await lab.destroy();
    assert.ok(!processAlive(pids.ovsdbServer!), 'ovsdb-server is gone');
    assert.ok(!processAlive(pids.vswitchd!), 'ovs-vswitchd is gone');
    const { stdout } = await run(['ip', 'netns', 'list']);
    assert.ok(!stdout.includes(`${lab.prefix}-`), stdout);
    assert.ok(!existsSync(lab.dir), `${lab.dir} removed`);
  });
});
