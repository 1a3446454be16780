/**
 * `mcastctl daemon` as a node's multicast router, on the two-node multicast lab and the real
 * kernel: each daemon has its node's uplink as a multicast interface, so the node's kernel
 * routes between the gateway (the pods, through OVS) and the underlay, which has an IGMP
 * snooping Linux bridge with an IGMPv3 querier and an external host.
 *
 * - across nodes: a pod on node a to a member on node b, routed out of a and into b;
 * - idle (S,G) routes removed after their idle timeout, and made again by new traffic;
 * - the external host to a pod (routed in) and a pod to the external host (routed out);
 * - the router's lifecycle in the kernel: routing on, the gateway and the uplink as VIFs
 *   while it runs, none left after SIGTERM; a second daemon refused without touching the
 *   first one's VIFs; a bad configuration adds none;
 * - static routes left by `install --source`: the daemon takes their VIFs, they forward
 *   while it runs, and they stay after it stops.
 *
 * Delivery is proved at the members' sockets (every numbered datagram) and, for a
 * non-member, tcpdump on its eth0. The daemons without routing are tested in
 * test/e2e/daemon.test.ts.
 *
 * Needs root, iproute2, ethtool, tcpdump, python3, Open vSwitch, the built CLI and kernel
 * multicast routing. Run: scripts/test.sh routing.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { control, errorEntries, routedUplinks, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { requireMulticastRouting } from '../lab/kernel.js';
import { Lab, primeRoutedFlow, sleep, waitUntil } from '../lab/lab.js';
import {
  buildMulticastLab,
  type MulticastLab,
  type MulticastLabNode,
  waitForUnderlayMember,
} from '../lab/multicast-lab.js';
import { missingSequences, sequences, type OvsNode, type OvsPod } from '../lab/ovs.js';
import { isData, readPcap } from '../lab/pcap-packets.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import type { DaemonStatus } from '../../src/transport/control/daemon-view.js';
import { parseMfcCache, parseVifTable, type MfcRow } from '../../src/protocol/mroute/proc.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** Group Membership Interval = 2 × 2 s + 1 s. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
/** (S,G) routes idle this long go; the daemon looks every second. */
const ROUTE_IDLE = ['--route-idle-timeout', '2s'];

const ms = (value: number) => `${Math.round(value)} ms`;

/** The (S,G) entries of a node's kernel, read as `mcastctl routes` reads them. */
async function mfcEntries(node: OvsNode): Promise<MfcRow[]> {
  return parseMfcCache((await node.exec(['cat', '/proc/net/ip_mr_cache'])).stdout);
}

/** Each VIF of the kernel's table in `ns` as "index name flags" (not the counters, which move with traffic). */
async function vifTable(run: (argv: string[]) => Promise<{ stdout: string }>): Promise<string[]> {
  return parseVifTable((await run(['cat', '/proc/net/ip_mr_vif'])).stdout).map(
    (row) => `${row.vif} ${row.name} ${row.static ? 'static' : 'dynamic'}`,
  );
}

/** The daemon of a node that routes: its uplink is a multicast interface. */
const startRouter = (n: MulticastLabNode, args: readonly string[] = []): RunningDaemon =>
  startDaemon(n.node, { multicastInterfaces: routedUplinks(n.node), args: [...SHORT_TIMERS, ...ROUTE_IDLE, ...args] });

