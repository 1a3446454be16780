/**
 * Static (S,G) entries on a real OVS node: `install G --source S --ports L`, `show`,
 * `reconcile` of a declared state with per-source group entries and `uninstall --source
 * --ovs`, as ovs-ofctl reads them and as real UDP multicast from two sender pods goes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { mcastctl, type CliResult } from '../lab/cli.js';
import { Lab, sleep } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const G = '239.6.6.6';
const PORT = 5006;

describe('static (S,G) entries: install, show, reconcile, uninstall on a real OVS bridge', { timeout: 120_000 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: OvsPod[];
  let scratch: string;

  before(async () => {
    lab = Lab.create();
    scratch = mkdtempSync(join(tmpdir(), 'mcl-static-sources-'));
    node = await OvsNode.start(lab, 'n1');
    pods = [];
    for (let i = 1; i <= 4; i++) pods.push(await node.addPod(`p${i}`, { address: `10.6.0.${10 + i}/24` }));
  });
  after(async () => {
    await lab?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const cli = (...args: string[]): Promise<CliResult> => mcastctl([...args, '--ovs-rundir', node.rundir]);
  const pod = (n: number): OvsPod => pods[n - 1]!;
  const [S1, S2] = [() => pod(1), () => pod(2)];

  /** How many of `count` datagrams from `sender` each of pods 3 and 4 received. */
  async function deliveries(sender: OvsPod, count: number): Promise<{ p3: number; p4: number }> {
    const receivers = await Promise.all([pod(3).listen(G, PORT), pod(4).listen(G, PORT)]);
    await sleep(300);
    await sender.send(G, PORT, count, { intervalMs: 5 });
    await sleep(400);
    const [p3, p4] = await Promise.all(receivers.map(async (receiver) => (await receiver.stop()).length));
    return { p3: p3!, p4: p4! };
  }

  async function sourceFlows(): Promise<string[]> {
    const dump = await node.ofctl('dump-flows', node.bridge);
    return dump
      .split('\n')
      .filter((line) => line.includes(`nw_dst=${G}`))
      .map((line) => /priority=\d+,ip,(?:nw_src=\S+,)?nw_dst=\S+/.exec(line)?.[0] ?? line)
      .sort();
  }

  it('install --source --ports: the (S,G) entry takes S to its ports only; the (*,G) entry every other source', async () => {
    const star = await cli('install', G, '--ports', pod(4).port);
    assert.equal(star.code, 0, star.stderr);
    const result = await cli('install', G, '--source', S1().address, '--ports', pod(3).port, '--json');
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(result.stdout) as { groups: { group: string; source?: string; outcome: string }[] };
    assert.deepEqual(
      document.groups.map(({ group, source, outcome }) => [group, source, outcome]),
      [[G, S1().address, 'added']],
    );
    assert.deepEqual(await sourceFlows(), [
      `priority=200,ip,nw_dst=${G}`,
      `priority=210,ip,nw_src=${S1().address},nw_dst=${G}`,
    ]);
    assert.deepEqual(await deliveries(S1(), 20), { p3: 20, p4: 0 }, "S1's traffic goes to its entry's port only");
    assert.deepEqual(
      await deliveries(S2(), 20),
      { p3: 0, p4: 20 },
      "another source's traffic goes to the group's own entry",
    );
  });

  it('show lists the (S, G) entry beside the group', async () => {
    const result = await cli('show', '--json');
    assert.equal(result.code, 0, result.stderr);
    const shown = JSON.parse(result.stdout) as {
      groups: { group: string; source?: string; ports: { name: string }[] }[];
    };
    assert.deepEqual(
      shown.groups
        .filter((entry) => entry.group === G)
        .map((entry) => [entry.source ?? '*', entry.ports.map((port) => port.name)]),
      [
        ['*', [pod(4).port]],
        [S1().address, [pod(3).port]],
      ],
    );
    const human = await cli('show');
    assert.match(human.stdout, new RegExp(`\\(${S1().address.replace(/\./g, '\\.')}, ${G.replace(/\./g, '\\.')}\\)`));
  });

  it('reconcile: a declared (S,G) entry is added, changed and kept apart from the (*,G) entry', async () => {
    const file = join(scratch, 'declared.yaml');
    writeFileSync(
      file,
      [
        'groups:',
        `  - {group: ${G}, ports: [${pod(4).port}]}`,
        `  - {group: ${G}, source: ${S1().address}, ports: [${pod(3).port}, ${pod(4).port}]}`,
        `  - {group: ${G}, source: ${S2().address}, ports: [${pod(3).port}]}`,
        '',
      ].join('\n'),
    );
    const first = await cli('reconcile', '-f', file, '--json');
    assert.equal(first.code, 2, `drift found and repaired: ${first.stderr}`);
    const report = JSON.parse(first.stdout) as { drift: { object: string; key: string; action: string }[] };
    assert.deepEqual(
      report.drift.map(({ key, action }) => [key, action]).sort(),
      [
        [`(${S1().address}, ${G})`, 'change'],
        [`(${S2().address}, ${G})`, 'add'],
      ].sort(),
    );
    assert.deepEqual(await deliveries(S1(), 20), { p3: 20, p4: 20 });
    assert.deepEqual(await deliveries(S2(), 20), { p3: 20, p4: 0 });
    const again = await cli('reconcile', '-f', file, '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { inSync: boolean }).inSync, true, 'the second run finds nothing to do');
  });

  it('uninstall --source --ovs removes one (S,G) entry; uninstall of the group removes the rest', async () => {
    const one = await cli('uninstall', G, '--source', S2().address, '--ovs');
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(await sourceFlows(), [
      `priority=200,ip,nw_dst=${G}`,
      `priority=210,ip,nw_src=${S1().address},nw_dst=${G}`,
    ]);
    assert.deepEqual(await deliveries(S2(), 20), { p3: 0, p4: 20 }, "S2 falls back to the group's own entry");
    const all = await cli('uninstall', G);
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(await sourceFlows(), []);
    const groups = await node.ofctl('dump-groups', node.bridge);
    assert.equal(
      groups.split('\n').filter((line) => line.includes('group_id=')).length,
      0,
      'no OVS group of ours is left',
    );
  });
});
