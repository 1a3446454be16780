/**
 * Reloads that converge, on the three-node tunnel lab (test/lab/tunnel-lab.ts): node 1's
 * daemon reads its peers from a file and its group policy from another, both read again
 * on SIGHUP (the peers file also when it changes).
 *
 * - 200 SIGHUPs while the peers file alternates between nodes {2, 3} and {3}, ending at
 *   {2, 3}: node 1 ends with both peers up, and its buckets toward node 2's member;
 * - the peers file rewritten in place (truncated, then written half a second later) while
 *   a pod of node 1 streams to a member on node 2: no datagram lost;
 * - a policy that denies every group, then one that allows every group: node 1's local
 *   member receives again within a second of the second SIGHUP;
 * - the tunnel port of the sender's node, then of the member's, deleted and added again:
 *   node 2's member receives again within a second of the port's return.
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { truncateSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep } from '../lab/lab.js';
import { sequences, type Receiver } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import {
  buildTunnelLab,
  deliveryFaults,
  TUNNEL_LAB,
  type TunnelLab,
  waitForTunnelDestinations,
} from '../lab/tunnel-lab.js';
import type { DaemonStatus } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const [, A2, A3] = TUNNEL_LAB.underlayAddresses as [string, string, string];
/** Node 2's member's group (sent by a pod of node 1 through the tunnel). */
const REMOTE_GROUP = '239.61.0.1';
/** Node 1's local member's group. */
const LOCAL_GROUP = '239.61.0.2';
const PORT = 5301;
const PEER_TIMERS = ['--peer-refresh-interval', '2s', '--peer-timeout', '5s'];

const ALLOW_ALL = 'rules: []\n';
const DENY_ALL = 'rules:\n  - {action: deny, pods: "*/*", groups: 224.0.0.0/4}\n';

