/**
 * `mcastctl groups --cluster` on the three-node tunnel lab (Geneve on br-int, an underlay
 * without multicast), a daemon on each node: asked on node 3, it lists the nodes with
 * members of a group (nodes 1 and 2, by what they tell their peers; node 3 itself with
 * its pod) within one query interval of their joins, field by field; a node whose daemon
 * is killed is shown down and leaves the group after the peer timeout.
 *
 * Needs root, iproute2, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import type { RunningDaemon } from '../lab/daemon.js';
import { Lab, waitUntil } from '../lab/lab.js';
import type { OvsPod, Receiver } from '../lab/ovs.js';
import { podName } from '../lab/trace-checks.js';
import { buildTunnelLab, startTunnelDaemons, type TunnelLab } from '../lab/tunnel-lab.js';
import type { ClusterView } from '../../src/transport/control/cluster-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the groups tests run the built CLI: ${missing}`);

const GROUP = '239.74.1.1';
const PORT = 5474;
const QUERY_INTERVAL_MS = 10_000;
const PEER_TIMEOUT_MS = 5000;
const TIMERS = [
  '--query-interval',
  `${QUERY_INTERVAL_MS / 1000}s`,
  '--query-response-interval',
  '2s',
  '--peer-refresh-interval',
  '2s',
  '--peer-timeout',
  `${PEER_TIMEOUT_MS / 1000}s`,
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('mcastctl groups --cluster: one group across the nodes of the tunnel lab', { concurrency: 1 }, () => {
  let lab: Lab;
  let tl: TunnelLab;
  const daemons: RunningDaemon[] = [];
  const receivers: Receiver[] = [];

  /** `groups --cluster` on node 3, as JSON or text. */
  const cluster = async (json = true) => {
    const n3 = tl.nodes[2];
    const result = await mcastctl(
      ['groups', '--cluster', '--control-socket', daemons[2]!.controlSocket, ...(json ? ['--json'] : [])],
      { ns: n3.node.ns, env: { ...process.env, ...n3.node.env }, timeoutMs: 10_000 },
    );
    assert.equal(result.code, 0, `groups --cluster: ${result.stdout}\n${result.stderr}`);
    return { ...result, view: json ? (JSON.parse(result.stdout) as ClusterView) : undefined };
  };
  const groupOf = (view: ClusterView) => view.groups.find((entry) => entry.group === GROUP);

  before(async () => {
    lab = Lab.create();
    tl = await buildTunnelLab(lab, { podsPerNode: 1 });
    daemons.push(...(await startTunnelDaemons(tl, TIMERS)));
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    await lab?.destroy();
  });

  it('nodes 1 and 2 listed within one query interval of their joins, node 3 with its pod; field by field', async () => {
    const [n1, n2, n3] = tl.nodes;
    const [p1, p2, p3] = [n1.pods[0], n2.pods[0], n3.pods[0]] as [OvsPod, OvsPod, OvsPod];
    const joined = Date.now();
    for (const pod of [p1, p2, p3]) receivers.push(await pod.listen(GROUP, PORT));
    const view = await waitUntil(
      `node 3 to list nodes 1 and 2 in ${GROUP}`,
      async () => {
        const { view } = await cluster();
        return groupOf(view!)?.nodes.length === 3 ? view : undefined;
      },
      QUERY_INTERVAL_MS,
      100,
    );
    const tookMs = Date.now() - joined;
    console.log(`groups --cluster: nodes 1 and 2 listed on node 3 ${tookMs} ms after the joins`);
    assert.ok(tookMs < QUERY_INTERVAL_MS, `${tookMs} ms`);

    assert.equal(view.node, n3.underlayAddress);
    assert.deepEqual(
      view.peers.map((peer) => [peer.address, peer.state]),
      [
        [n1.underlayAddress, 'up'],
        [n2.underlayAddress, 'up'],
      ],
    );
    for (const peer of view.peers) assert.match(String(peer.lastContact), ISO);
    const [self, first, second] = groupOf(view)!.nodes;
    assert.deepEqual(self, { node: n3.underlayAddress, self: true, pods: [podName(p3)] });
    for (const [entry, n] of [
      [first, n1],
      [second, n2],
    ] as const) {
      assert.ok(entry !== undefined && !entry.self, JSON.stringify(entry));
      assert.equal(entry.node, n.underlayAddress);
      assert.equal(entry.state, 'up');
      assert.match(String(entry.lastReport), ISO);
      const age = Date.now() - Date.parse(entry.lastReport!);
      assert.ok(age >= 0 && age <= Date.now() - joined, `last report ${age} ms ago`);
      assert.ok(entry.expiresInMs > 0 && entry.expiresInMs <= PEER_TIMEOUT_MS, `expires in ${entry.expiresInMs} ms`);
    }

    const text = await cluster(false);
    assert.match(text.stdout, new RegExp(`${n3.underlayAddress.replaceAll('.', '\\.')} \\(this node\\)`));
    assert.match(text.stdout, new RegExp(podName(p3)));
    assert.match(text.stdout, /1 group with members on 3 nodes\n$/);
  });

  it("node 1's daemon killed: shown down, and gone from the group after the peer timeout", async () => {
    const [n1, n2] = tl.nodes;
    await daemons[0]!.kill9();
    const killed = Date.now();
    const view = await waitUntil(
      `node 3 to drop node 1 from ${GROUP}`,
      async () => {
        const { view } = await cluster();
        return groupOf(view!)?.nodes.some((entry) => entry.node === n1.underlayAddress) ? undefined : view;
      },
      PEER_TIMEOUT_MS + 5000,
      100,
    );
    const tookMs = Date.now() - killed;
    console.log(`groups --cluster: node 1 dropped ${tookMs} ms after its daemon was killed`);
    // Its last refresh came before the kill: the timeout, plus the expiry sweep and the polling of this test.
    assert.ok(tookMs <= PEER_TIMEOUT_MS + 2500, `${tookMs} ms, peer timeout ${PEER_TIMEOUT_MS} ms`);
    assert.deepEqual(
      groupOf(view)!.nodes.map((entry) => entry.node),
      [tl.nodes[2].underlayAddress, n2.underlayAddress],
    );
    assert.equal(view.peers.find((peer) => peer.address === n1.underlayAddress)?.state, 'down');
    assert.equal(view.peers.find((peer) => peer.address === n2.underlayAddress)?.state, 'up');
    const text = await cluster(false);
    assert.match(text.stdout, new RegExp(`${n1.underlayAddress.replaceAll('.', '\\.')} down`));
  });
});
