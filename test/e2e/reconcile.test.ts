/**
 * Acceptance of `mcastctl reconcile` on real OVS nodes and real kernels in the
 * lab: drift induced by hand (ovs-ofctl, uninstall) and repaired, exactly ours touched;
 * the daemon's learned groups and (S,G) routes left alone; bad files changing nothing;
 * the run lock.
 *
 * One lab, two nodes, used one after the other:
 * - n1: gateway gw0, 3 pods and a veth pair in the node (the static route's iif); no daemon.
 * - n2: gateway gw0, an uplink into an underlay Linux bridge, 3 pods, and `mcastctl daemon`.
 *
 * Needs root, iproute2, ethtool, python3, Open vSwitch and the built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { cliMissing, mcastctl, type CliResult } from '../lab/cli.js';
import { startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { parseMfcCache, parseVifTable } from '../../src/protocol/mroute/proc.js';
import { lockSocketName } from '../../src/runtime/run-lock.js';
import { NO_IPV4_ROUTING } from '../lab/kernel.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the reconcile tests run the built CLI: ${missing}`);

/** Our OVS group id for a group address: 0x10000000 + its low 28 bits. */
function groupId(group: string): number {
  const value = group.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
  return 0x10000000 + (value & 0x0fffffff);
}
/** The cookie of a group's flow: prefix 0x4d43, kind 03, flag byte (01 learned), the address. */
function groupCookie(group: string, learned = false): string {
  const hex = group
    .split('.')
    .map((octet) => Number(octet).toString(16).padStart(2, '0'))
    .join('');
  return `0x4d4303${learned ? '01' : '00'}${hex}`;
}

interface DriftRow {
  object: 'group' | 'stray-group' | 'route';
  key: string;
  action: 'add' | 'remove' | 'change';
  detail: string;
  before?: { ports?: string[]; iif?: string; oifs?: string[] };
  after?: { ports?: string[]; iif?: string; oifs?: string[] };
  result: 'planned' | 'applied' | 'failed';
  error?: string;
}
interface Report {
  bridge: string;
  dryRun: boolean;
  inSync: boolean;
  drift: DriftRow[];
  conflicts: { object: string; key: string; problem: string }[];
  routerActive: boolean;
  inSyncGroups: number;
  inSyncRoutes: number;
  leftAlone: { learnedGroups: number; daemonRoutes: number; foreignFlows: number };
  daemon: string;
}