describe('daemon reloads that converge (three-node tunnel lab)', { concurrency: 1 }, () => {
  let lab: Lab;
  let tl: TunnelLab;
  const daemons: RunningDaemon[] = [];
  let peersFile: string;
  let policyFile: string;
  let remoteMember: Receiver;
  let localMember: Receiver;

  const peersText = (addresses: readonly string[]) => addresses.map((address) => `${address}\n`).join('');
  const node1 = () => daemons[0]!;
  const peersOfNode1 = async () =>
    (await control<DaemonStatus>(node1(), ['status'])).tunnel?.peers.map((peer) => peer.address).sort();

  before(async () => {
    lab = Lab.create();
    tl = await buildTunnelLab(lab);
    peersFile = lab.file('peers-1');
    policyFile = lab.file('policy-1.yaml');
    writeFileSync(peersFile, peersText([A2, A3]));
    writeFileSync(policyFile, ALLOW_ALL);
    for (const n of tl.nodes) {
      const peers =
        n.index === 0
          ? ['--peers-file', peersFile, '--group-policy', policyFile]
          : ['--peers', TUNNEL_LAB.underlayAddresses.join(',')];
      daemons.push(
        startDaemon(n.node, {
          gateway: n.gateway.name,
          multicastInterfaces: [],
          args: ['--tunnel-port', n.tunnel.name, ...peers, '--node-address', n.underlayAddress, ...PEER_TIMERS],
        }),
      );
    }
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    remoteMember = await tl.nodes[1].pods[0]!.listen(REMOTE_GROUP, PORT);
    localMember = await tl.nodes[0].pods[1]!.listen(LOCAL_GROUP, PORT);
    await waitForTunnelDestinations(tl.nodes[0].node, REMOTE_GROUP, [A2], 10_000);
    await waitForOvsMembers(tl.nodes[0].node, LOCAL_GROUP, [tl.nodes[0].pods[1]!]);
  });

  after(async () => {
    for (const receiver of [remoteMember, localMember]) await receiver?.stop().catch(() => undefined);
    await lab?.destroy();
  });

  it('200 SIGHUPs over alternating peers files end with every peer of the last file up, and its buckets', async () => {
    for (let k = 0; k < 200; k++) {
      writeFileSync(peersFile, peersText(k % 2 === 0 ? [A3] : [A2, A3]));
      node1().child.kill('SIGHUP');
      await sleep(5);
    }
    // The last write named both peers.
    const since = Date.now();
    await waitForTunnelDestinations(tl.nodes[0].node, REMOTE_GROUP, [A2], 10_000);
    let peers: string[] | undefined;
    for (let tries = 0; tries < 50 && (peers = await peersOfNode1())?.join(',') !== [A2, A3].join(','); tries++)
      await sleep(100);
    console.log(`200 SIGHUPs: node 2's bucket back ${Date.now() - since} ms after the last`);
    assert.deepEqual(peers, [A2, A3]);
    const tag = 'h';
    await tl.nodes[0].pods[0]!.send(REMOTE_GROUP, PORT, 20, { intervalMs: 5, tag });
    await sleep(300);
    assert.deepEqual(deliveryFaults(remoteMember.received, tag, 20), { lost: [], duplicated: [] });
  });

  it('a peers file truncated and written again half a second later: the remote member loses nothing', async () => {
    const tag = 'r';
    const count = 300;
    const streaming = tl.nodes[0].pods[0]!.send(REMOTE_GROUP, PORT, count, { intervalMs: 10, tag });
    await sleep(500);
    truncateSync(peersFile, 0);
    await sleep(500);
    writeFileSync(peersFile, peersText([A2, A3]));
    await streaming;
    await sleep(300);
    assert.deepEqual(deliveryFaults(remoteMember.received, tag, count), { lost: [], duplicated: [] });
    assert.deepEqual(await peersOfNode1(), [A2, A3]);
  });

  it('deny-all, then allow-all: the local member receives again within a second of the second reload', async () => {
    writeFileSync(policyFile, DENY_ALL);
    node1().child.kill('SIGHUP');
    await waitForOvsMembers(tl.nodes[0].node, LOCAL_GROUP, []);
    writeFileSync(policyFile, ALLOW_ALL);
    const tag = 'p';
    node1().child.kill('SIGHUP');
    // From the reload on, a datagram every 10 ms: the first one received says when traffic came back.
    await tl.nodes[0].pods[0]!.send(LOCAL_GROUP, PORT, 200, { intervalMs: 10, tag });
    await sleep(300);
    const first = Math.min(...sequences(localMember.received, tag));
    console.log(`policy deny-all -> allow-all: the local member's first datagram was number ${first} (10 ms apart)`);
    assert.ok(Number.isFinite(first), 'the local member received nothing after the allow-all reload');
    assert.ok(first <= 100, `the local member's traffic came back only at datagram ${first}, over 1 s`);
  });

  for (const [index, whose] of [
    [0, "the sender's node (1)"],
    [1, "the member's node (2)"],
  ] as const) {
    it(`the tunnel port of ${whose} deleted and added again: the remote member receives within a second of its return`, async () => {
      const n = tl.nodes[index];
      const tag = `t${index}`;
      const count = 400;
      const started = Date.now();
      const streaming = tl.nodes[0].pods[0]!.send(REMOTE_GROUP, PORT, count, { intervalMs: 10, tag });
      await sleep(500);
      await n.node.vsctl('del-port', n.node.bridge, n.tunnel.name);
      await sleep(700);
      await n.node.vsctl(
        'add-port',
        n.node.bridge,
        n.tunnel.name,
        '--',
        'set',
        'interface',
        n.tunnel.name,
        `type=${tl.tunnelType}`,
        'options:remote_ip=flow',
        // Another port number: the daemon must follow the port, not remember its number.
        `ofport_request=${90 + index}`,
      );
      const returnedMs = Date.now() - started;
      await streaming;
      const sentMs = Date.now() - started;
      await sleep(300);
      // Datagram k left about k / count of the way through the stream.
      const msPerDatagram = sentMs / count;
      const after = sequences(remoteMember.received, tag).filter((k) => k * msPerDatagram >= returnedMs);
      const firstAfter = Math.min(...after);
      const backMs = firstAfter * msPerDatagram - returnedMs;
      console.log(
        `tunnel port of ${whose} re-added at ${returnedMs} ms: first datagram ${Math.round(backMs)} ms later`,
      );
      assert.ok(Number.isFinite(firstAfter), 'the remote member received nothing after the tunnel port came back');
      assert.ok(backMs <= 1000, `the remote member's traffic came back ${Math.round(backMs)} ms after the port`);
    });
  }
});
