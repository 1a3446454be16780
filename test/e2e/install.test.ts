/**
 * `mcastctl install`, `uninstall` and `show` against a real OVS node in the lab: what
 * ovs-ofctl (an independent reader) sees, where real UDP multicast goes, and that
 * nothing else on the bridge is touched.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { mcastctl, type CliResult } from '../lab/cli.js';
import { Lab, sleep } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import { OpenFlowConnection } from '../../src/transport/openflow/connection.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { MulticastPipeline } from '../../src/domain/pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, groupEntryOf } from '../../src/domain/pipeline/openflow-entries.js';
import { planInstall } from '../../src/domain/pipeline/plan.js';
import { groupAddress } from '../../src/wire/ip-address.js';

const G1 = groupAddress('239.1.2.3');
const G1_ID = 0x10000000 + 0x0f010203;
const G1_COOKIE = '0x4d430300ef010203';
/** Entries of another controller on the same bridge: they must survive everything. */
const FOREIGN_FLOW = 'cookie=0x1234,priority=100,ip,nw_dst=239.5.5.5,actions=drop';
const FOREIGN_GROUP = 'group_id=7,type=all,bucket=actions=drop';

describe('install, show, uninstall on a real OVS bridge', { timeout: 180_000 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: OvsPod[];
  let scratch: string;

  before(async () => {
    lab = Lab.create();
    scratch = mkdtempSync(join(tmpdir(), 'mcl-install-'));
    node = await OvsNode.start(lab, 'n1');
    pods = [];
    for (let i = 1; i <= 4; i++) pods.push(await node.addPod(`p${i}`, { address: `10.1.0.${10 + i}/24` }));
    await node.ofctl('add-flow', node.bridge, FOREIGN_FLOW);
    await node.ofctl('add-group', node.bridge, FOREIGN_GROUP);
  });
  after(async () => {
    await lab?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const cli = (...args: string[]): Promise<CliResult> => mcastctl([...args, '--ovs-rundir', node.rundir]);
  const pod = (n: number): OvsPod => pods[n - 1]!;

  function ours(state: { flows: string[]; groups: string[] }) {
    return {
      flows: state.flows.filter((line) => line.startsWith('cookie=0x4d43')),
      groups: state.groups.filter((line) => !line.startsWith('group_id=7,')),
    };
  }

  function assertForeignIntact(state: { flows: string[]; groups: string[] }): void {
    assert.ok(
      state.flows.some((line) => line.startsWith('cookie=0x1234,') && line.includes('nw_dst=239.5.5.5 actions=drop')),
      'the foreign flow',
    );
    assert.ok(
      state.flows.some((line) => line.startsWith('cookie=0x0,') && line.includes('actions=NORMAL')),
      "the bridge's NORMAL flow",
    );
    assert.ok(state.groups.includes('group_id=7,type=all,bucket=actions=drop'), 'the foreign group');
  }

  /**
   * Sends from pod `from` to G1 and returns how many datagrams every other pod received
   * (the sender's own entry is null: its kernel would loop its datagrams back to it).
   */
  async function deliveries(from: number, count: number): Promise<(number | null)[]> {
    const receivers = await Promise.all(pods.map((p, index) => (index === from - 1 ? undefined : p.listen(G1, 5001))));
    await sleep(300); // the joins' reports go out; the kernel accepts the group from now on
    await pod(from).send(G1, 5001, count, { intervalMs: 5 });
    await sleep(500);
    return Promise.all(
      receivers.map(async (receiver) => (receiver === undefined ? null : (await receiver.stop()).length)),
    );
  }

  it('install: exactly one ALL group and one flow, as ovs-ofctl reads them', async () => {
    const result = await cli('install', G1, '--ports', `${pod(2).port},${pod(3).ofport}`, '--json');
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(result.stdout) as {
      groups: { group: string; outcome: string; groupId: number; ports: { name: string; pod?: string }[] }[];
    };
    assert.deepEqual(
      document.groups.map((g) => [g.group, g.outcome, g.groupId, g.ports.map((p) => [p.name, p.pod])]),
      [
        [
          G1,
          'added',
          G1_ID,
          [
            [pod(2).port, 'default/p2'],
            [pod(3).port, 'default/p3'],
          ],
        ],
      ],
    );
    const state = await node.switchState();
    assert.deepEqual(ours(state), {
      flows: [`cookie=${G1_COOKIE}, table=0, priority=200,ip,nw_dst=${G1} actions=group:${G1_ID}`],
      groups: [
        `group_id=${G1_ID},type=all,bucket=actions=output:${pod(2).ofport},bucket=actions=output:${pod(3).ofport}`,
      ],
    });
    assertForeignIntact(state);
  });

  it('real UDP multicast from a pod reaches exactly the member pods', async () => {
    // Pod 4 joins the group too, but is not a member port: it must hear nothing.
    const [, p2, p3, p4] = await deliveries(1, 20);
    assert.deepEqual({ p2, p3, p4 }, { p2: 20, p3: 20, p4: 0 });
    // A member that sends: the other member hears it, nobody else does.
    const [p1, , q3, q4] = await deliveries(2, 10);
    assert.deepEqual({ p1, p3: q3, p4: q4 }, { p1: 0, p3: 10, p4: 0 });
  });

  it('installing the same thing twice changes nothing', async () => {
    const before = await node.switchState();
    const flowLine = async () =>
      (await node.ofctl('dump-flows', node.bridge, `cookie=${G1_COOKIE}/-1`))
        .split('\n')
        .find((line) => line.includes('cookie='))!;
    const packetsBefore = /n_packets=(\d+)/.exec(await flowLine())![1];
    const result = await cli('install', G1, '--ports', `${pod(3).port},${pod(2).port}`, '--json');
    assert.equal(result.code, 0, result.stderr);
    assert.equal((JSON.parse(result.stdout) as { groups: { outcome: string }[] }).groups[0]?.outcome, 'unchanged');
    assert.deepEqual(await node.switchState(), before);
    assert.equal(
      /n_packets=(\d+)/.exec(await flowLine())![1],
      packetsBefore,
      'the flow was not replaced (its counters kept)',
    );
  });

  it('install -f: many groups from a file; a changed membership is updated in place', async () => {
    const file = join(scratch, 'groups.yaml');
    const lines = [
      'groups:',
      `  - group: ${G1}`,
      `    ports: [${pod(2).port}, ${pod(4).port}]`,
      '  - group: 232.1.1.1',
      `    ports: [${pod(1).ofport}]`,
      `  - {group: 239.255.0.7, ports: [${pod(3).port}, ${pod(4).port}]}`,
    ];
    writeFileSync(file, lines.join('\n') + '\n');
    const result = await cli('install', '-f', file, '--json');
    assert.equal(result.code, 0, result.stderr);
    const outcomes = (JSON.parse(result.stdout) as { groups: { group: string; outcome: string }[] }).groups.map((g) => [
      g.group,
      g.outcome,
    ]);
    assert.deepEqual(outcomes, [
      [G1, 'updated'],
      ['232.1.1.1', 'added'],
      ['239.255.0.7', 'added'],
    ]);
    const state = ours(await node.switchState());
    assert.equal(state.flows.length, 3);
    assert.ok(
      state.groups.includes(
        `group_id=${G1_ID},type=all,bucket=actions=output:${pod(2).ofport},bucket=actions=output:${pod(4).ofport}`,
      ),
    );
    const [, p2, p3, p4] = await deliveries(1, 10);
    assert.deepEqual({ p2, p3, p4 }, { p2: 10, p3: 0, p4: 10 });
  });

  it('show lists the groups read back from the switch, with port and pod names', async () => {
    const result = await cli('show', '--json');
    assert.equal(result.code, 0, result.stderr);
    const shown = JSON.parse(result.stdout) as {
      bridge: string;
      groups: {
        group: string;
        groupId: number;
        ports: { ofport: number; name: string; pod?: string }[];
        packets: number;
      }[];
    };
    assert.equal(shown.bridge, 'br-int');
    assert.deepEqual(
      shown.groups.map((g) => [g.group, g.ports.map((p) => p.pod)]),
      [
        ['232.1.1.1', ['default/p1']],
        [G1, ['default/p2', 'default/p4']],
        ['239.255.0.7', ['default/p3', 'default/p4']],
      ],
    );
    assert.ok(
      (shown.groups.find((g) => g.group === G1)?.packets ?? 0) >= 10,
      'the flow counted the traffic it forwarded',
    );
    const human = await cli('show');
    assert.match(
      human.stdout,
      new RegExp(
        `│ ${G1.replace(/\./g, '\\.')} +│ 0x${G1_ID.toString(16)} +│ ${pod(2).port} \\(${pod(2).ofport}\\) default/p2`,
      ),
    );
  });

  describe('bad input changes nothing', () => {
    const cases: [string, () => string[], number, RegExp][] = [
      ['a unicast group', () => ['install', '10.1.2.3', '--ports', pod(2).port], 64, /not a multicast address/],
      ['a link-local group', () => ['install', '224.0.0.251', '--ports', pod(2).port], 64, /link-local/],
      [
        'an unknown port',
        () => ['install', '239.1.1.9', '--ports', `${pod(2).port},nosuchport`],
        64,
        /has no port nosuchport/,
      ],
      ['an unknown port number', () => ['install', '239.1.1.9', '--ports', '999'], 64, /has no port ofport 999/],
      [
        'a missing bridge',
        () => ['install', '239.1.1.9', '--ports', '1', '--bridge', 'br-nope'],
        64,
        /no bridge br-nope/,
      ],
      ['uninstall of a unicast group', () => ['uninstall', '10.0.0.1'], 64, /not a multicast address/],
    ];
    for (const [name, args, code, message] of cases) {
      it(name, async () => {
        const before = await node.switchState();
        const result = await cli(...args());
        assert.equal(result.code, code, result.stderr);
        assert.match(result.stderr, message);
        assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
        assert.deepEqual(await node.switchState(), before);
      });
    }
    it("the bridge's own (LOCAL) port cannot be a member", async () => {
      const before = await node.switchState();
      const result = await cli('install', '239.1.1.9', '--ports', node.bridge);
      assert.equal(result.code, 64, result.stderr);
      assert.match(result.stderr, /br-int is the bridge's own \(LOCAL\) port/);
      assert.deepEqual(await node.switchState(), before);
    });
    it("another controller's flow with the same match and priority is refused, never replaced", async () => {
      await node.ofctl('add-flow', node.bridge, 'cookie=0x77,priority=200,ip,nw_dst=239.1.1.77,actions=drop');
      const before = await node.switchState();
      const result = await cli('install', '239.1.1.77', '--ports', pod(2).port, '--json');
      assert.equal(result.code, 1, result.stderr);
      const [group] = (JSON.parse(result.stdout) as { groups: { outcome: string; error: string }[] }).groups;
      assert.equal(group?.outcome, 'failed');
      assert.match(group?.error ?? '', /another controller's flow \(cookie 0x77\) has the same match and priority 200/);
      assert.match(result.stderr, /OVS refused 1 change/);
      const state = await node.switchState();
      assert.ok(
        state.flows.some((line) => line.startsWith('cookie=0x77,') && line.includes('nw_dst=239.1.1.77 actions=drop')),
        'the foreign flow is intact',
      );
      assert.deepEqual(state, before, 'nothing was changed for it');
      await node.ofctl('del-flows', node.bridge, 'cookie=0x77/-1');
    });
    it('a bad file names its line', async () => {
      const file = join(scratch, 'bad.yaml');
      writeFileSync(
        file,
        `groups:\n  - group: ${G1}\n    ports: [${pod(2).port}]\n  - group: 239.1.1.300\n    ports: [x]\n`,
      );
      const before = await node.switchState();
      const result = await cli('install', '-f', file);
      assert.equal(result.code, 64);
      assert.match(result.stderr, /bad\.yaml:4: "239\.1\.1\.300" is not an IPv4 or IPv6 address/);
      assert.deepEqual(await node.switchState(), before);
    });
    it('OVS not running: exit 69 with a hint', async () => {
      const result = await mcastctl(['show', '--ovs-rundir', scratch]);
      assert.equal(result.code, 69, result.stderr);
      assert.match(result.stderr, /cannot connect to OVSDB unix:.*db\.sock: ENOENT/);
    });
  });

  it('a group too large for one GROUP_MOD is chained, and OVS forwards through the chain', async () => {
    // The real limit is 2047 buckets; a pipeline told it is 2 chains at 3 members already.
    const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 2 });
    const connection = await OpenFlowConnection.connect({ endpoint: node.openflowEndpoint });
    const readBack = async () =>
      pipeline.readInstalled(
        (
          await connection.dumpFlows({ cookie: pipeline.cookieMatch.cookie, cookieMask: pipeline.cookieMatch.mask })
        ).flatMap((stats) => flowEntryOf(stats) ?? []),
        (await connection.dumpGroups()).filter((desc) => pipeline.ownsGroupId(desc.groupId)).map(groupEntryOf),
      );
    try {
      const members = [pod(2).ofport, pod(3).ofport, pod(4).ofport];
      const [plan] = planInstall(pipeline, [{ group: G1, ports: members }], await readBack());
      // G1 is installed (2 members, one group): its chain's second link is added, then the head changed.
      assert.deepEqual(
        plan?.changes.map((change) => change.op),
        ['add-group', 'modify-group'],
      );
      const { errors } = await connection.batch(plan!.changes.map(changeMessage));
      assert.equal(errors.size, 0, [...errors.values()].map((error) => error.message).join('; '));
      const state = ours(await node.switchState());
      assert.ok(
        state.groups.includes(
          `group_id=${G1_ID},type=all,bucket=actions=output:${pod(2).ofport},bucket=actions=group:${G1_ID + 0x10000000}`,
        ),
        state.groups.join('\n'),
      );
      assert.ok(
        state.groups.includes(
          `group_id=${G1_ID + 0x10000000},type=all,bucket=actions=output:${pod(3).ofport},bucket=actions=output:${pod(4).ofport}`,
        ),
        state.groups.join('\n'),
      );
      const [, p2, p3, p4] = await deliveries(1, 8);
      assert.deepEqual({ p2, p3, p4 }, { p2: 8, p3: 8, p4: 8 });
      assert.deepEqual((await readBack()).groups.find((group) => group.group === G1)?.ports, members);
    } finally {
      await connection.close();
    }
    // mcastctl (with the real limit) reads the chain too.
    const shown = JSON.parse((await cli('show', '--json')).stdout) as {
      groups: { group: string; ports: { ofport: number }[] }[];
    };
    assert.deepEqual(
      shown.groups.find((group) => group.group === G1)?.ports.map((port) => port.ofport),
      [pod(2).ofport, pod(3).ofport, pod(4).ofport],
    );
  });

  it('uninstall removes exactly the named group; --all removes everything of ours, nothing else', async () => {
    const one = await cli('uninstall', G1, '239.9.9.9', '--json');
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(
      (JSON.parse(one.stdout) as { groups: { group: string; outcome: string }[] }).groups.map((g) => [
        g.group,
        g.outcome,
      ]),
      [
        [G1, 'removed'],
        ['239.9.9.9', 'absent'],
      ],
    );
    let state = await node.switchState();
    assert.equal(ours(state).flows.length, 2);
    assert.ok(!ours(state).groups.some((line) => line.startsWith(`group_id=${G1_ID},`)));
    assertForeignIntact(state);

    const all = await cli('uninstall', '--all');
    assert.equal(all.code, 0, all.stderr);
    state = await node.switchState();
    assert.deepEqual(ours(state), { flows: [], groups: [] });
    assertForeignIntact(state);
    // With our flows gone, G1 falls back to the bridge's NORMAL flow: flooded to every pod again.
    const [, p2, p3, p4] = await deliveries(1, 5);
    assert.deepEqual({ p2, p3, p4 }, { p2: 5, p3: 5, p4: 5 });
  });
});
