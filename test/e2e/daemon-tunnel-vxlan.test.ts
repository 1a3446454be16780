/**
 * Acceptance of `mcastctl daemon` in tunnel mode over VXLAN on the three-node tunnel lab
 * (test/lab/tunnel-lab.ts): tun0 is a flow-based VXLAN port and the underlay drops
 * multicast, as in the Geneve lab (test/e2e/daemon-tunnel.test.ts): one copy per
 * interested peer, nothing toward the others. Delivery is proved at the member's socket
 * (every numbered datagram, exactly once), the non-members' sockets and tcpdump on the
 * wire (the underlay end of each node's uplink, the inner IPv4 destination decoded by
 * tshark).
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3, Open vSwitch and the built
 * CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { errorEntries, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep } from '../lab/lab.js';
import type { OvsPod, Receiver } from '../lab/ovs.js';
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
} from '../lab/tunnel-lab.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const [, A2] = TUNNEL_LAB.underlayAddresses;
const ms = (value: number) => `${Math.round(value)} ms`;

/** Asserts that `receiver` got datagrams 0..count-1 of `tag`, each exactly once. */
function assertExactlyOnce(receiver: Receiver, tag: string, count: number, who: string): void {
  assert.deepEqual(
    deliveryFaults(receiver.received, tag, count),
    { lost: [], duplicated: [] },
    `${who}: datagrams of ${tag} lost or duplicated`,
  );
}

describe('mcastctl daemon in tunnel mode over VXLAN (three nodes, an underlay without multicast)', {
  concurrency: 1,
}, () => {
  const GROUP = '239.61.2.1';
  const OTHER_GROUP = '239.61.2.99';
  const port = 5302;
  let lab: Lab;
  let tl: TunnelLab;
  const daemons: RunningDaemon[] = [];

  before(async () => {
    lab = Lab.create();
    const started = Date.now();
    tl = await buildTunnelLab(lab, { tunnelType: 'vxlan' });
    daemons.push(
      ...tl.nodes.map((n) =>
        startDaemon(n.node, { gateway: n.gateway.name, multicastInterfaces: [], args: tunnelDaemonArgs(n) }),
      ),
    );
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    console.log(`VXLAN tunnel lab and three daemons up in ${ms(Date.now() - started)}`);
  });

  after(async () => {
    const errors = errorEntries(daemons);
    if (errors.length > 0) console.log('daemon errors (VXLAN tunnel lab):', errors);
    await lab?.destroy();
  });

  it('a pod on node 1 sends: the member on node 2 gets each datagram once over VXLAN, node 3 no VXLAN frame for the group, non-members nothing', async () => {
    const [n1, n2, n3] = tl.nodes;
    const [sender] = n1.pods as [OvsPod];
    const [member2, nonMember2] = n2.pods as [OvsPod, OvsPod];
    const [nonMember3] = n3.pods as [OvsPod];
    // Receivers are lab children: lab.destroy() ends them if an assertion fails first.
    const member = await member2.listen(GROUP, port);
    const others = await Promise.all([nonMember2, nonMember3].map((pod) => pod.listen(OTHER_GROUP, port)));
    await waitForTunnelDestinations(n1.node, GROUP, [A2!]);
    const wire = await captureTunnelFrames(lab, tl, [n2, n3], 'x1');
    const count = 50;
    await sender.send(GROUP, port, count, { intervalMs: 5, tag: 'x1' });
    await sleep(300);
    await Promise.all(wire.map((capture) => capture.stop()));
    const heardByOthers = await Promise.all(others.map((receiver) => receiver.stop()));
    await member.stop();
    assertExactlyOnce(member, 'x1', count, `${member2.name} on node 2`);
    assert.deepEqual(heardByOthers, [[], []], 'non-member sockets received datagrams');
    const [toNode2, toNode3] = await Promise.all(
      [n2, n3].map((n, index) => tsharkFrameCount(wire[index]!.file, encapsulatedFor(tl, GROUP, n))),
    );
    console.log(`VXLAN: ${toNode2} frames for ${GROUP} toward node 2, ${toNode3} toward node 3`);
    assert.equal(toNode2, count, 'one VXLAN frame per datagram toward node 2');
    assert.equal(toNode3, 0, 'no VXLAN frame for the group toward node 3, which has no member');
  });
});
