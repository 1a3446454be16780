/**
 * The daemon's per-port IGMP meters and its group policy, on one real OVS node (user-space
 * datapath) with a gateway port and six pods (a seventh comes and goes), the built CLI,
 * IGMP from the pods' kernels, IGMPv3 reports crafted byte by byte (test/lab/igmp-frames.ts)
 * and real UDP.
 *
 * - Meters: every pod port has an OpenFlow meter (131072 + ofport) at the configured
 *   rate and burst and a metered IGMP flow (priority 301) to the controller; a port that
 *   leaves the bridge takes both with it; the gateway has none. A flood of reports from
 *   one pod is cut in OVS (the daemon sees about rate × time + burst of it, the meter's
 *   drops are in `status` and the metrics), while another pod's join still works. After
 *   ovs-vswitchd restarts, meters, flows and groups come back as they were.
 * - The group policy (--group-policy): a denied join is refused (no member, nothing in
 *   OVS, no delivery, counted as `policy`); a denied send is an OVS drop flow (priority
 *   280) and reaches no member while another sender does. SIGHUP re-reads the file:
 *   newly denied members leave within a second and only what the change implies changes
 *   in OVS; a broken file is logged and the policy in force stays. A broken file at the
 *   start exits 64 naming FILE:LINE.
 *
 * Needs root, iproute2, ethtool, curl, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { startDaemon, type RunningDaemon, control } from '../lab/daemon.js';
import { floodReports, IGMPV3_RECORD } from '../lab/igmp-frames.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { ovsGroupPorts, waitForOvsMembers, deliverNumbered, scrapeMetrics } from '../lab/switch-checks.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** The daemon's default --meter-id-base: pod port P's meter is this + P. */
const METER_ID_BASE = 131_072;
const RATE = 50;
const BURST = 20;

// ---------------------------------------------------------------------------------------
// Helpers

const status = (daemon: RunningDaemon) => control<DaemonStatus>(daemon, ['status']);

/** Sorted member port names of `group` as the daemon shows them. */
async function memberPorts(daemon: RunningDaemon, group: string): Promise<string[]> {
  const groups = await control<GroupView[]>(daemon, ['groups']);
  return [
    ...new Set(groups.find((view) => view.group === group)?.members.map((member) => member.port.name) ?? []),
  ].sort();
}

/** What `status` counts as refused on `pod`'s port, by reason. */
async function refusedOn(daemon: RunningDaemon, pod: OvsPod): Promise<Record<string, number>> {
  const view = await status(daemon);
  assert.ok(view.igmpRefused !== undefined, 'status has no igmpRefused');
  return view.igmpRefused.byPort.find((entry) => entry.port.name === pod.port)?.counts ?? {};
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, count) => total + count, 0);

/** One meter as `ovs-ofctl dump-meters` shows it. */
interface OvsMeter {
  id: number;
  /** The text of its entry, whitespace folded (flags and bands). */
  text: string;
  rate: number | undefined;
  burst: number | undefined;
}

async function ovsMeters(node: OvsNode): Promise<Map<number, OvsMeter>> {
  const text = await node.ofctl('dump-meters', node.bridge);
  const meters = new Map<number, OvsMeter>();
  for (const chunk of text.split(/(?=meter=\d+)/).slice(1)) {
    const id = Number(/^meter=(\d+)/.exec(chunk)?.[1]);
    const folded = chunk.replace(/\s+/g, ' ').trim();
    const rate = /rate=(\d+)/.exec(folded)?.[1];
    const burst = /burst_size=(\d+)/.exec(folded)?.[1];
    meters.set(id, {
      id,
      text: folded,
      rate: rate === undefined ? undefined : Number(rate),
      burst: burst === undefined ? undefined : Number(burst),
    });
  }
  return meters;
}

