/**
 * Acceptance of `mcastctl daemon` for IPv6 multicast on one lab node: real OVS
 * (user-space datapath), dual-stack pods whose kernels send the MLD (v2, and v1 where
 * forced), real IPv6 UDP multicast, the built CLI.
 *
 * First, before the daemon starts, the lab itself is checked on the bridge's default
 * NORMAL flow (DAD, Neighbor Discovery, IPv6 UDP between pods, the capture), so that a
 * failure with the daemon is the daemon's. Then, with the daemon (short timers: GMI 5 s):
 * delivery to members only, an MLDv1 member, fast leave, expiry, a dual-stack member,
 * Neighbor Discovery and DAD through the daemon's flows, kill -9 and ovs-vswitchd
 * restarts.
 *
 * Delivery is proved at two places, as in daemon.test.ts: what members' sockets got, and
 * tcpdump on a pod's eth0 for non-members and leave timing (read here with a small pcap
 * reader of its own: the tests do not trust the project's codecs).
 *
 * Needs root, iproute2, ethtool, tcpdump, nft (nftables), python3, Open vSwitch and the
 * built CLI (`npm run build`). No `ping`: echo requests go out of a raw ICMPv6 socket.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { ipv6Addresses, MldListener } from '../lab/mld-hosts.js';
import { isData, isLeave, ovsGroupPorts6, ping6, readPcap6, waitForOvsMembers6 } from '../lab/ipv6-checks.js';
import { missingSequences, OvsNode, sequences, type OvsPod, type Receiver } from '../lab/ovs.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** Group Membership Interval = robustness 2 × query interval 2 s + query response interval 1 s. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const GMI_MS = 2 * 2000 + 1000;
const QUERY_INTERVAL_MS = 2000;

const NFT_TABLE = 'mcltest6';

// ---------------------------------------------------------------------------------------
// Helpers

const ms = (value: number) => `${Math.round(value)} ms`;

/** Member port names of every group, sorted: { group: [port names] }. */
function membership(groups: readonly GroupView[]): Record<string, string[]> {
  return Object.fromEntries(
    groups
      .filter((view) => view.members.length > 0)
      .map((view) => [view.group, [...new Set(view.members.map((member) => member.port.name))].sort()]),
  );
}

/** Drops every MLD message (reports and dones, v1 and v2) the pod's kernel sends (nft, inet output hook). */
async function blockMld(lab: Lab, pod: OvsPod): Promise<void> {
  const rules = `table inet ${NFT_TABLE} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    icmpv6 type { mld-listener-report, mld-listener-done, mld2-listener-report } counter drop\n  }\n}\n`;
  await lab.exec(pod.ns, ['nft', '-f', '-'], { input: rules });
}

async function unblockMld(lab: Lab, pod: OvsPod): Promise<void> {
  await lab.exec(pod.ns, ['nft', 'delete', 'table', 'inet', NFT_TABLE]);
}

/** How many MLD messages the pod's nft rule dropped. */
async function mldDropped(lab: Lab, pod: OvsPod): Promise<number> {
  const { stdout } = await lab.exec(pod.ns, ['nft', 'list', 'table', 'inet', NFT_TABLE]);
  return Number(stdout.match(/counter packets (\d+)/)?.[1] ?? NaN);
}

// ---------------------------------------------------------------------------------------

