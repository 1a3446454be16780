/**
 * Acceptance of tunnel mode's peer keys (`--peer-key-file`) on the three-node Geneve lab
 * (test/lab/tunnel-lab.ts): every membership message between the daemons carries a seal
 * made with the cluster key, and a message is believed only when its seal opens.
 *
 * The forger here is stronger than the one of daemon-tunnel-dual-stack.test.ts: a host
 * on the underlay writes its own outer IPv4 header (test/lab/tunnel-replay.ts), so its
 * frames come from node 2's address as far as node 1's switch can tell, and only the
 * seal tells them apart. It sends unsealed reports, then a genuine sealed report of node
 * 2's captured on the wire, as it was (a replay) and altered. Then the key is rotated on
 * every node with SIGHUP, a node with a key the others lack is not believed, and a start
 * with a key file that is shared, too long or broken is refused.
 *
 * The tests share one lab and run in order: the member of node 2 joined in the first is
 * the one the forged leave tries to cut off. Needs root, iproute2, ethtool, nft, tcpdump,
 * python3, Open vSwitch and the built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { daemonCpuSeconds } from '../lab/churn.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { control, errorEntries, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { sequences, type OvsPod, type Receiver } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import {
  buildTunnelLab,
  deliveryFaults,
  TUNNEL_LAB,
  tunnelDaemonArgs,
  tunnelDestinations,
  type TunnelLab,
  type TunnelLabNode,
  waitForTunnelDestinations,
} from '../lab/tunnel-lab.js';
import {
  expectedCode,
  peerKeyId,
  restoreTunnelNeighbour,
  sealedReportsIn,
  sealOf,
  sendAsPeer,
  unsealedReport,
  writePeerKeyFile,
} from '../lab/tunnel-replay.js';
import type { DaemonStatus, GroupView, PeerDropReason, TunnelView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const PEER_TIMERS = ['--peer-refresh-interval', '2s', '--peer-timeout', '5s'];
const [A1, A2, A3] = TUNNEL_LAB.underlayAddresses as unknown as [string, string, string];
/** Fresh keys each run, as `openssl rand -hex 32` makes them; C longer, as a key may be (up to 64 octets). */
const [KEY_A, KEY_B, KEY_C] = [32, 32, 48].map((octets) => randomBytes(octets).toString('hex')) as [
  string,
  string,
  string,
];
/** Streamed by a pod of node 1 and joined by node 2's member; the forged leave names it. */
const G = { group: '239.62.1.1', port: 5401 } as const;
/** Only a forger joins it, in node 2's name. */
const FORGED_JOIN_GROUP = '239.62.2.1';
/** Joined by a pod of node 1 while a flood under node 2's address goes on. */
const FLOOD_JOIN_GROUP_LOCAL = '239.62.6.1';
/** Joined by a pod of node 2 to make it report while the wire is captured. */
const CAPTURE_GROUP = '239.62.3.1';
/** Joined on node 3 while it holds a key the others do not. */
const LONE_KEY_GROUP = { group: '239.62.5.1', port: 5405 } as const;
const STREAM_COUNT = 50;
const SEAL_DROPS = ['unsealed', 'unknown-key', 'bad-seal', 'replay', 'stale'] as const satisfies PeerDropReason[];
type SealDrops = Record<(typeof SEAL_DROPS)[number], number>;

const tunnelOf = async (daemon: RunningDaemon): Promise<TunnelView> => {
  const tunnel = (await control<DaemonStatus>(daemon, ['status'])).tunnel;
  if (tunnel === undefined) throw new Error('status --json has no tunnel part');
  return tunnel;
};

/** The seal drops `daemon` counted against `peer`; throws when the peer has no drop counts at all. */
const sealDropsOf = async (daemon: RunningDaemon, peer: string): Promise<SealDrops> => {
  const drops = (await tunnelOf(daemon)).peers.find((view) => view.address === peer)?.drops;
  if (drops === undefined) throw new Error(`status --json counts no drops for peer ${peer}`);
  return Object.fromEntries(SEAL_DROPS.map((reason) => [reason, drops[reason] ?? 0])) as SealDrops;
};

const minus = (now: SealDrops, then: SealDrops): SealDrops =>
  Object.fromEntries(SEAL_DROPS.map((reason) => [reason, now[reason] - then[reason]])) as SealDrops;

const noDrops: SealDrops = { unsealed: 0, 'unknown-key': 0, 'bad-seal': 0, replay: 0, stale: 0 };

