/**
 * Acceptance of `mcastctl daemon` on the two-node multicast lab: real OVS (user-space
 * datapath) per node, an underlay Linux bridge with IGMP snooping and an IGMPv3 querier;
 * joins and leaves through real sockets, real UDP multicast, the built CLI. The daemons
 * here route nothing (no multicast interfaces): what crosses nodes and the outside through
 * the kernel is tested in test/routing/daemon-routed.test.ts.
 *
 * Two labs run side by side (they share nothing):
 * - "delivery": both nodes with a daemon, 4 pods each: pod to pod, leave (fast on node a,
 *   last-member queries on node b) and expiry (a short query interval: GMI 5 s).
 * - "lifecycle": 3 pods a node, daemons with the default timers: restart of the daemon
 *   (kill -9), restart of ovs-vswitchd, the control socket and metrics, SIGTERM, and bad
 *   configuration.
 *
 * Delivery is proved at two places: what members' sockets got (every numbered datagram)
 * and, for non-members and leave timing, tcpdump on the pod's eth0 (a pod whose kernel
 * has not joined a group drops its frames before any socket, so only the wire shows that
 * OVS did not send them there).
 *
 * Needs root, iproute2, ethtool, tcpdump, nft (nftables), curl, python3, Open vSwitch and
 * the built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl, parseNdjson, startMcastctl, type CliResult } from '../lab/cli.js';
import { startDaemon, type RunningDaemon, control } from '../lab/daemon.js';
import { Lab, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import { buildMulticastLab, type MulticastLab } from '../lab/multicast-lab.js';
import { missingSequences, sequences, type OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { isData, isGroupQuery, isLeave, isReport, readPcap } from '../lab/pcap-packets.js';
import { ovsGroupPorts, waitForOvsMembers } from '../lab/switch-checks.js';
import type { DaemonEvent, DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** Timers of the delivery lab's daemons: Group Membership Interval = 2 × 2 s + 1 s. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const GMI_MS = 2 * 2000 + 1000;
/** Node b of the delivery lab: no fast leave, 2 group-specific queries 500 ms apart. */
const SLOW_LEAVE = ['--no-fast-leave', '--last-member-query-interval', '500ms'];
const MAX_RESPONSE_MS = 2 * 500;

// ---------------------------------------------------------------------------------------
// Helpers

const ms = (value: number) => `${Math.round(value)} ms`;

/** `mcastctl <args> --json --control-socket <daemon's>`, parsed; fails on a non-zero exit. */

/** Member port names of every group, sorted: { group: [port names] }. */
function membership(groups: readonly GroupView[]): Record<string, string[]> {
  return Object.fromEntries(
    groups
      .filter((view) => view.members.length > 0)
      .map((view) => [view.group, [...new Set(view.members.map((member) => member.port.name))].sort()]),
  );
}

const NFT_TABLE = 'mcltest';

/** Drops every IGMP message the pod's kernel sends (nft, output hook): reports and leaves never reach OVS. */
async function blockIgmp(lab: Lab, pod: OvsPod): Promise<void> {
  const rules = `table ip ${NFT_TABLE} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    ip protocol igmp counter drop\n  }\n}\n`;
  await lab.exec(pod.ns, ['nft', '-f', '-'], { input: rules });
}

async function unblockIgmp(lab: Lab, pod: OvsPod): Promise<void> {
  await lab.exec(pod.ns, ['nft', 'delete', 'table', 'ip', NFT_TABLE]);
}

/** How many IGMP messages the pod's nft rule dropped. */
async function igmpDropped(lab: Lab, pod: OvsPod): Promise<number> {
  const { stdout } = await lab.exec(pod.ns, ['nft', 'list', 'table', 'ip', NFT_TABLE]);
  return Number(stdout.match(/counter packets (\d+)/)?.[1] ?? NaN);
}

/** A member socket in a pod that can be killed with SIGKILL (the lab's Receiver can only close). */
const MEMBER_PY = `
import socket, sys
group, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((group, port))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("0.0.0.0"))
print("ready", flush=True)
while True:
    s.recv(65535)
`;

async function killableMember(lab: Lab, pod: OvsPod, group: string, port: number): Promise<ChildProcess> {
  const child = lab.spawn(pod.ns, ['python3', '-u', '-c', MEMBER_PY, group, String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => line === 'ready' && resolve());
    child.once('exit', (code) => reject(new Error(`member in ${pod.ns} exited (${code})`)));
  });
  return child;
}

// ---------------------------------------------------------------------------------------

