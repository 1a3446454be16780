/**
 * Tunnel mode in the daemon's loop (MulticastController with --tunnel-port), on the shared
 * fakes: the tunnel port found on the bridge, local groups told to the peers, a peer's
 * report making it a member (a sync with its tunnel bucket), its timeout, a reload of the
 * peers, a restart that keeps what the switch still holds, and the views.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig, TunnelConfig } from '../../src/controllers/daemon/config/daemon-config.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import { groupAddress, hostAddress, type HostAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

const GROUP = groupAddress('239.1.1.1');
const [GATEWAY, POD, TUNNEL] = [1, 2, 7];
const NODE = hostAddress('192.168.60.11');
const [PEER2, PEER3] = [hostAddress('192.168.60.12'), hostAddress('192.168.60.13')];
const TIMEOUT_MS = 5_000;

function tunnelConfig(overrides: Partial<TunnelConfig> = {}): TunnelConfig {
  return {
    port: 'tun0',
    peers: [PEER2, PEER3],
    nodeAddress: NODE,
    refreshIntervalMs: 2_000,
    peerTimeoutMs: TIMEOUT_MS,
    maxGroupsPerPeer: 100,
    ...overrides,
  };
}

async function startTunnelLoop(
  options: {
    prepare?: (vswitch: FakeSwitch) => void;
    tunnel?: Partial<TunnelConfig>;
    mtu?: Record<string, number>;
  } = {},
) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('p1', POD, 'shop/web')
    .addPort('tun0', TUNNEL);
  options.prepare?.(vswitch);
  const config: DaemonConfig = testDaemonConfig({ tunnel: tunnelConfig(options.tunnel) });
  const logger = new RecordingLogger();
  const mtu = options.mtu ?? {};
  const loop = new MulticastController({
    config,
    logger,
    vswitch,
    podDirectory,
    host: {
      interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined),
      interfaceMtu: (name) => mtu[name],
      interfaceHolding: (address) => (address === NODE ? 'br-phy' : undefined),
    },
    clock,
    pid: 4242,
  });
  await loop.start();
  await settle();
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  /** A report from a peer, as it comes up from the tunnel port. */
  const peerReport = async (peer: HostAddress, type: 'MODE_IS_EXCLUDE' | 'CHANGE_TO_INCLUDE_MODE') => {
    vswitch.packetIn(v3Report(peer, [{ type, group: GROUP }]), TUNNEL, peer);
    await settle();
  };
  const stop = async () => {
    const stopping = loop.stop({ save: false });
    clock.advance(2_000);
    await stopping;
  };
  return { loop, vswitch, podDirectory, config, logger, advance, peerReport, stop };
}

/** The IGMPv3 records of a frame sent to the peers: [type, group]. */
function recordsOf(frame: Uint8Array): Array<[string, string]> {
  const event = decodeFrame(ipLocator(1), frame, { frame: 1, ts: 0 });
  if (event?.kind !== 'igmp' || event.message.kind !== 'report' || event.message.version !== 3) return [];
  return event.message.records.map((record) => [record.type, record.group]);
}

