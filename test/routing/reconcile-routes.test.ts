/**
 * Acceptance of `mcastctl reconcile` for the kernel's multicast routes, on real OVS nodes
 * and a kernel that routes: a declared route added from nothing with the VIFs it needs;
 * route drift (a route deleted, a changed one changed back, an undeclared one removed with
 * its VIFs) shown by --dry-run without changing the kernel, and repaired; bad files
 * changing nothing in the kernel; the daemon's (S,G) routes left alone, also when a file
 * declares one the same way and when the daemon is not asked. The OVS side (drift of our
 * groups, the run lock, the daemon's learned groups) is tested in test/e2e/reconcile.test.ts.
 *
 * One lab, two nodes, used one after the other:
 * - n1: gateway gw0, 3 pods and a veth pair in the node (the static route's iif); no daemon.
 * - n2: gateway gw0, an uplink into an underlay Linux bridge, 3 pods, and `mcastctl daemon`
 *   routing between them (the uplink its multicast interface).
 *
 * Needs root, iproute2, ethtool, python3, Open vSwitch, the built CLI and kernel multicast
 * routing. Run: scripts/test.sh routing.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { routedUplinks, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { requireMulticastRouting } from '../lab/kernel.js';
import { Lab, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import {
  assertRefused,
  badStateFiles,
  type DeclaredState,
  declaredStateYaml,
  gatewayAndPods,
  learnedGroupWithTraffic,
  ourGroups,
  parseReport,
  type ReconcileCli,
  reconcileCli,
} from '../lab/reconcile-checks.js';
import { parseMfcCache, parseVifTable } from '../../src/protocol/mroute/proc.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the reconcile tests run the built CLI: ${missing}`);

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

describe('mcastctl reconcile of kernel routes on real OVS and the real kernel', { timeout: 150_000 }, () => {
  let lab: Lab;
  before(() => {
    lab = Lab.create();
  });
  after(async () => {
    await lab?.destroy();
  });

  describe('node without a daemon: a declared route, route drift, bad files', () => {
    let node: OvsNode;
    let pods: OvsPod[];
    let iif: string;
    let state: DeclaredState;
    let file: string;
    let cli: ReconcileCli;
    const G1 = '239.1.1.1';
    const G2 = '239.1.1.2';
    const G3 = '239.1.1.3';
    const SOURCE = '10.9.9.9';

    before(async () => {
      node = await OvsNode.start(lab, 'n1');
      pods = await gatewayAndPods(node, 'p', '10.1.0');
      // The static route's incoming interface: a veth pair inside the node.
      iif = lab.ifname('in1');
      await lab.ip(node.ns, 'link', 'add', iif, 'type', 'veth', 'peer', 'name', lab.ifname('in1p'));
      await lab.ip(node.ns, 'link', 'set', iif, 'up');
      await lab.ip(node.ns, 'link', 'set', lab.ifname('in1p'), 'up');
      file = lab.file('state-n1.yaml');
      cli = reconcileCli(node, {
        controlSocket: lab.file('n1-no-daemon.sock'),
        lockFile: lab.file('n1-reconcile.lock'),
      });
      const [p1, p2, p3] = pods.map((pod) => pod.port) as [string, string, string];
      state = {
        node: 'n1',
        groups: [
          { group: G1, ports: [p1, p2] },
          { group: G2, ports: [p2, p3] },
          { group: G3, ports: [p1, p3] },
        ],
        routes: [{ group: G1, source: SOURCE, iif, oifs: ['gw0'] }],
      };
      writeFileSync(file, declaredStateYaml(state));
    });

    const ofport = (n: number) => pods[n - 1]!.ofport;
    const declaredGroups = () => ({
      [G1]: [ofport(1), ofport(2)],
      [G2]: [ofport(2), ofport(3)],
      [G3]: [ofport(1), ofport(3)],
    });
    const declaredRoute = () => `(${SOURCE}, ${G1}) ${iif} -> gw0`;
    /** The VIFs the declared route needs, and no other: static ones (no router runs), without their numbers. */
    const declaredVifs = async () => (await kernelState(node)).vifs.map((vif) => vif.replace(/^\d+ /, '')).sort();
    const uninstallRoute = async () => {
      const removed = await mcastctl(['uninstall', G1, '--source', SOURCE], {
        ns: node.ns,
        env: node.env,
        timeoutMs: 15_000,
      });
      assert.equal(removed.code, 0, removed.stderr);
    };

    it('from nothing: adds every group, and the route with its VIFs (exit 2); a second run is in sync (exit 0)', async () => {
      const first = await cli('reconcile', '-f', file, '--json');
      assert.equal(first.code, 2, first.stderr);
      // Drift is no error: nothing on stderr (with --json, that no router forwards the routes is the routerActive
      // field).
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
      assert.equal(report.routerActive, false);
      assert.deepEqual(await ourGroups(node), declaredGroups());
      assert.deepEqual((await kernelState(node)).routes, [declaredRoute()]);
      assert.deepEqual(await declaredVifs(), ['gw0 static', `${iif} static`].sort());

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

    it('a route deleted: --dry-run lists it and changes nothing in the kernel; a run adds it back; then in sync', async () => {
      await uninstallRoute();
      const kernelBefore = await kernelState(node);
      assert.equal(kernelBefore.routes.length, 0, 'the route is gone');

      const dry = await cli('reconcile', '-f', file, '--dry-run', '--json');
      assert.equal(dry.code, 2, dry.stderr);
      const planned = parseReport(dry);
      const rows = planned.drift.map((row) => [row.object, row.key, row.action, row.result]);
      assert.deepEqual(rows, [['route', `(${SOURCE}, ${G1})`, 'add', 'planned']]);
      assert.deepEqual(planned.drift[0]!.after, { iif, oifs: ['gw0'] });
      assert.deepEqual(await kernelState(node), kernelBefore, 'the dry run changed nothing in the kernel');

      // The human table of the dry run says the same, and that no router forwards the route.
      const human = await cli('reconcile', '-f', file, '--dry-run');
      assert.equal(human.code, 2, human.stderr);
      assert.match(human.stdout, /drift: 1 difference \(dry run: nothing changed\)/);
      assert.match(human.stdout, /not applied \(--dry-run\)/);
      assert.match(human.stderr, /^warning: no multicast router is active/);

      const repair = await cli('reconcile', '-f', file, '--json');
      assert.equal(repair.code, 2, repair.stderr);
      assert.deepEqual(
        parseReport(repair).drift.map((row) => [row.object, row.key, row.action, row.result]),
        rows.map(([object, key, action]) => [object, key, action, 'applied']),
      );
      assert.deepEqual((await kernelState(node)).routes, [declaredRoute()], 'the kernel route is back');
      assert.deepEqual(await declaredVifs(), ['gw0 static', `${iif} static`].sort(), 'and its VIFs');

      const again = await cli('reconcile', '-f', file);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^in sync:/m);
      const quiet = await cli('reconcile', '-f', file, '--quiet');
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.equal(quiet.stdout, '');
      assert.equal(quiet.stderr, '');
    });

    it('route drift: a changed route is changed back, an undeclared one removed (and its VIFs with it)', async () => {
      const install = (...args: string[]) =>
        mcastctl(['install', ...args], { ns: node.ns, env: node.env, timeoutMs: 15_000 });
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
      assert.ok(
        !kernel.vifs.some((vif) => vif.includes(lab.ifname('in1p'))),
        `the VIF no route uses is gone: ${kernel.vifs.join('; ')}`,
      );
      assert.equal((await cli('reconcile', '-f', file, '--quiet')).code, 0);
    });

    describe('a bad file: nothing changed in the kernel', () => {
      // Drift that a run going ahead would repair: the declared route deleted.
      let kernelBefore: { vifs: string[]; routes: string[] };
      before(async () => {
        await uninstallRoute();
        kernelBefore = await kernelState(node);
        assert.equal(kernelBefore.routes.length, 0, 'the route is gone');
      });

      for (const bad of badStateFiles(() => ({ state, route: state.routes[0]! }))) {
        it(bad.name, async () => {
          await assertRefused(cli, lab.file('bad.yaml'), bad);
          assert.deepEqual(await kernelState(node), kernelBefore);
        });
      }

      it('a good file then adds the route back', async () => {
        assert.equal((await cli('reconcile', '-f', file, '--quiet')).code, 2);
        assert.deepEqual((await kernelState(node)).routes, [declaredRoute()]);
      });
    });
  });

  describe('node with the daemon: its (S,G) routes are left alone', () => {
    let node: OvsNode;
    let pods: OvsPod[];
    let daemon: RunningDaemon;
    let cli: ReconcileCli;
    let receiver: Receiver | undefined;
    /** A file that declares one group, not the daemon's. */
    let groupsOnly: string;
    const LEARNED = '239.7.7.7';
    const STATIC = '239.8.8.8';

    before(async () => {
      node = await OvsNode.start(lab, 'n2');
      const underlayNs = await lab.namespace('ul');
      const underlay = await lab.linuxBridge(underlayNs, 'ul', { address: '192.168.61.1/24', snooping: false });
      pods = await gatewayAndPods(node, 'q', '10.2.0');
      await node.addUplink(underlay, { address: '192.168.61.11/24' });
      daemon = startDaemon(node, { multicastInterfaces: routedUplinks(node) });
      await daemon.ready();
      cli = reconcileCli(node, { controlSocket: daemon.controlSocket, lockFile: lab.file('n2-reconcile.lock') });
      groupsOnly = lab.file('state-n2.yaml');
      writeFileSync(groupsOnly, `groups:\n  - {group: ${STATIC}, ports: [${pods[1]!.port}, ${pods[2]!.port}]}\n`);
    });
    after(async () => {
      await receiver?.stop();
      await daemon?.stop();
    });

    /** The daemon's (S,G) route of the first test: pods[1] sending to LEARNED. */
    const daemonRouteOf = async () =>
      (await kernelState(node)).routes.find((line) => line.startsWith(`(${pods[1]!.address}, ${LEARNED})`));

    it("reconcile of groups only leaves the daemon's (S,G) route alone", async () => {
      // Traffic from a pod to the group: the gateway gets it, the daemon adds an (S,G) route.
      receiver = await learnedGroupWithTraffic(node, LEARNED, 5300, pods[0]!, pods[1]!);
      const daemonRoute = await waitUntil("the daemon's (S,G) route", daemonRouteOf, 5_000);

      const first = await cli('reconcile', '-f', groupsOnly, '--json');
      assert.equal(first.code, 2, first.stderr);
      const report = parseReport(first);
      assert.deepEqual(
        report.drift.map((row) => [row.object, row.key, row.action, row.result]),
        [['group', STATIC, 'add', 'applied']],
      );
      assert.ok(report.leftAlone.daemonRoutes >= 1, `daemon routes left alone: ${report.leftAlone.daemonRoutes}`);
      assert.ok((await kernelState(node)).routes.includes(daemonRoute), "the daemon's route is still there");

      const second = await cli('reconcile', '-f', groupsOnly, '--json');
      assert.equal(second.code, 0, second.stderr);
      assert.equal(parseReport(second).inSync, true);
      assert.ok((await kernelState(node)).routes.includes(daemonRoute));
    });

    it("a declared route the daemon already routes the same way is in sync, and stays the daemon's; the daemon's entries survive even unasked", async () => {
      const gwRoute = await daemonRouteOf();
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
      const unasked = await cli('reconcile', '-f', groupsOnly, '--no-daemon', '--json');
      assert.equal(unasked.code, 0, unasked.stdout + unasked.stderr);
      assert.ok(
        (await kernelState(node)).routes.includes(gwRoute),
        "the daemon's route was removed by a run that did not ask the daemon",
      );
    });
  });
});
