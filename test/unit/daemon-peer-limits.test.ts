/**
 * The node's limit of groups in tunnel mode, in the daemon's loop on the shared fakes: the OVS groups of the groups
 * only peers want count with the local ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import { type GroupAddress, groupAddress, hostAddress } from '../../src/wire/ip-address.js';
import { formatIPv4 } from '../../src/wire/ipv4-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

const [GATEWAY, POD, TUNNEL] = [1, 2, 7];
const NODE = hostAddress('192.168.60.11');
const [PEER2, PEER3] = [hostAddress('192.168.60.12'), hostAddress('192.168.60.13')];

const groupsFrom = (first: number, count: number): GroupAddress[] =>
  Array.from({ length: count }, (_, index) => groupAddress(formatIPv4(0xef020000 + first + index)));
const joins = (host: string, groups: readonly GroupAddress[]) =>
  v3Report(
    host,
    groups.map((group) => ({ type: 'MODE_IS_EXCLUDE' as const, group })),
  );

describe('daemon limits in tunnel mode: groups per node', () => {
  it('with maxGroups 100 and 60 local groups, peers asking for 80 more leave 100 OVS groups; a leave makes room', async () => {
    const clock = new FakeClock();
    const vswitch = new FakeSwitch();
    const podDirectory = new FakePodDirectory()
      .addPort('gw0', GATEWAY)
      .addPort('p1', POD, 'shop/web')
      .addPort('tun0', TUNNEL);
    const tunnel = {
      port: 'tun0',
      peers: [PEER2, PEER3],
      nodeAddress: NODE,
      refreshIntervalMs: 2_000,
      peerTimeoutMs: 60_000,
      maxGroupsPerPeer: 1_000,
    };
    const config = testDaemonConfig({ maxGroups: 100, tunnel });
    const loop = new MulticastController({
      config,
      logger: new RecordingLogger(),
      vswitch,
      podDirectory,
      host: {
        interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined),
      },
      clock,
      pid: 4242,
    });
    await loop.start();
    await settle();
    try {
      vswitch.packetIn(joins('10.1.0.5', groupsFrom(0, 60)), POD);
      await settle();
      assert.equal(vswitch.groups.size, 60);
      const asked = groupsFrom(1_000, 80);
      vswitch.packetIn(joins(PEER2, asked.slice(0, 50)), TUNNEL, PEER2);
      vswitch.packetIn(joins(PEER3, asked.slice(50)), TUNNEL, PEER3);
      await settle();
      assert.equal(vswitch.groups.size, 100);
      assert.equal(loop.status().tunnel?.drops.refused, 40);
      vswitch.packetIn(v3Report(PEER2, [{ type: 'CHANGE_TO_INCLUDE_MODE', group: asked[0]! }]), TUNNEL, PEER2);
      vswitch.packetIn(joins(PEER3, [asked[79]!]), TUNNEL, PEER3);
      await settle();
      assert.equal(vswitch.groups.size, 100);
      assert.deepEqual(vswitch.peers.get(asked[79]!), [PEER3]);
      // A reload raising the limit lets the next one in.
      loop.reconfigure({ ...loop.configuration, maxGroups: 101 });
      vswitch.packetIn(joins(PEER3, [asked[78]!]), TUNNEL, PEER3);
      await settle();
      assert.equal(vswitch.groups.size, 101);
    } finally {
      const stopping = loop.stop({ save: false });
      clock.advance(2_000);
      await stopping;
    }
  });
});
