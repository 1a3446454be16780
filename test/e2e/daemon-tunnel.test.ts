/**
 * Acceptance of `mcastctl daemon` in tunnel mode on the three-node tunnel lab
 * (test/lab/tunnel-lab.ts): each node its own OVS and daemon, two pods a node, a
 * flow-based Geneve port tun0 on br-int, and an underlay that drops (and counts) every
 * IPv4 multicast packet. Membership crosses nodes only through the daemons' exchange
 * inside the tunnel, and data only as Geneve unicast toward the interested peers.
 *
 * Delivery is proved at three places: what members' sockets got (every numbered datagram,
 * exactly once), tcpdump on non-members' eth0 (their kernels drop what they have not
 * joined before any socket), and tcpdump on the wire (the underlay end of each node's
 * uplink, the inner IPv4 destination decoded by tshark) for what a node was sent.
 *
 * The tests share one lab and run in order: each leaves the memberships the next expects.
 * After delivery, joins and leaves come the peers file (SIGHUP), kill -9 of node 1's
 * daemon, an ovs-vswitchd restart on node 1, the death of node 3 (for good), and last
 * the MTU: the daemons' warning of pods at 1,500 on a 1,500 underlay, and pods at 1,450.
 * MCASTCTL_TEST_LOG_DIR=DIR keeps every daemon's whole log there.
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3, Open vSwitch and the built
 * CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, run, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import { sequences, type Datagram, type OvsPod, type Receiver } from '../lab/ovs.js';
import { ovsGroupPorts, scrapeMetrics } from '../lab/switch-checks.js';
import { tsharkFrameCount } from '../lab/tshark.js';
import {
  buildTunnelLab,
  deliveryFaults,
  sendSized,
  setPodMtu,
  TUNNEL_LAB,
  tunnelDestinations,
  type TunnelLab,
  type TunnelLabNode,
  waitForTunnelDestinations,
} from '../lab/tunnel-lab.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/**
 * Short peer timers, so that expiry fits in a test: a peer's membership lasts 5 s after its last refresh (every 2 s).
 */
const PEER_REFRESH_MS = 2000;
const PEER_TIMEOUT_MS = 5000;
const PEER_TIMERS = ['--peer-refresh-interval', '2s', '--peer-timeout', '5s'];
const [A1, A2, A3] = TUNNEL_LAB.underlayAddresses;
/** Node 1's peer list names node 1 itself and node 2 twice: the daemon must still send one copy per peer. */
const NODE1_PEERS = [A1, A2, A2, A3];
/** What every daemon must make of any of the lab's peer lists: the other two nodes. */
const peersOf = (self: string) => TUNNEL_LAB.underlayAddresses.filter((address) => address !== self).sort();

/** A snoopable group, the one most tests use. */
const GROUP = '239.60.1.1';
/** Joined only after node 1's daemon restarted. */
const GROUP_AFTER_RESTART = '239.60.1.2';
/** Joined by non-members (on the same UDP port): their sockets and their wire stay silent for GROUP. */
const OTHER_GROUP = '239.60.1.99';
/** A group that pods of other nodes want and no pod of node 1. */
const GROUP_OF_PEERS_ONLY = '239.60.1.4';
/** The MTU tests' group: joined only after node 3 is gone, so node 1 sends it toward node 2 alone. */
const GROUP_MTU = '239.60.1.3';
/** The daemon's warning for a pod port whose MTU leaves no room for the encapsulation. */
const MTU_WARNING = 'a pod port leaves no room for the tunnel';

// ---------------------------------------------------------------------------------------
// Helpers

/** Asserts that `receiver` got datagrams 0..count-1 of `tag`, each exactly once. */
function assertExactlyOnce(receiver: Receiver | readonly Datagram[], tag: string, count: number, who: string): void {
  const faults = deliveryFaults('received' in receiver ? receiver.received : receiver, tag, count);
  assert.deepEqual(faults, { lost: [], duplicated: [] }, `${who}: datagrams of ${tag} lost or duplicated`);
}