describe('mcastctl daemon', { concurrency: true }, () => {
  describe('delivery lab: two nodes, 4 pods each', { concurrency: 1 }, () => {
    let lab: Lab;
    let ml: MulticastLab;
    let daemonA: RunningDaemon;
    let daemonB: RunningDaemon;

    before(async () => {
      lab = Lab.create();
      ml = await buildMulticastLab(lab, { podsPerNode: 4, external: false });
      const [a, b] = ml.nodes;
      daemonA = startDaemon(a.node, { args: SHORT_TIMERS });
      daemonB = startDaemon(b.node, { args: [...SHORT_TIMERS, ...SLOW_LEAVE] });
      await Promise.all([daemonA, daemonB].map((daemon) => daemon.ready()));
    });

    after(async () => {
      const errors = [daemonA, daemonB].flatMap(
        (daemon) => daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [],
      );
      if (errors.length > 0) console.log('daemon errors (delivery lab):', errors);
      await lab?.destroy();
    });

    it('pod to pod on one node: both members get every datagram, a non-member pod gets none', async () => {
      const { node, pods } = ml.nodes[0];
      const [sender, m1, m2, other] = pods as [OvsPod, OvsPod, OvsPod, OvsPod];
      const group = '239.5.1.1';
      const port = 5101;
      const capture = await lab.startTcpdump(other.ns, other.iface, lab.file('t1-nonmember.pcap'), { filter: ['udp'] });
      const r1 = await m1.listen(group, port);
      const r2 = await m2.listen(group, port);
      // The non-member listens on the same port (for another group): its socket and its wire stay silent.
      const rOther = await other.listen('239.5.1.99', port);
      await waitForOvsMembers(node, group, [m1, m2]);
      await sender.send(group, port, 50, { intervalMs: 5, tag: 't1' });
      await sleep(300);
      const [got1, got2, gotOther] = await Promise.all([r1.stop(), r2.stop(), rOther.stop()]);
      await capture.stop();
      assert.deepEqual(missingSequences(sequences(got1, 't1'), 50), [], `${m1.name} missed datagrams`);
      assert.deepEqual(missingSequences(sequences(got2, 't1'), 50), [], `${m2.name} missed datagrams`);
      assert.equal(gotOther.length, 0, 'the non-member socket received datagrams');
      const leaked = readPcap(capture.file).filter((packet) => isData(packet, group, port));
      assert.equal(leaked.length, 0, `${leaked.length} datagrams of ${group} reached the non-member's eth0`);
      const ports = (await ovsGroupPorts(node, group)) ?? [];
      assert.ok(
        !ports.includes(other.ofport) && !ports.includes(sender.ofport),
        `OVS group of ${group} has non-member ports: ${ports.join(',')}`,
      );
    });

    /**
     * Sender s sends every 20 ms to members m1 (which leaves) and m2 (which stays: proof that
     * the traffic went on); tcpdump on m1's eth0 sees its leave and the data that still
     * came. Returns the leave-to-last-datagram latency and the capture.
     */
    async function measureLeave(
      lab: Lab,
      node: OvsNode,
      s: OvsPod,
      m1: OvsPod,
      m2: OvsPod,
      group: string,
      port: number,
      tag: string,
    ) {
      const capture: Tcpdump = await lab.startTcpdump(m1.ns, m1.iface, lab.file(`${tag}-leaver.pcap`), {
        filter: ['igmp', 'or', 'udp'],
      });
      const leaver: Receiver = await m1.listen(group, port);
      const stayer: Receiver = await m2.listen(group, port);
      await waitForOvsMembers(node, group, [m1, m2]);
      const count = 200; // 4 s at 20 ms
      const sending = s.send(group, port, count, { intervalMs: 20, tag });
      await waitUntil(`${m1.name} to receive`, async () => leaver.received.length >= 10, 3000);
      const closedAt = Date.now();
      const gotLeaver = await leaver.stop();
      await sending;
      await sleep(200);
      const gotStayer = await stayer.stop();
      await capture.stop();
      const packets = readPcap(capture.file);
      const leave = packets.find((packet) => packet.ts >= closedAt - 50 && isLeave(packet, m1.address, group));
      assert.ok(leave, `no leave for ${group} from ${m1.name} on its eth0`);
      const data = packets.filter((packet) => isData(packet, group, port));
      const lastData = data.at(-1)!;
      const afterLeave = data.filter((packet) => packet.ts > leave.ts);
      // The sender went on for seconds after the leave, and the other member got it all.
      assert.deepEqual(
        missingSequences(sequences(gotStayer, tag), count),
        [],
        `${m2.name} (still a member) missed datagrams`,
      );
      assert.ok(gotLeaver.length >= 10);
      return {
        latencyMs: Math.max(0, lastData.ts - leave.ts),
        rawMs: lastData.ts - leave.ts,
        afterLeave: afterLeave.length,
        packets,
        leave,
      };
    }

    it('leave with fast leave (node a): traffic to the old member stops within 1 s of its leave on the wire', async () => {
      const { node, pods } = ml.nodes[0];
      const [s, m1, m2] = pods as [OvsPod, OvsPod, OvsPod];
      const { latencyMs, rawMs, afterLeave } = await measureLeave(lab, node, s, m1, m2, '239.5.4.1', 5104, 'fl');
      console.log(
        `fast leave: last datagram at ${m1.name}'s eth0 ${ms(rawMs)} from its leave (${afterLeave} datagrams after it; one is sent every 20 ms)`,
      );
      assert.ok(latencyMs <= 1000, `traffic went on for ${ms(latencyMs)} after the leave (limit 1 s)`);
      await waitForOvsMembers(node, '239.5.4.1', [], [m1]);
    });

    it('leave without fast leave (node b): group-specific queries to the port, traffic stops within robustness × LMQI + 1 s', async () => {
      const { node, pods } = ml.nodes[1];
      const [s, m1, m2] = pods as [OvsPod, OvsPod, OvsPod];
      const group = '239.5.4.2';
      const { latencyMs, afterLeave, packets, leave } = await measureLeave(lab, node, s, m1, m2, group, 5104, 'sl');
      const queries = packets.filter((packet) => packet.ts > leave.ts && isGroupQuery(packet, group));
      console.log(
        `slow leave: last datagram at ${m1.name}'s eth0 ${ms(latencyMs)} after its leave (${afterLeave} after it); ${queries.length} group-specific queries at +${queries.map((q) => ms(q.ts - leave.ts)).join(', +')}`,
      );
      assert.ok(queries.length >= 1, `no group-specific query for ${group} reached ${m1.name} after its leave`);
      assert.ok(
        queries.every((query) => query.dst === group),
        'group-specific queries go to the group address',
      );
      assert.ok(
        latencyMs <= MAX_RESPONSE_MS + 1000,
        `traffic went on for ${ms(latencyMs)} after the leave (limit ${MAX_RESPONSE_MS} + 1000 ms)`,
      );
      // Without fast leave the port is kept while the queries go unanswered.
      assert.ok(
        latencyMs >= MAX_RESPONSE_MS / 2,
        `traffic stopped ${ms(latencyMs)} after the leave: that is fast leave, not the last-member queries`,
      );
      await waitForOvsMembers(node, group, [], [m1]);
    });

    it('expiry: a member whose reports are blocked and whose receiver is killed is removed after the GMI', async () => {
      const { node, pods } = ml.nodes[0];
      const pod = pods[3]!;
      const group = '239.5.5.1';
      // What the pod sends into OVS, seen from the node side of its veth.
      const capture = await lab.startTcpdump(node.ns, pod.port, lab.file('t5-igmp.pcap'), { filter: ['igmp'] });
      const member = await killableMember(lab, pod, group, 5105);
      try {
        await waitForOvsMembers(node, group, [pod]);
        // At least one periodic report (answer to a general query) after the join, so that the last report is a known
        // one.
        const joinedAt = Date.now();
        await waitUntil(
          'a periodic report',
          async () =>
            readPcap(capture.file).some((packet) => packet.ts > joinedAt + 100 && isReport(packet, pod.address, group)),
          6000,
          100,
        );
        const listed = await control<GroupView[]>(daemonA, ['groups']);
        assert.deepEqual(membership(listed)[group], [pod.port], `groups --json does not list ${pod.port} in ${group}`);
        await blockIgmp(lab, pod);
        const blockedAt = Date.now();
        member.kill('SIGKILL');
        await new Promise((resolve) =>
          member.exitCode !== null || member.signalCode !== null ? resolve(undefined) : member.once('exit', resolve),
        );

        // Poll OVS (cheap) every 100 ms, and the CLI as fast as it runs, until the member is gone from both.
        let ovsGoneAt: number | undefined;
        const ovsPoll = waitUntil(
          'OVS to drop the expired member',
          async () => {
            const ports = (await ovsGroupPorts(node, group)) ?? [];
            if (ports.includes(pod.ofport)) return undefined;
            return (ovsGoneAt = Date.now());
          },
          GMI_MS + 5000,
          100,
        );
        const cliPolls: Array<{ start: number; end: number; listed: boolean }> = [];
        const cliPoll = waitUntil(
          'groups --json to drop the expired member',
          async () => {
            const start = Date.now();
            const groups = await control<GroupView[]>(daemonA, ['groups']);
            const isListed = (membership(groups)[group] ?? []).includes(pod.port);
            cliPolls.push({ start, end: Date.now(), listed: isListed });
            return isListed ? undefined : true;
          },
          GMI_MS + 5000,
          0,
        );
        await Promise.all([ovsPoll, cliPoll]);
        await sleep(300);
        await capture.stop();

        const packets = readPcap(capture.file);
        const lastReport = packets
          .filter((packet) => packet.ts <= blockedAt && isReport(packet, pod.address, group))
          .at(-1);
        assert.ok(lastReport, 'no report from the member before its IGMP was blocked');
        const leaked = packets.filter((packet) => packet.ts > blockedAt + 50 && packet.src === pod.address);
        assert.equal(leaked.length, 0, 'IGMP from the pod reached OVS although blocked (the kill sent a leave?)');
        assert.ok((await igmpDropped(lab, pod)) >= 1, 'nft dropped nothing: the kill should have sent a leave');

        const ovsExpiry = ovsGoneAt! - lastReport.ts;
        const firstAbsent = cliPolls.find((poll) => !poll.listed)!;
        const lastListed = cliPolls.filter((poll) => poll.listed).at(-1);
        console.log(
          `expiry: OVS dropped the port ${ms(ovsExpiry)} after the last report (GMI ${GMI_MS} ms); groups --json stopped listing it in a call that ended ${ms(firstAbsent.end - lastReport.ts)} after it (last listed in a call started at ${lastListed === undefined ? '-' : ms(lastListed.start - lastReport.ts)})`,
        );
        assert.ok(
          ovsExpiry >= GMI_MS - 1000,
          `removed from OVS ${ms(ovsExpiry)} after the last report: before GMI - 1 s`,
        );
        assert.ok(
          ovsExpiry <= GMI_MS + 1500,
          `removed from OVS ${ms(ovsExpiry)} after the last report: later than GMI + 1.5 s`,
        );
        // The CLI view: gone by GMI + 1.5 s (allowing for one CLI run), still there at GMI - 1 s.
        assert.ok(
          firstAbsent.start - lastReport.ts <= GMI_MS + 1500,
          `groups --json still listed the member in a call started ${ms(firstAbsent.start - lastReport.ts)} after the last report`,
        );
        assert.ok(
          lastListed !== undefined && lastListed.end - lastReport.ts >= GMI_MS - 1500,
          'groups --json dropped the member long before the GMI',
        );
      } finally {
        if (member.exitCode === null && member.signalCode === null) member.kill('SIGKILL');
        await unblockIgmp(lab, pod).catch(() => undefined);
      }
    });
  });

  describe('lifecycle lab: restarts, control socket, metrics, configuration', { concurrency: 1 }, () => {
    let lab: Lab;
    let ml: MulticastLab;
    let daemonA: RunningDaemon;
    let daemonB: RunningDaemon;

    before(async () => {
      lab = Lab.create();
      ml = await buildMulticastLab(lab, { podsPerNode: 3, external: false });
      daemonA = startDaemon(ml.nodes[0].node);
      daemonB = startDaemon(ml.nodes[1].node);
      await Promise.all([daemonA, daemonB].map((daemon) => daemon.ready()));
    });

    after(async () => {
      const errors = [daemonA, daemonB].flatMap(
        (daemon) => daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [],
      );
      if (errors.length > 0) console.log('daemon errors (lifecycle lab):', errors);
      await lab?.destroy();
    });

    it('restart: kill -9 while pod-to-pod traffic flows loses no datagram; state is back without a report; new joins work', async () => {
      const { node, pods } = ml.nodes[0];
      const [s, member, newcomer] = pods as [OvsPod, OvsPod, OvsPod];
      const group = '239.6.1.1';
      const port = 5201;
      const receiver = await member.listen(group, port);
      let late: Receiver | undefined;
      try {
        await waitForOvsMembers(node, group, [member]);
        // Saved 1 s after the change.
        const stateFile = `${daemonA.stateDir}/state.json`;
        await waitUntil(
          'state.json with the group',
          async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(group),
          5000,
          100,
        );
        // From now on no report of the member can reach the new daemon.
        await blockIgmp(lab, member);

        const count = 300; // 3 s at 10 ms
        const sending = s.send(group, port, count, { intervalMs: 10, tag: 'rs' });
        await waitUntil('traffic to flow', async () => receiver.received.length >= 20, 3000, 10);
        await daemonA.kill9();
        const killedAt = Date.now();
        daemonA = startDaemon(node);
        const ready = await daemonA.ready();
        const readyMs = Date.now() - killedAt;
        await sending;
        await sleep(300);
        const got = sequences(receiver.received, 'rs');
        const lost = missingSequences(got, count);
        console.log(
          `restart: new daemon listening ${ms(readyMs)} after kill -9; ${lost.length} of ${count} datagrams lost${lost.length > 0 ? ` (${lost.slice(0, 20).join(',')})` : ''}`,
        );
        assert.ok(ready);
        assert.deepEqual(lost, [], `datagrams lost across the restart`);

        const restored = await daemonA.waitForLog((e) => e['msg'] === 'state restored', 1000);
        assert.ok(Number(restored['members']) >= 1, `state restored with ${String(restored['members'])} members`);
        const groups = await control<GroupView[]>(daemonA, ['groups']);
        assert.deepEqual(
          membership(groups)[group],
          [member.port],
          `after the restart groups --json shows ${JSON.stringify(membership(groups))}`,
        );
        assert.equal(groups.find((view) => view.group === group)?.synced, true);
        const status = await control<DaemonStatus>(daemonA, ['status']);
        assert.equal(
          status.counters.igmpMessages['v3_report'] ?? 0,
          0,
          'the new daemon has heard reports: the state was not what restored the member',
        );

        // A new join after the restart.
        await unblockIgmp(lab, member);
        late = await newcomer.listen(group, port);
        await waitForOvsMembers(node, group, [member, newcomer]);
        await s.send(group, port, 20, { intervalMs: 5, tag: 'nj' });
        await sleep(300);
        assert.deepEqual(
          missingSequences(sequences(late.received, 'nj'), 20),
          [],
          `${newcomer.name}, joined after the restart, missed datagrams`,
        );
        assert.deepEqual(
          missingSequences(sequences(receiver.received, 'nj'), 20),
          [],
          `${member.name} missed datagrams after the restart`,
        );
      } finally {
        await unblockIgmp(lab, member).catch(() => undefined);
        await receiver.stop();
        await late?.stop();
      }
    });

    it('restart without saved state: member ports found in OVS keep forwarding until the startup queries are answered', async () => {
      const { node, pods } = ml.nodes[0];
      const [s, stays, vanished] = pods as [OvsPod, OvsPod, OvsPod];
      const group = '239.6.4.1';
      const port = 5204;
      // Short timers for this run: the placeholders live (robustness − 1) × QI/4 + QRI + 2 s = 1 + 1 + 2 = 4 s.
      const timers = ['--query-interval', '4s', '--query-response-interval', '1s'];
      const receivers = [await stays.listen(group, port), await vanished.listen(group, port)];
      try {
        await waitForOvsMembers(node, group, [stays, vanished]);
        // One member disappears without a word: its reports (and its leave) never get out.
        await blockIgmp(lab, vanished);
        const count = 200;
        const sending = s.send(group, port, count, { intervalMs: 10, tag: 'ns' });
        await waitUntil('traffic to flow', async () => receivers[0]!.received.length >= 20, 3000, 10);
        await daemonA.kill9();
        rmSync(`${daemonA.stateDir}/state.json`, { force: true }); // as if it was lost
        daemonA = startDaemon(node, { args: timers });
        const startedAt = Date.now();
        const seeded = await daemonA.waitForLog((e) => String(e['msg']).startsWith('ports found in OVS'), 20_000);
        assert.equal(seeded['members'], 2, 'both member ports of the group were kept');
        await sending;
        await sleep(300);
        assert.deepEqual(
          missingSequences(sequences(receivers[0]!.received, 'ns'), count),
          [],
          'the member lost datagrams across a restart without state',
        );
        // The member that answers the startup query is known by its address again; the port nobody answers for goes.
        const removedAfter = await waitUntil(
          'the silent port removed from the OVS group',
          async () => {
            const ports = await ovsGroupPorts(node, group);
            return ports !== undefined && !ports.includes(vanished.ofport) && ports.includes(stays.ofport)
              ? Date.now() - startedAt
              : undefined;
          },
          15_000,
          100,
        );
        console.log(`restart without state: the silent member's port was removed ${ms(removedAfter)} after the start`);
        assert.ok(
          removedAfter >= 2_000,
          `removed after ${ms(removedAfter)}: before the startup queries could be answered`,
        );
        const groups = await control<GroupView[]>(daemonA, ['groups']);
        const view = groups.find((entry) => entry.group === group);
        assert.deepEqual(
          view?.members.map((member) => [member.port.name, member.host]),
          [[stays.port, stays.address]],
        );
      } finally {
        await unblockIgmp(lab, vanished).catch(() => undefined);
        for (const receiver of receivers) await receiver.stop();
        // Back to the daemon the later tests expect.
        await daemonA.stop();
        daemonA = startDaemon(node);
        await daemonA.ready();
      }
    });

    it('OVS restart: delivery by the daemon’s group works again within 3 s without a new join', async () => {
      const { node, pods } = ml.nodes[1];
      const [s, member, other] = pods as [OvsPod, OvsPod, OvsPod];
      const group = '239.6.2.1';
      const port = 5202;
      const receiver = await member.listen(group, port);
      try {
        await waitForOvsMembers(node, group, [member]);
        await blockIgmp(lab, member); // no new join can happen
        const count = 200; // 10 s at 50 ms
        const sending = s.send(group, port, count, { intervalMs: 50, tag: 'ovs' });
        await waitUntil('traffic to flow', async () => receiver.received.length >= 5, 3000, 10);
        await node.restartVswitchd();
        const backAt = Date.now();
        const before = receiver.received.length;
        // The first datagram after vswitchd is back, and the daemon's flow and group for the member.
        const firstAt = waitUntil(
          'a datagram after the restart',
          async () => (receiver.received.length > before ? Date.now() : undefined),
          5000,
          5,
        );
        const flowsAt = waitUntil(
          "the daemon's flow and group back in OVS",
          async () => (((await ovsGroupPorts(node, group)) ?? []).includes(member.ofport) ? Date.now() : undefined),
          5000,
          20,
        );
        const [first, flows] = await Promise.all([firstAt, flowsAt]);
        // After the replay, the traffic goes to the member only (not flooded by OVS's default NORMAL flow).
        await sleep(200);
        const capture = await lab.startTcpdump(other.ns, other.iface, lab.file('t7-nonmember.pcap'), {
          filter: ['udp'],
        });
        const atMember = receiver.received.length;
        await sleep(1000);
        await capture.stop();
        const leaked = readPcap(capture.file).filter((packet) => isData(packet, group, port));
        await sending;
        console.log(
          `OVS restart: first datagram ${ms(first - backAt)}, daemon's flow and group ${ms(flows - backAt)} after ovs-vswitchd was back`,
        );
        assert.ok(
          flows - backAt <= 3000,
          `the daemon replayed its group ${ms(flows - backAt)} after the restart (limit 3 s)`,
        );
        assert.ok(
          first - backAt <= 3000,
          `the first datagram came ${ms(first - backAt)} after the restart (limit 3 s)`,
        );
        assert.ok(receiver.received.length - atMember >= 10, 'the member stopped receiving after the replay');
        assert.equal(
          leaked.length,
          0,
          `after the replay ${leaked.length} datagrams still reached the non-member ${other.name}`,
        );
        await daemonB.waitForLog((e) => e['msg'] === 'OpenFlow reconnected; replaying', 1000);
      } finally {
        await unblockIgmp(lab, member).catch(() => undefined);
        await receiver.stop();
      }
    });

    it('control socket and metrics: status, groups, snoop --daemon, /metrics; SIGTERM stops cleanly', async () => {
      const { node, pods } = ml.nodes[1];
      const [, p2, p3] = pods as [OvsPod, OvsPod, OvsPod];
      const [g1, g2] = ['239.6.3.1', '239.6.3.2'];
      const port = 5203;
      // Whatever earlier tests joined on this node has left (fast leave).
      await waitUntil(
        'no groups left on node b',
        async () => Object.keys(membership(await control<GroupView[]>(daemonB, ['groups']))).length === 0,
        5000,
        200,
      );
      // A v3 host repeats its leave (robustness − 1 more times, within 1 s): let those pass,
      // so that the one event snoop waits for is this test's join.
      await sleep(2500);

      // snoop --daemon prints the IGMP of a join.
      const snoop = startMcastctl(
        ['snoop', '--daemon', '--json', '--count', '1', '--duration', '15s', '--control-socket', daemonB.controlSocket],
        {
          timeoutMs: 20_000,
        },
      );
      await sleep(1500);
      const receivers = [await p2.listen(g1, port)];
      const snooped: CliResult = await snoop.done;
      assert.equal(snooped.code, 0, `snoop --daemon exited ${snooped.code}: ${snooped.stderr}`);
      const events = parseNdjson<DaemonEvent>(snooped.stdout);
      assert.equal(events.length, 1, `snoop --daemon --count 1 printed ${events.length} events: ${snooped.stdout}`);
      const event = events[0]!;
      assert.equal(event.type, 'igmp');
      if (event.type !== 'igmp') return;
      assert.equal(event.port?.name, p2.port);
      assert.equal(event.port?.ofport, p2.ofport);
      assert.match(JSON.stringify(event.record), new RegExp(g1.replaceAll('.', '\\.')));

      try {
        receivers.push(await p3.listen(g1, port), await p3.listen(g2, port));
        await waitForOvsMembers(node, g1, [p2, p3]);
        await waitForOvsMembers(node, g2, [p3]);
        await sleep(200);

        const status = await control<DaemonStatus>(daemonB, ['status']);
        assert.equal(status.bridge, node.bridge);
        assert.equal(status.pid, daemonB.pid);
        assert.equal(status.openflow, 'connected');
        assert.equal(status.ovsdb, 'connected');
        // This daemon routes nothing (no multicast interfaces): the routing lab checks the other case.
        assert.equal(status.mrouteActive, false);
        assert.equal(status.podPorts, pods.length);
        assert.equal(status.groups, 2);
        assert.equal(status.members, 3);
        assert.equal(status.controlSocket, daemonB.controlSocket);

        const groups = await control<GroupView[]>(daemonB, ['groups']);
        assert.deepEqual(membership(groups), { [g1]: [p2.port, p3.port].sort(), [g2]: [p3.port] });
        for (const view of groups) {
          const portNames = view.ports.map((p) => p.name).sort();
          assert.deepEqual(
            portNames,
            [...new Set([...view.members.map((m) => m.port.name), 'gw0'])].sort(),
            `ports of ${view.group}`,
          );
          assert.equal(view.synced, true);
          assert.ok(
            view.members.every((m) => m.port.pod === `default/${pods.find((p) => p.port === m.port.name)?.name}`),
            'members name their pods',
          );
        }

        // Metrics, from inside the node's namespace.
        const listening = await daemonB.ready(10_000);
        const url = String(listening['metrics']);
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
        assert.equal(
          `http://${status.metricsAddress}/metrics`,
          url,
          'status shows the port listened on, not the 0 asked for',
        );
        const { stdout: metrics } = await node.exec(['curl', '-sf', '--max-time', '5', url]);
        assert.match(metrics, /^mcastctl_groups 2$/m);
        assert.match(metrics, /^mcastctl_members 3$/m);
        assert.match(metrics, /^mcastctl_igmp_messages_total\{[^}]*\} [1-9]/m);

        // SIGTERM: exit 0, 'stopped', OVS keeps the groups.
        const exit = await daemonB.stop('SIGTERM');
        assert.deepEqual(exit, { code: 0, signal: null });
        await daemonB.waitForLog((e) => typeof e['msg'] === 'string' && e['msg'].startsWith('stopped'), 1000);
        assert.deepEqual(
          ((await ovsGroupPorts(node, g1)) ?? []).sort(),
          [p2.ofport, p3.ofport, ml.nodes[1].gateway.ofport].sort(),
          'OVS group of g1 after stop',
        );
        assert.deepEqual(
          ((await ovsGroupPorts(node, g2)) ?? []).sort(),
          [p3.ofport, ml.nodes[1].gateway.ofport].sort(),
          'OVS group of g2 after stop',
        );
        const statusAfter = await mcastctl(['status', '--json', '--control-socket', daemonB.controlSocket]);
        assert.equal(statusAfter.code, 69, 'status after stop must say the daemon is unreachable');
      } finally {
        await Promise.all(receivers.map((r) => r.stop()));
      }
    });

    it('bad configuration: exit 64 naming the key or line, nothing started; a second daemon on the same socket is refused', async () => {
      const ns = await lab.namespace('cfg');
      const dir = lab.file('cfg');
      const socket = `${dir}/ctl.sock`;
      const stateDir = `${dir}/state`;

      const bad = await mcastctl(
        [
          'daemon',
          '--query-interval',
          'soon',
          '--control-socket',
          socket,
          '--state-dir',
          stateDir,
          '--metrics-address',
          '127.0.0.1:0',
        ],
        { ns, timeoutMs: 15_000 },
      );
      assert.equal(bad.code, 64, `exit ${bad.code}: ${bad.stderr}`);
      assert.match(bad.stderr, /query-interval|queryInterval/);
      assert.match(bad.stderr, /soon/);
      assert.equal(bad.stdout, '');
      assert.equal(existsSync(socket), false, 'a control socket was created');
      assert.equal(existsSync(stateDir), false, 'a state directory was created');

      const yaml = `${dir}.yaml`;
      writeFileSync(yaml, 'bridge: br-int\nqueryInterval: 10s\ncolour: blue\nrobustness: 2\n');
      const badFile = await mcastctl(
        ['daemon', '--config', yaml, '--control-socket', socket, '--state-dir', stateDir],
        { ns, timeoutMs: 15_000 },
      );
      assert.equal(badFile.code, 64, `exit ${badFile.code}: ${badFile.stderr}`);
      assert.match(badFile.stderr, /colour/);
      assert.match(badFile.stderr, /line 3\b/);
      assert.equal(existsSync(socket), false);

      // A second daemon on node a, with the running one's control socket (and state dir).
      const { node, pods } = ml.nodes[0];
      const first = daemonA;
      const second = startDaemon(node);
      const exit = await Promise.race([second.exited, sleep(15_000).then(() => undefined)]);
      assert.ok(exit !== undefined, 'the second daemon did not exit');
      assert.notEqual(exit.code, 0, 'the second daemon exited 0');
      assert.match(second.logs().join('\n'), /busy|another daemon|in use/i);
      assert.equal(first.running(), true, 'the first daemon died');
      const status = await control<DaemonStatus>(first, ['status']);
      assert.equal(status.pid, first.pid, 'the control socket answers for another process');
      // And the first still works: a new join, pod to pod.
      const [s, , m] = pods as [OvsPod, OvsPod, OvsPod];
      const group = '239.6.4.1';
      const receiver = await m.listen(group, 5204);
      await waitForOvsMembers(node, group, [m]);
      await s.send(group, 5204, 20, { intervalMs: 5, tag: 'after' });
      await sleep(300);
      assert.deepEqual(missingSequences(sequences(await receiver.stop(), 'after'), 20), []);
    });

    it('IGMP from a port that is no pod (the node itself, through the gateway) is counted and ignored', async () => {
      const { node } = ml.nodes[0];
      const group = '239.6.6.1';
      const before = await control<DaemonStatus>(daemonA, ['status']);
      // The node's own kernel joins on gw0: its report enters OVS on the gateway port.
      const own = await node.udp().listen(group, 5206);
      try {
        await waitUntil(
          'the report from the gateway port to be counted',
          async () =>
            (await control<DaemonStatus>(daemonA, ['status'])).counters.ignoredNonPod > before.counters.ignoredNonPod,
          5_000,
          200,
        );
        const groups = await control<GroupView[]>(daemonA, ['groups']);
        assert.equal(
          groups.find((view) => view.group === group),
          undefined,
          'a group learned from a port that is no pod',
        );
        assert.equal(await ovsGroupPorts(node, group), undefined, 'an OVS group programmed for it');
      } finally {
        await own.stop();
      }
    });

    it('a deleted pod port leaves every group at once', async () => {
      const { node, pods } = ml.nodes[0];
      const [, other, gone] = pods as [OvsPod, OvsPod, OvsPod];
      const groups = ['239.6.7.1', '239.6.7.2'];
      const receivers = [
        await gone.listen(groups[0]!, 5207),
        await gone.listen(groups[1]!, 5207),
        await other.listen(groups[1]!, 5207),
      ];
      try {
        for (const group of groups) await waitForOvsMembers(node, group, [gone]);
        const deletedAt = Date.now();
        await node.vsctl('del-port', node.bridge, gone.port);
        const took = await waitUntil(
          'both OVS groups without the port',
          async () => {
            const first = await ovsGroupPorts(node, groups[0]!);
            const second = (await ovsGroupPorts(node, groups[1]!)) ?? [];
            return first === undefined && second.includes(other.ofport) && !second.includes(gone.ofport)
              ? Date.now() - deletedAt
              : undefined;
          },
          5_000,
          50,
        );
        console.log(`deleted pod port: gone from its groups ${ms(took)} after ovs-vsctl del-port`);
        await daemonA.waitForLog(
          (e) => e['msg'] === 'pod port removed: it leaves every group' && e['port'] === gone.port,
          1_000,
        );
        const view = await control<GroupView[]>(daemonA, ['groups']);
        assert.deepEqual(membership(view)[groups[1]!], [other.port]);
        assert.equal(membership(view)[groups[0]!], undefined);
      } finally {
        for (const receiver of receivers) await receiver.stop();
      }
    });
  });
});
