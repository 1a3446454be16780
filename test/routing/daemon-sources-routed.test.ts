/**
 * Per-source forwarding upstream, end to end in the two-node multicast lab: node a's daemon
 * joins on its uplink only the sources its pods want, the underlay bridge (snooping with
 * IGMPv3 source tracking) then sends node a only those sources, and the kernel routes the
 * wanted (S,G) in to the gateway. S1 and S2 are two senders on the underlay: the lab's
 * external host and a second host added here.
 *
 * Each case is checked at the uplink's filter (/proc/net/mcfilter of node a), the underlay
 * bridge's snooping table, a capture on node a's uplink (what the underlay let through),
 * and the pods' sockets and wires.
 *
 * Needs root, iproute2, ethtool, tcpdump, python3, Open vSwitch and the built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { routedUplinks, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { Lab, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import {
  buildMulticastLab,
  type ExternalHost,
  type MulticastLab,
  type MulticastLabNode,
} from '../lab/multicast-lab.js';
import type { OvsPod } from '../lab/ovs.js';
import { readCapture, SourceMember, wireSenders } from '../lab/source-members.js';
import { addUnderlaySender, igmpGroups, mcfilterRows, underlaySources } from '../lab/underlay-hosts.js';
import { parseMfcCache, parseVifTable } from '../../src/protocol/mroute/proc.js';
import { requireMulticastRouting } from '../lab/kernel.js';

requireMulticastRouting();

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const GROUP = '239.8.1.1';
const PORT = 5401;
const SECOND_SENDER = '192.168.50.101';
/** Datagrams each sender sends per check. */
const COUNT = 20;
/** The daemon's query timers match the underlay's (membership interval 2 × 2 s + 1 s); (S,G) routes idle 2 s go. */
const SHORT_TIMERS = [
  '--query-interval',
  '2s',
  '--query-response-interval',
  '1s',
  '--robustness',
  '2',
  '--route-idle-timeout',
  '2s',
];
const CASE_TIMEOUT_MS = 30_000;