const ms = (value: number) => `${Math.round(value)} ms`;

/** The tunnel-mode series of a metrics text, for a failure's message. */
const peerLines = (metrics: string) =>
  metrics
    .split('\n')
    .filter((line) => line.startsWith('mcastctl_peer_'))
    .join('\n') || '(no mcastctl_peer_ series)';

/** The value of `mcastctl_peer_messages_total` for one peer, direction and type in a metrics text (0 when absent). */
function peerMessages(
  metrics: string,
  labels: { peer: string; direction: 'in' | 'out'; type: 'report' | 'query' },
): number {
  for (const line of metrics.split('\n')) {
    const match = /^mcastctl_peer_messages_total\{([^}]*)\} (\S+)$/.exec(line);
    if (match === null) continue;
    const found = Object.fromEntries([...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
    if (found['peer'] === labels.peer && found['direction'] === labels.direction && found['type'] === labels.type)
      return Number(match[2]);
  }
  return 0;
}

/**
 * Display filter of the Geneve frames toward `node` (outer IPv4 destination) whose inner IPv4 destination is `group`:
 * tshark's ip.dst matches either header. A capture on a node's uplink also sees what the node itself sends.
 */
const geneveFor = (group: string, node: TunnelLabNode) =>
  `geneve && ip.dst == ${node.underlayAddress} && ip.dst == ${group}`;

/**
 * Capture times (epoch ms) of the Geneve frames for `group` in `file` (tshark 4.0 compares frame.time_epoch with no
 * number, so the times are read).
 */
async function geneveTimes(file: string, group: string, node: TunnelLabNode): Promise<number[]> {
  const { stdout } = await run(
    ['tshark', '-n', '-r', file, '-Y', geneveFor(group, node), '-T', 'fields', '-e', 'frame.time_epoch'],
    { timeoutMs: 60_000 },
  );
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => Number(line) * 1000);
}

