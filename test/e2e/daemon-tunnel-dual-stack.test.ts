/**
 * Acceptance of tunnel mode for both families at once, on the three-node tunnel lab with
 * dual-stack pods (test/lab/tunnel-lab.ts, `dualStack`): an IPv6 group and an IPv4 group
 * cross the nodes only through the daemons' exchange inside the tunnel (MLDv2 for the
 * one, IGMPv3 for the other) and as Geneve unicast toward the nodes with members, over an
 * underlay that drops and counts every IPv4 and IPv6 multicast packet.
 *
 * Delivery is proved at three places, as in daemon-tunnel.test.ts: members' sockets
 * (every numbered datagram exactly once), tcpdump on a non-member's eth0, and tcpdump on
 * the wire (the underlay end of each node's uplink, the inner destination decoded by
 * tshark). Then a member's leave, reports forged into the tunnel by a host on the
 * underlay that names node 2 inside (believed by nobody, counted), a flood of them
 * (dropped in the switch, counted, the daemon idle meanwhile), and node 2's death, after
 * which its members of both families expire on the peer timeout.
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, tshark, python3, Open vSwitch and the built
 * CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { daemonCpuSeconds } from '../lab/churn.js';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import type { OvsPod, Receiver } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import { traceOn } from '../lab/trace-checks.js';
import { tsharkFrameCount } from '../lab/tshark.js';
import { sendForgedReport } from '../lab/tunnel-forgery.js';
import {
  buildTunnelLab,
  captureTunnelFrames,
  deliveryFaults,
  encapsulatedFor,
  TUNNEL_LAB,
  tunnelDestinations,
  type TunnelLab,
  type TunnelLabNode,
  waitForTunnelDestinations,
} from '../lab/tunnel-lab.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const PEER_REFRESH_MS = 2000;
const PEER_TIMEOUT_MS = 5000;
const PEER_TIMERS = ['--peer-refresh-interval', '2s', '--peer-timeout', '5s'];
const [A1, A2] = TUNNEL_LAB.underlayAddresses as unknown as [string, string, string];

/** The two groups every test runs with, one a family; the non-members listen on the OTHER group of their family. */
const FAMILIES = [
  { name: 'IPv6', group: 'ff1e::61:1', other: 'ff1e::61:99', port: 5301 },
  { name: 'IPv4', group: '239.61.1.1', other: '239.61.1.99', port: 5302 },
] as const;

/** Groups a forger tries to make node 1 send toward node 2. */
const FORGED = { igmp: '239.61.1.66', mld: 'ff1e::61:66' } as const;
/** Joined by a pod of node 1 during the flood. */
const FLOOD_JOIN_GROUP = '239.61.1.77';

const ms = (value: number) => `${Math.round(value)} ms`;

/** The packet-ins the daemon has taken since it started, from its status. */
const packetInsOf = async (daemon: RunningDaemon) =>
  (await control<DaemonStatus>(daemon, ['status'])).counters.packetIns;