/** The flows of one priority, by the in_port they match (their lines, counters and ages stripped). */
async function flowsAt(node: OvsNode, priority: number): Promise<Map<number, string[]>> {
  const byPort = new Map<number, string[]>();
  for (const line of (await node.switchState()).flows) {
    if (!line.includes(`priority=${priority},`)) continue;
    const port = Number(/in_port=(\d+)/.exec(line)?.[1]);
    byPort.set(port, [...(byPort.get(port) ?? []), line]);
  }
  return byPort;
}

/** The cookie of pod port P's metered IGMP flow: 0x4d43_01_00_<P>. */
const meteredCookie = (ofport: number) => `0x4d430100${ofport.toString(16).padStart(8, '0')}`;

/** Asserts that `pod` has its meter (rate, burst) and its metered IGMP flow to the controller. */
function assertMetered(pod: OvsPod, meters: Map<number, OvsMeter>, metered: Map<number, string[]>): void {
  const meter = meters.get(METER_ID_BASE + pod.ofport);
  assert.ok(
    meter !== undefined,
    `no meter ${METER_ID_BASE + pod.ofport} for ${pod.name} (ofport ${pod.ofport}): ${[...meters.keys()].join(',')}`,
  );
  assert.match(meter.text, /\bpktps\b/, meter.text);
  assert.match(meter.text, /\bburst\b/, meter.text);
  assert.match(meter.text, /type=drop/, meter.text);
  assert.equal(meter.rate, RATE, meter.text);
  assert.equal(meter.burst, BURST, meter.text);
  const flows = metered.get(pod.ofport) ?? [];
  // IGMP, and MLD's four ICMPv6 types, all through the one meter.
  assert.equal(flows.length, 5, `${pod.name}'s 301 flows: ${flows.join(' | ')}`);
  assert.equal(
    flows.filter((flow) => /(,igmp,|,ip,.*nw_proto=2)/.test(flow)).length,
    1,
    `${pod.name}'s IGMP 301 flow: ${flows.join(' | ')}`,
  );
  assert.deepEqual(
    flows.flatMap((flow) => /icmp_type=(\d+)/.exec(flow)?.[1] ?? []).sort(),
    ['130', '131', '132', '143'],
    `${pod.name}'s MLD 301 flows: ${flows.join(' | ')}`,
  );
  for (const flow of flows) {
    assert.match(flow, new RegExp(`actions=meter:${METER_ID_BASE + pod.ofport},CONTROLLER`), flow);
    assert.ok(
      flow.includes(`cookie=${meteredCookie(pod.ofport)},`),
      `cookie of ${flow}, not ${meteredCookie(pod.ofport)}`,
    );
  }
}

