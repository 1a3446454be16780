/**
 * The daemon's per-pod traffic counters on one real OVS node (user-space datapath) with a
 * gateway port and three pods, the built CLI, IGMP from the pods' kernels and real UDP:
 *
 * - a pod that received 100 datagrams of 200 octets from a group and sent 50 to it shows
 *   exactly those figures in `groups --stats --json` and in the metrics endpoint, bytes as
 *   OVS counts them (whole Ethernet frames: 200 + 8 + 20 + 14 = 242 a datagram);
 * - each member pod port has a sender counting flow (priority 205, cookie kind 11) that
 *   forwards as the group's own flow does, so traffic goes where it went without it;
 * - a source with an (S,G) entry of its own is counted by rows of its own (priority 215),
 *   and every datagram still reaches exactly the receivers it reached without them;
 * - with maxTrafficCounters 1 only one (pod, group) pair is counted, shown and flowed,
 *   and the view says the figures are partial.
 *
 * Needs root, iproute2, ethtool, curl, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { SourceMember } from '../lab/source-members.js';
import { scrapeMetrics, waitForOvsMembers, waitForOvsSourceMembers } from '../lab/switch-checks.js';
import type { PodTrafficView, TrafficStatsView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const GROUP = '239.77.0.1';
const UDP_PORT = 5577;
const PAYLOAD = 200;
/** What OVS counts of one datagram: payload, UDP header, IPv4 header, Ethernet header. */
const FRAME = PAYLOAD + 8 + 20 + 14;

/** Sends `count` UDP datagrams of exactly PAYLOAD octets from `pod` to group:port, out of its own address. */
const SEND_PY = `
import socket, sys, time
group, port, count, source = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
for i in range(count):
    s.sendto(b'x' * ${PAYLOAD}, (group, port))
    time.sleep(0.002)
`;

async function sendSized(lab: Lab, pod: OvsPod, count: number, group = GROUP): Promise<void> {
  await lab.exec(pod.ns, ['python3', '-c', SEND_PY, group, String(UDP_PORT), String(count), pod.address]);
}

const stats = (daemon: RunningDaemon) => control<TrafficStatsView>(daemon, ['groups', '--stats']);

function entryOf(view: TrafficStatsView, pod: OvsPod, group = GROUP): PodTrafficView | undefined {
  return view.entries.find((entry) => entry.group === group && entry.port.name === pod.port);
}

