/**
 * Acceptance of `mcastctl reconcile` on real OVS nodes, for the OVS groups: drift induced
 * by hand (ovs-ofctl, install) and repaired, exactly ours touched; --dry-run and --quiet; a
 * group another controller's flow already matches; bad files changing nothing; the run
 * lock; the daemon's learned groups left alone. The declared states declare no routes and
 * the daemon routes nothing, so that reconcile reads no kernel routing tables here: the
 * routes (declared, drifted, the daemon's left alone) are tested in the kernel lab, in
 * test/routing/reconcile-routes.test.ts.
 *
 * One lab, two nodes, used one after the other:
 * - n1: gateway gw0 and 3 pods; no daemon.
 * - n2: gateway gw0, 3 pods, and `mcastctl daemon` (no multicast interfaces).
 *
 * Needs root, iproute2, ethtool, python3, Open vSwitch and the built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import {
  assertRefused,
  badStateFiles,
  type DeclaredState,
  declaredStateYaml,
  gatewayAndPods,
  groupCookie,
  groupId,
  learnedGroupWithTraffic,
  noStack,
  ourGroups,
  parseReport,
  type ReconcileCli,
  reconcileCli,
} from '../lab/reconcile-checks.js';
import { lockSocketName } from '../../src/runtime/run-lock.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the reconcile tests run the built CLI: ${missing}`);

describe('mcastctl reconcile on real OVS', { timeout: 150_000 }, () => {
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
    let state: DeclaredState;
    let file: string;
    let lockFile: string;
    let cli: ReconcileCli;
    const G1 = '239.1.1.1';
    const G2 = '239.1.1.2';
    const G3 = '239.1.1.3';
    const UNDECLARED = '239.1.1.9';
    const STRAY_ID = groupId('239.10.10.10');
    const FOREIGN = 'cookie=0x1234,priority=50,ip,nw_dst=239.9.9.9,actions=drop';

    before(async () => {
      node = await OvsNode.start(lab, 'n1');
      pods = await gatewayAndPods(node, 'p', '10.1.0');
      file = lab.file('state-n1.yaml');
      lockFile = lab.file('n1-reconcile.lock');
      cli = reconcileCli(node, { controlSocket: lab.file('n1-no-daemon.sock'), lockFile });
      const [p1, p2, p3] = pods.map((pod) => pod.port) as [string, string, string];
      state = {
        node: 'n1',
        groups: [
          { group: G1, ports: [p1, p2] },
          { group: G2, ports: [p2, p3] },
          { group: G3, ports: [p1, p3] },
        ],
        routes: [],
      };
      writeFileSync(file, declaredStateYaml(state));
    });

    const ofport = (n: number) => pods[n - 1]!.ofport;
    const declaredGroups = () => ({
      [G1]: [ofport(1), ofport(2)],
      [G2]: [ofport(2), ofport(3)],
      [G3]: [ofport(1), ofport(3)],
    });

    it('from nothing: adds every group (exit 2); a second run is in sync (exit 0)', async () => {
      const first = await cli('reconcile', '-f', file, '--json');
      assert.equal(first.code, 2, first.stderr);
      assert.equal(first.stderr, '', 'drift is no error: nothing on stderr');
      const report = parseReport(first);
      assert.deepEqual(
        report.drift.map((row) => [row.object, row.key, row.action, row.result]),
        [
          ['group', G1, 'add', 'applied'],
          ['group', G2, 'add', 'applied'],
          ['group', G3, 'add', 'applied'],
        ],
      );
      assert.equal(report.inSync, false);
      assert.equal(report.dryRun, false);
      assert.equal(report.daemon, 'not running');
      assert.equal(report.routerActive, false);
      assert.deepEqual(await ourGroups(node), declaredGroups());
      assert.equal(existsSync(lockFile), false, 'the lock is released');

      const second = await cli('reconcile', '-f', file);
      assert.equal(second.code, 0, second.stderr);
      assert.match(
        second.stdout,
        /^in sync: 3 groups and 0 routes as declared; left alone: 0 groups the daemon learned, 0 routes of its own, 1 flow of other controllers$/m,
      );
      const json = await cli('reconcile', '-f', file, '--json');
      assert.equal(json.code, 0, json.stderr);
      const inSync = parseReport(json);
      assert.equal(inSync.inSync, true);
      assert.deepEqual(inSync.drift, []);
      assert.equal(inSync.inSyncGroups, 3);
      assert.equal(inSync.inSyncRoutes, 0);
    });

    it('induced drift: --dry-run lists exactly it and changes nothing; a run repairs exactly ours; then in sync', async () => {
      // 1. one of our flows deleted by hand (its OVS group stays, reached by nothing)
      await node.ofctl(
        '--strict',
        'del-flows',
        node.bridge,
        `cookie=${groupCookie(G1)}/-1,table=0,priority=200,ip,nw_dst=${G1}`,
      );
      // 2. a stray OVS group in our id range
      await node.ofctl('add-group', node.bridge, `group_id=${STRAY_ID},type=all,bucket=output:1`);
      // 3. a group's buckets changed
      await node.ofctl('mod-group', node.bridge, `group_id=${groupId(G2)},type=all,bucket=output:${ofport(2)}`);
      // 4. a group of ours that the file does not declare
      const extra = await mcastctl(['install', UNDECLARED, '--ports', pods[0]!.port, '--ovs-rundir', node.rundir], {
        ns: node.ns,
        env: node.env,
        timeoutMs: 15_000,
      });
      assert.equal(extra.code, 0, extra.stderr);
      // 5. a flow that is not ours
      await node.ofctl('add-flow', node.bridge, FOREIGN);

      const switchBefore = await node.switchState();
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
      ]);
      const byKey = new Map(planned.drift.map((row) => [`${row.object} ${row.key}`, row]));
      assert.deepEqual(byKey.get(`group ${G2}`)?.before, { ports: [pods[1]!.port] });
      assert.deepEqual(byKey.get(`group ${G2}`)?.after, { ports: [pods[1]!.port, pods[2]!.port] });
      assert.match(byKey.get(`group ${G2}`)!.detail, new RegExp(`ports ${ofport(3)} missing`));
      assert.deepEqual(byKey.get(`group ${UNDECLARED}`)?.before, { ports: [pods[0]!.port] });
      assert.equal(planned.inSyncGroups, 1, 'G3 is as declared');
      assert.equal(
        planned.leftAlone.foreignFlows >= 2,
        true,
        `the foreign flow and the NORMAL flow are counted as others' (${planned.leftAlone.foreignFlows})`,
      );
      assert.deepEqual(await node.switchState(), switchBefore, 'the dry run changed nothing in OVS');

      // The human table of the dry run says the same; with no routes declared, no warning that no router forwards them.
      const human = await cli('reconcile', '-f', file, '--dry-run');
      assert.equal(human.code, 2, human.stderr);
      assert.match(human.stdout, /drift: 4 differences \(dry run: nothing changed\)/);
      assert.match(human.stdout, /not applied \(--dry-run\)/);
      assert.equal(human.stderr, '');

      const repair = await cli('reconcile', '-f', file, '--json');
      assert.equal(repair.code, 2, repair.stderr);
      const repaired = parseReport(repair);
      assert.deepEqual(
        repaired.drift.map((row) => [row.object, row.key, row.action, row.result]),
        rows.map(([object, key, action]) => [object, key, action, 'applied']),
      );
      assert.deepEqual(await ourGroups(node), declaredGroups(), 'OVS as declared');
      const switchAfter = await node.switchState();
      assert.ok(
        !switchAfter.groups.some((line) => line.startsWith(`group_id=${STRAY_ID},`)),
        'the stray group is gone',
      );
      assert.ok(
        !switchAfter.groups.some((line) => line.startsWith(`group_id=${groupId(UNDECLARED)},`)),
        "the undeclared group's OVS group is gone",
      );
      assert.equal(switchAfter.groups.length, 3, switchAfter.groups.join('\n'));
      assert.equal(
        switchAfter.flows.filter((line) => line.startsWith('cookie=0x4d4303')).length,
        3,
        switchAfter.flows.join('\n'),
      );
      assert.ok(
        switchAfter.flows.includes('cookie=0x1234, table=0, priority=50,ip,nw_dst=239.9.9.9 actions=drop'),
        `the foreign flow is untouched:\n${switchAfter.flows.join('\n')}`,
      );
      // Everything else on the bridge that was not ours is exactly as before.
      const notOurs = (flows: string[]) => flows.filter((line) => !line.startsWith('cookie=0x4d43'));
      assert.deepEqual(notOurs(switchAfter.flows), notOurs(switchBefore.flows));

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

    it("a declared group that another controller's flow already matches: a conflict (exit 1), nothing changed for it", async () => {
      const conflictFile = lab.file('conflict.yaml');
      writeFileSync(conflictFile, `${readFileSync(file, 'utf8')}  - {group: 239.1.1.77, ports: [${pods[1]!.port}]}\n`);
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
      // This state declares no routes: the route cases declare one from a pod's port to the gateway, refused before the
      // kernel is read.
      const cases = badStateFiles(() => ({
        state,
        route: { group: G1, source: '10.9.9.9', iif: pods[2]!.port, oifs: ['gw0'] },
      }));
      for (const bad of cases) {
        it(bad.name, async () => {
          // Drift that a run going ahead would repair: G3's flow deleted.
          await node.ofctl('del-flows', node.bridge, `cookie=${groupCookie(G3)}/-1`);
          const switchBefore = await node.switchState();
          await assertRefused(cli, lab.file('bad.yaml'), bad);
          assert.deepEqual(await node.switchState(), switchBefore);
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
        assert.match(
          result.stderr,
          new RegExp(
            `another mcastctl reconcile \\(pid ${pid}\\) is running: it holds ${lockFile.replace(/[.]/g, '\\.')}`,
          ),
        );
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
        await new Promise((resolve) =>
          holder!.exitCode !== null || holder!.signalCode !== null ? resolve(undefined) : holder!.once('exit', resolve),
        );
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
        const results = await Promise.all([
          cli('reconcile', '-f', file, '--json'),
          cli('reconcile', '-f', file, '--json'),
        ]);
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

  describe('node with the daemon: its learned groups are left alone', () => {
    let node: OvsNode;
    let pods: OvsPod[];
    let daemon: RunningDaemon;
    let cli: ReconcileCli;
    let receiver: Receiver | undefined;
    const LEARNED = '239.7.7.7';
    const STATIC = '239.8.8.8';

    before(async () => {
      node = await OvsNode.start(lab, 'n2');
      pods = await gatewayAndPods(node, 'q', '10.2.0');
      daemon = startDaemon(node);
      await daemon.ready();
      cli = reconcileCli(node, { controlSocket: daemon.controlSocket, lockFile: lab.file('n2-reconcile.lock') });
    });
    after(async () => {
      await receiver?.stop();
      await daemon?.stop();
    });

    /** The learned group's flow and OVS group lines, as ovs-ofctl shows them. */
    async function learnedEntries(): Promise<{ flow: string | undefined; group: string | undefined }> {
      const state = await node.switchState();
      return {
        flow: state.flows.find((line) => line.startsWith(`cookie=${groupCookie(LEARNED, true)},`)),
        group: state.groups.find((line) => line.startsWith(`group_id=${groupId(LEARNED)},`)),
      };
    }

    it('reconcile adds the static part only; the learned group and its flow stay', async () => {
      receiver = await learnedGroupWithTraffic(node, LEARNED, 5300, pods[0]!, pods[1]!);
      const learnedBefore = await learnedEntries();
      assert.ok(
        learnedBefore.flow !== undefined && learnedBefore.group !== undefined,
        `learned flow and group: ${JSON.stringify(learnedBefore)}`,
      );

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
      assert.deepEqual(report.conflicts, []);
      assert.deepEqual(await learnedEntries(), learnedBefore, 'the learned flow and group are untouched');
      assert.deepEqual(
        (await ourGroups(node))[STATIC],
        [pods[1]!.ofport, pods[2]!.ofport].sort((a, b) => a - b),
      );

      const second = await cli('reconcile', '-f', file, '--json');
      assert.equal(second.code, 0, second.stderr);
      assert.equal(parseReport(second).inSync, true);
      assert.deepEqual(await learnedEntries(), learnedBefore);
      assert.ok(receiver.received.length >= 1, 'the member pod got the traffic');
    });

    it('a file that declares the learned group: a conflict (exit 1), nothing of it changes', async () => {
      const learnedBefore = await learnedEntries();
      const file = lab.file('state-n2-conflict.yaml');
      writeFileSync(
        file,
        `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\n  - {group: ${LEARNED}, ports: [${pods[2]!.port}]}\n`,
      );
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
      assert.match(
        human.stderr,
        new RegExp(`group ${LEARNED.replace(/\./g, '\\.')} not reconciled: the daemon learned this group`),
      );
    });
  });
});