function parseReport(result: CliResult): Report {
  try {
    return JSON.parse(result.stdout) as Report;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}): ${result.stdout.slice(0, 500)}\nstderr: ${result.stderr}`);
  }
}

/** The kernel's multicast routing tables in the node, without counters. */
async function kernelState(node: OvsNode): Promise<{ vifs: string[]; routes: string[] }> {
  const { stdout: vifText } = await node.exec(['cat', '/proc/net/ip_mr_vif']);
  const { stdout: mfcText } = await node.exec(['cat', '/proc/net/ip_mr_cache']);
  const vifs = parseVifTable(vifText);
  const name = (vif: number) => vifs.find((row) => row.vif === vif)?.name ?? `vif${vif}`;
  return {
    vifs: vifs.map((row) => `${row.vif} ${row.name}${row.static ? ' static' : ''}`).sort(),
    routes: parseMfcCache(mfcText)
      .map(
        (row) =>
          `(${row.origin}, ${row.group}) ${name(row.iif)} -> ${row.oifs
            .map((oif) => name(oif.vif))
            .sort()
            .join(',')}`,
      )
      .sort(),
  };
}

/** Our group flows and groups: { group: sorted output ports } read from ovs-ofctl. */
async function ourGroups(node: OvsNode): Promise<Record<string, number[]>> {
  const { flows, groups } = await node.switchState();
  const result: Record<string, number[]> = {};
  for (const line of flows) {
    const match = /^cookie=0x4d4303[0-9a-f]{10}, .*nw_dst=([\d.]+) actions=group:(\d+)$/.exec(line);
    if (match === null) continue;
    const groupLine = groups.find((entry) => entry.startsWith(`group_id=${match[2]},`));
    result[match[1]!] = groupLine === undefined ? [] : [...groupLine.matchAll(/bucket=actions=output:(\d+)/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
  }
  return result;
}

const noStack = (result: CliResult) => assert.doesNotMatch(result.stderr, /\n\s+at /, `no stack trace: ${result.stderr}`);

describe('mcastctl reconcile on real OVS and the real kernel', { timeout: 150_000, skip: NO_IPV4_ROUTING }, () => {
  let lab: Lab;
  before(() => {
    lab = Lab.create();
  });
  after(async () => {
    await lab?.destroy();
  });

  describe('node without a daemon: induced drift, bad files, the lock', () => {
    let node: OvsNode;
    let pods: OvsPod[];
    let iif: string;
    let file: string;
    let lockFile: string;
    const G1 = '239.1.1.1';
    const G2 = '239.1.1.2';
    const G3 = '239.1.1.3';
    const UNDECLARED = '239.1.1.9';
    const STRAY_ID = groupId('239.10.10.10');
    const SOURCE = '10.9.9.9';
    const FOREIGN = 'cookie=0x1234,priority=50,ip,nw_dst=239.9.9.9,actions=drop';

    before(async () => {
      node = await OvsNode.start(lab, 'n1');
      await node.addGateway({ address: '10.1.0.1/24' });
      pods = [];
      for (let i = 1; i <= 3; i++) pods.push(await node.addPod(`p${i}`, { address: `10.1.0.${10 + i}/24` }));
      // The static route's incoming interface: a veth pair inside the node.
      iif = lab.ifname('in1');
      await lab.ip(node.ns, 'link', 'add', iif, 'type', 'veth', 'peer', 'name', lab.ifname('in1p'));
      await lab.ip(node.ns, 'link', 'set', iif, 'up');
      await lab.ip(node.ns, 'link', 'set', lab.ifname('in1p'), 'up');
      file = lab.file('state-n1.yaml');
      lockFile = lab.file('n1-reconcile.lock');
      const [p1, p2, p3] = pods.map((pod) => pod.port);
      writeFileSync(
        file,
        [
          '# declared multicast state of node n1',
          'groups:',
          `  - group: ${G1}`,
          `    ports: [${p1}, ${p2}]`,
          `  - group: ${G2}`,
          `    ports: [${p2}, ${p3}]`,
          `  - {group: ${G3}, ports: [${p1}, ${p3}]}`,
          'routes:',
          `  - {group: ${G1}, source: ${SOURCE}, iif: ${iif}, oifs: [gw0]}`,
          '',
        ].join('\n'),
      );
    });

    const cli = (...args: string[]): Promise<CliResult> =>
      mcastctl([...args, '--ovs-rundir', node.rundir, '--control-socket', lab.file('n1-no-daemon.sock'), '--lock-file', lockFile], {
        ns: node.ns,
        env: node.env,
        timeoutMs: 20_000,
      });
    const ofport = (n: number) => pods[n - 1]!.ofport;
    const declaredGroups = () => ({ [G1]: [ofport(1), ofport(2)], [G2]: [ofport(2), ofport(3)], [G3]: [ofport(1), ofport(3)] });
    const declaredRoute = () => `(${SOURCE}, ${G1}) ${iif} -> gw0`;

    it('from nothing: adds every group and the route (exit 2); a second run is in sync (exit 0)', async () => {
      const first = await cli('reconcile', '-f', file, '--json');
      assert.equal(first.code, 2, first.stderr);
      // Drift is no error: nothing on stderr (with --json, that no router forwards the routes is the routerActive field).
      assert.equal(first.stderr, '', 'drift is no error: nothing on stderr');
      const report = parseReport(first);
      assert.deepEqual(
        report.drift.map((row) => [row.object, row.key, row.action, row.result]),
        [
          ['group', G1, 'add', 'applied'],
          ['group', G2, 'add', 'applied'],
          ['group', G3, 'add', 'applied'],
          ['route', `(${SOURCE}, ${G1})`, 'add', 'applied'],
        ],
      );
      assert.equal(report.inSync, false);
      assert.equal(report.dryRun, false);
      assert.equal(report.daemon, 'not running');
      assert.equal(report.routerActive, false);
      assert.deepEqual(await ourGroups(node), declaredGroups());
      assert.deepEqual((await kernelState(node)).routes, [declaredRoute()]);
      assert.equal(existsSync(lockFile), false, 'the lock is released');

      const second = await cli('reconcile', '-f', file);
      assert.equal(second.code, 0, second.stderr);
      assert.match(
        second.stdout,
        /^in sync: 3 groups and 1 route as declared; left alone: 0 groups the daemon learned, 0 routes of its own, 1 flow of other controllers$/m,
      );
      const json = await cli('reconcile', '-f', file, '--json');
      assert.equal(json.code, 0, json.stderr);
      const inSync = parseReport(json);
      assert.equal(inSync.inSync, true);
      assert.deepEqual(inSync.drift, []);
      assert.equal(inSync.inSyncGroups, 3);
      assert.equal(inSync.inSyncRoutes, 1);
    });

    it('induced drift: --dry-run lists exactly it and changes nothing; a run repairs exactly ours; then in sync', async () => {
      // 1. one of our flows deleted by hand (its OVS group stays, reached by nothing)
      await node.ofctl('--strict', 'del-flows', node.bridge, `cookie=${groupCookie(G1)}/-1,table=0,priority=200,ip,nw_dst=${G1}`);
      // 2. a stray OVS group in our id range
      await node.ofctl('add-group', node.bridge, `group_id=${STRAY_ID},type=all,bucket=output:1`);
      // 3. a group's buckets changed
      await node.ofctl('mod-group', node.bridge, `group_id=${groupId(G2)},type=all,bucket=output:${ofport(2)}`);
      // 4. the static route deleted
      const removed = await mcastctl(['uninstall', G1, '--source', SOURCE], { ns: node.ns, env: node.env, timeoutMs: 15_000 });
      assert.equal(removed.code, 0, removed.stderr);
      // 5. a group of ours that the file does not declare
      const extra = await mcastctl(['install', UNDECLARED, '--ports', pods[0]!.port, '--ovs-rundir', node.rundir], {
        ns: node.ns,
        env: node.env,
        timeoutMs: 15_000,
      });
      assert.equal(extra.code, 0, extra.stderr);
      // 6. a flow that is not ours
      await node.ofctl('add-flow', node.bridge, FOREIGN);

      const switchBefore = await node.switchState();
      const kernelBefore = await kernelState(node);
      assert.equal(kernelBefore.routes.length, 0, 'the route is gone');
      assert.ok(
        switchBefore.groups.some((line) => line.startsWith(`group_id=${groupId(G1)},`)),
        "G1's OVS group is still there",
      );
      assert.ok(!switchBefore.flows.some((line) => line.includes(`nw_dst=${G1} `)), "G1's flow is gone");

      const dry = await cli('reconcile', '-f', file, '--dry-run', '--json');
      assert.equal(dry.code, 2, dry.stderr);
      const planned = parseReport(dry);
      assert.equal(planned.dryRun, true);
      assert.equal(planned.inSync, false);
      const rows = planned.drift.map((row) => [row.object, row.key, row.action, row.result]);
      assert.deepEqual(rows, [
        ['group', G1, 'change', 'planned'], // its flow is missing (the OVS group is reused: modified, not re-added)
        ['group', G2, 'change', 'planned'],
        ['group', UNDECLARED, 'remove', 'planned'],
        ['stray-group', `0x${STRAY_ID.toString(16)}`, 'remove', 'planned'],
        ['route', `(${SOURCE}, ${G1})`, 'add', 'planned'],
      ]);
      const byKey = new Map(planned.drift.map((row) => [`${row.object} ${row.key}`, row]));
      assert.deepEqual(byKey.get(`group ${G2}`)?.before, { ports: [pods[1]!.port] });
      assert.deepEqual(byKey.get(`group ${G2}`)?.after, { ports: [pods[1]!.port, pods[2]!.port] });
      assert.match(byKey.get(`group ${G2}`)!.detail, new RegExp(`ports ${ofport(3)} missing`));
      assert.deepEqual(byKey.get(`group ${UNDECLARED}`)?.before, { ports: [pods[0]!.port] });
      assert.deepEqual(byKey.get(`route (${SOURCE}, ${G1})`)?.after, { iif, oifs: ['gw0'] });
      assert.equal(planned.inSyncGroups, 1, 'G3 is as declared');
      assert.equal(
        planned.leftAlone.foreignFlows >= 2,
        true,
        `the foreign flow and the NORMAL flow are counted as others' (${planned.leftAlone.foreignFlows})`,
      );
      assert.deepEqual(await node.switchState(), switchBefore, 'the dry run changed nothing in OVS');
      assert.deepEqual(await kernelState(node), kernelBefore, 'the dry run changed nothing in the kernel');

      // The human table of the dry run says the same.
      const human = await cli('reconcile', '-f', file, '--dry-run');
      assert.equal(human.code, 2, human.stderr);
      assert.match(human.stdout, /drift: 5 differences \(dry run: nothing changed\)/);
      assert.match(human.stdout, /not applied \(--dry-run\)/);
      assert.match(human.stderr, /^warning: no multicast router is active/);

      const repair = await cli('reconcile', '-f', file, '--json');
      assert.equal(repair.code, 2, repair.stderr);
      const repaired = parseReport(repair);
      assert.deepEqual(
        repaired.drift.map((row) => [row.object, row.key, row.action, row.result]),
        rows.map(([object, key, action]) => [object, key, action, 'applied']),
      );
      assert.deepEqual(await ourGroups(node), declaredGroups(), 'OVS as declared');
      const switchAfter = await node.switchState();
      assert.ok(!switchAfter.groups.some((line) => line.startsWith(`group_id=${STRAY_ID},`)), 'the stray group is gone');
      assert.ok(!switchAfter.groups.some((line) => line.startsWith(`group_id=${groupId(UNDECLARED)},`)), "the undeclared group's OVS group is gone");
      assert.equal(switchAfter.groups.length, 3, switchAfter.groups.join('\n'));
      assert.equal(switchAfter.flows.filter((line) => line.startsWith('cookie=0x4d4303')).length, 3, switchAfter.flows.join('\n'));
      assert.ok(
        switchAfter.flows.includes('cookie=0x1234, table=0, priority=50,ip,nw_dst=239.9.9.9 actions=drop'),
        `the foreign flow is untouched:\n${switchAfter.flows.join('\n')}`,
      );
      // Everything else on the bridge that was not ours is exactly as before.
      const notOurs = (flows: string[]) => flows.filter((line) => !line.startsWith('cookie=0x4d43'));
      assert.deepEqual(notOurs(switchAfter.flows), notOurs(switchBefore.flows));
      assert.deepEqual((await kernelState(node)).routes, [declaredRoute()], 'the kernel route is back');

      const again = await cli('reconcile', '-f', file);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^in sync:/m);
      const quiet = await cli('reconcile', '-f', file, '--quiet');
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.equal(quiet.stdout, '');
      assert.equal(quiet.stderr, '');
    });

    it('--quiet still prints drift', async () => {
      await node.ofctl('del-flows', node.bridge, `cookie=${groupCookie(G3)}/-1`);
      const quiet = await cli('reconcile', '-f', file, '--quiet');
      assert.equal(quiet.code, 2, quiet.stderr);
      assert.match(quiet.stdout, new RegExp(`${G3.replace(/\./g, '\\.')}.*its flow is missing.*repaired`));
      assert.match(quiet.stdout, /drift: 1 difference, 1 repaired/);
      assert.deepEqual(await ourGroups(node), declaredGroups());
    });

    it('route drift: a changed route is changed back, an undeclared one removed (and its VIFs with it)', async () => {
      const install = (...args: string[]) => mcastctl(['install', ...args], { ns: node.ns, env: node.env, timeoutMs: 15_000 });
      assert.equal((await install(G1, '--source', SOURCE, '--iif', iif, '--oif', `gw0,${lab.ifname('in1p')}`)).code, 0);
      assert.equal((await install(G2, '--source', '10.9.9.10', '--iif', 'gw0', '--oif', lab.ifname('in1p'))).code, 0);
      const dry = await cli('reconcile', '-f', file, '--dry-run', '--json');
      assert.equal(dry.code, 2, dry.stderr);
      const rows = parseReport(dry).drift;
      assert.deepEqual(
        rows.map((row) => [row.object, row.key, row.action]),
        [
          ['route', `(${SOURCE}, ${G1})`, 'change'],
          ['route', `(10.9.9.10, ${G2})`, 'remove'],
        ],
      );
      assert.deepEqual(rows[0]!.before, { iif, oifs: ['gw0', lab.ifname('in1p')].sort() });
      assert.deepEqual(rows[0]!.after, { iif, oifs: ['gw0'] });
      const repair = await cli('reconcile', '-f', file, '--json');
      assert.equal(repair.code, 2, repair.stderr);
      assert.ok(parseReport(repair).drift.every((row) => row.result === 'applied'));
      const kernel = await kernelState(node);
      assert.deepEqual(kernel.routes, [declaredRoute()]);
      assert.ok(!kernel.vifs.some((vif) => vif.includes(lab.ifname('in1p'))), `the VIF no route uses is gone: ${kernel.vifs.join('; ')}`);
      assert.equal((await cli('reconcile', '-f', file, '--quiet')).code, 0);
    });

    it("a declared group that another controller's flow already matches: a conflict (exit 1), nothing changed for it", async () => {
      const conflictFile = lab.file('conflict.yaml');
      writeFileSync(conflictFile, `${readFileSync(file, 'utf8').replace('routes:', `  - {group: 239.1.1.77, ports: [${pods[1]!.port}]}\nroutes:`)}`);
      await node.ofctl('add-flow', node.bridge, 'cookie=0x77,priority=200,ip,nw_dst=239.1.1.77,actions=drop');
      try {
        const before = await node.switchState();
        const result = await cli('reconcile', '-f', conflictFile, '--json');
        assert.equal(result.code, 1, result.stderr);
        const report = parseReport(result);
        assert.deepEqual(
          report.conflicts.map((conflict) => [conflict.object, conflict.key]),
          [['group', '239.1.1.77']],
        );
        assert.match(report.conflicts[0]!.problem, /another controller's flow \(cookie 0x77\)/);
        assert.deepEqual(report.drift, []);
        assert.deepEqual(await node.switchState(), before);
      } finally {
        await node.ofctl('del-flows', node.bridge, 'cookie=0x77/-1');
      }
    });

    describe('a bad file: exit 64 naming the line, nothing changed', () => {
      const good = () => readFileSync(file, 'utf8').split('\n');
      const cases: [string, () => string, RegExp][] = [
        [
          'a YAML syntax error',
          () =>
            good()
              .map((line, i) => (i === 3 ? line.replace(/\]$/, '') : line))
              .join('\n'),
          /bad\.yaml:\d+: not valid YAML or JSON/,
        ],
        [
          'an unknown key',
          () =>
            good()
              .map((line, i) => (i === 5 ? line.replace('ports:', 'prots:') : line))
              .join('\n'),
          /bad\.yaml:6: unknown key "prots" in a group/,
        ],
        ['an unknown top-level key', () => `${good().join('\n')}vlans: [1]\n`, /bad\.yaml:10: unknown key "vlans"/],
        [
          'a bad group address',
          () =>
            good()
              .map((line, i) => (i === 4 ? line.replace(G2, '239.1.1.300') : line))
              .join('\n'),
          /bad\.yaml:5: "239\.1\.1\.300" is not an IPv4 or IPv6 address/,
        ],
        [
          'a unicast group',
          () =>
            good()
              .map((line, i) => (i === 6 ? line.replace(G3, '10.1.1.3') : line))
              .join('\n'),
          /bad\.yaml:7: .*not a multicast address/,
        ],
        [
          'a bad route source',
          () =>
            good()
              .map((line, i) => (i === 8 ? line.replace(SOURCE, '10.9.9') : line))
              .join('\n'),
          /bad\.yaml:9: "source" must be a unicast host address/,
        ],
        [
          'an unknown port',
          () =>
            good()
              .map((line, i) => (i === 5 ? line.replace(/\[.*\]/, `[${pods[1]!.port}, nosuchport]`) : line))
              .join('\n'),
          /bad\.yaml:5: bridge br-int has no port nosuchport/,
        ],
        [
          'an unknown route interface',
          () =>
            good()
              .map((line, i) => (i === 8 ? line.replace(iif, 'nosuchif0') : line))
              .join('\n'),
          /bad\.yaml:9: .*nosuchif0/,
        ],
      ];
      for (const [name, text, message] of cases) {
        it(name, async () => {
          // Drift that a run going ahead would repair: G3's flow deleted.
          await node.ofctl('del-flows', node.bridge, `cookie=${groupCookie(G3)}/-1`);
          const bad = lab.file('bad.yaml');
          writeFileSync(bad, text());
          const switchBefore = await node.switchState();
          const kernelBefore = await kernelState(node);
          const result = await cli('reconcile', '-f', bad);
          assert.equal(result.code, 64, `${result.stdout}\n${result.stderr}`);
          assert.match(result.stderr, message);
          noStack(result);
          assert.equal(result.stdout, '');
          const json = await cli('reconcile', '-f', bad, '--json');
          assert.equal(json.code, 64, json.stderr);
          assert.equal(json.stdout, '', 'no JSON document for a usage error');
          assert.deepEqual(await node.switchState(), switchBefore);
          assert.deepEqual(await kernelState(node), kernelBefore);
          assert.equal(existsSync(lockFile), false, 'no lock left behind');
          // Repaired again by a good file.
          assert.equal((await cli('reconcile', '-f', file, '--quiet')).code, 2);
        });
      }
      it('a missing file', async () => {
        const result = await cli('reconcile', '-f', lab.file('nosuch.yaml'));
        assert.equal(result.code, 64, result.stderr);
        assert.match(result.stderr, /cannot read .*nosuch\.yaml: ENOENT/);
      });
    });

    describe('the run lock', () => {
      let holder: ChildProcess | undefined;
      after(() => {
        if (holder?.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
      });

      it('a lock held by a live process: exit 1 naming it, nothing changed; a dry run is not blocked', async () => {
        // A process in the node's namespace holds the lock as reconcile does: it binds the
        // abstract unix socket named after the lock file (all 108 octets, as Node binds
        // it), and writes its pid in the file.
        holder = spawn(
          'ip',
          [
            'netns',
            'exec',
            node.ns,
            'python3',
            '-c',
            `import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(b"\\0${lockSocketName(lockFile).slice(1)}".ljust(108, b"\\0"))\ns.listen()\nprint("ready",flush=True)\ntime.sleep(30)`,
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        await new Promise((resolve, reject) => {
          holder!.stdout!.once('data', resolve);
          holder!.once('exit', (code) => reject(new Error(`the lock holder exited ${code}`)));
        });
        const pid = holder.pid!;
        writeFileSync(lockFile, `${pid}\n`);
        await node.ofctl('del-flows', node.bridge, `cookie=${groupCookie(G2)}/-1`);
        const before = await node.switchState();
        const result = await cli('reconcile', '-f', file);
        assert.equal(result.code, 1, result.stderr);
        assert.match(result.stderr, new RegExp(`another mcastctl reconcile \\(pid ${pid}\\) is running: it holds ${lockFile.replace(/[.]/g, '\\.')}`));
        noStack(result);
        assert.deepEqual(await node.switchState(), before, 'nothing changed');
        assert.equal(readFileSync(lockFile, 'utf8').trim(), String(pid), "the holder's lock is left as it was");
        const dry = await cli('reconcile', '-f', file, '--dry-run', '--json');
        assert.equal(dry.code, 2, dry.stderr);
        assert.deepEqual(
          parseReport(dry).drift.map((row) => [row.key, row.action]),
          [[G2, 'change']],
        );
      });

      it('a lock left by a dead process is taken over', async () => {
        holder!.kill('SIGKILL'); // ip netns exec execs python: the holder itself dies, and the kernel frees its socket
        await new Promise((resolve) => (holder!.exitCode !== null || holder!.signalCode !== null ? resolve(undefined) : holder!.once('exit', resolve)));
        assert.equal(existsSync(lockFile), true, 'the dead holder left its lock file');
        const result = await cli('reconcile', '-f', file, '--json');
        assert.equal(result.code, 2, result.stderr);
        assert.deepEqual(
          parseReport(result).drift.map((row) => [row.key, row.action, row.result]),
          [[G2, 'change', 'applied']],
        );
        assert.deepEqual(await ourGroups(node), declaredGroups());
        assert.equal(existsSync(lockFile), false, 'the lock is released');
      });

      it('two runs started together: each either repairs or is refused as busy, never both apply', async () => {
        await node.ofctl('del-flows', node.bridge, `cookie=${groupCookie(G1)}/-1`);
        const results = await Promise.all([cli('reconcile', '-f', file, '--json'), cli('reconcile', '-f', file, '--json')]);
        const codes = results.map((result) => result.code).sort();
        // Either one repaired (2) and the other was busy (1) or ran after it (0).
        assert.ok(
          JSON.stringify(codes) === '[0,2]' || JSON.stringify(codes) === '[1,2]',
          `exit codes ${codes.join(',')}: ${results.map((r) => r.stderr).join('\n')}`,
        );
        for (const result of results) if (result.code === 1) assert.match(result.stderr, /is running: it holds/);
        assert.deepEqual(await ourGroups(node), declaredGroups());
        assert.equal(existsSync(lockFile), false);
      });
    });
  });

  describe('node with the daemon: its learned state is left alone', () => {
    let node: OvsNode;
    let pods: OvsPod[];
    let daemon: RunningDaemon;
    let receiver: Receiver | undefined;
    const LEARNED = '239.7.7.7';
    const STATIC = '239.8.8.8';

    before(async () => {
      node = await OvsNode.start(lab, 'n2');
      const underlayNs = await lab.namespace('ul');
      const underlay = await lab.linuxBridge(underlayNs, 'ul', { address: '192.168.61.1/24', snooping: false });
      await node.addGateway({ address: '10.2.0.1/24' });
      await node.addUplink(underlay, { address: '192.168.61.11/24' });
      pods = [];
      for (let i = 1; i <= 3; i++) pods.push(await node.addPod(`q${i}`, { address: `10.2.0.${10 + i}/24` }));
      daemon = startDaemon(node);
      await daemon.ready();
    });
    after(async () => {
      await receiver?.stop();
      await daemon?.stop();
    });

    const cli = (...args: string[]): Promise<CliResult> =>
      mcastctl([...args, '--ovs-rundir', node.rundir, '--control-socket', daemon.controlSocket, '--lock-file', lab.file('n2-reconcile.lock')], {
        ns: node.ns,
        env: node.env,
        timeoutMs: 20_000,
      });

    /** The learned group's flow and OVS group lines, as ovs-ofctl shows them. */
    async function learnedEntries(): Promise<{ flow: string | undefined; group: string | undefined }> {
      const state = await node.switchState();
      return {
        flow: state.flows.find((line) => line.startsWith(`cookie=${groupCookie(LEARNED, true)},`)),
        group: state.groups.find((line) => line.startsWith(`group_id=${groupId(LEARNED)},`)),
      };
    }

    it('reconcile adds the static part only; the learned group, its flow and the daemon routes stay', async () => {
      receiver = await pods[0]!.listen(LEARNED, 5300);
      await waitUntil('the daemon to program the learned group', async () => ((await ourGroups(node))[LEARNED] ?? []).includes(pods[0]!.ofport), 10_000);
      // Traffic from a pod to the group: the gateway gets it, the daemon adds an (S,G) route.
      await pods[1]!.send(LEARNED, 5300, 5, { intervalMs: 20 });
      const daemonRoute = await waitUntil(
        "the daemon's (S,G) route",
        async () => (await kernelState(node)).routes.find((line) => line.startsWith(`(${pods[1]!.address}, ${LEARNED})`)),
        5_000,
      );
      const learnedBefore = await learnedEntries();
      assert.ok(learnedBefore.flow !== undefined && learnedBefore.group !== undefined, `learned flow and group: ${JSON.stringify(learnedBefore)}`);

      const file = lab.file('state-n2.yaml');
      writeFileSync(file, `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\n`);
      const first = await cli('reconcile', '-f', file, '--json');
      assert.equal(first.code, 2, first.stderr);
      const report = parseReport(first);
      assert.deepEqual(
        report.drift.map((row) => [row.object, row.key, row.action, row.result]),
        [['group', STATIC, 'add', 'applied']],
      );
      assert.equal(report.daemon, 'running');
      assert.ok(report.leftAlone.learnedGroups >= 1, `learned groups left alone: ${report.leftAlone.learnedGroups}`);
      assert.ok(report.leftAlone.daemonRoutes >= 1, `daemon routes left alone: ${report.leftAlone.daemonRoutes}`);
      assert.deepEqual(report.conflicts, []);
      assert.deepEqual(await learnedEntries(), learnedBefore, 'the learned flow and group are untouched');
      assert.ok((await kernelState(node)).routes.includes(daemonRoute), "the daemon's route is still there");
      assert.deepEqual(
        (await ourGroups(node))[STATIC],
        [pods[1]!.ofport, pods[2]!.ofport].sort((a, b) => a - b),
      );

      const second = await cli('reconcile', '-f', file, '--json');
      assert.equal(second.code, 0, second.stderr);
      assert.equal(parseReport(second).inSync, true);
      assert.deepEqual(await learnedEntries(), learnedBefore);
      assert.ok((await kernelState(node)).routes.includes(daemonRoute));
      assert.ok(receiver.received.length >= 1, 'the member pod got the traffic');
    });

    it("a declared route the daemon already routes the same way is in sync, and stays the daemon's; the daemon's entries survive even unasked", async () => {
      const gwRoute = (await kernelState(node)).routes.find((line) => line.startsWith(`(${pods[1]!.address}, ${LEARNED})`));
      assert.ok(gwRoute !== undefined, 'the route of the first test');
      const [, path] = gwRoute.split(') ');
      const [iif, oifs] = path!.split(' -> ');
      const file = lab.file('state-n2-route.yaml');
      writeFileSync(
        file,
        `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\nroutes:\n  - {group: ${LEARNED}, source: ${pods[1]!.address}, iif: ${iif}, oifs: [${oifs}]}\n`,
      );
      for (let run = 0; run < 2; run++) {
        const result = await cli('reconcile', '-f', file, '--json');
        assert.equal(result.code, 0, `run ${run + 1}: ${result.stdout}${result.stderr}`);
        assert.equal(parseReport(result).inSync, true);
      }
      // Without asking the daemon (--no-daemon), its entries are still known by their VIFs (not static): left alone.
      const groupsOnly = lab.file('state-n2-groups.yaml');
      writeFileSync(groupsOnly, `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\n`);
      const unasked = await cli('reconcile', '-f', groupsOnly, '--no-daemon', '--json');
      assert.equal(unasked.code, 0, unasked.stdout + unasked.stderr);
      assert.ok((await kernelState(node)).routes.includes(gwRoute), "the daemon's route was removed by a run that did not ask the daemon");
    });

    it('a file that declares the learned group: a conflict (exit 1), nothing of it changes', async () => {
      const learnedBefore = await learnedEntries();
      const file = lab.file('state-n2-conflict.yaml');
      writeFileSync(file, `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\n  - {group: ${LEARNED}, ports: [${pods[2]!.port}]}\n`);
      const switchBefore = await node.switchState();
      const result = await cli('reconcile', '-f', file, '--json');
      assert.equal(result.code, 1, result.stderr);
      const report = parseReport(result);
      assert.deepEqual(
        report.conflicts.map((conflict) => [conflict.object, conflict.key]),
        [['group', LEARNED]],
      );
      assert.match(report.conflicts[0]!.problem, /the daemon learned this group/);
      assert.deepEqual(report.drift, []);
      assert.deepEqual(await learnedEntries(), learnedBefore);
      assert.deepEqual(await node.switchState(), switchBefore);
      const human = await cli('reconcile', '-f', file);
      assert.equal(human.code, 1);
      assert.match(human.stderr, new RegExp(`group ${LEARNED.replace(/\./g, '\\.')} not reconciled: the daemon learned this group`));
    });
  });
});
