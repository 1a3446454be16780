/**
 * The tunnel demo: `mcastctl daemon` in tunnel mode on three real OVS nodes whose
 * underlay carries no multicast at all, delivering a pod's multicast to members on other
 * nodes through a flow-based Geneve port, once per interested node.
 *
 *   sudo scripts/demo.sh tunnel                  (sets up, builds, runs this)
 *   sudo node --import tsx scripts/demo-tunnel.ts   (after `npm run build`)
 *
 * Three nodes (test/lab/tunnel-lab.ts), each a network namespace with its own
 * ovs-vswitchd, two pods, a gateway port and tun0 (Geneve, remote_ip=flow) on br-int, and
 * br-phy holding the node's underlay address. The underlay bridge drops every IPv4
 * multicast packet (nftables, with a counter). A daemon runs on each node with the others
 * as peers. Pods on nodes 1 and 2 join a group; a pod on node 1 sends; the tables show who
 * got what, and how many Geneve frames for the group reached each node on the wire: node
 * 2 one per datagram, node 3 (no member) none. Everything lives in namespaces named mcl*
 * and is removed at the end, also on Ctrl-C.
 *
 * Environment: MCASTCTL_BIN (another build of the CLI), NO_COLOR.
 */
import { randomBytes } from 'node:crypto';
import Table from 'cli-table3';
import { mcastctl } from '../test/lab/cli.js';
import { startDaemon, type RunningDaemon } from '../test/lab/daemon.js';
import { Lab, type Tcpdump } from '../test/lab/lab.js';
import type { OvsPod, Receiver } from '../test/lab/ovs.js';
import { tsharkFrameCount } from '../test/lab/tshark.js';
import { buildTunnelLab, TUNNEL_LAB } from '../test/lab/tunnel-lab.js';
import { writePeerKeyFile } from '../test/lab/tunnel-replay.js';
import { color, runDemo, say, sleep } from './demo-kit.js';

const GROUP = '239.1.2.3';
const PORT = 5000;
const COUNT = 20;
async function main(): Promise<number> {
  const lab = Lab.create();
  const daemons: RunningDaemon[] = [];
  try {
    say(`building the lab: 3 OVS nodes × 2 pods, Geneve port tun0 on each br-int, an underlay that drops multicast (namespaces ${lab.prefix}-*)`);
    const tl = await buildTunnelLab(lab);
    // One cluster key, as `openssl rand -hex 32` makes it: the nodes' membership messages are sealed with it.
    const keyFile = lab.file('demo-peer-keys');
    writePeerKeyFile(keyFile, [randomBytes(32).toString('hex')]);
    for (const n of tl.nodes) {
      const args = ['--tunnel-port', n.tunnel.name, '--peers', TUNNEL_LAB.underlayAddresses.join(','), '--node-address', n.underlayAddress, '--peer-key-file', keyFile];
      daemons.push(startDaemon(n.node, { gateway: n.gateway.name, multicastInterfaces: [], args }));
    }
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    say(`mcastctl daemon runs on every node, e.g. node 1: ${daemons[0]!.args.join(' ')}`);

    const [n1, n2, n3] = tl.nodes;
    const pods = tl.nodes.flatMap((n) => n.pods);
    const sender = n1.pods[0]!;
    const members: OvsPod[] = [n1.pods[1]!, n2.pods[0]!];
    const captures = new Map<OvsPod, Tcpdump>();
    for (const pod of pods) {
      captures.set(pod, await lab.startTcpdump(pod.ns, pod.iface, lab.file(`demo-${pod.name}.pcap`), { filter: ['udp', 'and', 'dst', GROUP] }));
    }
    const geneve = ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort)];
    const wire = await Promise.all(
      tl.nodes.map((n) => lab.startTcpdump(tl.underlayNs, n.uplinkPeer, lab.file(`demo-wire-${n.node.name}.pcap`), { filter: geneve })),
    );
    say(`${members.map((pod) => pod.name).join(' and ')} join ${GROUP}; node 2's daemon tells its peers inside the tunnel`);
    const receivers = new Map<OvsPod, Receiver>();
    for (const member of members) receivers.set(member, await member.listen(GROUP, PORT));
    await sleep(1_500);

    console.log(color.bold(`\n$ mcastctl status        (on node 1)`));
    console.log((await mcastctl(['status', '--control-socket', daemons[0]!.controlSocket])).stdout.trimEnd());
    console.log(color.bold(`\n$ mcastctl groups        (on node 1)`));
    console.log((await mcastctl(['groups', '--control-socket', daemons[0]!.controlSocket])).stdout.trimEnd());

    const droppedBefore = await tl.multicastDropped();
    say(`${sender.name} sends ${COUNT} datagrams to ${GROUP}:${PORT}`);
    await sender.send(GROUP, PORT, COUNT, { intervalMs: 20, tag: 'demo' });
    await sleep(800);
    const dropped = (await tl.multicastDropped()) - droppedBefore;
    for (const capture of [...captures.values(), ...wire]) await capture.stop();

    const mark = (n: number, expected: number) => (n === expected ? color.green(String(n)) : color.red(String(n)));
    const table = new Table({ head: ['', 'member', 'received', 'frames on its interface'], style: { head: [], border: [] } });
    let ok = true;
    for (const pod of pods) {
      const isMember = members.includes(pod);
      const received = receivers.get(pod)?.received.length ?? 0;
      const frames = await tsharkFrameCount(captures.get(pod)!.file, 'udp');
      if (pod !== sender) ok &&= received === (isMember ? COUNT : 0) && (isMember || frames === 0);
      table.push([
        `pod ${pod.name} (node ${pod.node.name}, ${pod.address})`,
        pod === sender ? 'sender' : isMember ? 'yes' : 'no',
        pod === sender ? '' : mark(received, isMember ? COUNT : 0),
        pod === sender ? '' : String(frames),
      ]);
    }
    console.log(color.bold(`\nWho received the datagrams sent to ${GROUP}:`));
    console.log(table.toString());

    const expectedOnWire = [n1, n2, n3].map((n) => (n === n2 ? COUNT : 0));
    const uplinks = new Table({ head: ['', 'Geneve frames for the group toward it'], style: { head: [], border: [] } });
    for (const [index, n] of tl.nodes.entries()) {
      // Outer destination the node, inner destination the group (tshark's ip.dst matches either IPv4 header).
      const frames = await tsharkFrameCount(wire[index]!.file, `geneve && ip.dst == ${n.underlayAddress} && ip.dst == ${GROUP}`);
      ok &&= frames === expectedOnWire[index];
      uplinks.push([`node ${n.node.name} (${n.underlayAddress})`, mark(frames, expectedOnWire[index]!)]);
    }
    console.log(color.bold('\nWhat the underlay carried toward each node (one copy per interested node, nothing toward node 3):'));
    console.log(uplinks.toString());
    console.log(`The underlay's nftables rule dropped ${dropped} multicast packets meanwhile: the pods' datagrams crossed as Geneve unicast.`);
    for (const receiver of receivers.values()) await receiver.stop();
    const verdict = 'Multicast reached the members on both nodes through the tunnel, and only them.';
    console.log(ok ? color.green(`\n${verdict}`) : color.red('\nDelivery was not as expected: see the tables.'));
    return ok ? 0 : 1;
  } finally {
    await Promise.all(daemons.map((daemon) => daemon.stop()));
    say('removing the lab');
    await lab.destroy();
  }
}

await runDemo('scripts/demo.sh tunnel', main);
