/**
 * Static IPv6 kernel routes on a real OVS node in the lab, on the real kernel: `install
 * --source --iif --oif` adds static MIFs and the MFC6 entry (/proc/net/ip6_mr_vif and
 * ip6_mr_cache, read independently), a second install changes nothing, `routes` shows
 * them, `uninstall` removes the entry and the MIFs that went with it, and `reconcile`
 * adds a declared IPv6 route (drift, exit 2), finds it in sync, and removes it once it is
 * no longer declared. The groups beside it are declared and installed first, so that only
 * the route changes.
 *
 * Needs root, Open vSwitch and kernel multicast routing. Run: scripts/test.sh routing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { mcastctl, type CliResult } from '../lab/cli.js';
import { requireMulticastRouting } from '../lab/kernel.js';
import { Lab } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

requireMulticastRouting();

const G6 = 'ff3e::8000:1';
const S6 = '2001:db8::5';
const G4 = '239.1.2.3';

describe('static IPv6 kernel routes: install, routes, uninstall, reconcile on a lab node', { timeout: 120_000 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: OvsPod[];
  let scratch: string;
  let groupsFile: string;

  const cli = (...args: string[]): Promise<CliResult> =>
    mcastctl([...args, '--ovs-rundir', node.rundir], { ns: node.ns, env: node.env, timeoutMs: 20_000 });
  const reconcile = (...args: string[]): Promise<CliResult> =>
    cli('reconcile', ...args, '--no-daemon', '--lock-file', join(scratch, 'reconcile.lock'));
  const ofport = (n: number): number => pods[n - 1]!.ofport;

  before(async () => {
    lab = Lab.create();
    scratch = mkdtempSync(join(tmpdir(), 'mcl-routes6-'));
    node = await OvsNode.start(lab, 'n1');
    pods = [];
    for (let i = 1; i <= 4; i++) pods.push(await node.addPod(`p${i}`, { address: `10.1.0.${10 + i}/24` }));
    groupsFile = join(scratch, 'groups.yaml');
    writeFileSync(
      groupsFile,
      [
        'groups:',
        `  - {group: ${G4}, ports: [${ofport(3)}, ${ofport(4)}]}`,
        `  - {group: "${G6}", ports: [${ofport(1)}, ${ofport(2)}]}`,
        `  - {group: "${G6}", source: "${S6}", ports: [${ofport(3)}]}`,
        '',
      ].join('\n'),
    );
    const installed = await reconcile('-f', groupsFile, '--quiet');
    assert.equal(
      installed.code,
      2,
      `the groups are installed (drift, repaired): ${installed.stderr}${installed.stdout}`,
    );
  });

  after(async () => {
    await lab?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('a static IPv6 kernel route: install adds static MIFs and the MFC6 entry, again changes nothing, uninstall removes both', async () => {
    const [iif, oif1, oif2] = [pods[0]!.port, pods[1]!.port, pods[2]!.port];
    const read = async (file: string) => (await node.exec(['cat', `/proc/net/${file}`])).stdout;
    const installed = await cli('install', G6, '--source', S6, '--iif', iif, '--oif', `${oif1},${oif2}`, '--json');
    assert.equal(installed.code, 0, installed.stderr);
    const result = JSON.parse(installed.stdout) as { outcome: string; routerActive: boolean };
    assert.deepEqual(
      [result.outcome, result.routerActive],
      ['added', false],
      'no router here: the route is kept but does not forward',
    );
    const mifs = (await read('ip6_mr_vif'))
      .split('\n')
      .slice(1)
      .filter((line) => line.trim() !== '');
    assert.deepEqual(mifs.map((line) => line.trim().split(/\s+/)[1]).sort(), [iif, oif1, oif2].sort());
    assert.ok(
      mifs.every((line) => (Number.parseInt(line.trim().split(/\s+/)[6]!, 16) & 0x8000) !== 0),
      `static MIFs:\n${mifs.join('\n')}`,
    );
    const mfc = (await read('ip6_mr_cache'))
      .split('\n')
      .find((line) =>
        line.startsWith('ff3e:0000:0000:0000:0000:0000:8000:0001 2001:0db8:0000:0000:0000:0000:0000:0005'),
      );
    assert.ok(mfc, await read('ip6_mr_cache'));
    assert.equal(mfc.trim().split(/\s+/).slice(6).length, 2, `two outgoing MIFs: ${mfc}`);
    const again = await cli('install', G6, '--source', S6, '--iif', iif, '--oif', `${oif2},${oif1}`, '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /unchanged/);
    const routes = await mcastctl(['routes', '--json'], { ns: node.ns, env: node.env, timeoutMs: 20_000 });
    assert.equal(routes.code, 0, routes.stderr);
    assert.ok(routes.stdout.includes(G6) && routes.stdout.includes(S6), routes.stdout);
    const removed = await cli('uninstall', G6, '--source', S6);
    assert.equal(removed.code, 0, removed.stderr);
    assert.doesNotMatch(await read('ip6_mr_cache'), /ff3e:0000:0000:0000:0000:0000:8000:0001/);
    assert.equal(
      (await read('ip6_mr_vif'))
        .split('\n')
        .slice(1)
        .filter((line) => line.trim() !== '').length,
      0,
      'the static MIFs went with their last route',
    );

    // reconcile: a declared IPv6 route is added (drift, exit 2), then in sync (exit 0); undeclared, it is removed.
    const file = join(scratch, 'routes6.yaml');
    // The groups as the node holds them (before()), so that only the route changes.
    const groups = readFileSync(groupsFile, 'utf8');
    writeFileSync(file, `${groups}routes:\n  - {group: "${G6}", source: "${S6}", iif: ${iif}, oifs: [${oif1}]}\n`);
    const added = await reconcile('-f', file, '--json');
    assert.equal(added.code, 2, added.stderr);
    const report = JSON.parse(added.stdout) as {
      drift: { object: string; action: string; result: string }[];
      routerActive: boolean;
    };
    assert.deepEqual(
      report.drift.filter((row) => row.object === 'route').map((row) => [row.action, row.result]),
      [['add', 'applied']],
    );
    assert.equal(report.routerActive, false);
    assert.ok((await read('ip6_mr_cache')).includes('ff3e:0000:0000:0000:0000:0000:8000:0001'));
    const inSync = await reconcile('-f', file, '--quiet');
    assert.equal(inSync.code, 0, inSync.stderr + inSync.stdout);
    writeFileSync(file, `${groups}routes: []\n`);
    const cleared = await reconcile('-f', file, '--json');
    assert.equal(cleared.code, 2, cleared.stderr);
    const clearedReport = JSON.parse(cleared.stdout) as { drift: { object: string; action: string }[] };
    assert.deepEqual(
      clearedReport.drift.map((row) => [row.object, row.action]),
      [['route', 'remove']],
    );
    assert.doesNotMatch(await read('ip6_mr_cache'), /ff3e:0000:0000:0000:0000:0000:8000:0001/);
  });
});
