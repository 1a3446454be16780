/**
 * The daemon's guard against a hostile pod, on one real OVS node (user-space datapath) with
 * a gateway port and four pods, the built CLI, IGMP from the pods' kernels (ordinary
 * sockets, source-specific ones through member.py) and IGMPv3 reports crafted byte by byte
 * and written out of a pod's interface through a packet socket (test/lab/igmp-frames.ts).
 *
 * - The membership limits: past --max-groups-per-port, --max-sources-per-group and
 *   --max-groups only the new join is refused; other ports, and new members of groups
 *   that exist, are still admitted.
 * - A report whose IPv4 source is not the pod's own address (its Interface's
 *   external_ids:ip-address) changes nothing; the same frame with the pod's own address,
 *   or with 0.0.0.0, joins (so the crafted frame is otherwise one the daemon takes).
 * - The SSM range (232.0.0.0/8): a join of any source to a group in it is refused (ssm);
 *   a source-specific join (IP_ADD_SOURCE_MEMBERSHIP, through member.py) is installed.
 * - Each refusal is counted by reason and port in `status --json` and in the metric
 *   mcastctl_igmp_refused_total.
 *
 * Every refusal is checked at three places: the daemon's own view (`groups --json`),
 * OVS itself (ovs-ofctl dump-flows and dump-groups) and, where it says something, real
 * UDP delivery (a pod whose kernel joined a group its port was refused gets nothing).
 *
 * Two daemons in turn, each with its own state directory and control socket, so that the
 * second starts from no saved state: one with the per-port limits small, one with the
 * node's limit small.
 *
 * Needs root, iproute2, ethtool, curl, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { startDaemon, type RunningDaemon, control } from '../lab/daemon.js';
import { IGMPV3_RECORD, sendReport } from '../lab/igmp-frames.js';
import { type Host, Lab, waitUntil } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import {
  ovsGroupPorts,
  ovsSourcePorts,
  waitForOvsMembers,
  waitForOvsSourceMembers,
  deliverNumbered,
  scrapeMetrics,
} from '../lab/switch-checks.js';
import type { DaemonStatus, GroupView, MemberView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

// ---------------------------------------------------------------------------------------
// Helpers

/** The members of `group` as the daemon shows them (none when it does not know the group). */
async function membersOf(daemon: RunningDaemon, group: string): Promise<MemberView[]> {
  const groups = await control<GroupView[]>(daemon, ['groups']);
  return groups.find((view) => view.group === group)?.members ?? [];
}

/** Sorted member port names of `group`. */
async function memberPorts(daemon: RunningDaemon, group: string): Promise<string[]> {
  return [...new Set((await membersOf(daemon, group)).map((member) => member.port.name))].sort();
}

/** The groups the daemon has `pod`'s port in. */
async function groupsOfPort(daemon: RunningDaemon, pod: OvsPod): Promise<string[]> {
  const groups = await control<GroupView[]>(daemon, ['groups']);
  return groups
    .filter((view) => view.members.some((member) => member.port.name === pod.port))
    .map((view) => view.group)
    .sort();
}

/** What `status` counts as refused on `pod`'s port, by reason (empty when nothing was). */
async function refusedOn(daemon: RunningDaemon, pod: OvsPod): Promise<Record<string, number>> {
  const status = await control<DaemonStatus>(daemon, ['status']);
  assert.ok(status.igmpRefused !== undefined, 'status has no igmpRefused');
  return status.igmpRefused.byPort.find((entry) => entry.port.name === pod.port)?.counts ?? {};
}

/** Waits until `pod`'s port has at least one refusal for `reason`; resolves with its count. */
function waitForRefusal(daemon: RunningDaemon, pod: OvsPod, reason: string): Promise<number> {
  return waitUntil(`a ${reason} refusal on ${pod.name}'s port`, async () => {
    const count = (await refusedOn(daemon, pod))[reason] ?? 0;
    return count > 0 ? count : undefined;
  });
}

/** Every group flow of OVS (nw_dst of a multicast group, not the base flows' 224.0.0.0/4). */
async function ovsGroupFlows(node: OvsNode): Promise<string[]> {
  const flows = await node.ofctl('dump-flows', node.bridge);
  return flows.split('\n').filter((line) => /actions=group:\d+/.test(line));
}