describe('daemon loop in tunnel mode', () => {
  it('installs the base with the tunnel port, greets every peer, and tells them a local group once it has a member', async () => {
    const { vswitch, advance, stop } = await startTunnelLoop();
    try {
      assert.equal(vswitch.baseTunnels.at(-1), TUNNEL);
      const greeted = new Set(vswitch.sentToPeers.flatMap((sent) => sent.peers));
      assert.deepEqual([...greeted].sort(), [PEER2, PEER3]);
      assert.ok(vswitch.sentToPeers.every((sent) => sent.tunnelOfport === TUNNEL));
      const before = vswitch.sentToPeers.length;
      vswitch.packetIn(v3Report('10.1.0.5', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), POD);
      await advance(1);
      const told = vswitch.sentToPeers.slice(before).flatMap((sent) => recordsOf(sent.frame));
      assert.deepEqual(told, [['CHANGE_TO_EXCLUDE_MODE', GROUP]]);
      assert.deepEqual(
        vswitch.groups.get(GROUP),
        [POD, GATEWAY].sort((a, b) => a - b),
      );
      assert.deepEqual(vswitch.peers.get(GROUP) ?? [], [], 'no peer wants it yet');
    } finally {
      await stop();
    }
  });

  it("a peer's report makes it a member (a tunnel bucket), until its timeout, or at once when it says it leaves", async () => {
    const { loop, vswitch, advance, peerReport, stop } = await startTunnelLoop();
    try {
      await peerReport(PEER2, 'MODE_IS_EXCLUDE');
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2]);
      assert.deepEqual(vswitch.groups.get(GROUP), [GATEWAY], 'only a peer wants it: the gateway too, no pod');
      const view = loop.groups().find((group) => group.group === GROUP);
      assert.deepEqual(
        view?.remoteMembers?.map((member) => member.peer),
        [PEER2],
      );
      const peer2 = loop.status().tunnel?.peers.find((peer) => peer.address === PEER2);
      assert.equal(peer2?.state, 'up');
      await advance(TIMEOUT_MS + 10);
      assert.equal(vswitch.groups.has(GROUP), false, 'the peer went silent: its membership timed out');
      await peerReport(PEER3, 'MODE_IS_EXCLUDE');
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER3]);
      await peerReport(PEER3, 'CHANGE_TO_INCLUDE_MODE');
      assert.equal(vswitch.groups.has(GROUP), false, 'TO_IN {} ends it at once');
    } finally {
      await stop();
    }
  });

  it('drops reports from this node and from addresses that are no peer, and counts them', async () => {
    const { loop, vswitch, peerReport, stop } = await startTunnelLoop();
    try {
      await peerReport(NODE, 'MODE_IS_EXCLUDE');
      await peerReport(hostAddress('192.168.60.99'), 'MODE_IS_EXCLUDE');
      assert.equal(vswitch.groups.has(GROUP), false);
      const drops = loop.status().tunnel?.drops;
      assert.equal(drops?.self, 1);
      assert.equal(drops?.['unknown-peer'], 1);
    } finally {
      await stop();
    }
  });

  it("the tunnel's meter is a pod port's budget for each peer, follows the peers and the settings, and is off with meters", async () => {
    const { loop, vswitch, config, stop } = await startTunnelLoop();
    try {
      const { igmpRatePerPort: rate, igmpBurstPerPort: burst } = config;
      assert.deepEqual(vswitch.baseMeters.at(-1), { rate: 2 * rate, burst: 2 * burst });
      const base = vswitch.baseMeters.length;
      loop.reconfigure({ ...config, tunnel: tunnelConfig({ peers: [PEER3] }) });
      await settle();
      assert.deepEqual(vswitch.baseMeters.at(-1), { rate, burst });
      loop.reconfigure({ ...config, tunnel: tunnelConfig({ peers: [PEER3] }), igmpRatePerPort: 50 });
      await settle();
      assert.deepEqual(vswitch.baseMeters.at(-1), { rate: 50, burst });
      const written = vswitch.baseMeters.length;
      loop.reconfigure({ ...config, tunnel: tunnelConfig({ peers: [PEER3] }), igmpRatePerPort: 50 });
      await settle();
      assert.equal(vswitch.baseMeters.length, written, 'the same base is not written again');
      loop.reconfigure({ ...config, tunnel: tunnelConfig({ peers: [PEER3] }), igmpRatePerPort: 50, igmpMeter: false });
      await settle();
      assert.equal(vswitch.baseMeters.at(-1), undefined);
      assert.ok(vswitch.baseMeters.length > base);
    } finally {
      await stop();
    }
  });

  it("past the tunnel's budget, a peer's frames are dropped unread and counted (over-rate), with the switch's meter drops", async () => {
    const { loop, vswitch, config, advance, stop } = await startTunnelLoop();
    try {
      loop.reconfigure({ ...config, igmpRatePerPort: 1, igmpBurstPerPort: 3 });
      await settle();
      // Two peers: a burst of 6, then 2 a second; the fake clock stands still.
      const packetIns = loop.status().counters.packetIns;
      for (let index = 0; index < 10; index++)
        vswitch.packetIn(v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group: GROUP }]), TUNNEL, PEER2);
      await settle();
      assert.equal(loop.status().tunnel?.drops['over-rate'], 4);
      assert.equal(
        loop.status().counters.packetIns - packetIns,
        10,
        "the tunnel's packet-ins are counted with the pods'",
      );
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2], 'what came within the budget was taken');
      // The switch's meter dropped 40 before they came up: read once a second, counted alike.
      vswitch.tunnelMetered = 40n;
      await advance(1_000);
      assert.equal(loop.status().tunnel?.drops['over-rate'], 44);
      assert.equal(
        loop.status().tunnel?.unattributedDrops?.['over-rate'],
        44,
        'no peer named: the budget is theirs all',
      );
    } finally {
      await stop();
    }
  });

  it("groups only peers want count against maxGroups for the pods too; a pod's join of one of them adds none", async () => {
    const { loop, vswitch, config, stop } = await startTunnelLoop();
    try {
      loop.reconfigure({ ...config, maxGroups: 2 });
      const [peerOnly, other, third] = [GROUP, groupAddress('239.1.1.2'), groupAddress('239.1.1.3')];
      for (const group of [peerOnly, other])
        vswitch.packetIn(v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group }]), TUNNEL, PEER2);
      await settle();
      vswitch.packetIn(v3Report('10.1.0.5', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: third }]), POD);
      await settle();
      assert.equal(loop.status().igmpRefused?.total['node-groups'], 1, 'a third group, past the two peers hold');
      assert.equal(vswitch.groups.has(third), false);
      vswitch.packetIn(v3Report('10.1.0.5', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: peerOnly }]), POD);
      await settle();
      assert.ok(vswitch.groups.get(peerOnly)?.includes(POD), "a peer's group taken by a pod: no new group");
      assert.equal(loop.status().igmpRefused?.total['node-groups'], 1);
    } finally {
      await stop();
    }
  });

  it('a reload without a peer drops its memberships at once', async () => {
    const { loop, vswitch, config, peerReport, stop } = await startTunnelLoop();
    try {
      await peerReport(PEER2, 'MODE_IS_EXCLUDE');
      await peerReport(PEER3, 'MODE_IS_EXCLUDE');
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2, PEER3]);
      loop.reconfigure({ ...config, tunnel: tunnelConfig({ peers: [PEER3] }) });
      await settle();
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER3]);
    } finally {
      await stop();
    }
  });

  it('a group only peers want is replayed after an ovs-vswitchd restart, and synced again when the tunnel port is renumbered', async () => {
    const { vswitch, podDirectory, advance, peerReport, stop } = await startTunnelLoop();
    try {
      await peerReport(PEER2, 'MODE_IS_EXCLUDE');
      assert.deepEqual(vswitch.groups.get(GROUP), [GATEWAY], 'no local member: the gateway and the tunnel bucket only');
      vswitch.restartVswitchd();
      await advance(1);
      assert.deepEqual(vswitch.groups.get(GROUP), [GATEWAY], 'replayed though no pod is a member');
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2]);
      assert.equal(vswitch.tunnelPorts.get(GROUP), TUNNEL);
      podDirectory.removePort('tun0');
      podDirectory.addPort('tun0', TUNNEL + 1);
      await advance(1);
      assert.equal(vswitch.tunnelPorts.get(GROUP), TUNNEL + 1, 'the bucket toward the peer outputs to the new number');
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2]);
    } finally {
      await stop();
    }
  });

  it('a restart keeps the tunnel buckets the switch still holds, and nothing syncs them away', async () => {
    const { vswitch, advance, stop } = await startTunnelLoop({
      prepare: (fake) => fake.preinstall(GROUP, [GATEWAY], [PEER2]),
    });
    try {
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2], 'kept across the start');
      await advance(TIMEOUT_MS + 10);
      assert.equal(vswitch.groups.has(GROUP), false, 'not refreshed: gone after the timeout');
    } finally {
      await stop();
    }
  });

  it('warns once of a pod port whose MTU leaves no room for the 50 octets of the tunnel, naming what to set', async () => {
    const { logger, stop } = await startTunnelLoop({ mtu: { 'br-phy': 1500, p1: 1500 } });
    try {
      const warnings = logger.lines.filter(
        (line) => line.level === 'warn' && line.message.includes('leaves no room for the tunnel'),
      );
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]?.fields?.['port'], 'p1');
      assert.match(String(warnings[0]?.fields?.['hint']), /at most 1450, or the underlay one of at least 1550/);
    } finally {
      await stop();
    }
  });

  it('says nothing of a pod port at 1,450 on a 1,500 underlay', async () => {
    const { logger, stop } = await startTunnelLoop({ mtu: { 'br-phy': 1500, p1: 1450 } });
    try {
      assert.equal(logger.lines.filter((line) => line.message.includes('leaves no room')).length, 0);
    } finally {
      await stop();
    }
  });

  it("IPv6: a local MLD member is told to the peers as MLDv2; a peer's MLDv2 report gives the group its tunnel bucket until the peer timeout", async () => {
    const { loop, vswitch, advance, stop } = await startTunnelLoop();
    const v6 = groupAddress('ff1e::1:1');
    const mldReport = (type: 'CHANGE_TO_EXCLUDE_MODE' | 'MODE_IS_EXCLUDE' | 'CHANGE_TO_INCLUDE_MODE', src: string) =>
      mldFrame.encodeFrame({
        message: { kind: 'report', version: 2, records: [{ type, group: v6, sources: [] }] },
        src,
        dst: 'ff02::16',
      });
    try {
      const before = vswitch.sentToPeers.length;
      vswitch.packetIn(mldReport('CHANGE_TO_EXCLUDE_MODE', 'fe80::5'), POD);
      await advance(1);
      const told = vswitch.sentToPeers.slice(before).flatMap((sent) => {
        const event = decodeFrame(ipLocator(1), sent.frame, { frame: 1, ts: 0 });
        return event?.kind === 'mld' && event.message.kind === 'report' && event.message.version === 2
          ? event.message.records.map((record) => [record.type, record.group, event.dst])
          : [];
      });
      assert.deepEqual(told, [['CHANGE_TO_EXCLUDE_MODE', v6, 'ff02::16']]);
      // Node 2's report; its inner source says nothing of who sent it.
      vswitch.packetIn(mldReport('MODE_IS_EXCLUDE', 'fe80::2'), TUNNEL, PEER2);
      await advance(1);
      assert.deepEqual(vswitch.peers.get(v6), [PEER2]);
      assert.deepEqual(
        loop
          .groups()
          .find((group) => group.group === v6)
          ?.remoteMembers?.map((member) => member.peer),
        [PEER2],
      );
      await advance(TIMEOUT_MS + 10);
      assert.deepEqual(vswitch.peers.get(v6) ?? [], [], 'the peer went silent: its IPv6 membership timed out');
    } finally {
      await stop();
    }
  });

  it('a report naming a peer inside, from an outer source that is no peer, changes nothing and is counted', async () => {
    const { loop, vswitch, advance, stop } = await startTunnelLoop();
    try {
      vswitch.packetIn(
        v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group: GROUP }]),
        TUNNEL,
        hostAddress('192.168.60.99'),
      );
      vswitch.packetIn(v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group: GROUP }]), TUNNEL);
      await advance(1);
      assert.equal(vswitch.groups.has(GROUP), false);
      assert.equal(loop.status().tunnel?.drops['unknown-peer'], 2);
    } finally {
      await stop();
    }
  });
});