describe('mcastctl daemon routing through the kernel: two nodes, 4 pods each, an external host', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let ml: MulticastLab;
  let daemonA: RunningDaemon;
  let daemonB: RunningDaemon;

  before(async () => {
    lab = Lab.create();
    ml = await buildMulticastLab(lab, { podsPerNode: 4, external: true });
    const [a, b] = ml.nodes;
    daemonA = startRouter(a);
    daemonB = startRouter(b);
    await Promise.all([daemonA, daemonB].map((daemon) => daemon.ready()));
  });

  after(async () => {
    const errors = errorEntries([daemonA, daemonB]);
    if (errors.length > 0) console.log('daemon errors (routing lab):', errors);
    await lab?.destroy();
  });

  it('across nodes: a pod on node a sends, a member on node b gets every datagram, a non-member on b none', async () => {
    const [a, b] = ml.nodes;
    const [sender] = a.pods as [OvsPod];
    const [member, other] = b.pods as [OvsPod, OvsPod];
    const group = '239.5.2.1';
    const port = 5102;
    const capture = await lab.startTcpdump(other.ns, other.iface, lab.file('t2-nonmember.pcap'), { filter: ['udp'] });
    const receiver = await member.listen(group, port);
    await waitForOvsMembers(b.node, group, [member]);
    // Node b's uplink joined upstream: the underlay snoops it.
    await waitForUnderlayMember(ml, lab, group, b.uplink.peer);
    await primeRoutedFlow(
      `of ${group} to ${member.name}`,
      (tag) => sender.send(group, port, 1, { ttl: 8, tag }),
      receiver,
    );
    await sender.send(group, port, 50, { intervalMs: 10, ttl: 8, tag: 't2' });
    await sleep(300);
    const got = await receiver.stop();
    await capture.stop();
    assert.deepEqual(missingSequences(sequences(got, 't2'), 50), [], `${member.name} on node b missed datagrams`);
    assert.ok(
      got.every((datagram) => datagram.from === sender.address),
      'datagrams must come from the sender on node a',
    );
    const leaked = readPcap(capture.file).filter((packet) => isData(packet, group, port));
    assert.equal(leaked.length, 0, `${leaked.length} datagrams of ${group} reached the non-member ${other.name}`);
    // Routed: out of node a by the kernel (gw0 → uplink), into node b (uplink → gw0).
    const routeA = await daemonA.waitForLog(
      (e) => e['msg'] === 'route added' && e['group'] === group && e['iif'] === 'gw0',
      2000,
    );
    assert.deepEqual(routeA['oifs'], [a.uplink.name]);
    const routeB = await daemonB.waitForLog(
      (e) =>
        (e['msg'] === 'route added' || e['msg'] === 'route updated') &&
        e['group'] === group &&
        e['iif'] === b.uplink.name,
      2000,
    );
    assert.ok((routeB['oifs'] as string[]).includes('gw0'));
  });

  it('idle routes: (S,G) entries whose counters stopped are removed after the idle timeout, and come back with traffic', async () => {
    const [a, b] = ml.nodes;
    const [sender] = a.pods as [OvsPod];
    const [member] = b.pods as [OvsPod];
    const group = '239.5.2.9';
    const port = 5109;
    const entry = async (node: OvsNode) =>
      (await mfcEntries(node)).some((row) => row.group === group && row.origin === sender.address);
    const receiver = await member.listen(group, port);
    try {
      await waitForOvsMembers(b.node, group, [member]);
      await waitForUnderlayMember(ml, lab, group, b.uplink.peer);
      await sender.send(group, port, 10, { intervalMs: 10, ttl: 8, tag: 'i1' });
      await sleep(200);
      assert.equal(await entry(a.node), true, 'node a has the outbound entry while traffic flows');
      assert.equal(await entry(b.node), true, 'node b has the inbound entry while traffic flows');
      const stoppedAt = Date.now();
      // Idle for 2 s, found by a sweep at most 1 s later (and one more to be sure).
      const removed = await waitUntil(
        'both entries removed',
        async () => (!(await entry(a.node)) && !(await entry(b.node)) ? Date.now() - stoppedAt : undefined),
        8_000,
        100,
      );
      console.log(`idle routes: removed ${ms(removed)} after the traffic stopped (idle timeout 2 s)`);
      assert.ok(removed >= 1_500, `removed after ${ms(removed)}: before the idle timeout`);
      await daemonA.waitForLog((e) => e['msg'] === 'idle route removed' && e['group'] === group, 1_000);
      // New traffic: a new upcall on each node, a new entry, delivered again. What comes
      // while an entry is being resolved may be lost (the kernel queues only a few
      // datagrams of an unresolved (S,G)), so the stream is judged once it flows again;
      // under software emulation one datagram of the first burst after it has been seen
      // lost too (the steady stream of a route is checked whole by the test above).
      await primeRoutedFlow(
        `of ${group} to ${member.name} after the removal`,
        (tag) => sender.send(group, port, 1, { ttl: 8, tag }),
        receiver,
      );
      assert.equal(await entry(a.node), true, 'node a has the outbound entry again');
      assert.equal(await entry(b.node), true, 'node b has the inbound entry again');
      await sender.send(group, port, 20, { intervalMs: 10, ttl: 8, tag: 'i2' });
      await sleep(300);
      const lost = missingSequences(sequences(receiver.received, 'i2'), 20);
      assert.ok(
        lost.length <= 1,
        `traffic after the removal was not routed again: ${lost.length} of 20 lost (${lost})`,
      );
    } finally {
      await receiver.stop();
    }
  });

  it('external host to a pod (routed in), and a pod to the external host (routed out)', async () => {
    const [a, b] = ml.nodes;
    const ext = ml.external!;
    const inGroup = '239.5.3.1';
    const outGroup = '239.5.3.2';
    const port = 5103;

    const member = b.pods[1]!;
    const inbound = await member.listen(inGroup, port);
    await waitForOvsMembers(b.node, inGroup, [member]);
    await waitForUnderlayMember(ml, lab, inGroup, b.uplink.peer);
    await primeRoutedFlow(
      `of ${inGroup} to ${member.name}`,
      (tag) => ext.send(inGroup, port, 1, { ttl: 8, tag }),
      inbound,
    );
    await ext.send(inGroup, port, 40, { intervalMs: 10, ttl: 8, tag: 'in' });

    const outbound = await ext.listen(outGroup, port);
    await waitForUnderlayMember(ml, lab, outGroup, ext.port);
    await primeRoutedFlow(
      `of ${outGroup} to the external host`,
      (tag) => a.pods[0]!.send(outGroup, port, 1, { ttl: 8, tag }),
      outbound,
    );
    await a.pods[0]!.send(outGroup, port, 40, { intervalMs: 10, ttl: 8, tag: 'out' });
    await sleep(300);
    const [gotIn, gotOut] = await Promise.all([inbound.stop(), outbound.stop()]);
    // As in the idle routes test: under software emulation one datagram of a primed stream
    // has been seen lost (once in a full run, not in the file's own runs); more is a
    // failure to route.
    const lostIn = missingSequences(sequences(gotIn, 'in'), 40);
    assert.ok(lostIn.length <= 1, `${member.name} missed datagrams from the external host: ${lostIn}`);
    assert.ok(gotIn.every((datagram) => datagram.from === ext.address));
    const lostOut = missingSequences(sequences(gotOut, 'out'), 40);
    assert.ok(lostOut.length <= 1, `the external host missed datagrams from pod a1: ${lostOut}`);
    assert.ok(gotOut.every((datagram) => datagram.from === a.pods[0]!.address));
  });

  it('the router in the kernel: routing on, gateway and uplink as VIFs while it runs; a second daemon is refused and leaves them', async () => {
    const [a] = ml.nodes;
    const status = await control<DaemonStatus>(daemonA, ['status']);
    assert.equal(status.mrouteActive, true);
    const vifs = await vifTable((argv) => a.node.exec(argv));
    assert.deepEqual(
      vifs.map((vif) => vif.split(' ')[1]).sort(),
      [a.gateway.name, a.uplink.name].sort(),
      `node a's VIFs: ${vifs.join(' | ')}`,
    );
    const second = startDaemon(a.node, { multicastInterfaces: routedUplinks(a.node) });
    const exit = await Promise.race([second.exited, sleep(15_000).then(() => undefined)]);
    assert.ok(exit !== undefined, 'the second daemon did not exit');
    assert.notEqual(exit.code, 0, 'the second daemon exited 0');
    assert.equal(daemonA.running(), true, 'the first daemon died');
    assert.deepEqual(await vifTable((argv) => a.node.exec(argv)), vifs, "the second daemon changed the kernel's VIFs");
  });

  it('a bad configuration adds no VIF', async () => {
    const ns = await lab.namespace('cfg');
    const dir = lab.file('cfg');
    const socket = `${dir}/ctl.sock`;
    const stateDir = `${dir}/state`;
    const bad = await mcastctl(
      [
        'daemon',
        '--query-interval',
        'soon',
        '--multicast-interfaces',
        'lo',
        '--control-socket',
        socket,
        '--state-dir',
        stateDir,
      ],
      {
        ns,
        timeoutMs: 15_000,
      },
    );
    assert.equal(bad.code, 64, `exit ${bad.code}: ${bad.stderr}`);
    assert.deepEqual(await vifTable((argv) => lab.exec(ns, argv)), []);
    const yaml = `${dir}.yaml`;
    writeFileSync(yaml, 'bridge: br-int\nmulticastInterfaces: [lo]\ncolour: blue\n');
    const badFile = await mcastctl(['daemon', '--config', yaml, '--control-socket', socket, '--state-dir', stateDir], {
      ns,
      timeoutMs: 15_000,
    });
    assert.equal(badFile.code, 64, `exit ${badFile.code}: ${badFile.stderr}`);
    assert.equal(existsSync(socket), false);
    assert.deepEqual(await vifTable((argv) => lab.exec(ns, argv)), []);
  });

  it("SIGTERM: exit 0, and the kernel keeps none of the router's VIFs", async () => {
    const [, b] = ml.nodes;
    assert.equal((await vifTable((argv) => b.node.exec(argv))).length, 2, "node b's router has its two VIFs");
    assert.deepEqual(await daemonB.stop('SIGTERM'), { code: 0, signal: null });
    assert.deepEqual(await vifTable((argv) => b.node.exec(argv)), [], 'VIFs left in the kernel after SIGTERM');
    daemonB = startRouter(b);
    await daemonB.ready();
  });

  it('static routes left by install --source keep their VIFs, forward while the daemon runs, and stay after it stops', async () => {
    const { node, uplink, gateway } = ml.nodes[1];
    const group = '239.6.8.1';
    const source = '192.168.50.77';
    const procRoute = async () => (await mfcEntries(node)).find((row) => row.group === group && row.origin === source);
    const vifOf = async (name: string) =>
      parseVifTable((await node.exec(['cat', '/proc/net/ip_mr_vif'])).stdout).find((row) => row.name === name);
    await daemonB.stop();
    const installed = await mcastctl(
      ['install', group, '--source', source, '--iif', uplink.name, '--oif', gateway.name, '--json'],
      {
        ns: node.ns,
        env: { ...process.env, ...node.env },
        timeoutMs: 15_000,
      },
    );
    assert.equal(installed.code, 0, installed.stderr);
    const staticGateway = await vifOf(gateway.name);
    assert.ok(staticGateway?.static === true, 'install made a static VIF for the gateway');
    daemonB = startRouter(ml.nodes[1]);
    const routing = await daemonB.waitForLog((e) => e['msg'] === 'multicast routing on', 20_000);
    await daemonB.ready();
    assert.equal(
      routing['gateway'],
      `${gateway.name} (vif ${staticGateway.vif})`,
      'the daemon took the static VIF of the gateway',
    );
    // Traffic from that source on the underlay reaches node b's uplink (joined there, so
    // that the snooping bridge sends it); the static entry forwards it to the gateway.
    const joined = await node.udp(uplink.address).listen(group, 5208);
    await waitForUnderlayMember(ml, lab, group, uplink.peer);
    await lab.ip(ml.underlay.ns, 'addr', 'add', `${source}/32`, 'dev', ml.underlay.name);
    const before = (await procRoute())?.packets ?? 0;
    await lab.exec(ml.underlay.ns, [
      'python3',
      '-c',
      `import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_TTL,8)\ns.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_IF,socket.inet_aton("${source}"))\ns.bind(("${source}",0))\nfor i in range(10): s.sendto(b"st %d" % i, ("${group}", 5208))`,
    ]);
    await sleep(300);
    const after = (await procRoute())?.packets ?? 0;
    await joined.stop();
    if (after - before < 10)
      console.log(
        'static route debug:',
        (await node.exec(['cat', '/proc/net/ip_mr_cache', '/proc/net/ip_mr_vif'])).stdout,
        (await lab.exec(ml.underlay.ns, ['ip', '-s', 'link', 'show', ml.underlay.name])).stdout,
      );
    assert.ok(after - before >= 10, `the static entry forwarded ${after - before} packets while the daemon ran`);
    // A daemon's idle sweep never takes it, and a stop leaves it.
    await daemonB.stop();
    assert.notEqual(await procRoute(), undefined, 'the static route went with the daemon');
    const removed = await mcastctl(['uninstall', group, '--source', source], {
      ns: node.ns,
      env: { ...process.env, ...node.env },
      timeoutMs: 15_000,
    });
    assert.equal(removed.code, 0, removed.stderr);
    daemonB = startRouter(ml.nodes[1]);
    await daemonB.ready();
  });
});