/**
 * Waits until the daemon has no members anywhere, nothing to sync, and OVS no group flows: the next case starts clean.
 */
async function waitForEmpty(daemon: RunningDaemon, node: OvsNode): Promise<void> {
  await waitUntil('every group to be left, in the daemon and in OVS', async () => {
    const groups = await control<GroupView[]>(daemon, ['groups']);
    if (groups.some((view) => view.members.length > 0)) return false;
    if ((await control<DaemonStatus>(daemon, ['status'])).pendingSyncs !== 0) return false;
    return (await ovsGroupFlows(node)).length === 0;
  });
}

/** The value of mcastctl_igmp_refused_total{reason="<reason>"} in `metrics`. */
function refusedMetric(metrics: string, reason: string): number {
  const line = metrics
    .split('\n')
    .find((entry) => entry.startsWith(`mcastctl_igmp_refused_total{reason="${reason}"} `));
  assert.ok(line !== undefined, `no mcastctl_igmp_refused_total for ${reason} in:\n${metrics}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** member.py reads only a host's namespace, interface and address: a pod is such a host. */
function asHost(pod: OvsPod): Host {
  return {
    name: pod.name,
    ns: pod.ns,
    iface: pod.iface,
    port: pod.port,
    address: pod.address,
    prefixLength: pod.prefixLength,
  } as Host;
}

async function stopAll(receivers: readonly Receiver[]): Promise<void> {
  await Promise.all(receivers.map((receiver) => receiver.stop()));
}

// ---------------------------------------------------------------------------------------

describe('daemon guard: membership limits and spoofed reports on real OVS', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let a: OvsPod;
  let b: OvsPod;
  let c: OvsPod;
  let d: OvsPod;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.32.1.1/24' });
    [a, b, c, d] = [
      await node.addPod('pa', { address: '10.32.1.11/24' }),
      await node.addPod('pb', { address: '10.32.1.12/24' }),
      await node.addPod('pc', { address: '10.32.1.13/24' }),
      await node.addPod('pd', { address: '10.32.1.14/24' }),
    ];
  });

  after(async () => {
    await lab?.destroy();
  });

  it("the lab's pod ports carry their pods' addresses (the spoof check's reference)", async () => {
    for (const pod of [a, b, c, d]) assert.equal((await node.externalIds(pod.port))['ip-address'], pod.address);
  });

  describe('per-port limits (3 groups a port, 2 sources a group) and spoofed sources', { concurrency: 1 }, () => {
    let daemon: RunningDaemon;
    let metricsUrl: string;

    before(async () => {
      daemon = startDaemon(node, {
        multicastInterfaces: [],
        stateDir: lab.file('ports/state'),
        controlSocket: lab.file('ports/ctl.sock'),
        args: ['--max-groups-per-port', '3', '--max-sources-per-group', '2'],
      });
      metricsUrl = String((await daemon.ready())['metrics']);
    });

    after(async () => {
      if (daemon !== undefined) assert.equal((await daemon.stop()).code, 0, daemon.logs().slice(-10).join('\n'));
    });

    it("groups per port: a's fourth group is refused (not in OVS, no delivery to a); b joins it and gets the traffic", async () => {
      const groups = ['239.32.1.1', '239.32.1.2', '239.32.1.3', '239.32.1.4'];
      const [first, , , fourth] = groups as [string, string, string, string];
      const receivers: Receiver[] = [];
      try {
        // One at a time, so that the fourth is the one past the limit.
        for (const group of groups.slice(0, 3)) {
          receivers.push(await a.listen(group, 5401));
          await waitUntil(`${a.name} in ${group}`, async () => (await memberPorts(daemon, group)).includes(a.port));
        }
        const aFourth = await a.listen(fourth, 5401);
        receivers.push(aFourth);
        await waitForRefusal(daemon, a, 'port-groups');
        for (const group of groups.slice(0, 3)) await waitForOvsMembers(node, group, [a]);
        assert.deepEqual(await groupsOfPort(daemon, a), groups.slice(0, 3));
        assert.deepEqual(await memberPorts(daemon, fourth), [], `${fourth} has members`);
        assert.equal(await ovsGroupPorts(node, fourth), undefined, `OVS has a flow for ${fourth}`);
        const total = (await control<DaemonStatus>(daemon, ['status'])).igmpRefused?.total ?? {};
        assert.ok((total['port-groups'] ?? 0) > 0, `status totals: ${JSON.stringify(total)}`);

        // Another port is not held to a's count.
        const bFourth = await b.listen(fourth, 5401);
        receivers.push(bFourth);
        await waitUntil(`${b.name} in ${fourth}`, async () => (await memberPorts(daemon, fourth)).join() === b.port);
        await waitForOvsMembers(node, fourth, [b], [a]);
        assert.deepEqual(await memberPorts(daemon, fourth), [b.port]);
        assert.equal((await refusedOn(daemon, b))['port-groups'] ?? 0, 0, `${b.name}'s port counted refusals`);

        // Real UDP: b gets the fourth group, a (whose kernel joined it too) nothing of it; a gets its first.
        assert.deepEqual(
          await deliverNumbered(c, [bFourth, aFourth], fourth, 5401, 'fourth'),
          [20, 0],
          `of 20 datagrams of ${fourth}: [${b.name}, ${a.name}]`,
        );
        assert.deepEqual(
          await deliverNumbered(c, [receivers[0]!], first, 5401, 'first'),
          [20],
          `of 20 datagrams of ${first}: [${a.name}]`,
        );
      } finally {
        await stopAll(receivers);
      }
      await waitForEmpty(daemon, node);
    });

    it("sources per group: a's filter keeps 2 of its 3 sources; b's own filter with the third is admitted", async () => {
      const group = '239.32.2.1';
      const [s1, s2, s3] = ['192.0.2.1', '192.0.2.2', '192.0.2.3'] as const;
      const memberA = await Member.start(lab, asHost(a));
      const memberB = await Member.start(lab, asHost(b));
      const filterOf = async (pod: OvsPod) =>
        (await membersOf(daemon, group)).find((member) => member.port.name === pod.port);
      try {
        for (const source of [s1, s2]) {
          await memberA.joinSource(group, source);
          await waitUntil(`${source} in ${a.name}'s filter of ${group}`, async () =>
            (await filterOf(a))?.sources.includes(source),
          );
        }
        await memberA.joinSource(group, s3);
        await waitForRefusal(daemon, a, 'group-sources');
        const filterA = await filterOf(a);
        assert.equal(filterA?.mode, 'include');
        assert.deepEqual(
          [...(filterA?.sources ?? [])].sort(),
          [s1, s2],
          `${a.name}'s filter: ${JSON.stringify(filterA)}`,
        );
        // Each source a asked for reaches a through its own (S,G) entry; the refused one has none.
        for (const source of [s1, s2]) await waitForOvsSourceMembers(node, { source, group, pods: [a] });
        assert.equal(await ovsSourcePorts(node, s3, group), undefined, `no entry for ${s3} yet`);

        await memberB.joinSource(group, s3);
        const filterB = await waitUntil(`${b.name} in ${group}`, () => filterOf(b));
        assert.equal(filterB.mode, 'include');
        assert.deepEqual(filterB.sources, [s3]);
        await waitForOvsSourceMembers(node, { source: s3, group, pods: [b], not: [a] });
        assert.equal((await refusedOn(daemon, b))['group-sources'] ?? 0, 0, `${b.name}'s port counted refusals`);
        // Refusing the new source left a's admitted ones alone.
        assert.deepEqual([...((await filterOf(a))?.sources ?? [])].sort(), [s1, s2]);
      } finally {
        await Promise.all([memberA.quit(), memberB.quit()]);
      }
      await waitForEmpty(daemon, node);
    });

    it("spoofing: a report from a's port with b's address changes nothing; with a's own address, or 0.0.0.0, it joins", async () => {
      const [spoofed, own, unnumbered] = ['239.32.4.1', '239.32.4.2', '239.32.4.3'] as const;
      const join = (group: string) => [{ type: IGMPV3_RECORD.changeToExclude, group }];
      const leave = (group: string) => [{ type: IGMPV3_RECORD.changeToInclude, group }];
      const spoofedBefore = (await refusedOn(daemon, a))['spoofed'] ?? 0;
      assert.equal(spoofedBefore, 0, 'spoofed reports counted before any was sent');

      try {
        await sendReport(a, join(spoofed), { source: b.address });
        // The control, sent after it: once it is in OVS, the spoofed one would have been too.
        await sendReport(a, join(own));
        await waitUntil(`${a.name} in ${own}`, async () => (await memberPorts(daemon, own)).includes(a.port));
        await waitForOvsMembers(node, own, [a]);
        const ownMember = (await membersOf(daemon, own)).find((member) => member.port.name === a.port);
        assert.equal(ownMember?.host, a.address);
        assert.equal(ownMember?.mode, 'exclude');

        assert.deepEqual(await membersOf(daemon, spoofed), [], `${spoofed} got members from a spoofed report`);
        assert.equal(await ovsGroupPorts(node, spoofed), undefined, `OVS has a flow for ${spoofed}`);
        assert.equal(
          (await refusedOn(daemon, a))['spoofed'] ?? 0,
          1,
          `the spoofed report was not counted (once) on ${a.name}'s port`,
        );
        assert.equal(
          (await refusedOn(daemon, b))['spoofed'] ?? 0,
          0,
          `the spoofed report was counted on ${b.name}'s port`,
        );

        // 0.0.0.0: a host without an address yet may report so (RFC 3376 §4.2.13).
        await sendReport(a, join(unnumbered), { source: '0.0.0.0' });
        await waitUntil(`${a.name} in ${unnumbered}`, async () =>
          (await memberPorts(daemon, unnumbered)).includes(a.port),
        );
        await waitForOvsMembers(node, unnumbered, [a]);
        assert.equal((await refusedOn(daemon, a))['spoofed'] ?? 0, 1, 'a report from 0.0.0.0 was counted as spoofed');
        assert.equal(daemon.running(), true);
      } finally {
        // a's kernel never joined these: crafted leaves take them away again (the spoofed
        // group has a member only when the check failed; its leave is then taken too).
        await sendReport(a, leave(own));
        await sendReport(a, leave(unnumbered), { source: '0.0.0.0' });
        if ((await membersOf(daemon, spoofed)).length > 0) await sendReport(a, leave(spoofed), { source: b.address });
      }
      await waitForEmpty(daemon, node);
    });

    it('the metrics count the refusals by reason, as status does', async () => {
      const status = await control<DaemonStatus>(daemon, ['status']);
      const metrics = await scrapeMetrics(node, metricsUrl);
      for (const reason of ['port-groups', 'group-sources', 'spoofed']) {
        const value = refusedMetric(metrics, reason);
        assert.ok(value > 0, `mcastctl_igmp_refused_total{reason="${reason}"} is ${value}`);
        // Read after status: only more refusals (a's kernel answering a query) may have come.
        assert.ok(
          value >= (status.igmpRefused?.total[reason] ?? 0),
          `${reason}: metric ${value} < status ${JSON.stringify(status.igmpRefused?.total)}`,
        );
      }
      assert.equal(refusedMetric(metrics, 'spoofed'), 1);
      assert.equal(refusedMetric(metrics, 'node-groups'), 0);
    });

    it("the SSM range: c's plain join of 232.1.1.1 is refused as ssm; d's (S, 232.1.1.2) is installed, and c's plain join of it adds nothing", async () => {
      const [plain, specific] = ['232.1.1.1', '232.1.1.2'] as const;
      // c and d have no group left from the cases above, so no per-port limit is near.
      const source = b.address;
      const receivers: Receiver[] = [];
      const memberD = await Member.start(lab, asHost(d));
      try {
        // An ordinary socket join: IP_ADD_MEMBERSHIP, which c's kernel reports as TO_EX {}.
        receivers.push(await c.listen(plain, 5404));
        await waitForRefusal(daemon, c, 'ssm');

        // IP_ADD_SOURCE_MEMBERSHIP: d's kernel reports an INCLUDE {S} record.
        await memberD.joinSource(specific, source);
        await waitForOvsSourceMembers(node, { source, group: specific, pods: [d], not: [c] });
        const memberOfD = (await membersOf(daemon, specific)).find((member) => member.port.name === d.port);
        assert.equal(memberOfD?.mode, 'include');
        assert.deepEqual(memberOfD?.sources, [source]);
        assert.equal((await refusedOn(daemon, d))['ssm'] ?? 0, 0, `${d.name}'s port counted ssm refusals`);
        // Read after d's join was installed: c's refused join would have been by now.
        assert.deepEqual(await membersOf(daemon, plain), [], `${plain} got members from a join of any source`);
        assert.equal(await ovsGroupPorts(node, plain), undefined, `OVS has a flow for ${plain}`);

        // A join of any source to a group with a source-specific member leaves the group as it is.
        const before = (await refusedOn(daemon, c))['ssm'] ?? 0;
        receivers.push(await c.listen(specific, 5404));
        await waitUntil(
          `a second ssm refusal on ${c.name}'s port`,
          async () => ((await refusedOn(daemon, c))['ssm'] ?? 0) > before,
        );
        assert.deepEqual(await memberPorts(daemon, specific), [d.port]);
        await waitForOvsSourceMembers(node, { source, group: specific, pods: [d], not: [c] });
        assert.ok(
          !((await ovsGroupPorts(node, specific)) ?? []).includes(c.ofport),
          `${c.name} gets no source of ${specific}`,
        );

        const status = await control<DaemonStatus>(daemon, ['status']);
        assert.ok(
          (status.igmpRefused?.total['ssm'] ?? 0) >= 2,
          `status totals: ${JSON.stringify(status.igmpRefused?.total)}`,
        );
        const metrics = await scrapeMetrics(node, metricsUrl);
        assert.ok(refusedMetric(metrics, 'ssm') >= 2, 'mcastctl_igmp_refused_total{reason="ssm"} is below 2');
      } finally {
        await stopAll(receivers);
        await memberD.quit();
      }
      await waitForEmpty(daemon, node);
    });
  });

  describe('node limit (2 groups)', { concurrency: 1 }, () => {
    let daemon: RunningDaemon;
    let metricsUrl: string;

    before(async () => {
      assert.deepEqual(await ovsGroupFlows(node), [], 'the first daemon left group flows in OVS');
      daemon = startDaemon(node, {
        multicastInterfaces: [],
        stateDir: lab.file('node/state'),
        controlSocket: lab.file('node/ctl.sock'),
        args: ['--max-groups', '2'],
      });
      metricsUrl = String((await daemon.ready())['metrics']);
    });

    after(async () => {
      if (daemon !== undefined) assert.equal((await daemon.stop()).code, 0, daemon.logs().slice(-10).join('\n'));
    });

    it('a third group is refused from any pod; a new member of an existing group is still admitted', async () => {
      const [first, second, third] = ['239.32.3.1', '239.32.3.2', '239.32.3.3'] as const;
      const receivers: Receiver[] = [];
      try {
        const aFirst = await a.listen(first, 5403);
        receivers.push(aFirst);
        await waitUntil(`${a.name} in ${first}`, async () => (await memberPorts(daemon, first)).includes(a.port));
        receivers.push(await b.listen(second, 5403));
        await waitUntil(`${b.name} in ${second}`, async () => (await memberPorts(daemon, second)).includes(b.port));

        // c has no group yet: only the node's limit can refuse it.
        const cThird = await c.listen(third, 5403);
        receivers.push(cThird);
        await waitForRefusal(daemon, c, 'node-groups');
        assert.deepEqual(await memberPorts(daemon, third), [], `${third} has members`);
        assert.equal(await ovsGroupPorts(node, third), undefined, `OVS has a flow for ${third}`);
        assert.equal((await control<DaemonStatus>(daemon, ['status'])).groups, 2);

        // d joins a group the node has: no new group, admitted.
        const dFirst = await d.listen(first, 5403);
        receivers.push(dFirst);
        await waitUntil(`${d.name} in ${first}`, async () => (await memberPorts(daemon, first)).includes(d.port));
        await waitForOvsMembers(node, first, [a, d], [b, c]);
        assert.equal((await refusedOn(daemon, d))['node-groups'] ?? 0, 0, `${d.name}'s port counted refusals`);

        assert.deepEqual(
          await deliverNumbered(b, [aFirst, dFirst], first, 5403, 'first'),
          [20, 20],
          `of 20 datagrams of ${first}: [${a.name}, ${d.name}]`,
        );
        assert.deepEqual(
          await deliverNumbered(a, [cThird], third, 5403, 'third'),
          [0],
          `${c.name} got datagrams of the refused ${third}`,
        );

        const metrics = await scrapeMetrics(node, metricsUrl);
        assert.ok(refusedMetric(metrics, 'node-groups') > 0, 'mcastctl_igmp_refused_total{reason="node-groups"} is 0');
      } finally {
        await stopAll(receivers);
      }
      await waitForEmpty(daemon, node);
    });
  });
});
