/**
 * `mcastctl trace`, end to end, on node a of the two-node multicast lab, with the daemon
 * running (routing nothing: no multicast interfaces) and seven pods on node a. Each broken case is made for real, the
 * way it happens on a node, and trace must name it at the right stage with the right code and facts:
 *
 * - a: the pod is a member of another group only (its kernel does report) → igmp / never-reported;
 * - b: nftables in the pod drops its IGMP while a socket in it joined → igmp / no-igmp;
 * - c: the group policy given to the daemon denies the pod the group → igmp / denied-by-policy;
 * - d: the pod is already in as many groups as --max-groups-per-port (1) allows → igmp / limit-reached;
 * - e: the pod's bucket was taken out of our OVS group by hand (ovs-ofctl mod-group) → ovs / no-bucket.
 *
 * A healthy case passes every stage, and the member really gets the UDP: a sender pod on
 * the node (--from); and with no sender named, trace follows every sender this snooping
 * node carries (another pod; the tunnel and the outside are not applicable). And with no
 * daemon on the control socket, the OVS and kernel stages still run and the daemon's are
 * skipped. The cases of a node that routes (the external
 * host through the underlay, a pod's traffic routed off the node) are in
 * test/routing/trace-routed.test.ts.
 *
 * Every case's pod is set up in before(), all at once, so that their waits overlap.
 *
 * Needs root, iproute2, ethtool, nft, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { Lab, waitUntil } from '../lab/lab.js';
import { buildMulticastLab, MULTICAST_LAB, type MulticastLab, type MulticastLabNode } from '../lab/multicast-lab.js';
import type { OvsPod, Receiver } from '../lab/ovs.js';
import { ovsGroupPorts, waitForOvsMembers } from '../lab/switch-checks.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';
import type { TraceStage } from '../../src/controllers/trace/trace-report.js';
import { assertPodPortStage, podName, stageOf, traceOn, type TraceResult, type TraceRun } from '../lab/trace-checks.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the trace tests run the built CLI: ${missing}`);

/** One group per case, so that no case's state reaches another's. */
const G = {
  /** a's "other" group, and e's group (pa and pe are both members: e's OVS group keeps a bucket when pe's goes). */
  shared: '239.71.1.1',
  neverJoined: '239.71.1.2',
  firewalled: '239.71.2.1',
  denied: '239.71.3.1',
  limitFirst: '239.71.4.1',
  limitSecond: '239.71.4.2',
  local: '239.71.6.1',
} as const;
const PORT = 5471;
/** The daemon queries the pods every 2 s, as the underlay's querier does, so that silence and reports show quickly. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const CASE_TIMEOUT_MS = 20_000;

/** The policy file; the deny rule of pc's group starts on line 5 (a rule's line is where its item starts). */
const policyText = (deniedPod: string) => `rules:
  - action: deny
    pods: default/nobody
    groups: 239.72.0.0/16
  - action: deny
    pods: ${deniedPod}
    groups: 239.71.3.0/24
    directions: join
`;
const DENY_RULE_LINE = 5;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe('mcastctl trace: each broken case named at its stage, healthy ones delivered', { concurrency: 1 }, () => {
  let lab: Lab;
  let ml: MulticastLab;
  let nodeA: MulticastLabNode;
  /** pa: case a; pb: b; pc: c; pd: d; pe: e; pf: the local member, pg its sender. */
  let pa: OvsPod;
  let pb: OvsPod;
  let pc: OvsPod;
  let pd: OvsPod;
  let pe: OvsPod;
  let pf: OvsPod;
  let pg: OvsPod;
  let daemon: RunningDaemon;
  let trace: TraceRun;
  const receivers: Receiver[] = [];

  const listen = async (pod: OvsPod, group: string): Promise<Receiver> => {
    const receiver = await pod.listen(group, PORT);
    receivers.push(receiver);
    return receiver;
  };

  /** The report ends at `name`, failed with `code`; every stage before it passed. */
  const assertBlocked = (
    result: TraceResult,
    name: TraceStage['name'],
    code: string,
    stageNumber: number,
  ): TraceStage => {
    const { report } = result;
    assert.equal(result.code, 1, `exit status; ${result.context}`);
    assert.equal(report.verdict, 'blocked', result.context);
    assert.equal(report.blockedAt, name, result.context);
    assert.equal(report.daemon, 'reachable', result.context);
    const last = report.stages.at(-1)!;
    assert.equal(last.name, name, result.context);
    assert.equal(last.stage, stageNumber, result.context);
    assert.equal(last.status, 'fail', result.context);
    assert.equal(last.code, code, result.context);
    assert.equal(typeof last.hint, 'string', `a failed stage has a hint; ${result.context}`);
    assert.ok(last.hint!.length > 0, result.context);
    assert.deepEqual(
      report.stages.slice(0, -1).map((entry) => entry.status),
      report.stages.slice(0, -1).map(() => 'pass'),
      `the stages before ${name} passed; ${result.context}`,
    );
    return last;
  };

  const membersOf = async (group: string): Promise<string[]> =>
    ((await control<GroupView[]>(daemon, ['groups'])).find((view) => view.group === group)?.members ?? [])
      .map((member) => member.port.name)
      .sort();

  const refusedOn = async (pod: OvsPod): Promise<Record<string, number>> =>
    (await control<DaemonStatus>(daemon, ['status'])).igmpRefused?.byPort.find((entry) => entry.port.name === pod.port)
      ?.counts ?? {};

  /** The id of the OVS group the (*,G) flow of `group` points to. */
  const ovsGroupId = async (group: string): Promise<number | undefined> => {
    const flows = await nodeA.node.ofctl('dump-flows', nodeA.node.bridge);
    const line = flows
      .split('\n')
      .find(
        (entry) =>
          !entry.includes('nw_src=') && (entry.includes(`nw_dst=${group},`) || entry.includes(`nw_dst=${group} `)),
      );
    const id = line?.match(/actions=group:(\d+)/)?.[1];
    return id === undefined ? undefined : Number(id);
  };

  before(async () => {
    lab = Lab.create();
    ml = await buildMulticastLab(lab, { podsPerNode: 0 });
    nodeA = ml.nodes[0];
    const subnet = MULTICAST_LAB.podSubnets[0].split('.').slice(0, 3).join('.');
    [pa, pb, pc, pd, pe, pf, pg] = (await Promise.all(
      ['pa', 'pb', 'pc', 'pd', 'pe', 'pf', 'pg'].map((name, index) =>
        nodeA.node.addPod(name, {
          address: `${subnet}.${MULTICAST_LAB.firstPodHost + index}/24`,
          gateway: nodeA.gateway.address,
        }),
      ),
    )) as [OvsPod, OvsPod, OvsPod, OvsPod, OvsPod, OvsPod, OvsPod];

    // b: the firewall goes in before anything in the pod joins, so that not one IGMP message leaves it.
    const nft = (...words: string[]) => lab.exec(pb.ns, ['nft', ...words]);
    await nft('add', 'table', 'inet', 'f');
    await nft('add', 'chain', 'inet', 'f', 'out', '{ type filter hook output priority 0; }');
    await nft('add', 'rule', 'inet', 'f', 'out', 'ip', 'protocol', 'igmp', 'counter', 'drop');

    const policyFile = lab.file('policy.yaml');
    writeFileSync(policyFile, policyText(podName(pc)));
    daemon = startDaemon(nodeA.node, {
      args: [...SHORT_TIMERS, '--group-policy', policyFile, '--max-groups-per-port', '1'],
    });
    await daemon.ready();
    trace = traceOn(nodeA.node, daemon);

    // d's first group first: its second must be the one past the limit.
    await listen(pd, G.limitFirst);
    await Promise.all([
      listen(pa, G.shared),
      listen(pe, G.shared),
      listen(pb, G.firewalled),
      listen(pc, G.denied),
      listen(pf, G.local),
      waitUntil(`${pd.name} in ${G.limitFirst}`, async () => (await membersOf(G.limitFirst)).includes(pd.port)).then(
        () => listen(pd, G.limitSecond),
      ),
    ]);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  it('a: the pod reports another group, never this one → igmp / never-reported', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    // Its kernel does speak IGMP: the daemon has it in the other group.
    await waitUntil(`${pa.name} in ${G.shared}`, async () => (await membersOf(G.shared)).includes(pa.port));
    const result = await trace(G.neverJoined, pa);
    const { report } = result;
    assert.equal(report.group, G.neverJoined);
    assert.equal(report.pod, podName(pa));
    assert.equal(report.source, null);
    assertPodPortStage(report, pa);
    assert.equal(report.stages.length, 2, result.context);
    const igmp = assertBlocked(result, 'igmp', 'never-reported', 2);
    assert.ok((igmp.facts['messages'] as number) > 0, `messages: ${result.context}`);
    assert.match(String(igmp.facts['lastMessageAt']), ISO, result.context);
    assert.equal(igmp.facts['reports'], 0, result.context);
    assert.equal(igmp.facts['lastReportAt'], null, result.context);
    assert.deepEqual(igmp.facts['refusals'], {}, result.context);
    assert.ok((igmp.facts['reportedGroups'] as string[]).includes(G.shared), `reportedGroups: ${result.context}`);
    assert.ok(!(igmp.facts['reportedGroups'] as string[]).includes(G.neverJoined), result.context);
    assert.equal(igmp.facts['meterDropped'], 0, result.context);

    // The human form: one line a stage, the failure marked, its hint under it.
    const text = await trace(G.neverJoined, pa, [], { json: false });
    assert.equal(text.code, 1, text.context);
    const lines = text.stdout.split('\n');
    assert.ok(
      lines.some((line) => line.startsWith('✓ 1 ')),
      text.context,
    );
    assert.ok(
      lines.some((line) => line.startsWith('✗ 2 ')),
      text.context,
    );
    assert.ok(
      lines.some((line) => /^\s+hint: /.test(line)),
      text.context,
    );
    assert.ok(!lines.some((line) => /^[✓✗-] 3 /.test(line)), `the trace goes on past the failure; ${text.context}`);
  });

  it('b: nftables in the pod drops its IGMP while a socket joined → igmp / no-igmp', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    // The setup is real: the pod's kernel joined, and its reports (to the daemon's queries too) die in its firewall.
    const igmpTable = (await lab.exec(pb.ns, ['cat', '/proc/net/igmp'])).stdout;
    assert.match(
      igmpTable,
      new RegExp(Buffer.from(G.firewalled.split('.').map(Number).reverse()).toString('hex').toUpperCase()),
      `the pod's kernel joined ${G.firewalled}`,
    );
    await waitUntil(
      "the firewall's counter to show the pod's reports dropped, past a query of the daemon",
      async () =>
        Number(
          /packets (\d+)/.exec((await lab.exec(pb.ns, ['nft', 'list', 'chain', 'inet', 'f', 'out'])).stdout)?.[1] ?? 0,
        ) >= 3,
      10_000,
      200,
    );
    assert.deepEqual(await membersOf(G.firewalled), [], 'the daemon has a member of the firewalled group');
    assert.deepEqual(await refusedOn(pb), {}, "the daemon counted something of pb's port");

    const result = await trace(G.firewalled, pb);
    const { report } = result;
    assertPodPortStage(report, pb);
    assert.equal(report.stages.length, 2, result.context);
    const igmp = assertBlocked(result, 'igmp', 'no-igmp', 2);
    assert.equal(igmp.facts['messages'], 0, result.context);
    assert.equal(igmp.facts['lastMessageAt'], null, result.context);
    assert.equal(igmp.facts['reports'], 0, result.context);
    assert.equal(igmp.facts['lastReportAt'], null, result.context);
    assert.deepEqual(igmp.facts['refusals'], {}, result.context);
    assert.deepEqual(igmp.facts['reportedGroups'], [], result.context);
    assert.equal(igmp.facts['meterDropped'], 0, result.context);
  });

  it('c: the group policy denies the pod the group → igmp / denied-by-policy, with the rule', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitUntil(`a policy refusal on ${pc.name}'s port`, async () => ((await refusedOn(pc))['policy'] ?? 0) > 0);
    assert.deepEqual(await membersOf(G.denied), []);
    assert.equal(await ovsGroupPorts(nodeA.node, G.denied), undefined, `OVS has a flow for ${G.denied}`);

    const result = await trace(G.denied, pc);
    const { report } = result;
    assertPodPortStage(report, pc);
    assert.equal(report.stages.length, 2, result.context);
    const igmp = assertBlocked(result, 'igmp', 'denied-by-policy', 2);
    assert.equal(igmp.facts['rule'], DENY_RULE_LINE, result.context);
    assert.ok(
      ((igmp.facts['refusals'] as Record<string, number>)['policy'] ?? 0) >= 1,
      `refusals.policy: ${result.context}`,
    );
    assert.ok((igmp.facts['reports'] as number) >= 1, `reports: ${result.context}`);
    assert.match(String(igmp.facts['lastReportAt']), ISO, result.context);
    assert.ok((igmp.facts['messages'] as number) >= 1, result.context);
  });

  it('d: the pod already has its one group (--max-groups-per-port 1) → igmp / limit-reached, port-groups', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitUntil(
      `a port-groups refusal on ${pd.name}'s port`,
      async () => ((await refusedOn(pd))['port-groups'] ?? 0) > 0,
    );
    assert.deepEqual(await membersOf(G.limitSecond), []);
    assert.deepEqual(await membersOf(G.limitFirst), [pd.port]);

    const result = await trace(G.limitSecond, pd);
    const { report } = result;
    assertPodPortStage(report, pd);
    assert.equal(report.stages.length, 2, result.context);
    const igmp = assertBlocked(result, 'igmp', 'limit-reached', 2);
    assert.equal(igmp.facts['limit'], 'port-groups', result.context);
    assert.ok(
      ((igmp.facts['refusals'] as Record<string, number>)['port-groups'] ?? 0) >= 1,
      `refusals: ${result.context}`,
    );
    assert.ok((igmp.facts['reports'] as number) >= 1, `reports: ${result.context}`);
    assert.ok((igmp.facts['reportedGroups'] as string[]).includes(G.limitFirst), `reportedGroups: ${result.context}`);
  });

  it("e: the pod's bucket taken out of our OVS group by hand → ovs / no-bucket", {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitForOvsMembers(nodeA.node, G.shared, [pa, pe]);
    const groupId = await ovsGroupId(G.shared);
    assert.ok(groupId !== undefined, `no flow for ${G.shared}`);
    // Read our group as OVS has it and write it back without pe's bucket: what a hand on the switch does.
    const dump = await nodeA.node.ofctl('dump-groups', nodeA.node.bridge, `group_id=${groupId}`);
    const line = dump.split('\n').find((entry) => entry.includes(`group_id=${groupId},`));
    assert.ok(line !== undefined, dump);
    const [head, ...buckets] = line.trim().split(/,(?=bucket=)/);
    const kept = buckets.filter((bucket) => !new RegExp(`output:${pe.ofport}(\\D|$)`).test(bucket));
    assert.equal(kept.length, buckets.length - 1, `pe's bucket in ${line}`);
    await nodeA.node.ofctl('mod-group', nodeA.node.bridge, [head, ...kept].join(','));
    const ports = (await ovsGroupPorts(nodeA.node, G.shared)) ?? [];
    assert.ok(!ports.includes(pe.ofport), `mod-group left pe's bucket: ${ports}`);
    assert.ok(ports.includes(pa.ofport), `mod-group took pa's bucket too: ${ports}`);

    const result = await trace(G.shared, pe);
    const { report } = result;
    assertPodPortStage(report, pe);
    assert.deepEqual(
      report.stages.map((entry) => entry.name),
      ['pod-port', 'igmp', 'membership', 'ovs'],
      result.context,
    );
    assert.equal(stageOf(report, 'membership').facts['member'], true, result.context);
    const ovs = assertBlocked(result, 'ovs', 'no-bucket', 4);
    assert.equal(ovs.facts['groupId'], groupId, result.context);
    assert.equal(ovs.facts['bucket'], false, result.context);
    const flowPorts = ovs.facts['flowPorts'] as number[];
    assert.ok(!flowPorts.includes(pe.ofport), `flowPorts: ${result.context}`);
    assert.ok(flowPorts.includes(pa.ofport), `flowPorts: ${result.context}`);
    assert.deepEqual([...flowPorts].sort(), [...ports].sort(), `flowPorts are OVS's buckets; ${result.context}`);
    assert.equal(ovs.facts['trace'], null, result.context);
  });

  it('healthy, a sender pod on the node (--from): every stage passes and the member gets the UDP', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitForOvsMembers(nodeA.node, G.local, [pf]);
    // It is so: pg's datagrams reach pf. Sent first, so that the kernel has the (S,G) route out for stage 6.
    const receiver = receivers.find((entry) => entry.group === G.local)!;
    await pg.send(G.local, PORT, 10, { tag: 'local' });
    await waitUntil(
      'pf to receive 10 datagrams from pg',
      async () => receiver.received.filter((datagram) => datagram.payload.startsWith('local ')).length === 10,
      3000,
    );
    assert.ok(receiver.received.every((datagram) => datagram.from === pg.address));

    const result = await trace(G.local, pf, ['--from', podName(pg)]);
    const { report } = result;
    assert.equal(result.code, 0, result.context);
    assert.equal(report.verdict, 'delivered', result.context);
    assert.equal(report.blockedAt, null, result.context);
    assert.equal(report.daemon, 'reachable', result.context);
    assert.equal(report.source, pg.address, result.context);
    assert.deepEqual(
      report.sender,
      {
        kind: 'pod',
        pod: podName(pg),
        port: { ofport: pg.ofport, name: pg.port, pod: podName(pg) },
        address: pg.address,
      },
      result.context,
    );
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [6, 'sender', 'pass'],
      ],
      result.context,
    );
    for (const entry of report.stages) assert.equal(entry.code, undefined, result.context);
    assertPodPortStage(report, pf);
    const igmp = stageOf(report, 'igmp').facts;
    assert.ok((igmp['reports'] as number) >= 1, result.context);
    assert.match(String(igmp['lastReportAt']), ISO, result.context);
    const membership = stageOf(report, 'membership').facts;
    assert.equal(membership['member'], true, result.context);
    assert.equal(membership['mode'], 'exclude', result.context);
    assert.deepEqual(membership['sources'], [], result.context);
    assert.equal(membership['compatibility'], 3, result.context);
    assert.equal(
      membership['admitsSource'],
      true,
      `the filter is checked against the sender pod's address; ${result.context}`,
    );
    assert.ok((membership['expiresInMs'] as number) > 0, result.context);
    const ovs = stageOf(report, 'ovs').facts;
    assert.equal(ovs['groupId'], await ovsGroupId(G.local), result.context);
    assert.equal(ovs['bucket'], true, result.context);
    assert.ok((ovs['flowPorts'] as number[]).includes(pf.ofport), result.context);
    const ovsTrace = ovs['trace'] as {
      inPort: number;
      flow: string;
      datapathActions: string;
      outputs: number[];
      reachesPod: boolean;
    };
    assert.equal(ovsTrace.inPort, pg.ofport, result.context);
    assert.ok(ovsTrace.flow.includes(G.local), result.context);
    assert.ok(
      ovsTrace.flow.includes(`dl_src=${pg.mac}`),
      `traced from the sender's own MAC (its attached-mac); ${result.context}`,
    );
    assert.ok(ovsTrace.datapathActions.length > 0, result.context);
    assert.ok(ovsTrace.outputs.includes(pf.ofport), result.context);
    assert.ok(!ovsTrace.outputs.includes(pg.ofport), `OVS's trace sends back to the sender; ${result.context}`);
    assert.equal(ovsTrace.reachesPod, true, result.context);
    const sender = stageOf(report, 'sender').facts as {
      sendAllowed: boolean;
      rule: number | null;
      route: { iif: string; oifs: string[]; packets: number } | null;
    };
    assert.equal(sender.sendAllowed, true, result.context);
    assert.equal(sender.rule, null, result.context);
    // A daemon that routes nothing (no multicast interfaces) says so rather than failing the stage.
    assert.equal(sender.route, null, result.context);
    assert.match(
      report.stages.at(-1)?.summary ?? '',
      /not routed off the node \(no multicast interfaces\)/,
      result.context,
    );

    const text = await trace(G.local, pf, ['--from', podName(pg)], { json: false });
    assert.equal(text.code, 0, text.context);
    assert.equal(text.stdout.split('\n').filter((line) => line.startsWith('✓ ')).length, 5, text.context);
  });

  it('healthy, no sender named, on this snooping node: another pod delivers; the tunnel and the outside are not applicable, with why', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await waitForOvsMembers(nodeA.node, G.local, [pf]);
    const result = await trace(G.local, pf);
    const { report } = result;
    assert.equal(result.code, 0, result.context);
    assert.equal(report.verdict, 'delivered', result.context);
    assert.equal(report.senderNamed, false, result.context);
    assert.deepEqual(
      report.paths.map((path) => [path.from, path.verdict]),
      [
        ['pod', 'delivered'],
        ['tunnel', 'not-applicable'],
        ['outside', 'not-applicable'],
      ],
      result.context,
    );
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [6, 'sender', 'pass'],
      ],
      result.context,
    );
    // The sender followed: the pod of the lowest port number but pf's.
    const others = [pa, pb, pc, pd, pe, pg].sort((x, y) => x.ofport - y.ofport);
    assert.deepEqual(
      report.sender,
      {
        kind: 'pod',
        pod: podName(others[0]!),
        port: { ofport: others[0]!.ofport, name: others[0]!.port, pod: podName(others[0]!) },
        address: others[0]!.address,
      },
      result.context,
    );
    assert.equal(report.source, others[0]!.address, result.context);
    const [tunnel, outside] = [report.paths[1]!.stages, report.paths[2]!.stages];
    assert.deepEqual(
      [...tunnel, ...outside].map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [5, 'outside', 'not-applicable'],
        [5, 'outside', 'not-applicable'],
      ],
      result.context,
    );
    assert.equal(tunnel[0]!.summary, 'not applicable: the node is not in tunnel mode', result.context);
    assert.equal(
      outside[0]!.summary,
      'not applicable: the node routes no multicast in from outside (no multicast interfaces)',
      result.context,
    );
    // It is so: the followed pod's datagrams reach pf.
    const receiver = receivers.find((entry) => entry.group === G.local)!;
    await others[0]!.send(G.local, PORT, 10, { tag: 'unnamed' });
    await waitUntil(
      `pf to receive 10 datagrams from ${others[0]!.name}`,
      async () => receiver.received.filter((datagram) => datagram.payload.startsWith('unnamed ')).length === 10,
      3000,
    );

    const text = await trace(G.local, pf, [], { json: false });
    assert.equal(text.code, 0, text.context);
    const lines = text.stdout.split('\n');
    assert.match(lines[0]!, /\(from every sender the node carries\)$/, text.context);
    assert.equal(lines.filter((line) => line.startsWith('· 5 from outside ')).length, 2, text.context);
    assert.ok(
      lines.includes(`delivered: ${G.local} reaches ${podName(pf)} (from pod ${podName(others[0]!)})`),
      text.context,
    );
  });

  it("no daemon on the control socket: the OVS and kernel stages run, the daemon's are skipped", {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    const nowhere = ['--control-socket', lab.file('nowhere.sock')];
    const result = await trace(G.local, pf, ['--from', podName(pg), ...nowhere]);
    const { report } = result;
    // Nothing that ran blocks delivery; the daemon did not answer: 69.
    assert.equal(result.code, 69, result.context);
    assert.equal(report.daemon, 'unreachable', result.context);
    assert.equal(report.verdict, 'incomplete', result.context);
    assert.equal(report.blockedAt, null, result.context);
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'skipped'],
        [3, 'membership', 'skipped'],
        [4, 'ovs', 'pass'],
        [6, 'sender', 'pass'],
      ],
      result.context,
    );
    const ovs = stageOf(report, 'ovs').facts;
    assert.equal(ovs['bucket'], true, result.context);
    assert.equal((ovs['trace'] as { reachesPod: boolean }).reachesPod, true, result.context);

    const text = await trace(G.local, pf, ['--from', podName(pg), ...nowhere], { json: false });
    assert.equal(text.code, 69, text.context);
    const lines = text.stdout.split('\n');
    assert.ok(
      lines.some((line) => line.startsWith('- 2 ')) && lines.some((line) => line.startsWith('- 3 ')),
      text.context,
    );
    assert.match(text.stdout, /daemon's stages \(2, 3\) were skipped/, text.context);

    // --no-daemon asks nothing of it: the same stages, exit 0.
    const asked = await trace(G.local, pf, ['--from', podName(pg), '--no-daemon']);
    assert.equal(asked.code, 0, asked.context);
    assert.equal(asked.report.daemon, 'not-asked', asked.context);
    assert.equal(asked.report.verdict, 'incomplete', asked.context);
    assert.deepEqual(
      asked.report.stages.map((entry) => entry.status),
      ['pass', 'skipped', 'skipped', 'pass', 'pass'],
      asked.context,
    );
  });
});