/** The value of the metric line that starts with `prefix` (name and labels), or undefined. */
function metricValue(metrics: string, prefix: string): number | undefined {
  const line = metrics.split('\n').find((entry) => entry.startsWith(`${prefix} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Our sender counting flows (cookie kind 11 under the default prefix 0x4d43), as ovs-ofctl shows them. */
async function counterFlows(node: OvsNode): Promise<string[]> {
  return (await node.switchState()).flows.filter((line) => /cookie=0x4d430b/.test(line));
}

describe('daemon: per-pod traffic counters on real OVS', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  /** a: the pod under test (member and sender); b: a sender that is no member; c: another member. */
  let a: OvsPod;
  let b: OvsPod;
  let c: OvsPod;
  let daemon: RunningDaemon | undefined;
  const receivers: Receiver[] = [];

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.44.1.1/24' });
    [a, b, c] = [
      await node.addPod('pa', { address: '10.44.1.11/24' }),
      await node.addPod('pb', { address: '10.44.1.12/24' }),
      await node.addPod('pc', { address: '10.44.1.13/24' }),
    ];
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    if (daemon !== undefined) await daemon.stop();
    await lab?.destroy();
  });

  it('a pod that received 100 datagrams and sent 50 shows exactly that, in groups --stats --json and in the metrics', async (context) => {
    daemon = startDaemon(node, { multicastInterfaces: [], args: ['--traffic-counters'] });
    const metricsUrl = String((await daemon.ready())['metrics']);
    receivers.push(await a.listen(GROUP, UDP_PORT), await c.listen(GROUP, UDP_PORT));
    await waitForOvsMembers(node, GROUP, [a, c]);
    await waitUntil('a sender counting flow for each member', async () =>
      (await counterFlows(node)).length === 2 ? true : undefined,
    );
    const flows = await counterFlows(node);
    context.diagnostic(flows.join('\n'));
    for (const pod of [a, c]) {
      const flow = flows.find((line) => line.includes(`in_port=${pod.ofport},`));
      assert.ok(flow !== undefined, `no counting flow for ${pod.name}: ${flows.join(' | ')}`);
      assert.match(flow, /priority=205,/);
      assert.ok(flow.includes(`nw_dst=${GROUP}`), flow);
      assert.match(flow, /actions=group:\d+/);
    }
    const before = await stats(daemon);
    assert.equal(before.counting, true);
    assert.equal(before.uncounted, 0);

    await sleep(300);
    await sendSized(lab, b, 100);
    await sendSized(lab, a, 50);
    await sleep(500);
    // Traffic still goes where it went: c got both senders' datagrams, a b's.
    const fromB = (receiver: Receiver) => receiver.received.filter((datagram) => datagram.from === b.address).length;
    const fromA = (receiver: Receiver) => receiver.received.filter((datagram) => datagram.from === a.address).length;
    assert.equal(fromB(receivers[0]!), 100, 'a got all of b');
    assert.equal(fromB(receivers[1]!), 100, 'c got all of b');
    assert.equal(fromA(receivers[1]!), 50, 'c got all of a');

    // OVS's user-space datapath credits its counters when the flows are revalidated: wait for the figures to settle.
    let last: TrafficStatsView | undefined;
    const view = await waitUntil('the counters to show a: 100 in, 50 out', async () => {
      const current = (last = await stats(daemon!));
      const entry = entryOf(current, a);
      return entry?.received.packets === 100 && entry.sent?.packets === 50 ? current : undefined;
    }).catch(async (error: unknown) => {
      const groups = await node.ofctl('dump-group-stats', node.bridge);
      throw new Error(`${String(error)}; last: ${JSON.stringify(last)}; OVS: ${groups}`);
    });
    context.diagnostic(JSON.stringify(view.entries));
    assert.deepEqual(entryOf(view, a)?.received, { packets: 100, bytes: 100 * FRAME });
    assert.deepEqual(entryOf(view, a)?.sent, { packets: 50, bytes: 50 * FRAME });
    assert.deepEqual(entryOf(view, c)?.received, { packets: 150, bytes: 150 * FRAME });
    assert.deepEqual(entryOf(view, c)?.sent, { packets: 0, bytes: 0 });
    assert.equal(entryOf(view, b), undefined, 'b is no member: not counted');

    const metrics = await scrapeMetrics(node, metricsUrl);
    const labels = `{pod="default/${a.name}",group="${GROUP}"}`;
    assert.equal(metricValue(metrics, `mcastctl_pod_group_received_packets_total${labels}`), 100, metrics);
    assert.equal(metricValue(metrics, `mcastctl_pod_group_received_bytes_total${labels}`), 100 * FRAME);
    assert.equal(metricValue(metrics, `mcastctl_pod_group_sent_packets_total${labels}`), 50);
    assert.equal(metricValue(metrics, `mcastctl_pod_group_sent_bytes_total${labels}`), 50 * FRAME);
    assert.equal(metricValue(metrics, 'mcastctl_pod_group_uncounted'), 0);

    // The human table names the pod and its figures.
    const human = await mcastctl(['groups', '--stats', '--control-socket', daemon.controlSocket]);
    assert.equal(human.code, 0, human.stderr);
    const row = human.stdout.split('\n').find((line) => line.includes(`default/${a.name}`));
    assert.ok(row?.includes('24,200') && row.includes('12,100'), human.stdout);

    // A new member rewrites the group's buckets (GROUP_MOD MODIFY), which zeroes their counters in OVS: the figures go
    // on.
    receivers.push(await b.listen(GROUP, UDP_PORT));
    await waitForOvsMembers(node, GROUP, [a, b, c]);
    await sleep(300);
    await sendSized(lab, b, 10);
    const later = await waitUntil('a: 110 in after the rewrite', async () => {
      const current = (last = await stats(daemon!));
      return entryOf(current, a)?.received.packets === 110 && entryOf(current, c)?.received.packets === 160
        ? current
        : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}; last: ${JSON.stringify(last?.entries)}`);
    });
    assert.deepEqual(entryOf(later, a)?.sent, { packets: 50, bytes: 50 * FRAME });
    assert.deepEqual(entryOf(later, b)?.received, { packets: 0, bytes: 0 }, 'b hears nothing of its own');
    assert.deepEqual(entryOf(later, b)?.sent, { packets: 10, bytes: 10 * FRAME });
  });

  it('per-source entries: a source with its own (S,G) entry is counted by its own rows (priority 215), and still reaches only its receivers', async (context) => {
    const group = '239.77.0.2';
    const members = new Map<OvsPod, SourceMember>();
    for (const pod of [a, c]) members.set(pod, await SourceMember.start(lab, pod, UDP_PORT));
    try {
      // a takes every source; c only b's: b's traffic has an (S,G) entry of its own, to a and c.
      await members.get(a)!.join(group);
      await members.get(c)!.joinSource(group, b.address);
      await waitForOvsSourceMembers(node, { source: b.address, group, pods: [a, c] });
      await waitUntil('four counting rows of the group', async () => {
        const rows = (await counterFlows(node)).filter((line) => line.includes(`nw_dst=${group}`));
        return rows.length === 4 ? rows : undefined;
      });
      const rows = (await counterFlows(node)).filter((line) => line.includes(`nw_dst=${group}`));
      context.diagnostic(rows.join('\n'));
      assert.equal(
        rows.filter((line) => line.includes('priority=215,') && line.includes(`nw_src=${b.address}`)).length,
        2,
        rows.join(' | '),
      );
      assert.equal(
        rows.filter((line) => line.includes('priority=205,') && !line.includes('nw_src=')).length,
        2,
        rows.join(' | '),
      );
      await sleep(300);
      await sendSized(lab, b, 100, group); // no member: its (S,G) flow, to a and c
      await sendSized(lab, a, 50, group); // the (*,G) entry: c takes b only, so to nobody but the gateway
      await sendSized(lab, c, 20, group); // the (*,G) entry: to a
      await sleep(500);
      const from = (pod: OvsPod, sender: OvsPod) =>
        members.get(pod)!.received.filter((datagram) => datagram.group === group && datagram.from === sender.address)
          .length;
      assert.deepEqual(
        [from(a, b), from(a, c), from(c, b), from(c, a)],
        [100, 20, 100, 0],
        'delivery as without the counting rows',
      );
      let last: TrafficStatsView | undefined;
      const view = await waitUntil('the counters of the per-source group', async () => {
        const current = (last = await stats(daemon!));
        return entryOf(current, a, group)?.sent?.packets === 50 && entryOf(current, c, group)?.sent?.packets === 20
          ? current
          : undefined;
      }).catch((error: unknown) => {
        throw new Error(`${String(error)}; last: ${JSON.stringify(last?.entries)}`);
      });
      assert.deepEqual(entryOf(view, a, group), {
        group,
        port: { ofport: a.ofport, name: a.port, pod: `default/${a.name}` },
        received: { packets: 120, bytes: 120 * FRAME },
        sent: { packets: 50, bytes: 50 * FRAME },
      });
      assert.deepEqual(entryOf(view, c, group)?.received, { packets: 100, bytes: 100 * FRAME });
      assert.deepEqual(entryOf(view, c, group)?.sent, { packets: 20, bytes: 20 * FRAME });
    } finally {
      for (const member of members.values()) await member.quit().catch(() => undefined);
    }
    await waitUntil('the per-source group and its rows to go', async () =>
      (await counterFlows(node)).some((line) => line.includes(`nw_dst=${group}`)) ? undefined : true,
    );
  });

  it('past maxTrafficCounters only one pair is counted and flowed, and the view says partial', async () => {
    await daemon?.stop();
    daemon = startDaemon(node, {
      multicastInterfaces: [],
      args: ['--traffic-counters', '--max-traffic-counters', '1'],
    });
    await daemon.ready();
    // The members stay (the saved state), their group syncs again under the new bound.
    await waitUntil('one sender counting flow', async () =>
      (await counterFlows(node)).length === 1 ? true : undefined,
    );
    const view = await waitUntil('one counted pair', async () => {
      const current = await stats(daemon!);
      // a, b and c are members of GROUP now: one pair counted, two left out.
      return current.entries.length === 1 && current.uncounted === 2 ? current : undefined;
    });
    assert.equal(view.limit, 1);
    const human = await mcastctl(['groups', '--stats', '--control-socket', daemon.controlSocket]);
    assert.match(human.stdout, /partial: 2 \(pod, group\) pairs past maxTrafficCounters \(1\)/);
    // Off: no counting flow at all, received only.
    await daemon.stop();
    daemon = startDaemon(node, { multicastInterfaces: [], args: ['--no-traffic-counters'] });
    await daemon.ready();
    await waitUntil('no sender counting flow', async () =>
      (await counterFlows(node)).length === 0 ? true : undefined,
    );
    const off = await stats(daemon);
    assert.equal(off.counting, false);
    assert.ok(
      off.entries.every((entry) => entry.sent === undefined),
      JSON.stringify(off.entries),
    );
  });
});