describe('mcastctl daemon: IPv6 multicast on one node', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  /** A, B: members (kernel MLDv2); C: the sender; D: a non-member first, then an MLDv1 member. */
  let a: OvsPod;
  let b: OvsPod;
  let c: OvsPod;
  let d: OvsPod;
  let daemon: RunningDaemon | undefined;
  const receivers: Receiver[] = [];

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.36.1.1/24', address6: 'fd00:36::1/64' });
    // In parallel: each waits for its own DAD (a second or two).
    [a, b, c, d] = await Promise.all([
      node.addPod('pa', { address: '10.36.1.11/24', address6: 'fd00:36::11/64' }),
      node.addPod('pb', { address: '10.36.1.12/24', address6: 'fd00:36::12/64' }),
      node.addPod('pc', { address: '10.36.1.13/24', address6: 'fd00:36::13/64' }),
      node.addPod('pd', { address: '10.36.1.14/24', address6: 'fd00:36::14/64', mldVersion: 1 }),
    ]);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  /** A receiver stopped in after() even when a test fails half-way. */
  async function listen(pod: OvsPod, group: string, port: number): Promise<Receiver> {
    const receiver = await pod.listen(group, port);
    receivers.push(receiver);
    return receiver;
  }

  it('the lab without the daemon (NORMAL bridge): DAD passed, ping -6, IPv6 multicast and unicast UDP, the capture', async () => {
    for (const pod of [a, b, c, d]) {
      const states = await ipv6Addresses(lab, pod.ns, pod.iface);
      assert.ok(pod.address6 !== undefined && pod.linkLocal6 !== undefined, `${pod.name} has no IPv6 addresses`);
      assert.deepEqual(
        states.filter((state) => state.tentative || state.dadfailed),
        [],
        `${pod.name}: addresses still tentative or DAD failed`,
      );
      assert.ok(states.some((state) => state.address === pod.address6));
    }
    assert.equal(await ping6(lab, a, b.address6!), '3/3');
    assert.equal(await ping6(lab, a, `${b.linkLocal6!}%eth0`), '3/3');
    const group = 'ff15::8000:99';
    const port = 7000;
    const capture = await lab.startTcpdump(d.ns, d.iface, lab.file('lab-flood.pcap'), {
      filter: ['ip6', 'and', 'udp'],
    });
    const r = await listen(a, group, port);
    const unicast = await listen(b, b.address6!, port);
    await sleep(100);
    await c.send(group, port, 10, { intervalMs: 5, tag: 'n' });
    await c.send(b.address6!, port, 3, { intervalMs: 5, tag: 'u' });
    await sleep(300);
    const [got, gotUnicast] = await Promise.all([r.stop(), unicast.stop()]);
    await capture.stop();
    assert.deepEqual(
      missingSequences(sequences(got, 'n'), 10),
      [],
      'IPv6 multicast between pods on the NORMAL bridge lost datagrams',
    );
    assert.ok(got.every((datagram) => datagram.from === c.address6));
    assert.deepEqual(missingSequences(sequences(gotUnicast, 'u'), 3), [], 'IPv6 unicast UDP lost datagrams');
    // NORMAL floods the group: the capture on a non-member sees it all (so it can see a leak later).
    const flooded = readPcap6(capture.file).filter((packet) => isData(packet, group, port));
    assert.equal(flooded.length, 10, `the capture on ${d.name} saw ${flooded.length} of 10 flooded datagrams`);
  });

  describe('with the daemon', { concurrency: 1 }, () => {
    const group = 'ff15::8000:1';
    const port = 7001;
    let ra: Receiver;
    let rb: Receiver;

    before(async () => {
      daemon = startDaemon(node, { multicastInterfaces: [], args: SHORT_TIMERS });
      await daemon.ready();
    });

    it('delivery to members only: A and B get every datagram, the non-member D nothing on its wire; the OVS flow, group and groups view', async () => {
      const capture = await lab.startTcpdump(d.ns, d.iface, lab.file('a-nonmember.pcap'), {
        filter: ['ip6', 'and', 'udp'],
      });
      ra = await listen(a, group, port);
      rb = await listen(b, group, port);
      const ports = await waitForOvsMembers6(node, group, [a, b], [c, d]);
      await sleep(200);
      await c.send(group, port, 20, { intervalMs: 5, tag: 'a' });
      await sleep(300);
      await capture.stop();
      assert.deepEqual(missingSequences(sequences(ra.received, 'a'), 20), [], `${a.name} missed datagrams`);
      assert.deepEqual(missingSequences(sequences(rb.received, 'a'), 20), [], `${b.name} missed datagrams`);
      const leaked = readPcap6(capture.file).filter((packet) => isData(packet, group, port));
      assert.equal(leaked.length, 0, `${leaked.length} datagrams of ${group} reached the non-member's eth0`);
      // Exactly A's and B's pod ports (the gateway port may be there too: it is no pod).
      const podPorts = new Set(node.pods.map((pod) => pod.ofport));
      assert.deepEqual(
        ports.filter((p) => podPorts.has(p)).sort((x, y) => x - y),
        [a.ofport, b.ofport].sort((x, y) => x - y),
        `OVS group of ${group}: ${ports.join(',')}`,
      );
      const view = await control<GroupView[]>(daemon!, ['groups']);
      assert.deepEqual(
        membership(view)[group],
        [a.port, b.port].sort(),
        `groups --json: ${JSON.stringify(membership(view))}`,
      );
    });

    it('an MLDv1 member joins and receives; fast leave of A stops its traffic within 1 s; B, its MLD blocked, expires after about the GMI', async () => {
      const rd = await listen(d, group, port);
      await waitForOvsMembers6(node, group, [a, b, d]);
      await sleep(200);
      await c.send(group, port, 20, { intervalMs: 5, tag: 'v1' });
      await sleep(300);
      assert.deepEqual(missingSequences(sequences(rd.received, 'v1'), 20), [], `${d.name} (MLDv1) missed datagrams`);

      // Fast leave: C sends every 20 ms; A leaves; its wire shows the leave and the last datagram.
      const capture = await lab.startTcpdump(a.ns, a.iface, lab.file('b-leaver.pcap'), { filter: ['ip6'] });
      const count = 150; // 3 s at 20 ms
      const sending = c.send(group, port, count, { intervalMs: 20, tag: 'fl' });
      await waitUntil(`${a.name} to receive`, async () => sequences(ra.received, 'fl').length >= 10, 3000);
      const closedAt = Date.now();
      await ra.stop();
      await sending;
      await sleep(200);
      await capture.stop();
      const packets = readPcap6(capture.file);
      const leave = packets.find((packet) => packet.ts >= closedAt - 50 && isLeave(packet, a.linkLocal6!, group));
      assert.ok(leave, `no MLD leave of ${group} from ${a.name} on its eth0`);
      const lastData = packets.filter((packet) => isData(packet, group, port)).at(-1)!;
      const latency = lastData.ts - leave.ts;
      console.log(
        `fast leave (IPv6): last datagram at ${a.name}'s eth0 ${ms(latency)} from its leave (one is sent every 20 ms)`,
      );
      assert.ok(latency <= 1000, `traffic went on for ${ms(latency)} after the leave (limit 1 s)`);
      assert.deepEqual(
        missingSequences(sequences(rb.received, 'fl'), count),
        [],
        `${b.name} (still a member) missed datagrams`,
      );
      await waitForOvsMembers6(node, group, [b, d], [a]);

      // Expiry: B's reports (and its leave) never get out; its port goes after the GMI.
      await blockMld(lab, b);
      try {
        const blockedAt = Date.now();
        await rb.stop();
        const goneAfter = await waitUntil(
          `OVS to drop ${b.name} from ${group}`,
          async () =>
            ((await ovsGroupPorts6(node, group)) ?? []).includes(b.ofport) ? undefined : Date.now() - blockedAt,
          GMI_MS + 5000,
          100,
        );
        console.log(
          `expiry (IPv6): ${b.name} dropped ${ms(goneAfter)} after its MLD was blocked (GMI ${GMI_MS} ms; its last report came up to one query interval before)`,
        );
        assert.ok((await mldDropped(lab, b)) >= 1, 'nft dropped nothing: closing the socket should have sent a leave');
        assert.ok(
          goneAfter >= GMI_MS - QUERY_INTERVAL_MS - 1000,
          `dropped ${ms(goneAfter)} after the block: too early for an expiry`,
        );
        assert.ok(goneAfter <= GMI_MS + 1500, `dropped ${ms(goneAfter)} after the block: later than GMI + 1.5 s`);
        const view = await control<GroupView[]>(daemon!, ['groups']);
        assert.deepEqual(
          membership(view)[group],
          [d.port],
          `groups --json after the expiry: ${JSON.stringify(membership(view))}`,
        );
      } finally {
        await unblockMld(lab, b).catch(() => undefined);
        await rd.stop();
      }
    });

    it('dual-stack: one pod in an IPv4 group and an IPv6 group gets both streams', async () => {
      const [group4, group6, dsPort] = ['239.36.3.1', 'ff15::8000:3', 7003];
      const r4 = await listen(a, group4, dsPort);
      const r6 = await listen(a, group6, dsPort);
      await waitForOvsMembers6(node, group6, [a]);
      await sleep(200);
      await Promise.all([
        c.send(group4, dsPort, 20, { intervalMs: 5, tag: 'v4' }),
        c.send(group6, dsPort, 20, { intervalMs: 5, tag: 'v6' }),
      ]);
      await sleep(300);
      const [got4, got6] = await Promise.all([r4.stop(), r6.stop()]);
      assert.deepEqual(missingSequences(sequences(got4, 'v4'), 20), [], `${a.name} missed IPv4 datagrams`);
      assert.deepEqual(missingSequences(sequences(got6, 'v6'), 20), [], `${a.name} missed IPv6 datagrams`);
      assert.ok(
        got4.every((datagram) => datagram.from === c.address) && got6.every((datagram) => datagram.from === c.address6),
      );
    });

    it("per-source forwarding and SSM: a's (S1, G) join gets S1's datagrams on its wire and none of S2's; a plain join of an SSM group is refused", async () => {
      const group = 'ff3e::8009:1';
      const plainSsm = 'ff3e::8009:2';
      const ssmPort = 7009;
      const capture = await lab.startTcpdump(a.ns, a.iface, lab.file('ssm6-a.pcap'), { filter: ['ip6', 'and', 'udp'] });
      const listener = await MldListener.start(lab, a);
      await listener.do('join-source', group, c.address6!);
      // The (S1, G) entry: a flow ipv6_src=S1,ipv6_dst=G to an OVS group with a's port.
      await waitUntil(
        `an (S,G) flow for (${c.address6}, ${group})`,
        async () => (await node.ofctl('dump-flows', node.bridge)).includes(`ipv6_src=${c.address6},ipv6_dst=${group}`),
        5000,
        100,
      );
      await Promise.all([
        c.send(group, ssmPort, 20, { intervalMs: 5, tag: 's1' }),
        d.send(group, ssmPort, 20, { intervalMs: 5, tag: 's2' }),
      ]);
      await listener.do('join', plainSsm);
      await waitUntil(
        `an ssm refusal on ${a.name}'s port`,
        async () => {
          const status = await control<DaemonStatus>(daemon!, ['status']);
          return (status.igmpRefused?.byPort.find((entry) => entry.port.name === a.port)?.counts['ssm'] ?? 0) > 0;
        },
        5000,
        100,
      );
      await c.send(plainSsm, ssmPort, 10, { intervalMs: 5, tag: 'plain' });
      await sleep(300);
      await capture.stop();
      const data = readPcap6(capture.file).filter((packet) => packet.udp?.dstPort === ssmPort);
      const from = (source: string, to: string) =>
        data.filter((packet) => packet.src === source && packet.dst === to).length;
      assert.equal(from(c.address6!, group), 20, "every datagram of S1 reached a's wire");
      assert.equal(from(d.address6!, group), 0, "no datagram of S2 reached a's wire");
      assert.equal(from(c.address6!, plainSsm), 0, 'nothing of the refused SSM group reached a');
      assert.ok(
        !(await node.ofctl('dump-flows', node.bridge)).includes(`ipv6_dst=${plainSsm}`),
        'no flow for the refused group',
      );
    });

    it('Neighbor Discovery with the daemon: ping -6 to a pod (global and link-local) and to the gateway; a pod added now passes DAD and answers', async () => {
      assert.equal(await ping6(lab, a, b.address6!), '3/3');
      assert.equal(await ping6(lab, a, `${b.linkLocal6!}%eth0`), '3/3');
      assert.equal(await ping6(lab, a, node.gateway!.address6!), '3/3', 'the gateway answers');
      const startedAt = Date.now();
      // addPod waits until neither address is tentative, and fails on dadfailed.
      const e = await node.addPod('pe', { address: '10.36.1.15/24', address6: 'fd00:36::15/64' });
      console.log(
        `DAD (IPv6): a pod added while the daemon runs was ready ${ms(Date.now() - startedAt)} after addPod began`,
      );
      const states = await ipv6Addresses(lab, e.ns, e.iface);
      assert.deepEqual(
        states.filter((state) => state.tentative || state.dadfailed),
        [],
      );
      assert.equal(await ping6(lab, a, e.address6!), '3/3');
      assert.equal(await ping6(lab, e, `${a.linkLocal6!}%eth0`), '3/3');
    });

    it('restarts: kill -9 of the daemon loses no datagram; after an ovs-vswitchd restart the IPv6 group is back within 3 s', async () => {
      const [rgroup, rport] = ['ff15::8000:5', 7005];
      const r = await listen(b, rgroup, rport);
      await waitForOvsMembers6(node, rgroup, [b]);
      // Saved about 1 s after the change.
      const stateFile = `${daemon!.stateDir}/state.json`;
      await waitUntil(
        'state.json with the group',
        async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(rgroup),
        5000,
        100,
      );
      const count = 300; // 3 s at 10 ms
      const sending = c.send(rgroup, rport, count, { intervalMs: 10, tag: 'rs' });
      await waitUntil('traffic to flow', async () => r.received.length >= 20, 3000, 10);
      await daemon!.kill9();
      const killedAt = Date.now();
      daemon = startDaemon(node, { multicastInterfaces: [], args: SHORT_TIMERS });
      await daemon.ready();
      const readyMs = Date.now() - killedAt;
      await sending;
      await sleep(300);
      const lost = missingSequences(sequences(r.received, 'rs'), count);
      console.log(
        `restart (IPv6): new daemon listening ${ms(readyMs)} after kill -9; ${lost.length} of ${count} datagrams lost`,
      );
      assert.deepEqual(lost, [], 'datagrams lost across the restart');
      const view = await control<GroupView[]>(daemon, ['groups']);
      assert.deepEqual(
        membership(view)[rgroup],
        [b.port],
        `after the restart groups --json shows ${JSON.stringify(membership(view))}`,
      );

      await node.restartVswitchd();
      const backAt = Date.now();
      await waitForOvsMembers6(node, rgroup, [b], [], 5000);
      const flowsMs = Date.now() - backAt;
      console.log(
        `OVS restart (IPv6): the daemon's ipv6_dst flow and group back ${ms(flowsMs)} after ovs-vswitchd was`,
      );
      assert.ok(flowsMs <= 3000, `the IPv6 group came back ${ms(flowsMs)} after the restart (limit 3 s)`);
      const before = r.received.length;
      await c.send(rgroup, rport, 20, { intervalMs: 5, tag: 'ov' });
      await sleep(300);
      assert.deepEqual(
        missingSequences(sequences(r.received.slice(before), 'ov'), 20),
        [],
        `${b.name} missed datagrams after the OVS restart`,
      );
      await r.stop();
    });
  });
});