describe('mcastctl daemon in tunnel mode (three nodes, Geneve on br-int, an underlay without multicast)', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;
  const daemons: RunningDaemon[] = [];
  /** Every daemon started, restarted ones included (for their logs). */
  const everyDaemon: { node: string; daemon: RunningDaemon }[] = [];
  /** Node 1 reads its peers from a file (re-read on SIGHUP); nodes 2 and 3 get --peers. */
  let peersFile: string;

  /** Writes node 1's peers file as a YAML list. */
  const writePeers = (addresses: readonly string[]) =>
    writeFileSync(peersFile, `# node 1's peers\n${addresses.map((address) => `- ${address}\n`).join('')}`);

  /** Starts node `index`'s daemon (again, after a kill: the same state directory and control socket). */
  const startNodeDaemon = (index: 0 | 1 | 2): RunningDaemon => {
    const n = tl.nodes[index];
    const peers = index === 0 ? ['--peers-file', peersFile] : ['--peers', TUNNEL_LAB.underlayAddresses.join(',')];
    const daemon = startDaemon(n.node, {
      gateway: n.gateway.name,
      // The underlay carries no multicast: nothing to join upstream, nothing to route.
      multicastInterfaces: [],
      args: ['--tunnel-port', n.tunnel.name, ...peers, '--node-address', n.underlayAddress, ...PEER_TIMERS],
    });
    daemons[index] = daemon;
    everyDaemon.push({ node: n.node.name, daemon });
    return daemon;
  };

  /** Captures Geneve on the wire at each node of `nodes` (the underlay end of its uplink). */
  const captureGeneve = (nodes: readonly TunnelLabNode[], label: string): Promise<Tcpdump[]> =>
    Promise.all(
      nodes.map((n) =>
        lab.startTcpdump(tl.underlayNs, n.uplinkPeer, lab.file(`${label}-${n.node.name}.pcap`), {
          filter: ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort)],
        }),
      ),
    );

  /** Captures the datagrams to `group` that reach a pod's eth0. */
  const captureData = (pod: OvsPod, group: string, label: string): Promise<Tcpdump> =>
    lab.startTcpdump(pod.ns, pod.iface, lab.file(`${label}-${pod.name}.pcap`), {
      filter: ['udp', 'and', 'dst', 'host', group],
    });

  before(async () => {
    const help = await mcastctl(['daemon', '--help']);
    if (!help.stdout.includes('--tunnel-port'))
      throw new Error('this mcastctl daemon has no --tunnel-port: build the tunnel mode first');
    lab = Lab.create();
    const started = Date.now();
    tl = await buildTunnelLab(lab);
    [n1, n2, n3] = tl.nodes;
    peersFile = lab.file('peers-1.yaml');
    writePeers(NODE1_PEERS);
    await Promise.all(([0, 1, 2] as const).map((index) => startNodeDaemon(index).ready()));
    console.log(`tunnel lab and three daemons up in ${ms(Date.now() - started)}`);
  });

  after(async () => {
    const errors = everyDaemon.flatMap(({ node, daemon }) =>
      daemon
        .entries()
        .filter((e) => e['level'] === 'error')
        .map((e) => ({ node, ...e })),
    );
    if (errors.length > 0) console.log('daemon errors (tunnel lab):', errors);
    // Where to keep every daemon's whole log, for a failure's post-mortem (the lab's directory goes with it).
    const logDir = process.env.MCASTCTL_TEST_LOG_DIR;
    if (logDir !== undefined) {
      for (const [index, { node, daemon }] of everyDaemon.entries()) {
        writeFileSync(
          join(logDir, `daemon-tunnel-${index + 1}-${node}.log`),
          `${daemon.args.join(' ')}\n${daemon.logs().join('\n')}\n`,
        );
      }
    }
    await lab?.destroy();
  });

  // Receivers that outlive one test (the memberships the next test expects).
  let atNode1: Receiver;
  let atNode2: Receiver;
  let atNode3: Receiver | undefined;

  it('a pod on node 1 sends: members on nodes 1 and 2 get every datagram once, node 3 gets no Geneve frame for it, non-members nothing', async () => {
    const port = 5201;
    const [sender, member1] = n1.pods as [OvsPod, OvsPod];
    const [member2, nonMember2] = n2.pods as [OvsPod, OvsPod];
    const [nonMember3] = n3.pods as [OvsPod];
    atNode1 = await member1.listen(GROUP, port);
    atNode2 = await member2.listen(GROUP, port);
    const others = await Promise.all([nonMember2, nonMember3].map((pod) => pod.listen(OTHER_GROUP, port)));
    await waitUntil(`OVS of n1 to forward ${GROUP} to ${member1.name}`, async () =>
      ((await ovsGroupPorts(n1.node, GROUP)) ?? []).includes(member1.ofport),
    );
    await waitForTunnelDestinations(n1.node, GROUP, [A2!], 5000);

    // The rule is live: multicast sent onto the underlay from node 1's own address is dropped and counted.
    const droppedBefore = await tl.multicastDropped();
    await n1.node.udp(n1.underlayAddress).send('239.255.0.1', port, 3, { tag: 'underlay' });
    await sleep(200);
    const droppedAfterProbe = await tl.multicastDropped();
    assert.ok(
      droppedAfterProbe - droppedBefore >= 3,
      `the underlay's drop counter went from ${droppedBefore} to ${droppedAfterProbe}`,
    );

    const wire = await captureGeneve([n2, n3], 't1');
    const leaks = await Promise.all([nonMember2, nonMember3].map((pod) => captureData(pod, GROUP, 't1')));
    const count = 100;
    await sender.send(GROUP, port, count, { intervalMs: 5, tag: 't1' });
    await sleep(300);
    const droppedAfterData = await tl.multicastDropped();
    await Promise.all([...wire, ...leaks].map((capture) => capture.stop()));
    const heardByOthers = await Promise.all(others.map((receiver) => receiver.stop()));

    assertExactlyOnce(atNode1, 't1', count, `${member1.name} on node 1`);
    assertExactlyOnce(atNode2, 't1', count, `${member2.name} on node 2`);
    assert.ok(
      atNode2.received.every((datagram) => datagram.from === sender.address),
      'datagrams on node 2 come from the sender',
    );
    assert.deepEqual(heardByOthers, [[], []], 'non-member sockets received datagrams');
    for (const capture of leaks)
      assert.equal(
        await tsharkFrameCount(capture.file, 'udp'),
        0,
        `datagrams of ${GROUP} reached a non-member (${capture.file})`,
      );
    const [toNode2, toNode3] = await Promise.all(
      [n2, n3].map((n, index) => tsharkFrameCount(wire[index]!.file, geneveFor(GROUP, n))),
    );
    assert.equal(toNode2, count, 'one Geneve frame per datagram toward node 2 (its peer list names it twice)');
    assert.equal(toNode3, 0, 'no Geneve frame for the group toward node 3, which has no member');
    // Whatever reached node 2 went as Geneve unicast: had it gone as multicast, the underlay would have counted (and
    // dropped) it.
    assert.ok(
      droppedAfterData - droppedAfterProbe < count,
      `the underlay dropped ${droppedAfterData - droppedAfterProbe} multicast packets while the data flowed`,
    );
  });

  it('a pod on node 3 joins and receives within 1 s; with members on all three nodes each still gets one copy', async () => {
    const port = 5201;
    const [sender] = n1.pods as [OvsPod];
    const [member3] = n3.pods as [OvsPod];
    const count = 400; // 2 s at 5 ms
    const sending = sender.send(GROUP, port, count, { intervalMs: 5, tag: 't2' });
    await sleep(300);
    atNode3 = await member3.listen(GROUP, port);
    const joinedAt = Date.now();
    const receivedAfter = await waitUntil(
      `${member3.name} on node 3 to receive`,
      async () => (sequences(atNode3!.received, 't2').length > 0 ? Date.now() - joinedAt : undefined),
      3000,
      5,
    );
    console.log(`join on node 3: first datagram ${ms(receivedAfter)} after the join call`);
    assert.ok(receivedAfter <= 1000, `node 3's new member waited ${ms(receivedAfter)} for its first datagram`);
    await sending;
    await sleep(300);
    assert.deepEqual(await tunnelDestinations(n1.node, GROUP), [A2, A3].sort());

    // The three-node case of "one copy per member", with node 1's odd peer list.
    const wire = await captureGeneve([n2, n3], 't2b');
    await sender.send(GROUP, port, 50, { intervalMs: 5, tag: 't2b' });
    await sleep(300);
    await Promise.all(wire.map((capture) => capture.stop()));
    for (const [receiver, who] of [
      [atNode1, 'node 1'],
      [atNode2, 'node 2'],
      [atNode3, 'node 3'],
    ] as const)
      assertExactlyOnce(receiver, 't2b', 50, `the member on ${who}`);
    assert.deepEqual(
      await Promise.all([n2, n3].map((n, index) => tsharkFrameCount(wire[index]!.file, geneveFor(GROUP, n)))),
      [50, 50],
    );
  });

  it('status --json lists the peers, groups --json the remote members', async () => {
    for (const [index, n] of tl.nodes.entries()) {
      const status = await control<DaemonStatus>(daemons[index]!, ['status']);
      const tunnel = status.tunnel;
      assert.ok(tunnel, `node ${index + 1}'s status has no tunnel section`);
      assert.equal(tunnel.port, TUNNEL_LAB.tunnelPort);
      assert.equal(tunnel.ofport, n.tunnel.ofport);
      assert.equal(tunnel.nodeAddress, n.underlayAddress);
      assert.deepEqual(
        tunnel.peers.map((peer) => peer.address).sort(),
        peersOf(n.underlayAddress),
        `node ${index + 1}: its own address and duplicates are no peers`,
      );
      for (const peer of tunnel.peers) {
        assert.equal(peer.state, 'up', `node ${index + 1} sees ${peer.address} as ${peer.state}`);
        assert.ok(
          peer.lastContact !== null && Date.now() - Date.parse(peer.lastContact) < PEER_REFRESH_MS + 2000,
          `last contact ${peer.lastContact}`,
        );
      }
    }
    const status1 = await control<DaemonStatus>(daemons[0]!, ['status']);
    assert.deepEqual(
      Object.fromEntries(status1.tunnel!.peers.map((peer) => [peer.address, peer.members])),
      { [A2!]: 1, [A3!]: 1 },
      'on node 1, nodes 2 and 3 are a member of one group each',
    );
    const groups = await control<GroupView[]>(daemons[0]!, ['groups']);
    const view = groups.find((entry) => entry.group === GROUP);
    assert.ok(view, `node 1's groups --json has no ${GROUP}: ${JSON.stringify(groups)}`);
    assert.deepEqual(
      view.members.map((member) => member.port.name),
      [n1.pods[1]!.port],
    );
    const remote = view.remoteMembers ?? [];
    assert.deepEqual(remote.map((member) => member.peer).sort(), [A2, A3].sort());
    for (const member of remote) {
      assert.ok(
        member.expiresInMs > 0 && member.expiresInMs <= PEER_TIMEOUT_MS,
        `${member.peer} expires in ${member.expiresInMs} ms`,
      );
      assert.ok(member.lastRefresh !== null);
    }
  });

  it('the last member on node 2 leaves: within 1 s node 1 sends nothing more toward node 2 for the group', async () => {
    const port = 5201;
    const [sender] = n1.pods as [OvsPod];
    const wire = await captureGeneve([n2], 't3');
    const count = 400; // 2 s at 5 ms
    const sending = sender.send(GROUP, port, count, { intervalMs: 5, tag: 't3' });
    await sleep(500);
    await atNode2.stop();
    const leftAt = Date.now();
    const bucketGone = await waitForTunnelDestinations(n1.node, GROUP, [A3!], 2000);
    await sending;
    await sleep(300);
    await wire[0]!.stop();
    const file = wire[0]!.file;
    console.log(`leave on node 2: node 1's tunnel bucket toward it gone ${ms(bucketGone)} after the leave call`);
    assert.ok(
      (await tsharkFrameCount(file, geneveFor(GROUP, n2))) > 0,
      'the capture saw the stream toward node 2 before the leave',
    );
    const late = (await geneveTimes(file, GROUP, n2)).filter((at) => at > leftAt + 1000);
    assert.deepEqual(
      late.map((at) => ms(at - leftAt)),
      [],
      'Geneve frames for the group toward node 2 more than 1 s after its last member left',
    );
    assertExactlyOnce(atNode3!, 't3', count, 'the member on node 3');
  });

  it('node 3 removed from node 1’s peers file: dropped within 1 s of SIGHUP; put back, a member again', async () => {
    try {
      writePeers([A1!, A2!]);
      daemons[0]!.child.kill('SIGHUP');
      const dropped = await waitForTunnelDestinations(n1.node, GROUP, [], 2000);
      console.log(`peers file: node 3 dropped ${ms(dropped)} after SIGHUP`);
      assert.ok(dropped <= 1000, `node 3 dropped ${ms(dropped)} after SIGHUP`);
      const status = await control<DaemonStatus>(daemons[0]!, ['status']);
      assert.deepEqual(
        status.tunnel?.peers.map((peer) => peer.address),
        [A2],
      );
    } finally {
      // The later tests expect node 3 back as a peer, whatever happened above.
      writePeers(NODE1_PEERS);
      daemons[0]!.child.kill('SIGHUP');
    }
    const back = await waitForTunnelDestinations(n1.node, GROUP, [A3!], PEER_REFRESH_MS + 2000);
    console.log(`peers file: node 3 a member again ${ms(back)} after it was put back`);
    const port = 5201;
    await n1.pods[0]!.send(GROUP, port, 20, { intervalMs: 5, tag: 't4' });
    await sleep(300);
    assertExactlyOnce(atNode3!, 't4', 20, 'the member on node 3');
  });

  it('kill -9 of node 1’s daemon while its pod streams to members on nodes 1 and 2: none lost; after the restart new joins work', async () => {
    const port = 5201;
    const [sender] = n1.pods as [OvsPod];
    const [member2, newcomer2] = n2.pods as [OvsPod, OvsPod];
    const [, newcomer3] = n3.pods as [OvsPod, OvsPod];
    atNode2 = await member2.listen(GROUP, port);
    await waitForTunnelDestinations(n1.node, GROUP, [A2!, A3!], 5000);
    const count = 300; // 1.5 s at 5 ms
    const sending = sender.send(GROUP, port, count, { intervalMs: 5, tag: 't5' });
    await waitUntil('traffic to flow', async () => sequences(atNode1.received, 't5').length >= 20, 3000, 10);
    await daemons[0]!.kill9();
    const killedAt = Date.now();
    await sending;
    await sleep(300);
    assertExactlyOnce(atNode1, 't5', count, 'the member on node 1');
    assertExactlyOnce(atNode2, 't5', count, 'the member on node 2');

    const listening = await startNodeDaemon(0).ready();
    const readyAt = Date.now();
    console.log(`node 1's daemon listening ${ms(readyAt - killedAt)} after kill -9`);
    // Remote membership is back from the peers' answer to its start (a report since the kill), not from the saved state
    // or their next refresh.
    const learned = await waitUntil(
      'node 1 to hear from nodes 2 and 3 as members again',
      async () => {
        const view = (await control<GroupView[]>(daemons[0]!, ['groups'])).find((entry) => entry.group === GROUP);
        const confirmed = (view?.remoteMembers ?? []).filter(
          (member) => member.lastRefresh !== null && Date.parse(member.lastRefresh) >= killedAt,
        );
        return confirmed
          .map((member) => member.peer)
          .sort()
          .join(',') === [A2, A3].sort().join(',')
          ? Date.now() - readyAt
          : undefined;
      },
      PEER_REFRESH_MS + 3000,
      50,
    );
    console.log(
      `node 1's restarted daemon heard from its remote members ${ms(learned)} after it listened (peer refresh every ${ms(PEER_REFRESH_MS)})`,
    );
    assert.ok(learned <= 1000, `remote membership back ${ms(learned)} after the restart: it waited for a refresh`);
    assert.deepEqual(await tunnelDestinations(n1.node, GROUP), [A2, A3].sort());
    const joiners = [
      await newcomer2.listen(GROUP_AFTER_RESTART, port),
      await newcomer3.listen(GROUP_AFTER_RESTART, port),
    ];
    await waitForTunnelDestinations(n1.node, GROUP_AFTER_RESTART, [A2!, A3!], 3000);
    await sender.send(GROUP_AFTER_RESTART, port, 20, { intervalMs: 5, tag: 't5b' });
    await sleep(300);
    const heard = await Promise.all(joiners.map((receiver) => receiver.stop()));
    assertExactlyOnce(heard[0]!, 't5b', 20, `${newcomer2.name} on node 2, joined after the restart`);
    assertExactlyOnce(heard[1]!, 't5b', 20, `${newcomer3.name} on node 3, joined after the restart`);
    await sender.send(GROUP, port, 20, { intervalMs: 5, tag: 't5c' });
    await sleep(300);
    for (const [receiver, who] of [
      [atNode1, 'node 1'],
      [atNode2, 'node 2'],
      [atNode3!, 'node 3'],
    ] as const)
      assertExactlyOnce(receiver, 't5c', 20, `the member on ${who} after the restart`);
    // It asked: a general query to each peer at its start.
    const metrics = await scrapeMetrics(n1.node, String(listening['metrics']));
    for (const peer of [A2!, A3!])
      assert.ok(
        peerMessages(metrics, { peer, direction: 'out', type: 'query' }) >= 1,
        `no query to ${peer} at the start: ${peerLines(metrics)}`,
      );
  });

  it('ovs-vswitchd restart on node 1: delivery to node 2’s members is back within 3 s, without a new join, for a group only peers want too', async () => {
    const port = 5201;
    const [sender] = n1.pods as [OvsPod];
    const [, podOf2] = n2.pods as [OvsPod, OvsPod];
    // No pod of node 1 is a member of this one: node 1 holds it for its peer alone.
    const remoteOnly = await podOf2.listen(GROUP_OF_PEERS_ONLY, port + 1);
    try {
      await waitForTunnelDestinations(n1.node, GROUP_OF_PEERS_ONLY, [A2!], 5000);
      const count = 200; // 5 s at 25 ms
      const sending = [
        sender.send(GROUP, port, count, { intervalMs: 25, tag: 't7' }),
        sender.send(GROUP_OF_PEERS_ONLY, port + 1, count, { intervalMs: 25, tag: 't7r' }),
      ];
      const streams = [
        { receiver: atNode2, tag: 't7' },
        { receiver: remoteOnly, tag: 't7r' },
      ];
      await waitUntil(
        'traffic to flow',
        async () => streams.every(({ receiver, tag }) => sequences(receiver.received, tag).length >= 5),
        3000,
        10,
      );
      await n1.node.restartVswitchd();
      const backAt = Date.now();
      const before = streams.map(({ receiver, tag }) => sequences(receiver.received, tag).length);
      const [deliveredAfter, remoteOnlyAfter] = await Promise.all(
        streams.map(({ receiver, tag }, index) =>
          waitUntil(
            `a datagram of ${tag} at node 2 after the restart`,
            async () => (sequences(receiver.received, tag).length > before[index]! ? Date.now() - backAt : undefined),
            5000,
            5,
          ),
        ),
      );
      await Promise.all(sending);
      await sleep(300);
      console.log(
        `ovs-vswitchd restart on node 1: node 2's members receive again ${ms(deliveredAfter!)} after it is back (${ms(remoteOnlyAfter!)} for the group of peers only)`,
      );
      assert.ok(deliveredAfter! <= 3000, `delivery to node 2 back ${ms(deliveredAfter!)} after the restart`);
      assert.ok(
        remoteOnlyAfter! <= 3000,
        `delivery of the group only peers want back ${ms(remoteOnlyAfter!)} after the restart`,
      );
      assert.deepEqual(await tunnelDestinations(n1.node, GROUP), [A2, A3].sort(), 'the tunnel buckets replayed');
      assert.deepEqual(
        await tunnelDestinations(n1.node, GROUP_OF_PEERS_ONLY),
        [A2],
        'the group of peers only replayed',
      );
    } finally {
      await remoteOnly.stop();
    }
  });

  it('node 3 dies (daemon kill -9, ovs-vswitchd stopped): node 1 stops sending toward it after the peer timeout', async () => {
    const port = 5201;
    assert.deepEqual(await tunnelDestinations(n1.node, GROUP), [A2, A3].sort());
    await daemons[2]!.kill9();
    const vswitchdPid = Number(readFileSync(join(n3.node.rundir, 'ovs-vswitchd.pid'), 'utf8').trim());
    process.kill(vswitchdPid, 'SIGKILL');
    const diedAt = Date.now();
    const dropped = await waitForTunnelDestinations(n1.node, GROUP, [A2!], PEER_TIMEOUT_MS + PEER_REFRESH_MS + 3000);
    console.log(`dead node 3 dropped by node 1 ${ms(dropped)} after it died (peer timeout ${ms(PEER_TIMEOUT_MS)})`);
    // Its last refresh came at most one interval before it died: the timeout runs out between the two.
    assert.ok(
      dropped >= PEER_TIMEOUT_MS - PEER_REFRESH_MS - 500,
      `dropped ${ms(dropped)} after the death: before the peer timeout`,
    );
    assert.ok(dropped <= PEER_TIMEOUT_MS + 1500, `dropped ${ms(dropped)} after the death: long after the peer timeout`);
    const wire = await captureGeneve([n3], 't6');
    await n1.pods[0]!.send(GROUP, port, 20, { intervalMs: 5, tag: 't6' });
    await sleep(300);
    await wire[0]!.stop();
    assert.equal(
      await tsharkFrameCount(wire[0]!.file, geneveFor(GROUP, n3)),
      0,
      'Geneve frames for the group toward the dead node',
    );
    assertExactlyOnce(atNode1, 't6', 20, 'the member on node 1');
    assertExactlyOnce(atNode2, 't6', 20, 'the member on node 2');
    const status = await control<DaemonStatus>(daemons[0]!, ['status']);
    const dead = status.tunnel?.peers.find((peer) => peer.address === A3);
    assert.equal(dead?.members, 0);
    assert.notEqual(dead?.state, 'up');
    console.log(`node 3 died ${ms(Date.now() - diedAt)} ago`);
    for (const receiver of [atNode1, atNode2, atNode3]) await receiver?.stop();
  });

  it('pods at 1,500 on a 1,500 underlay: every daemon warned at its start of each of its pod ports, with pathMtu 1500', () => {
    const overhead = TUNNEL_LAB.encapsulationOverhead;
    for (const { node, daemon } of everyDaemon) {
      const n = tl.nodes.find((candidate) => candidate.node.name === node)!;
      const warnings = daemon
        .entries()
        .filter((entry) => entry['level'] === 'warn' && String(entry['msg']).startsWith(MTU_WARNING));
      assert.deepEqual(
        warnings.map((entry) => entry['port']).sort(),
        n.pods.map((pod) => pod.port).sort(),
        `${node}'s daemon (pid ${daemon.pid}) warns once of each pod port: ${JSON.stringify(warnings)}`,
      );
      for (const entry of warnings) {
        assert.equal(entry['mtu'], 1500, `${node}: the node-side veth's MTU`);
        assert.equal(entry['pathMtu'], 1500, `${node}: the MTU of br-phy, which holds --node-address`);
        const hint = String(entry['hint']);
        assert.ok(
          hint.includes(String(1500 - overhead)) && hint.includes(String(1500 + overhead)),
          `${node}: the hint names both ways out: ${hint}`,
        );
      }
    }
  });

  it('1,472-octet datagrams from pods at 1,500 do not fit the tunnel; with the pods at 1,450, 1,400-octet ones reach node 2, all, full length', async () => {
    const port = 5202;
    const [sender, member1] = n1.pods as [OvsPod, OvsPod];
    const [member2] = n2.pods as [OvsPod];
    const podsOf12 = [...n1.pods, ...n2.pods];
    const local = await member1.listen(GROUP_MTU, port);
    const remote = await member2.listen(GROUP_MTU, port);
    try {
      await waitForTunnelDestinations(n1.node, GROUP_MTU, [A2!], 5000);
      // 1,472 octets fill a 1,500-octet IPv4 packet: the pod's kernel sends it whole, and it leaves no room for the 50.
      await sendSized(sender, { group: GROUP_MTU, port, count: 5, size: 1472, tag: 'm1500', intervalMs: 5 });
      await sleep(250);
      assertExactlyOnce(local, 'm1500', 5, `${member1.name} on node 1 (no tunnel on the way)`);
      assert.deepEqual(sequences(remote.received, 'm1500'), [], 'a datagram over the tunnel room reached node 2');

      // The same memberships, the README's MTU: what fits a pod's eth0 now fits the tunnel.
      for (const pod of podsOf12) await setPodMtu(pod, 1450);
      const count = 50;
      const size = 1400;
      await sendSized(sender, { group: GROUP_MTU, port, count, size, tag: 'm1450', intervalMs: 5 });
      await sleep(250);
      const heard = await remote.stop();
      assertExactlyOnce(heard, 'm1450', count, `${member2.name} on node 2`);
      const mtu1450 = heard.filter((datagram) => datagram.payload.startsWith('m1450 '));
      assert.deepEqual(
        mtu1450
          .filter((datagram) => datagram.payload.length !== size || datagram.from !== sender.address)
          .map((d) => [d.from, d.payload.length]),
        [],
        `every datagram on node 2 is the sender's, ${size} octets long`,
      );
    } finally {
      await Promise.all([local.stop(), remote.stop()]);
      for (const pod of podsOf12) await setPodMtu(pod, 1500);
    }
  });
});