describe('mcastctl daemon in tunnel mode, dual-stack (three nodes, IPv6 and IPv4 groups, an underlay without multicast)', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;
  const daemons: RunningDaemon[] = [];
  /** Per family: the members on nodes 1 and 2 (kept from one test to the next). */
  const members = new Map<string, { atNode1: Receiver; atNode2: Receiver }>();

  const captureWire = (nodes: readonly TunnelLabNode[], label: string): Promise<Tcpdump[]> =>
    captureTunnelFrames(lab, tl, nodes, label);

  before(async () => {
    lab = Lab.create();
    const started = Date.now();
    tl = await buildTunnelLab(lab, { dualStack: true, outsideHost: true });
    [n1, n2, n3] = tl.nodes;
    for (const n of tl.nodes) {
      daemons.push(
        startDaemon(n.node, {
          gateway: n.gateway.name,
          multicastInterfaces: [],
          args: [
            '--tunnel-port',
            n.tunnel.name,
            '--peers',
            TUNNEL_LAB.underlayAddresses.join(','),
            '--node-address',
            n.underlayAddress,
            ...PEER_TIMERS,
          ],
        }),
      );
    }
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    console.log(`dual-stack tunnel lab and three daemons up in ${ms(Date.now() - started)}`);
  });

  after(async () => {
    const errors = daemons.flatMap((daemon, index) =>
      daemon
        .entries()
        .filter((entry) => entry['level'] === 'error')
        .map((entry) => ({ node: index + 1, ...entry })),
    );
    if (errors.length > 0) console.log('daemon errors (dual-stack tunnel lab):', errors);
    await lab?.destroy();
  });

  it("a pod on node 1 sends to each family's group: members on nodes 1 and 2 get every datagram once, node 3 gets no tunnel frame for it", async () => {
    const [sender, member1] = n1.pods as [OvsPod, OvsPod];
    const [member2, nonMember2] = n2.pods as [OvsPod, OvsPod];
    const [nonMember3] = n3.pods as [OvsPod];
    for (const family of FAMILIES) {
      const atNode1 = await member1.listen(family.group, family.port);
      const atNode2 = await member2.listen(family.group, family.port);
      members.set(family.name, { atNode1, atNode2 });
      const others = await Promise.all([nonMember2, nonMember3].map((pod) => pod.listen(family.other, family.port)));
      const learned = await waitForTunnelDestinations(n1.node, family.group, [A2], 5000);
      console.log(`${family.name}: node 1 sends ${family.group} toward node 2 ${ms(learned)} after the join calls`);

      const droppedBefore = await tl.multicastDropped();
      const wire = await captureWire([n2, n3], `data-${family.name}`);
      const leaks = await Promise.all(
        [nonMember2, nonMember3].map((pod) =>
          lab.startTcpdump(pod.ns, pod.iface, lab.file(`leak-${family.name}-${pod.name}.pcap`), {
            filter: ['udp', 'and', 'dst', 'host', family.group],
          }),
        ),
      );
      const count = 100;
      await sender.send(family.group, family.port, count, { intervalMs: 5, tag: family.name });
      await sleep(300);
      const droppedAfter = await tl.multicastDropped();
      await Promise.all([...wire, ...leaks].map((capture) => capture.stop()));
      const heardByOthers = await Promise.all(others.map((receiver) => receiver.stop()));

      for (const [receiver, who] of [
        [atNode1, `${member1.name} on node 1`],
        [atNode2, `${member2.name} on node 2`],
      ] as const) {
        assert.deepEqual(
          deliveryFaults(receiver.received, family.name, count),
          { lost: [], duplicated: [] },
          `${family.name}: ${who} lost or got twice`,
        );
      }
      assert.deepEqual(heardByOthers, [[], []], `${family.name}: non-member sockets received datagrams`);
      for (const capture of leaks)
        assert.equal(
          await tsharkFrameCount(capture.file, 'udp'),
          0,
          `${family.name}: datagrams reached a non-member (${capture.file})`,
        );
      const [toNode2, toNode3] = await Promise.all(
        [n2, n3].map((n, index) => tsharkFrameCount(wire[index]!.file, encapsulatedFor(tl, family.group, n))),
      );
      assert.equal(toNode2, count, `${family.name}: one tunnel frame per datagram toward node 2`);
      assert.equal(toNode3, 0, `${family.name}: no tunnel frame for the group toward node 3, which has no member`);
      assert.ok(
        droppedAfter - droppedBefore < count,
        `${family.name}: the underlay dropped ${droppedAfter - droppedBefore} multicast packets while the data flowed`,
      );
    }
  });

  it('groups --json on node 1 shows node 2 as a remote member of both groups; status --json counts them', async () => {
    const groups = await control<GroupView[]>(daemons[0]!, ['groups']);
    for (const family of FAMILIES) {
      const view = groups.find((entry) => entry.group === family.group);
      assert.ok(view, `node 1's groups --json has no ${family.group}`);
      assert.deepEqual(
        (view.remoteMembers ?? []).map((member) => member.peer),
        [A2],
        `${family.name}: remote members of ${family.group}`,
      );
      for (const member of view.remoteMembers ?? [])
        assert.ok(member.expiresInMs > 0 && member.expiresInMs <= PEER_TIMEOUT_MS);
    }
    const status = await control<DaemonStatus>(daemons[0]!, ['status']);
    assert.equal(status.tunnel?.peers.find((peer) => peer.address === A2)?.members, 2);
  });

  it("trace on node 2: its member receives each family's group from the tunnel (exit 0, every stage passed)", async () => {
    const [member2] = n2.pods as [OvsPod];
    const trace = traceOn(n2.node, daemons[1]!);
    for (const family of FAMILIES) {
      const result = await trace(family.group, member2, ['--via', 'tunnel']);
      assert.equal(result.code, 0, `${family.name}: ${result.context}`);
      assert.equal(result.report.verdict, 'delivered', `${family.name}: ${result.context}`);
    }
  });

  it("reports forged into node 1's tunnel by a host on the underlay, naming node 2 inside, change nothing and are counted", async () => {
    const before = (await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0;
    const outside = tl.outside!;
    await sendForgedReport(lab, outside.ns, {
      to: A1,
      kind: 'igmp',
      innerSource: A2,
      group: FORGED.igmp,
      record: 'MODE_IS_EXCLUDE',
    });
    await sendForgedReport(lab, outside.ns, {
      to: A1,
      kind: 'mld',
      innerSource: 'fe80::2',
      group: FORGED.mld,
      record: 'MODE_IS_EXCLUDE',
    });
    // A forged leave in node 2's name of a group node 2 wants.
    for (const family of FAMILIES) {
      await sendForgedReport(lab, outside.ns, {
        to: A1,
        kind: family.name === 'IPv6' ? 'mld' : 'igmp',
        innerSource: family.name === 'IPv6' ? 'fe80::2' : A2,
        group: family.group,
        record: 'CHANGE_TO_INCLUDE_MODE',
      });
    }
    const counted = await waitUntil(
      "node 1 to count the four forged reports as the unknown peer's",
      async () => {
        const drops = (await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0;
        return drops - before >= 4 ? drops - before : undefined;
      },
      3000,
      50,
    );
    assert.equal(counted, 4);
    await sleep(300);
    assert.deepEqual(
      await tunnelDestinations(n1.node, FORGED.igmp),
      [],
      'a forged IGMPv3 join made node 1 send toward node 2',
    );
    assert.deepEqual(
      await tunnelDestinations(n1.node, FORGED.mld),
      [],
      'a forged MLDv2 join made node 1 send toward node 2',
    );
    for (const family of FAMILIES)
      assert.deepEqual(
        await tunnelDestinations(n1.node, family.group),
        [A2],
        `${family.name}: a forged leave cut node 2 off`,
      );
  });

  it('a flood of 500,000 forged reports in 20 s from a host that is no peer: dropped in the switch and counted; the daemon stays under 5 % of a core and a local join meanwhile is forwarded', async () => {
    const before = (await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0;
    const cpuBefore = await daemonCpuSeconds(daemons[0]!);
    const packetInsBefore = await packetInsOf(daemons[0]!);
    const started = performance.now();
    const flooding = sendForgedReport(lab, tl.outside!.ns, {
      to: A1,
      kind: 'igmp',
      innerSource: A2,
      group: FORGED.igmp,
      record: 'MODE_IS_EXCLUDE',
      flood: { count: 500_000, perSecond: 25_000 },
    });
    // A local pod joins in the middle of the flood.
    await sleep(8000);
    const joinedAt = performance.now();
    const member = await n1.pods[1]!.listen(FLOOD_JOIN_GROUP, 5977);
    try {
      await waitForOvsMembers(n1.node, FLOOD_JOIN_GROUP, [n1.pods[1]!]);
      const joinMs = performance.now() - joinedAt;
      await flooding;
      const seconds = (performance.now() - started) / 1000;
      const cpuPercent = (((await daemonCpuSeconds(daemons[0]!)) - cpuBefore) / seconds) * 100;
      // The switch's drops are read once a second.
      await sleep(2500);
      const counted =
        ((await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0) - before;
      const packetIns = (await packetInsOf(daemons[0]!)) - packetInsBefore;
      console.log(
        `flood of 500,000 forged reports in ${seconds.toFixed(1)} s: ${counted} counted, ${packetIns} packet-ins, daemon CPU ${cpuPercent.toFixed(1)} % of a core, a local join forwarded in ${ms(joinMs)}`,
      );
      assert.ok(cpuPercent < 5, `daemon CPU ${cpuPercent.toFixed(1)} % of a core during the flood`);
      assert.ok(counted >= 100_000, `only ${counted} of the flood counted as the unknown peer's`);
      assert.ok(packetIns < 1000, `${packetIns} packet-ins during the flood`);
      assert.deepEqual(await tunnelDestinations(n1.node, FORGED.igmp), [], 'the flood made node 1 send toward node 2');
    } finally {
      await member.stop();
    }
  });

  it('a pod floods Geneve-wrapped IGMP to its gateway for 20 s: dropped in the switch; the daemon stays under 15 % of a core', async () => {
    const flooder = n1.pods[0]!;
    const before = (await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0;
    const cpuBefore = await daemonCpuSeconds(daemons[0]!);
    const packetInsBefore = await packetInsOf(daemons[0]!);
    const started = performance.now();
    // The outer source is the pod's own address (a socket's): no peer's.
    await sendForgedReport(lab, flooder.ns, {
      to: n1.gateway.address,
      kind: 'igmp',
      innerSource: A2,
      group: FORGED.igmp,
      record: 'MODE_IS_EXCLUDE',
      flood: { count: 400_000, perSecond: 20_000 },
    });
    const seconds = (performance.now() - started) / 1000;
    const cpuPercent = (((await daemonCpuSeconds(daemons[0]!)) - cpuBefore) / seconds) * 100;
    await sleep(2500);
    const counted =
      ((await control<DaemonStatus>(daemons[0]!, ['status'])).tunnel!.drops['unknown-peer'] ?? 0) - before;
    const packetIns = (await packetInsOf(daemons[0]!)) - packetInsBefore;
    console.log(
      `a pod's Geneve flood to its gateway, 400,000 frames in ${seconds.toFixed(1)} s: ${counted} counted as unknown-peer, ${packetIns} packet-ins, daemon CPU ${cpuPercent.toFixed(1)} % of a core`,
    );
    assert.ok(cpuPercent < 15, `daemon CPU ${cpuPercent.toFixed(1)} % of a core during the pod's flood`);
    assert.ok(packetIns < 1000, `${packetIns} packet-ins during the pod's flood`);
    assert.deepEqual(
      await tunnelDestinations(n1.node, FORGED.igmp),
      [],
      "the pod's flood made node 1 send toward node 2",
    );
  });

  it("node 2's last member of each group leaves: within 1 s node 1 sends that group toward node 2 no more", async () => {
    for (const family of FAMILIES) {
      const { atNode2 } = members.get(family.name)!;
      await atNode2.stop();
      const gone = await waitForTunnelDestinations(n1.node, family.group, [], 2000);
      console.log(`${family.name}: node 1's tunnel bucket toward node 2 gone ${ms(gone)} after the leave call`);
      assert.ok(gone <= 1000, `${family.name}: the bucket went ${ms(gone)} after the leave`);
      const wire = await captureWire([n2], `leave-${family.name}`);
      await n1.pods[0]!.send(family.group, family.port, 20, { intervalMs: 5, tag: `${family.name}-after` });
      await sleep(300);
      await wire[0]!.stop();
      assert.equal(
        await tsharkFrameCount(wire[0]!.file, encapsulatedFor(tl, family.group, n2)),
        0,
        `${family.name}: tunnel frames toward node 2 after its leave`,
      );
      const { atNode1 } = members.get(family.name)!;
      assert.deepEqual(
        deliveryFaults(atNode1.received, `${family.name}-after`, 20),
        { lost: [], duplicated: [] },
        `${family.name}: the member on node 1`,
      );
    }
  });

  it('node 2 dies (its daemon kill -9): its members of both families expire on node 1 after the peer timeout', async () => {
    const [member2] = n2.pods as [OvsPod];
    const again = await Promise.all(FAMILIES.map((family) => member2.listen(family.group, family.port)));
    for (const family of FAMILIES) await waitForTunnelDestinations(n1.node, family.group, [A2], 5000);
    await daemons[1]!.kill9();
    const diedAt = Date.now();
    const expired = await Promise.all(
      FAMILIES.map((family) =>
        waitForTunnelDestinations(n1.node, family.group, [], PEER_TIMEOUT_MS + PEER_REFRESH_MS + 3000),
      ),
    );
    for (const [index, family] of FAMILIES.entries()) {
      const after = expired[index]!;
      console.log(
        `${family.name}: dead node 2's membership expired on node 1 ${ms(after)} after it died (peer timeout ${ms(PEER_TIMEOUT_MS)})`,
      );
      assert.ok(
        after >= PEER_TIMEOUT_MS - PEER_REFRESH_MS - 500,
        `${family.name}: expired ${ms(after)} after the death: before the peer timeout`,
      );
      assert.ok(
        after <= PEER_TIMEOUT_MS + 1500,
        `${family.name}: expired ${ms(after)} after the death: long after the peer timeout`,
      );
    }
    await Promise.all(again.map((receiver) => receiver.stop()));
    const status = await control<DaemonStatus>(daemons[0]!, ['status']);
    assert.equal(status.tunnel?.peers.find((peer) => peer.address === A2)?.members, 0);
    console.log(`node 2 died ${ms(Date.now() - diedAt)} ago`);
  });
});