/** Waits until `daemon` has counted at least `atLeast` drops for `reason` against `peer`; resolves with the count. */
const waitForDrops = (
  daemon: RunningDaemon,
  peer: string,
  reason: keyof SealDrops,
  atLeast: number,
  timeoutMs = 5000,
): Promise<number> =>
  waitUntil(
    `${atLeast} ${reason} drops against ${peer}`,
    async () => {
      const count = (await sealDropsOf(daemon, peer))[reason];
      return count >= atLeast ? count : undefined;
    },
    timeoutMs,
  );

/** The seal drops of `daemon` (node index+1) against each of its peers. */
const allSealDrops = async (daemon: RunningDaemon, index: number): Promise<Record<string, SealDrops>> => {
  const peers = TUNNEL_LAB.underlayAddresses.filter((_, i) => i !== index);
  return Object.fromEntries(await Promise.all(peers.map(async (peer) => [peer, await sealDropsOf(daemon, peer)])));
};

const remoteMembersOf = async (daemon: RunningDaemon, group: string): Promise<string[]> =>
  ((await control<GroupView[]>(daemon, ['groups'])).find((view) => view.group === group)?.remoteMembers ?? []).map(
    (member) => member.peer,
  );

describe('mcastctl daemon in tunnel mode with peer keys (three nodes, sealed messages, forgers under a peer address)', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let tl: TunnelLab;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let n3: TunnelLabNode;
  const daemons: RunningDaemon[] = [];
  /** Every daemon started, those stopped since too: their logs are read at the end. */
  const started: RunningDaemon[] = [];
  let keyFiles: string[];
  /** Node 2's member of G, from the first test on. */
  let memberOfG: Receiver;

  const startKeyed = (n: TunnelLabNode): RunningDaemon => {
    const daemon = startDaemon(n.node, {
      gateway: n.gateway.name,
      multicastInterfaces: [],
      args: [...tunnelDaemonArgs(n), ...PEER_TIMERS, '--peer-key-file', keyFiles[n.index]!],
    });
    started.push(daemon);
    return daemon;
  };

  /** A pod of node 1 streams numbered datagrams to `group`: `member` must get each exactly once. */
  const streamReaches = async (member: Receiver, tag: string): Promise<void> => {
    await n1.pods[0]!.send(member.group, member.port, STREAM_COUNT, { intervalMs: 5, tag });
    // A shortfall is reported by the assertion below, with what was lost.
    await waitUntil(
      `${STREAM_COUNT} datagrams tagged ${tag}`,
      async () => sequences(member.received, tag).length >= STREAM_COUNT,
      3000,
    ).catch(() => undefined);
    assert.deepEqual(deliveryFaults(member.received, tag, STREAM_COUNT), { lost: [], duplicated: [] }, tag);
  };

  /** Sends `payloads` from the outside host to node 1 under node 2's outer address; resolves once all are refused. */
  const forgeAsNode2 = async (...payloads: Buffer[]): Promise<void> => {
    const refused = async () => Object.values(await sealDropsOf(daemons[0]!, A2)).reduce((sum, n) => sum + n, 0);
    const before = await refused();
    await sendAsPeer(lab, tl.outside!.ns, { from: A2, to: A1, payloads });
    await waitUntil(`node 1 to refuse ${payloads.length} forged frames`, async () => {
      return (await refused()) >= before + payloads.length;
    });
    // Node 1's OVS learned the forger's MAC for node 2 from them (tunnel-replay.ts): that L2 side of the forgery, which
    // no seal can help, is undone, so that what reaches node 2 afterwards is the daemons' doing alone.
    await restoreTunnelNeighbour(n1, n2);
  };

  before(async () => {
    lab = Lab.create();
    tl = await buildTunnelLab(lab, { outsideHost: true });
    [n1, n2, n3] = tl.nodes;
    keyFiles = tl.nodes.map((n) => lab.file(`peer-keys-${n.node.name}`));
    for (const file of keyFiles) writePeerKeyFile(file, [KEY_A]);
    daemons.push(...tl.nodes.map(startKeyed));
    await Promise.all(daemons.map((daemon) => daemon.ready()));
  });

  after(async () => {
    const errors = errorEntries(started);
    if (errors.length > 0) console.log('daemon errors (peer keys lab):', errors);
    await lab?.destroy();
  });

  it("one shared key: node 2's member gets node 1's stream; node 1 shows the key's id, no seal drop", async () => {
    memberOfG = await n2.pods[0]!.listen(G.group, G.port);
    await waitForTunnelDestinations(n1.node, G.group, [A2], 5000);
    await streamReaches(memberOfG, 'shared-key');
    // A peer is up only once a message of its was believed: its seal opened.
    await waitUntil('node 1 to hear nodes 2 and 3', async () => {
      const { peers } = await tunnelOf(daemons[0]!);
      return [A2, A3].every((peer) => peers.find((view) => view.address === peer)?.state === 'up');
    });
    const tunnel = await tunnelOf(daemons[0]!);
    assert.deepEqual(tunnel.authentication, { keyFile: keyFiles[0], keys: [peerKeyId(KEY_A)] });
    for (const peer of [A2, A3]) assert.deepEqual(await sealDropsOf(daemons[0]!, peer), noDrops, `peer ${peer}`);
  });

  it("unsealed reports under node 2's outer address, a join then a leave, from a host and a pod: counted, nothing changed", async () => {
    const before = await sealDropsOf(daemons[0]!, A2);
    const totalBefore = (await tunnelOf(daemons[0]!)).drops.unsealed;
    await forgeAsNode2(unsealedReport(A2, FORGED_JOIN_GROUP, 'join'));
    // Counted means it passed the switch's filter on the outer source: it reached the daemon as node 2's.
    await waitForDrops(daemons[0]!, A2, 'unsealed', before.unsealed + 1);
    assert.deepEqual(await remoteMembersOf(daemons[0]!, FORGED_JOIN_GROUP), [], 'remote members of the forged join');
    assert.deepEqual(await tunnelDestinations(n1.node, FORGED_JOIN_GROUP), [], 'node 1 sends the forged join toward');

    await forgeAsNode2(unsealedReport(A2, G.group, 'leave'));
    await waitForDrops(daemons[0]!, A2, 'unsealed', before.unsealed + 2);
    assert.deepEqual(await remoteMembersOf(daemons[0]!, G.group), [A2], `remote members of ${G.group}`);
    await streamReaches(memberOfG, 'after-forged-leave');
    // A pod does the same, into its own gateway, its outer source node 2's address and the inner one too.
    await sendAsPeer(lab, n1.pods[0]!.ns, {
      from: A2,
      to: n1.gateway.address,
      payloads: [unsealedReport(A2, G.group, 'leave')],
    });
    await waitForDrops(daemons[0]!, A2, 'unsealed', before.unsealed + 3);
    await restoreTunnelNeighbour(n1, n2);
    assert.deepEqual(await remoteMembersOf(daemons[0]!, G.group), [A2], `remote members of ${G.group} after the pod's`);
    await streamReaches(memberOfG, 'after-pod-forged-leave');
    assert.deepEqual(minus(await sealDropsOf(daemons[0]!, A2), before), { ...noDrops, unsealed: 3 });
    assert.equal((await tunnelOf(daemons[0]!)).drops.unsealed - totalBefore, 3, 'the total of unsealed drops');
    await daemons[0]!.waitForLog(
      (entry, line) => entry['level'] === 'warn' && entry['peer'] === A2 && line.includes('unsealed'),
      2000,
    );
  });

  it("node 2's report from the wire sent again: replay; altered: bad seal; resealed 10 min ahead: stale", async (t) => {
    const capture = await lab.startTcpdump(tl.underlayNs, n1.uplinkPeer, lab.file('sealed-n2-to-n1.pcap'), {
      filter: ['udp', 'port', String(TUNNEL_LAB.geneveUdpPort), 'and', 'src', 'host', A2],
    });
    // A join makes node 2 report at once (its refresh every 2 s would do too).
    const trigger = await n2.pods[1]!.listen(CAPTURE_GROUP, 5403);
    let genuine: Buffer;
    try {
      genuine = await waitUntil(
        'a sealed report from node 2 to node 1 on the wire',
        async () => sealedReportsIn(capture.file)[0],
        8000,
        100,
      );
      // The report has been believed: node 1 holds node 2's member of the group it names.
      await waitUntil("node 1 to take node 2's join", async () =>
        (await remoteMembersOf(daemons[0]!, CAPTURE_GROUP)).includes(A2),
      );
    } finally {
      await Promise.all([capture.stop(), trigger.stop()]);
    }
    const seal = sealOf(genuine)!;
    assert.equal(seal.keyId, peerKeyId(KEY_A), 'the key id of the seal on the wire');
    assert.deepEqual(
      genuine.subarray(seal.codeEnd - 16, seal.codeEnd),
      expectedCode(genuine, KEY_A, A2),
      "the code on the wire is the HMAC of node 2's message under the key",
    );
    const sealedAgoMs = Date.now() - Number(seal.counter / 1000n);
    assert.ok(sealedAgoMs >= -1000 && sealedAgoMs < 30_000, `the seal's counter is ${sealedAgoMs} ms old`);
    t.diagnostic(`captured: ${genuine.length} octets, key ${seal.keyId}, sealed ${sealedAgoMs} ms before it was read`);

    const before = await sealDropsOf(daemons[0]!, A2);
    await forgeAsNode2(genuine);
    await waitForDrops(daemons[0]!, A2, 'replay', before.replay + 1);

    const badCode = Buffer.from(genuine);
    badCode[seal.codeEnd - 1]! ^= 0x01;
    // A fresh counter would pass the replay guard: the code covers it.
    const laterCounter = Buffer.from(genuine);
    laterCounter.writeBigUInt64BE(seal.counter + 60_000_000n, seal.codeEnd - 24);
    await forgeAsNode2(badCode, laterCounter);
    await waitForDrops(daemons[0]!, A2, 'bad-seal', before['bad-seal'] + 2);
    // Sealed as node 2 would (the test holds the key), with a counter of 10 minutes from now.
    const ahead = Buffer.from(genuine);
    ahead.writeBigUInt64BE(BigInt(Date.now() + 10 * 60_000) * 1000n, seal.codeEnd - 24);
    expectedCode(ahead, KEY_A, A2).copy(ahead, seal.codeEnd - 16);
    await forgeAsNode2(ahead);
    await waitForDrops(daemons[0]!, A2, 'stale', before.stale + 1);
    assert.deepEqual(minus(await sealDropsOf(daemons[0]!, A2), before), {
      ...noDrops,
      replay: 1,
      'bad-seal': 2,
      stale: 1,
    });
    // Node 2's own messages are still believed after all that.
    const stillUp = await tunnelOf(daemons[0]!);
    assert.equal(stillUp.peers.find((view) => view.address === A2)?.state, 'up');
    await streamReaches(memberOfG, 'after-replays');
  });

  it("a flood under node 2's address, 200,000 frames in 10 s: the tunnel's meter sheds it, the daemon opens a few", async (t) => {
    const drops = async () => (await tunnelOf(daemons[0]!)).drops;
    const before = await drops();
    const packetInsBefore = (await control<DaemonStatus>(daemons[0]!, ['status'])).counters.packetIns;
    const cpuBefore = await daemonCpuSeconds(daemons[0]!);
    const started = performance.now();
    const flooding = sendAsPeer(lab, tl.outside!.ns, {
      from: A2,
      to: A1,
      payloads: [unsealedReport(A2, FORGED_JOIN_GROUP, 'join')],
      flood: { count: 200_000, perSecond: 20_000 },
    });
    // A pod of node 1 joins in the middle of the flood: its IGMP is its own port's, never the tunnel's budget.
    await sleep(4000);
    const joinedAt = performance.now();
    const localMember = await n1.pods[1]!.listen(FLOOD_JOIN_GROUP_LOCAL, 5406);
    let joinMs: number;
    try {
      await waitForOvsMembers(n1.node, FLOOD_JOIN_GROUP_LOCAL, [n1.pods[1]!]);
      joinMs = performance.now() - joinedAt;
    } finally {
      await localMember.stop();
    }
    await flooding;
    const seconds = (performance.now() - started) / 1000;
    const cpuPercent = (((await daemonCpuSeconds(daemons[0]!)) - cpuBefore) / seconds) * 100;
    await restoreTunnelNeighbour(n1, n2);
    // The meter's drops are read from the switch once a second.
    await sleep(2500);
    const after = await drops();
    const overRate = after['over-rate'] - before['over-rate'];
    const unsealed = after.unsealed - before.unsealed;
    const packetIns = (await control<DaemonStatus>(daemons[0]!, ['status'])).counters.packetIns - packetInsBefore;
    // Two peers: 400 a second and a burst of 2,000 (a pod port's 200 and 1,000 each).
    const budget = 2 * 1000 + 2 * 200 * seconds;
    t.diagnostic(
      `${seconds.toFixed(1)} s: over-rate ${overRate}, unsealed ${unsealed}, packet-ins ${packetIns} (budget ${Math.round(budget)}), daemon CPU ${cpuPercent.toFixed(1)} % of a core, a local join in ${joinMs.toFixed(1)} ms`,
    );
    assert.ok(overRate >= 150_000, `only ${overRate} of the flood over the tunnel's rate`);
    assert.ok(unsealed > 0 && unsealed <= budget * 1.2, `${unsealed} unsealed frames opened by the daemon`);
    assert.ok(packetIns <= budget * 1.2 + 200, `${packetIns} packet-ins during the flood`);
    assert.ok(cpuPercent < 10, `daemon CPU ${cpuPercent.toFixed(1)} % of a core during the flood`);
    assert.ok(joinMs < 1000, `a local join took ${joinMs.toFixed(0)} ms during the flood`);
    assert.deepEqual(await remoteMembersOf(daemons[0]!, FORGED_JOIN_GROUP), [], 'the flood was believed');
    // The peers' budget is shared with the flood while it lasts: afterwards node 2 is heard again.
    await streamReaches(memberOfG, 'after-flood');
  });

  it("rotation A, A+B, B+A, B by SIGHUP, a node at a time: a streaming member loses nothing, each step's join gets the stream, no key refused", async (t) => {
    const baseline = await Promise.all(daemons.map((daemon, index) => allSealDrops(daemon, index)));
    // Node 2's member of G gets node 1's stream through the whole rotation: every refresh of its membership must be
    // believed, or it expires (5 s) and the stream stops reaching node 2.
    const streamCount = 2000;
    const streaming = n1.pods[0]!.send(G.group, G.port, streamCount, { intervalMs: 10, tag: 'rotation' });
    for (const [step, keys] of [[KEY_A, KEY_B], [KEY_B, KEY_A], [KEY_B]].entries()) {
      const ids = keys.map(peerKeyId);
      // One node at a time, as an operator goes: the next only once this one holds the keys.
      for (const [index, daemon] of daemons.entries()) {
        writePeerKeyFile(keyFiles[index]!, keys);
        daemon.child.kill('SIGHUP');
        await waitUntil(`node ${index + 1} to hold keys ${ids.join(',')}`, async () => {
          const { authentication } = await tunnelOf(daemon);
          return typeof authentication === 'object' && authentication.keys.join() === ids.join();
        });
        await sleep(1000);
      }
      const member = await n2.pods[1]!.listen(`239.62.4.${step + 1}`, 5404);
      try {
        await waitForTunnelDestinations(n1.node, member.group, [A2], 5000);
        await streamReaches(member, `rotation-${step + 1}`);
      } finally {
        await member.stop();
      }
      assert.deepEqual((await tunnelOf(daemons[0]!)).authentication, { keyFile: keyFiles[0], keys: ids });
      for (const [index, daemon] of daemons.entries()) {
        const now = await allSealDrops(daemon, index);
        for (const [peer, drops] of Object.entries(now)) {
          const grown = minus(drops, baseline[index]![peer]!);
          assert.deepEqual(
            [grown['unknown-key'], grown['bad-seal']],
            [0, 0],
            `step ${step + 1}: node ${index + 1} refused keys of ${peer}`,
          );
        }
      }
    }
    await streaming;
    await waitUntil(
      'the rotation stream to end',
      async () => sequences(memberOfG.received, 'rotation').length >= streamCount,
      3000,
    ).catch(() => undefined);
    const faults = deliveryFaults(memberOfG.received, 'rotation', streamCount);
    t.diagnostic(
      `rotation stream: ${streamCount} datagrams, ${faults.lost.length} lost, ${faults.duplicated.length} twice`,
    );
    assert.deepEqual(faults, { lost: [], duplicated: [] }, "node 2's member during the rotation");
    // A key file others may read (a slip of chmod) is refused at the reload, and the keys in force stay.
    writePeerKeyFile(keyFiles[0]!, [KEY_C], 0o644);
    daemons[0]!.child.kill('SIGHUP');
    await daemons[0]!.waitForLog((entry, line) => entry['level'] === 'error' && line.includes('mode 0644'));
    assert.deepEqual((await tunnelOf(daemons[0]!)).authentication, { keyFile: keyFiles[0], keys: [peerKeyId(KEY_B)] });
    writePeerKeyFile(keyFiles[0]!, [KEY_B]);
  });

  it('node 3 restarted with a key the others lack: node 1 counts unknown-key, takes none of its joins', async (t) => {
    const before = await sealDropsOf(daemons[0]!, A3);
    await daemons[2]!.stop();
    writePeerKeyFile(keyFiles[2]!, [KEY_C]);
    daemons[2] = startKeyed(n3);
    await daemons[2].ready();
    const lonely = await tunnelOf(daemons[2]);
    assert.deepEqual(lonely.authentication, { keyFile: keyFiles[2], keys: [peerKeyId(KEY_C)] });
    await waitForDrops(daemons[0]!, A3, 'unknown-key', before['unknown-key'] + 1, 8000);

    const [pod3] = n3.pods as [OvsPod];
    const member = await pod3.listen(LONE_KEY_GROUP.group, LONE_KEY_GROUP.port);
    try {
      await waitForOvsMembers(n3.node, LONE_KEY_GROUP.group, [pod3]);
      // Two more refused: node 3's report of the join, or at the latest its next refresh, which holds the group.
      const refused = (await sealDropsOf(daemons[0]!, A3))['unknown-key'];
      await waitForDrops(daemons[0]!, A3, 'unknown-key', refused + 2, 8000);
      assert.deepEqual(await remoteMembersOf(daemons[0]!, LONE_KEY_GROUP.group), [], 'node 3 taken as a member');
      assert.deepEqual(await tunnelDestinations(n1.node, LONE_KEY_GROUP.group), []);
      await n1.pods[0]!.send(LONE_KEY_GROUP.group, LONE_KEY_GROUP.port, 20, { intervalMs: 5, tag: 'lone-key' });
      await sleep(300);
      assert.deepEqual(sequences(member.received, 'lone-key'), [], "node 3's member got node 1's stream");
    } finally {
      await member.stop();
    }
    const grown = minus(await sealDropsOf(daemons[0]!, A3), before);
    t.diagnostic(`node 1 refused ${grown['unknown-key']} messages of node 3 as unknown-key`);
    assert.deepEqual({ ...grown, 'unknown-key': 0 }, noDrops, 'drops for node 3 other than unknown-key');
    // Node 3 in turn believes nothing of node 1's, sealed with key B.
    assert.ok((await sealDropsOf(daemons[2], A1))['unknown-key'] > 0, "node 3 counted no unknown-key for node 1's");
    // Four daemons logged refusals, reloads and key ids: never a key.
    for (const [index, daemon] of started.entries())
      for (const key of [KEY_A, KEY_B, KEY_C])
        assert.ok(!daemon.logs().join('\n').includes(key.slice(0, 16)), `daemon ${index + 1} logged a key`);
  });

  it('a key file others may read, of three keys, or with no hex: exit 64, quoting no key', async (context) => {
    const ns = await lab.namespace('keyfiles');
    const dir = lab.file('refused-keys');
    mkdirSync(dir, { recursive: true });
    const notAKey = `${randomBytes(24).toString('hex')}g0`;
    const cases: Array<[string, string[], number, RegExp]> = [
      ['mode 0644', [KEY_A], 0o644, /mode 0644/],
      ['three keys', [KEY_A, KEY_B, KEY_C], 0o600, /\b3 keys\b/],
      ['a line of no hex', [KEY_A, notAKey], 0o600, /no-hex:4\b/],
    ];
    for (const [name, keys, mode, message] of cases) {
      const file = `${dir}/${name.replaceAll(' ', '-')}`;
      writePeerKeyFile(file, keys, mode);
      const args = [
        'daemon',
        ...['--bridge', 'br-int', '--gateway', 'gw0', ...tunnelDaemonArgs(n1), '--peer-key-file', file],
        ...['--ovs-rundir', `${dir}/no-ovs`, '--no-metrics'],
        ...['--control-socket', `${dir}/c.sock`, '--state-dir', `${dir}/state`],
      ];
      const result = await mcastctl(args, { ns, timeoutMs: 15_000 });
      const output = result.stdout + result.stderr;
      assert.equal(result.code, 64, `${name}: exit ${result.code}: ${output}`);
      assert.ok(result.stderr.includes(file), `${name}: the file is not named: ${result.stderr}`);
      assert.match(result.stderr, message, name);
      assert.doesNotMatch(output, /\n\s+at /, `${name}: a stack trace`);
      for (const secret of [KEY_A, KEY_B, KEY_C, notAKey])
        assert.ok(!output.includes(secret.slice(0, 16)), `${name}: a key's content is in the output`);
      context.diagnostic(`${name}: ${result.stderr.trim().split('\n')[0]}`);
    }
  });
});