/** The value of the metric line that starts with `prefix` (name and labels), or undefined. */
function metricValue(metrics: string, prefix: string): number | undefined {
  const line = metrics.split('\n').find((entry) => entry.startsWith(`${prefix} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const podName = (pod: OvsPod) => `default/${pod.name}`;

// ---------------------------------------------------------------------------------------

describe('daemon: per-port IGMP meters and the group policy on real OVS', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  /**
   * a: denied joins of 239.50/16; b: allowed (until the reload); s: denied sends to 239.60/16; t, r: free; f: the
   * flooder (joins of 239.70/16 denied).
   */
  let a: OvsPod;
  let b: OvsPod;
  let s: OvsPod;
  let t: OvsPod;
  let r: OvsPod;
  let f: OvsPod;
  let policyFile: string;
  let daemon: RunningDaemon;
  let metricsUrl: string;
  const receivers: Receiver[] = [];
  /** b's socket in 239.50.0.1 (the join case), which the reload then denies. */
  let bJoined: Receiver | undefined;

  const basePolicy = () => `rules:
  - action: deny
    pods: ${podName(a)}
    groups: 239.50.0.0/16
    directions: join
  - action: deny
    pods: ${podName(s)}
    groups: 239.60.0.0/16
    directions: send
  - action: deny
    pods: ${podName(f)}
    groups: 239.70.0.0/16
    directions: join
`;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.33.1.1/24' });
    [a, b, s, t, r, f] = [
      await node.addPod('pa', { address: '10.33.1.11/24' }),
      await node.addPod('pb', { address: '10.33.1.12/24' }),
      await node.addPod('ps', { address: '10.33.1.13/24' }),
      await node.addPod('pt', { address: '10.33.1.14/24' }),
      await node.addPod('pr', { address: '10.33.1.15/24' }),
      await node.addPod('pf', { address: '10.33.1.16/24' }),
    ];
    policyFile = lab.file('policy.yaml');
    writeFileSync(policyFile, basePolicy());
    daemon = startDaemon(node, {
      multicastInterfaces: [],
      args: [
        '--group-policy',
        policyFile,
        '--igmp-rate-per-port',
        String(RATE),
        '--igmp-burst-per-port',
        String(BURST),
      ],
    });
    metricsUrl = String((await daemon.ready())['metrics']);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    if (daemon !== undefined) {
      const exit = await daemon.stop();
      assert.equal(exit.code, 0, daemon.logs().slice(-10).join('\n'));
    }
    await lab?.destroy();
  });

  const listen = async (pod: OvsPod, group: string, port: number): Promise<Receiver> => {
    const receiver = await pod.listen(group, port);
    receivers.push(receiver);
    return receiver;
  };

  it('meters: one per pod port at the set rate and burst, with a metered IGMP flow; a removed port loses both; the gateway has none', async (context) => {
    const pods = [a, b, s, t, r, f];
    await waitUntil(
      'every pod port metered',
      async () => (await status(daemon)).igmpMeter?.meteredPorts === pods.length,
    );
    const meters = await ovsMeters(node);
    const metered = await flowsAt(node, 301);
    for (const pod of pods) assertMetered(pod, meters, metered);
    context.diagnostic(`${a.name}: ${meters.get(METER_ID_BASE + a.ofport)?.text} | ${metered.get(a.ofport)?.[0]}`);
    const gateway = node.gateway!;
    assert.equal(
      meters.has(METER_ID_BASE + gateway.ofport),
      false,
      `the gateway (ofport ${gateway.ofport}) has a meter`,
    );
    assert.equal(
      metered.has(gateway.ofport),
      false,
      `the gateway has a 301 flow: ${metered.get(gateway.ofport)?.join(' | ')}`,
    );
    assert.deepEqual(
      [...meters.keys()].sort(),
      pods.map((pod) => METER_ID_BASE + pod.ofport).sort(),
      "meters other than the pod ports' ones",
    );
    assert.deepEqual([...metered.keys()].sort(), pods.map((pod) => pod.ofport).sort());
    const view = (await status(daemon)).igmpMeter!;
    assert.equal(view.enabled, true);
    assert.equal(view.ratePerSecond, RATE);
    assert.equal(view.burst, BURST);

    // A pod that comes and goes: metered on arrival, both entries gone within ~2 s of del-port.
    const extra = await node.addPod('px', { address: '10.33.1.19/24' });
    await waitUntil(`${extra.name}'s meter and flow`, async () => {
      const [m, fl] = [await ovsMeters(node), await flowsAt(node, 301)];
      return m.has(METER_ID_BASE + extra.ofport) && fl.has(extra.ofport);
    });
    assertMetered(extra, await ovsMeters(node), await flowsAt(node, 301));
    await node.vsctl('del-port', node.bridge, extra.port);
    const removedAt = Date.now();
    await waitUntil(
      `${extra.name}'s meter and flow to go`,
      async () => {
        const [m, fl] = [await ovsMeters(node), await flowsAt(node, 301)];
        return !m.has(METER_ID_BASE + extra.ofport) && !fl.has(extra.ofport);
      },
      2_500,
    );
    const took = Date.now() - removedAt;
    assert.ok(took <= 2_500, `took ${took} ms`);
    // The others kept theirs.
    const [metersAfter, flowsAfter] = [await ovsMeters(node), await flowsAt(node, 301)];
    for (const pod of pods) assertMetered(pod, metersAfter, flowsAfter);
    await waitUntil(
      'the removed port to be unmetered in status',
      async () => (await status(daemon)).igmpMeter?.meteredPorts === pods.length,
    );
  });

  it('a flood of 3,000 reports in 3 s is cut in OVS to rate × time + burst; the drops are in status and metrics; another pod joins', async (context) => {
    const count = 3_000;
    const before = await status(daemon);
    const refusedBefore = sum(await refusedOn(daemon, f));
    // Fresh groups, each a join the policy refuses: every one the daemon sees is counted on f's port, and none changes
    // the switch.
    const freshGroup = (i: number) => `239.70.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    const reports = Array.from({ length: count }, (_, i) => [
      { type: IGMPV3_RECORD.changeToExclude, group: freshGroup(i) },
    ]);
    const group = '239.71.0.1';
    const [flood, delivered] = await Promise.all([
      floodReports(f, reports, { ratePerSecond: 1_000 }),
      (async () => {
        // Mid-flood: b's kernel joins, t sends.
        await sleep(700);
        const member = await listen(b, group, 5501);
        await waitUntil(
          `${b.name} in ${group}`,
          async () => (await memberPorts(daemon, group)).includes(b.port),
          3_000,
        );
        await waitForOvsMembers(node, group, [b]);
        return deliverNumbered(t, [member], group, 5501, 'flood');
      })(),
    ]);
    assert.equal(flood.sent, count);
    assert.ok(flood.seconds >= 2.9 && flood.seconds < 4.5, `the flood took ${flood.seconds} s`);
    assert.deepEqual(delivered, [20], `${b.name} got ${delivered[0]} of 20 datagrams of ${group} during the flood`);

    await sleep(500);
    const refusedAfter = await refusedOn(daemon, f);
    const seen = sum(refusedAfter) - refusedBefore;
    const afterStatus = await status(daemon);
    const packetIns = afterStatus.counters.packetIns - before.counters.packetIns;
    const expected = RATE * flood.seconds + BURST;
    assert.ok(
      seen >= RATE && seen < 600,
      `the daemon saw ${seen} of f's ${count} reports (rate × time + burst ≈ ${expected})`,
    );
    assert.ok(packetIns < 700, `${packetIns} packet-ins during the flood`);
    assert.deepEqual(await memberPorts(daemon, '239.70.0.1'), [], 'a flooded join became a member');

    // The meter's drops, read every 5 s.
    const dropped = await waitUntil(
      `the meter drops of ${f.name}'s port in status`,
      async () => {
        const entry = (await status(daemon)).igmpMeter?.byPort.find((port) => port.port.name === f.port);
        return entry !== undefined && entry.dropped >= count - seen - 50 ? entry.dropped : undefined;
      },
      12_000,
    );
    assert.ok(dropped <= count - seen, `dropped ${dropped} + seen ${seen} > sent ${count}`);
    const meterView = (await status(daemon)).igmpMeter!;
    for (const entry of meterView.byPort)
      if (entry.port.name !== f.port) assert.equal(entry.dropped, 0, `${entry.port.name} dropped ${entry.dropped}`);
    assert.ok(meterView.dropped >= dropped, `total ${meterView.dropped} < ${dropped}`);
    const metric = metricValue(
      await scrapeMetrics(node, metricsUrl),
      `mcastctl_igmp_meter_drops_total{port="${f.port}",pod="${podName(f)}"}`,
    );
    assert.ok(
      metric !== undefined && metric >= dropped && metric <= count - seen,
      `metric ${metric}, status ${dropped}`,
    );
    context.diagnostic(
      `sent ${flood.sent} in ${flood.seconds} s; daemon saw ${seen} (${packetIns} packet-ins); dropped ${dropped}; refused ${JSON.stringify(refusedAfter)}`,
    );
  });

  it('join policy: a denied join is refused (no member, nothing in OVS, no delivery); an allowed pod joins the same group and receives', async () => {
    const group = '239.50.0.1';
    const refusedBefore = (await refusedOn(daemon, a))['policy'] ?? 0;
    const aMember = await listen(a, group, 5502);
    await waitUntil(
      `a policy refusal on ${a.name}'s port`,
      async () => ((await refusedOn(daemon, a))['policy'] ?? 0) > refusedBefore,
    );
    assert.deepEqual(await memberPorts(daemon, group), []);
    assert.equal(await ovsGroupPorts(node, group), undefined, `OVS has a flow for ${group}`);
    const total = (await status(daemon)).igmpRefused?.total ?? {};
    assert.ok((total['policy'] ?? 0) > 0, `status totals: ${JSON.stringify(total)}`);
    const metric = metricValue(await scrapeMetrics(node, metricsUrl), 'mcastctl_igmp_refused_total{reason="policy"}');
    assert.ok(metric !== undefined && metric > 0, `mcastctl_igmp_refused_total{reason="policy"} is ${metric}`);

    const bMember = await listen(b, group, 5502);
    bJoined = bMember;
    await waitUntil(`${b.name} in ${group}`, async () => (await memberPorts(daemon, group)).join() === b.port);
    const ports = await waitForOvsMembers(node, group, [b]);
    assert.equal(ports.includes(a.ofport), false, `OVS forwards ${group} to ${a.name}`);
    assert.deepEqual(
      await deliverNumbered(t, [bMember, aMember], group, 5502, 'join'),
      [20, 0],
      `of 20 datagrams of ${group}: [${b.name}, ${a.name}]`,
    );
    assert.deepEqual(await memberPorts(daemon, group), [b.port]);
  });

  it("send policy: a denied sender's traffic is dropped in OVS (a 280 drop flow) and reaches no member; an allowed sender's does", async () => {
    const group = '239.60.0.1';
    const rMember = await listen(r, group, 5503);
    await waitForOvsMembers(node, group, [r]);
    const drops = await flowsAt(node, 280);
    assert.deepEqual([...drops.keys()], [s.ofport], `280 flows: ${JSON.stringify([...drops])}`);
    const [drop] = drops.get(s.ofport)!;
    assert.match(
      drop!,
      new RegExp(`priority=280,ip,in_port=${s.ofport},nw_dst=239\\.60\\.0\\.0/16 actions=drop$`),
      drop,
    );
    assert.equal((await status(daemon)).groupPolicy?.portsDeniedSending, 1);
    assert.deepEqual(
      await deliverNumbered(s, [rMember], group, 5503, 'denied'),
      [0],
      `${r.name} got datagrams of ${group} from ${s.name}`,
    );
    assert.deepEqual(
      await deliverNumbered(t, [rMember], group, 5503, 'allowed'),
      [20],
      `${r.name}: of 20 datagrams of ${group} from ${t.name}`,
    );
    // s may still send elsewhere.
    const other = await listen(r, '239.61.0.1', 5503);
    await waitForOvsMembers(node, '239.61.0.1', [r]);
    assert.deepEqual(await deliverNumbered(s, [other], '239.61.0.1', 5503, 'elsewhere'), [20]);
  });

  it('SIGHUP: a newly denied member leaves within 1 s and only what the change implies changes in OVS; a broken file keeps the policy in force', async () => {
    const group = '239.50.0.1';
    const bMember = bJoined;
    assert.ok(bMember !== undefined, 'the join case left no member of b');
    assert.deepEqual(await memberPorts(daemon, group), [b.port]);
    await waitUntil('nothing to sync', async () => (await status(daemon)).pendingSyncs === 0);
    const groupId = (await node.ofctl('dump-flows', node.bridge))
      .split('\n')
      .find((line) => line.includes(`nw_dst=${group} `))
      ?.match(/group:(\d+)/)?.[1];
    assert.ok(groupId !== undefined);
    const switchBefore = await node.switchState();
    const metersBefore = [...(await ovsMeters(node)).values()].map((meter) => meter.text).sort();

    // b denied 239.50/16 too; t denied sending to 239.62/16 (a new drop flow, the others stay).
    writeFileSync(
      policyFile,
      `${basePolicy()}  - action: deny
    pods: ${podName(b)}
    groups: 239.50.0.0/16
    directions: join
  - action: deny
    pods: ${podName(t)}
    groups: 239.62.0.0/16
    directions: send
`,
    );
    daemon.child.kill('SIGHUP');
    await sleep(1_000);
    assert.deepEqual(await memberPorts(daemon, group), [], `${b.name} still a member of ${group} 1 s after SIGHUP`);
    assert.equal(await ovsGroupPorts(node, group), undefined, `OVS still has a flow for ${group} 1 s after SIGHUP`);
    await daemon.waitForLog((entry) => entry['msg'] === 'SIGHUP: group policy in force' && entry['rules'] === 5);
    assert.deepEqual(
      await deliverNumbered(t, [bMember], group, 5502, 'reloaded'),
      [0],
      `${b.name} got datagrams of ${group} after the reload`,
    );

    await waitUntil('nothing to sync', async () => (await status(daemon)).pendingSyncs === 0);
    const switchAfter = await node.switchState();
    const goneFlows = switchBefore.flows.filter((line) => !switchAfter.flows.includes(line));
    const newFlows = switchAfter.flows.filter((line) => !switchBefore.flows.includes(line));
    assert.equal(goneFlows.length, 1, `flows gone: ${goneFlows.join('\n')}`);
    assert.match(goneFlows[0]!, new RegExp(`nw_dst=${group.replace(/\./g, '\\.')} actions=group:${groupId}$`));
    assert.equal(newFlows.length, 1, `flows new: ${newFlows.join('\n')}`);
    assert.match(
      newFlows[0]!,
      new RegExp(`priority=280,ip,in_port=${t.ofport},nw_dst=239\\.62\\.0\\.0/16 actions=drop$`),
    );
    const goneGroups = switchBefore.groups.filter((line) => !switchAfter.groups.includes(line));
    assert.deepEqual(
      goneGroups.map((line) => /group_id=(\d+)/.exec(line)?.[1]),
      [groupId],
      `groups gone: ${goneGroups.join('\n')}`,
    );
    assert.deepEqual(
      switchAfter.groups.filter((line) => !switchBefore.groups.includes(line)),
      [],
      'new groups',
    );
    assert.deepEqual(
      [...(await ovsMeters(node)).values()].map((meter) => meter.text).sort(),
      metersBefore,
      'the meters changed',
    );
    assert.equal((await status(daemon)).groupPolicy?.portsDeniedSending, 2);

    // A broken file (an unknown key on line 3): logged, the policy in force stays.
    writeFileSync(policyFile, `rules:\n  - action: deny\n    podz: ${podName(a)}\n`);
    daemon.child.kill('SIGHUP');
    const refused = await daemon.waitForLog((entry) =>
      String(entry['msg']).startsWith('SIGHUP: the group policy was not reloaded'),
    );
    assert.ok(
      String(refused['error']).includes(`${policyFile}:3`),
      `the error does not name ${policyFile}:3: ${String(refused['error'])}`,
    );
    const refusedBefore = (await refusedOn(daemon, b))['policy'] ?? 0;
    const again = await listen(b, '239.50.0.2', 5504);
    await waitUntil(
      `a policy refusal on ${b.name}'s port`,
      async () => ((await refusedOn(daemon, b))['policy'] ?? 0) > refusedBefore,
    );
    assert.deepEqual(await memberPorts(daemon, '239.50.0.2'), []);
    assert.deepEqual(await deliverNumbered(t, [again], '239.50.0.2', 5504, 'broken'), [0]);
    assert.equal((await status(daemon)).groupPolicy?.rules, 5);
    assert.equal((await flowsAt(node, 280)).has(t.ofport), true, `${t.name}'s drop flow went with the broken file`);
    assert.equal(daemon.running(), true);
  });

  it('after ovs-vswitchd restarts, the meters, metered flows, drops, flows and groups come back as they were', async () => {
    await waitUntil('nothing to sync', async () => (await status(daemon)).pendingSyncs === 0);
    const switchBefore = await node.switchState();
    const metersBefore = [...(await ovsMeters(node)).values()].map((meter) => meter.text).sort();
    const replays = (await status(daemon)).counters.replays;
    await node.restartVswitchd();
    await waitUntil(
      'the switch to be as before',
      async () => {
        const state = await node.switchState();
        const meters = [...(await ovsMeters(node)).values()].map((meter) => meter.text).sort();
        return (
          JSON.stringify(state) === JSON.stringify(switchBefore) &&
          JSON.stringify(meters) === JSON.stringify(metersBefore)
        );
      },
      20_000,
    ).catch(async (error: unknown) => {
      assert.deepEqual(await node.switchState(), switchBefore, String(error));
      assert.deepEqual(
        [...(await ovsMeters(node)).values()].map((meter) => meter.text).sort(),
        metersBefore,
        String(error),
      );
    });
    assert.ok((await status(daemon)).counters.replays > replays, 'no replay counted');
    const meters = await ovsMeters(node);
    const metered = await flowsAt(node, 301);
    for (const pod of [a, b, s, t, r, f]) assertMetered(pod, meters, metered);
    // Still in force on the new switch: s's sends dropped, t's delivered.
    const rMember = receivers.find((receiver) => receiver.group === '239.60.0.1')!;
    assert.deepEqual(await deliverNumbered(s, [rMember], '239.60.0.1', 5503, 'restart-denied'), [0]);
    assert.deepEqual(await deliverNumbered(t, [rMember], '239.60.0.1', 5503, 'restart-allowed'), [20]);
  });

  it('a broken policy file at the start exits 64 naming FILE:LINE', async (context) => {
    const ns = await lab.namespace('nobody');
    const dir = lab.file('bad-start');
    mkdirSync(dir, { recursive: true });
    const unknownKey = `${dir}/unknown-key.yaml`;
    writeFileSync(unknownKey, 'rules:\n  - action: deny\n    podz: default/pa\n');
    const badYaml = `${dir}/bad-yaml.yaml`;
    writeFileSync(badYaml, 'rules:\n  - action: deny\n    pods: [default/pa\n');
    const badRange = `${dir}/bad-range.yaml`;
    writeFileSync(badRange, 'rules:\n  - action: deny\n    groups: 10.0.0.0/8\n');
    const cases: Array<[string, string, RegExp]> = [
      ['an unknown key', unknownKey, new RegExp(`${unknownKey}:3\\b.*podz`)],
      ['bad YAML', badYaml, new RegExp(`${badYaml}:\\d+`)],
      ['a unicast range', badRange, new RegExp(`${badRange}:3\\b`)],
    ];
    for (const [name, file, message] of cases) {
      const args = [
        'daemon',
        '--group-policy',
        file,
        '--ovs-rundir',
        `${dir}/no-ovs`,
        '--no-metrics',
        '--control-socket',
        `${dir}/c.sock`,
        '--state-dir',
        `${dir}/s`,
      ];
      const result = await mcastctl(args, { ns, timeoutMs: 15_000 });
      assert.equal(result.code, 64, `${name}: exit ${result.code}: ${result.stderr}`);
      assert.match(result.stderr, message, name);
      context.diagnostic(`${name}: ${result.stderr.trim().split('\n')[0]}`);
      assert.doesNotMatch(result.stderr, /\n\s+at /, `${name}: ${result.stderr}`);
    }
  });
});
