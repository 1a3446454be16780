/**
 * `install`, `show`, `reconcile` and `uninstall` with IPv6 groups on a real OVS node in
 * the lab: what ovs-ofctl (an independent reader) sees, where ofproto/trace says an IPv6
 * packet to the group goes, the drift reconcile finds after a bucket is deleted by hand,
 * and an IPv4 group beside them that neither disturbs. The pods are IPv4 hosts: the IPv6
 * side is checked on the switch (flows, groups, traces), by OpenFlow port number. Static
 * IPv6 kernel routes are tested in test/routing/static-routes-ipv6.test.ts (they need
 * kernel multicast routing).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { mcastctl, type CliResult } from '../lab/cli.js';
import { Lab } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const G6 = 'ff3e::8000:1';
const S6 = '2001:db8::5';
const G4 = '239.1.2.3';

describe('install, show, reconcile, uninstall of IPv6 groups on a real OVS bridge', { timeout: 120_000 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: OvsPod[];
  let scratch: string;

  before(async () => {
    lab = Lab.create();
    scratch = mkdtempSync(join(tmpdir(), 'mcl-install6-'));
    node = await OvsNode.start(lab, 'n1');
    pods = [];
    for (let i = 1; i <= 4; i++) pods.push(await node.addPod(`p${i}`, { address: `10.1.0.${10 + i}/24` }));
  });
  after(async () => {
    await lab?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const cli = (...args: string[]): Promise<CliResult> =>
    mcastctl([...args, '--ovs-rundir', node.rundir], { ns: node.ns, env: node.env, timeoutMs: 20_000 });
  const reconcile = (...args: string[]): Promise<CliResult> =>
    cli('reconcile', ...args, '--no-daemon', '--lock-file', join(scratch, 'reconcile.lock'));
  const ofport = (n: number): number => pods[n - 1]!.ofport;

  /** Our flows as ovs-ofctl prints them. */
  async function ourFlows(): Promise<string[]> {
    return (await node.ofctl('dump-flows', node.bridge)).split('\n').filter((line) => line.includes('cookie=0x4d43'));
  }

  /** The output ports of the OVS group the flow picked by `picks` points to; undefined without such a flow. */
  async function bucketsOf(picks: (flow: string) => boolean): Promise<number[] | undefined> {
    const id = (await ourFlows()).find(picks)?.match(/actions=group:(\d+)/)?.[1];
    if (id === undefined) return undefined;
    const line = (await node.ofctl('dump-groups', node.bridge))
      .split('\n')
      .find((entry) => entry.includes(`group_id=${id},`));
    return line === undefined
      ? []
      : [...line.matchAll(/bucket=actions=output:(\d+)/g)].map((match) => Number(match[1])).sort((a, b) => a - b);
  }
  const groupFlow = (group: string) => (flow: string) =>
    !flow.includes('_src=') && new RegExp(`_dst=${group.replaceAll('.', '\\.')}[ ,]`).test(flow);
  const sourceFlow = (flow: string) =>
    flow.includes(`ipv6_src=${S6},ipv6_dst=${G6} `) || flow.includes(`ipv6_src=${S6},ipv6_dst=${G6},`);

  /** The OpenFlow ports ofproto/trace says a packet with `fields` from pod `from` goes out of. */
  async function traced(fields: string, from = 4): Promise<number[]> {
    const trace = await node.appctl('ofproto/trace', node.bridge, `in_port=${ofport(from)},${fields}`);
    const outputs = [...trace.matchAll(/^\s*output:(\d+)/gm)].map((match) => Number(match[1]));
    assert.match(trace, /Datapath actions: /, trace);
    return [...new Set(outputs)].sort((a, b) => a - b);
  }
  const v6Packet = (source: string) => `ipv6,ipv6_src=${source},ipv6_dst=${G6},nw_proto=17,dl_dst=33:33:80:00:00:01`;

  it('installs an IPv6 group, its (S,G) entry and an IPv4 group beside them', async () => {
    const v6 = await cli('install', 'FF3E:0::8000:0001', '--ports', `${ofport(1)},${ofport(2)}`, '--json');
    assert.equal(v6.code, 0, v6.stderr);
    const result = JSON.parse(v6.stdout) as { groups: { group: string; outcome: string }[] };
    assert.deepEqual(
      result.groups.map((group) => [group.group, group.outcome]),
      [[G6, 'added']],
      'canonical text out',
    );
    const sg = await cli('install', G6, '--source', S6, '--ports', String(ofport(3)));
    assert.equal(sg.code, 0, sg.stderr);
    const v4 = await cli('install', G4, '--ports', `${ofport(3)},${ofport(4)}`);
    assert.equal(v4.code, 0, v4.stderr);

    const flows = await ourFlows();
    assert.ok(
      flows.some((flow) => /priority=200,ipv6,ipv6_dst=ff3e::8000:1 actions=group:\d+/.test(flow)),
      flows.join('\n'),
    );
    assert.ok(
      flows.some((flow) => /priority=210,ipv6,ipv6_src=2001:db8::5,ipv6_dst=ff3e::8000:1 actions=group:\d+/.test(flow)),
      flows.join('\n'),
    );
    assert.ok(
      flows.some((flow) => /priority=200,ip,nw_dst=239\.1\.2\.3 actions=group:\d+/.test(flow)),
      flows.join('\n'),
    );
    assert.deepEqual(await bucketsOf(groupFlow(G6)), [ofport(1), ofport(2)]);
    assert.deepEqual(await bucketsOf(sourceFlow), [ofport(3)]);
    assert.deepEqual(await bucketsOf(groupFlow(G4)), [ofport(3), ofport(4)]);
  });

  it("ofproto/trace: an IPv6 packet to the group goes to exactly its members; its (S,G) source to the entry's", async () => {
    assert.deepEqual(await traced(v6Packet('2001:db8::9')), [ofport(1), ofport(2)]);
    assert.deepEqual(await traced(v6Packet(S6)), [ofport(3)]);
    assert.deepEqual(await traced(`ip,nw_src=10.1.0.11,nw_dst=${G4},nw_proto=17,dl_dst=01:00:5e:01:02:03`, 1), [
      ofport(3),
      ofport(4),
    ]);
  });

  it('show lists IPv4 first, then the IPv6 group and its (S,G) entry', async () => {
    const json = await cli('show', '--json');
    assert.equal(json.code, 0, json.stderr);
    const shown = JSON.parse(json.stdout) as {
      groups: { group: string; source?: string; ports: { ofport: number }[] }[];
    };
    assert.deepEqual(
      shown.groups.map((group) => [group.group, group.source, group.ports.map((port) => port.ofport)]),
      [
        [G4, undefined, [ofport(3), ofport(4)]],
        [G6, undefined, [ofport(1), ofport(2)]],
        [G6, S6, [ofport(3)]],
      ],
    );
    const human = await cli('show');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`\\(${S6}, ${G6}\\)`));
    assert.match(human.stdout, /2 groups, 1 \(S, G\) entry/);
  });

  it('reconcile: in sync, then finds and repairs a bucket deleted by hand, leaving the IPv4 group alone', async () => {
    const file = join(scratch, 'state.yaml');
    writeFileSync(
      file,
      [
        'groups:',
        `  - {group: ${G4}, ports: [${ofport(3)}, ${ofport(4)}]}`,
        `  - {group: "${G6}", ports: [${ofport(1)}, ${ofport(2)}]}`,
        `  - {group: "${G6}", source: "${S6}", ports: [${ofport(3)}]}`,
        '',
      ].join('\n'),
    );
    const inSync = await reconcile('-f', file);
    assert.equal(inSync.code, 0, inSync.stderr + inSync.stdout);
    assert.match(inSync.stdout, /^in sync: 3 groups and 0 routes as declared/m);

    const id = (await ourFlows()).find(groupFlow(G6))!.match(/actions=group:(\d+)/)![1];
    await node.ofctl('mod-group', node.bridge, `group_id=${id},type=all,bucket=output:${ofport(1)}`);
    assert.deepEqual(await bucketsOf(groupFlow(G6)), [ofport(1)]);
    const v4Before = (await ourFlows())
      .filter(groupFlow(G4))
      .map((flow) => flow.replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,/g, ''));

    const dry = await reconcile('-f', file, '--dry-run', '--json');
    assert.equal(dry.code, 2, dry.stderr);
    const report = JSON.parse(dry.stdout) as {
      drift: { object: string; key: string; action: string; detail: string; result: string }[];
    };
    assert.deepEqual(
      report.drift.map((row) => [row.object, row.key, row.action, row.detail, row.result]),
      [['group', G6, 'change', `ports ${ofport(2)} missing`, 'planned']],
    );
    assert.deepEqual(await bucketsOf(groupFlow(G6)), [ofport(1)], 'a dry run changes nothing');

    const repair = await reconcile('-f', file);
    assert.equal(repair.code, 2, repair.stderr);
    assert.match(repair.stdout, /drift: 1 difference, 1 repaired/);
    assert.deepEqual(await bucketsOf(groupFlow(G6)), [ofport(1), ofport(2)]);
    assert.deepEqual(await traced(v6Packet('2001:db8::9')), [ofport(1), ofport(2)]);
    const again = await reconcile('-f', file, '--quiet');
    assert.equal(again.code, 0, again.stderr + again.stdout);
    assert.equal(again.stdout, '');
    const v4After = (await ourFlows())
      .filter(groupFlow(G4))
      .map((flow) => flow.replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,/g, ''));
    assert.deepEqual(v4After, v4Before, 'the IPv4 group untouched');
  });

  it('refuses link-scope IPv6 groups and mixed families (exit 64), changing nothing', async () => {
    const before = await node.switchState();
    const link = await cli('install', 'ff02::fb', '--ports', String(ofport(1)));
    assert.equal(link.code, 64);
    assert.match(link.stderr, /ff02::fb is of link-local scope/);
    const mixed = await cli('install', G6, '--source', '10.0.0.5', '--ports', String(ofport(1)));
    assert.equal(mixed.code, 64);
    assert.match(mixed.stderr, /different families/);
    assert.deepEqual(await node.switchState(), before);
  });

  it('uninstall removes the IPv6 group and its (S,G) entry; the IPv4 group stays', async () => {
    const removed = await cli('uninstall', G6, '--json');
    assert.equal(removed.code, 0, removed.stderr);
    const result = JSON.parse(removed.stdout) as { groups: { group: string; source?: string; outcome: string }[] };
    assert.deepEqual(
      result.groups.map((group) => [group.group, group.source, group.outcome]),
      [
        [G6, undefined, 'removed'],
        [G6, S6, 'removed'],
      ],
    );
    const flows = await ourFlows();
    assert.equal(flows.filter((flow) => flow.includes('ipv6')).length, 0, flows.join('\n'));
    assert.deepEqual(await bucketsOf(groupFlow(G4)), [ofport(3), ofport(4)]);
    const trace = await node.appctl('ofproto/trace', node.bridge, `in_port=${ofport(4)},${v6Packet('2001:db8::9')}`);
    assert.doesNotMatch(trace, /group:/, 'no flow of ours takes the IPv6 group any more');
    const groups = (await node.ofctl('dump-groups', node.bridge))
      .split('\n')
      .filter((line) => line.includes('group_id='));
    assert.equal(groups.length, 1, groups.join('\n'));
  });
});