describe('daemon: upstream per-source joins and routes in the multicast lab', { concurrency: 1 }, () => {
  let lab: Lab;
  let ml: MulticastLab;
  let nodeA: MulticastLabNode;
  let s1: ExternalHost;
  let s2: ExternalHost;
  let a1: OvsPod;
  let a2: OvsPod;
  let daemon: RunningDaemon;
  let member1: SourceMember;
  let member2: SourceMember;
  const captures: Record<'uplink' | 'a1' | 'a2', Tcpdump | undefined> = {
    uplink: undefined,
    a1: undefined,
    a2: undefined,
  };

  /** `${source} ${mode}` of the uplink's filter rows for GROUP, sorted. */
  const uplinkFilter = async (): Promise<string[]> =>
    (await mcfilterRows(lab, nodeA.node.ns, nodeA.uplink.ifindex))
      .filter((row) => row.group === GROUP)
      .map((row) => `${row.source} ${row.mode}`)
      .sort();

  const waitForUplinkFilter = (expected: string[]) =>
    waitUntil(
      `node a's uplink filter for ${GROUP} to be ${JSON.stringify(expected)}`,
      async () => JSON.stringify(await uplinkFilter()) === JSON.stringify(expected),
      8000,
      100,
    ).catch(async (error: Error) => assert.fail(`${error.message}; it is ${JSON.stringify(await uplinkFilter())}`));

  const waitForUnderlaySources = (expected: string[]) =>
    waitUntil(
      `the underlay to hold ${JSON.stringify(expected)} for ${GROUP} on node a's port`,
      async () =>
        JSON.stringify((await underlaySources(lab, ml, GROUP, nodeA.uplink.peer)).sources) === JSON.stringify(expected),
      8000,
      100,
    ).catch(async (error: Error) =>
      assert.fail(
        `${error.message}; it holds ${JSON.stringify(await underlaySources(lab, ml, GROUP, nodeA.uplink.peer))}`,
      ),
    );

  /** Both senders send COUNT datagrams tagged `tag` to GROUP; then a pause for the last ones to land. */
  const sendFromBoth = async (tag: string) => {
    await Promise.all([s1, s2].map((sender) => sender.send(GROUP, PORT, COUNT, { intervalMs: 10, ttl: 8, tag })));
    await sleep(400);
  };

  /** The kernel's (source, GROUP) entry on node a: its incoming and outgoing VIFs by name, or undefined without one. */
  const kernelRoute = async (source: string): Promise<{ iif: string | undefined; oifs: string[] } | undefined> => {
    const vifs = parseVifTable((await nodeA.node.exec(['cat', '/proc/net/ip_mr_vif'])).stdout);
    const nameOf = (vif: number) => vifs.find((row) => row.vif === vif)?.name ?? `vif${vif}`;
    const row = parseMfcCache((await nodeA.node.exec(['cat', '/proc/net/ip_mr_cache'])).stdout).find(
      (entry) => entry.group === GROUP && entry.origin === source,
    );
    return row === undefined ? undefined : { iif: nameOf(row.iif), oifs: row.oifs.map((oif) => nameOf(oif.vif)) };
  };

  const wire = (which: keyof typeof captures, tag: string) =>
    wireSenders(readCapture(captures[which]!.file), GROUP, tag);

  before(async () => {
    lab = Lab.create();
    ml = await buildMulticastLab(lab, { podsPerNode: 2 });
    nodeA = ml.nodes[0];
    [a1, a2] = nodeA.pods as [OvsPod, OvsPod];
    s1 = ml.external!;
    s2 = await addUnderlaySender(lab, ml, { name: 'ex2', address: SECOND_SENDER });
    daemon = startDaemon(nodeA.node, { multicastInterfaces: routedUplinks(nodeA.node), args: SHORT_TIMERS });
    await daemon.ready();
    captures.uplink = await lab.startTcpdump(nodeA.node.ns, nodeA.uplink.name, lab.file('uplink-a.pcap'), {
      filter: ['udp'],
    });
    captures.a1 = await lab.startTcpdump(a1.ns, a1.iface, lab.file('a1.pcap'), { filter: ['udp'] });
    captures.a2 = await lab.startTcpdump(a2.ns, a2.iface, lab.file('a2.pcap'), { filter: ['udp'] });
    [member1, member2] = await Promise.all([SourceMember.start(lab, a1, PORT), SourceMember.start(lab, a2, PORT)]);
  });

  after(async () => {
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  it('the underlay bridge tracks IGMPv3 sources (mcast_igmp_version 3)', async () => {
    const { stdout } = await lab.ip(ml.underlay.ns, '-d', '-j', 'link', 'show', ml.underlay.name);
    const [link] = JSON.parse(stdout) as { linkinfo: { info_data: Record<string, unknown> } }[];
    assert.equal(link!.linkinfo.info_data['mcast_igmp_version'], 3);
    assert.equal(link!.linkinfo.info_data['mcast_snooping'], 1);
  });

  it('a pod joins (S1, G) only: the uplink includes S1, the underlay sends node a S1 and never S2', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await member1.joinSource(GROUP, s1.address);
    await waitForUplinkFilter([`${s1.address} include`]);
    await waitForUnderlaySources([s1.address]);
    await sendFromBoth('c1');
    assert.deepEqual(member1.sendersOf('c1'), [s1.address], 'a1 socket');
    assert.deepEqual(wire('a1', 'c1'), [s1.address], "a1's wire");
    assert.deepEqual(wire('uplink', 'c1'), [s1.address], "node a's uplink: S2's datagrams must not reach it");
    assert.deepEqual(
      await kernelRoute(s1.address),
      { iif: nodeA.uplink.name, oifs: [nodeA.gateway.name] },
      "node a's kernel route of (S1, G)",
    );
  });

  it('the pod adds S2: both are joined and reach it; it drops S1: S1 no longer reaches the uplink', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    await member1.joinSource(GROUP, s2.address);
    await waitForUplinkFilter([`${s1.address} include`, `${s2.address} include`].sort());
    await waitForUnderlaySources([s1.address, s2.address].sort());
    await sendFromBoth('c2');
    assert.deepEqual(member1.sendersOf('c2'), [s1.address, s2.address].sort(), 'a1 socket');
    assert.deepEqual(wire('a1', 'c2'), [s1.address, s2.address].sort(), "a1's wire");

    await member1.dropSource(GROUP, s1.address);
    await waitForUplinkFilter([`${s2.address} include`]);
    await waitForUnderlaySources([s2.address]);
    await sendFromBoth('c3');
    assert.deepEqual(wire('uplink', 'c3'), [s2.address], "node a's uplink: S1's datagrams must not reach it");
    assert.deepEqual(member1.sendersOf('c3'), [s2.address], 'a1 socket');
    assert.deepEqual(wire('a1', 'c3'), [s2.address], "a1's wire");
    // The (S1, G) entry may have gone idle by now; if it is still there, it no longer goes to the gateway.
    assert.ok(
      !((await kernelRoute(s1.address))?.oifs ?? []).includes(nodeA.gateway.name),
      "node a's kernel route of (S1, G) still has the gateway",
    );
  });

  it('another pod joins G for any source while a1 keeps (S1, G): the uplink goes EXCLUDE {}, each pod gets what it asked for', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    // a1 back to (S1, G) only.
    await member1.joinSource(GROUP, s1.address);
    await member1.dropSource(GROUP, s2.address);
    await waitForUplinkFilter([`${s1.address} include`]);
    await member2.join(GROUP);
    await waitForUplinkFilter([]);
    assert.ok(
      (await igmpGroups(lab, nodeA.node.ns, nodeA.uplink.ifindex)).includes(GROUP),
      "/proc/net/igmp lists G on node a's uplink",
    );
    await waitUntil(
      'the underlay to send node a every source of G',
      async () => {
        await sendFromBoth('probe');
        return wire('uplink', 'probe').length === 2;
      },
      10_000,
      0,
    ).catch(async () =>
      assert.fail(`the underlay holds ${JSON.stringify(await underlaySources(lab, ml, GROUP, nodeA.uplink.peer))}`),
    );
    await sendFromBoth('c4');
    assert.deepEqual(wire('uplink', 'c4'), [s1.address, s2.address].sort(), "node a's uplink");
    assert.deepEqual(member2.sendersOf('c4'), [s1.address, s2.address].sort(), 'a2 socket (any source)');
    assert.deepEqual(wire('a2', 'c4'), [s1.address, s2.address].sort(), "a2's wire (any source)");
    assert.deepEqual(member1.sendersOf('c4'), [s1.address], 'a1 socket (S1 only)');
    assert.deepEqual(wire('a1', 'c4'), [s1.address], "a1's wire (S1 only)");
  });
});
