/**
 * The tunnel port must be a flow-based Geneve or VXLAN port: the pure check and its
 * reasons, the daemon's refusal at start of a port that is not one (before anything is
 * programmed), and, at run time, such a port treated as absent until it is usable again.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/daemon-config.js';
import { refuseUnusableTunnelPort } from '../../src/controllers/daemon/tunnel/tunnel-mode.js';
import { tunnelPortProblem } from '../../src/domain/peers/tunnel-port.js';
import { ExitCode, UsageError } from '../../src/errors.js';
import { groupAddress, hostAddress } from '../../src/wire/ip-address.js';
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
const PEER2 = hostAddress('192.168.60.12');
const REFRESH_MS = 2_000;
const UNUSABLE = 'the tunnel port cannot carry frames to the peers: nothing goes to them';

describe('tunnelPortProblem', () => {
  it('takes a Geneve or VXLAN port with options:remote_ip=flow', () => {
    assert.equal(tunnelPortProblem({ type: 'geneve', options: { remote_ip: 'flow' } }), undefined);
    assert.equal(tunnelPortProblem({ type: 'vxlan', options: { remote_ip: 'flow', key: 'flow' } }), undefined);
  });

  it('says which type it is when it is no tunnel of those two', () => {
    assert.equal(tunnelPortProblem({ type: 'internal', options: {} }), 'type internal, not geneve or vxlan');
    assert.equal(tunnelPortProblem({ type: '' }), 'type system (empty), not geneve or vxlan');
    assert.equal(tunnelPortProblem({ type: 'gre', options: { remote_ip: 'flow' } }), 'type gre, not geneve or vxlan');
  });

  it('says what remote_ip is when it is not flow', () => {
    assert.equal(
      tunnelPortProblem({ type: 'geneve', options: { remote_ip: '192.0.2.1' } }),
      'options:remote_ip is 192.0.2.1, not flow',
    );
    assert.equal(tunnelPortProblem({ type: 'vxlan', options: {} }), 'options:remote_ip is not set, not flow');
    assert.equal(tunnelPortProblem({ type: 'geneve' }), 'options:remote_ip is not set, not flow');
  });

  it('quotes a value that is no plain word', () => {
    assert.equal(tunnelPortProblem({ type: 'bad\ntype' }), 'type "bad\\ntype", not geneve or vxlan');
    assert.match(
      tunnelPortProblem({ type: 'geneve', options: { remote_ip: 'x'.repeat(200) } }) ?? '',
      /… \(200 characters\), not flow$/,
    );
  });
});

describe('refuseUnusableTunnelPort', () => {
  const tunnel = {
    port: 'tun0',
    peers: [PEER2],
    nodeAddress: NODE,
    refreshIntervalMs: REFRESH_MS,
    peerTimeoutMs: 60_000,
    maxGroupsPerPeer: 100,
  };

  it('passes a usable port, a port not on the bridge, and no tunnel mode; refuses an unusable one (64)', () => {
    const ports = new FakePodDirectory().addPort('gw0', GATEWAY).addPort('tun0', TUNNEL);
    refuseUnusableTunnelPort({ config: { tunnel }, ports: ports.ports() });
    refuseUnusableTunnelPort({ config: { tunnel: { ...tunnel, port: 'tun9' } }, ports: ports.ports() });
    ports.setInterface('tun0', { type: 'internal' });
    refuseUnusableTunnelPort({ config: {}, ports: ports.ports() });
    assert.throws(
      () => refuseUnusableTunnelPort({ config: { tunnel }, ports: ports.ports() }),
      (error: unknown) =>
        error instanceof UsageError &&
        error.exitCode === ExitCode.Usage &&
        /type internal, not geneve or vxlan$/.test(error.message),
    );
  });
});

/** A tunnel-mode loop on the fakes, its tunnel port `tun0` as `prepare` leaves it; not started. */
function tunnelLoop(prepare: (podDirectory: FakePodDirectory) => void = () => undefined) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('p1', POD, 'shop/web')
    .addPort('tun0', TUNNEL);
  prepare(podDirectory);
  const tunnel = {
    port: 'tun0',
    peers: [PEER2],
    nodeAddress: NODE,
    refreshIntervalMs: REFRESH_MS,
    peerTimeoutMs: 60_000,
    maxGroupsPerPeer: 100,
  };
  const config: DaemonConfig = testDaemonConfig({ tunnel });
  const logger = new RecordingLogger();
  const host = {
    interfaceIPv4: (name: string) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined),
  };
  const create = () => new MulticastController({ config, logger, vswitch, podDirectory, host, clock, pid: 4242 });
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { create, vswitch, podDirectory, logger, advance };
}

describe('daemon loop: the tunnel port must be a flow-based tunnel', () => {
  for (const [what, columns, reason] of [
    ['an internal port', { type: 'internal' }, 'type internal, not geneve or vxlan'],
    [
      'a Geneve port to one fixed node',
      { type: 'geneve', options: { remote_ip: '192.0.2.1' } },
      'options:remote_ip is 192.0.2.1, not flow',
    ],
  ] as const) {
    it(`refuses to start on ${what} (64, with the reason and the ovs-vsctl to fix it), before anything is programmed`, () => {
      const { create, vswitch } = tunnelLoop((podDirectory) => podDirectory.setInterface('tun0', columns));
      assert.throws(create, (error: unknown) => {
        assert.ok(error instanceof UsageError);
        assert.equal(error.exitCode, ExitCode.Usage);
        assert.equal(error.code, 'usage');
        assert.ok(
          error.message.includes(`tun0 cannot carry frames to the peers (--tunnel-port): ${reason}`),
          error.message,
        );
        assert.match(error.hint ?? '', /ovs-vsctl set Interface tun0 type=geneve options:remote_ip=flow/);
        return true;
      });
      assert.deepEqual(vswitch.baseFlows, [], 'no base flows');
      assert.equal(vswitch.applied.length, 0, 'no group synced');
      assert.equal(vswitch.sentToPeers.length, 0, 'nothing sent to the peers');
    });
  }

  it('starts on a VXLAN port with remote_ip=flow as on a Geneve one', async () => {
    const { create, vswitch, advance } = tunnelLoop((podDirectory) =>
      podDirectory.setInterface('tun0', { type: 'vxlan', options: { remote_ip: 'flow' } }),
    );
    const loop = create();
    await loop.start();
    await settle();
    try {
      assert.equal(vswitch.baseTunnels.at(-1), TUNNEL);
      assert.ok(vswitch.sentToPeers.length > 0, 'the peer is greeted');
    } finally {
      const stopping = loop.stop({ save: false });
      await advance(2_000);
      await stopping;
    }
  });

  it('starts without the port, warning, and uses it once it appears', async () => {
    const { create, vswitch, podDirectory, logger, advance } = tunnelLoop((ports) => ports.removePort('tun0'));
    const loop = create();
    await loop.start();
    await settle();
    try {
      assert.equal(
        logger.find('the tunnel port is not on the bridge yet: nothing goes to the peers until it is').length,
        1,
      );
      assert.equal(vswitch.baseTunnels.at(-1), undefined);
      podDirectory.addPort('tun0', TUNNEL);
      await advance(1);
      assert.equal(vswitch.baseTunnels.at(-1), TUNNEL);
    } finally {
      const stopping = loop.stop({ save: false });
      await advance(2_000);
      await stopping;
    }
  });

  it('at run time, a port that becomes unusable counts as absent (one warning with the reason) until it is usable again', async () => {
    const { create, vswitch, podDirectory, logger, advance } = tunnelLoop();
    const loop = create();
    await loop.start();
    await settle();
    try {
      vswitch.packetIn(v3Report('10.1.0.5', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), POD);
      vswitch.packetIn(v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group: GROUP }]), TUNNEL, PEER2);
      await advance(1);
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2]);

      podDirectory.setInterface('tun0', { type: 'internal' });
      await advance(1);
      assert.equal(vswitch.baseTunnels.at(-1), undefined, 'the base has no tunnel port');
      assert.equal(vswitch.peers.has(GROUP), false, 'no bucket toward the peer');
      assert.equal(loop.status().tunnel?.ofport, null, 'the status shows it as not on the bridge');
      assert.equal(loop.status().tunnel?.portProblem, 'type internal, not geneve or vxlan', 'and why');
      const warnings = logger.find(UNUSABLE);
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]?.fields['reason'], 'type internal, not geneve or vxlan');
      assert.match(
        String(warnings[0]?.fields['hint']),
        /ovs-vsctl set Interface tun0 type=geneve options:remote_ip=flow/,
      );
      assert.equal(
        logger.find('the tunnel port is not on the bridge: nothing goes to the peers').length,
        0,
        'warned of once, as unusable',
      );

      const sentBefore = vswitch.sentToPeers.length;
      podDirectory.addPort('p2', 3); // another change of the bridge: the same unusable port is not warned of again
      await advance(REFRESH_MS * 2);
      assert.equal(vswitch.sentToPeers.length, sentBefore, 'nothing goes to the peers');
      assert.equal(logger.find(UNUSABLE).length, 1);

      podDirectory.setInterface('tun0', { type: 'geneve', options: { remote_ip: 'flow' } });
      await advance(1);
      assert.equal(vswitch.baseTunnels.at(-1), TUNNEL, 'used again');
      assert.equal(loop.status().tunnel?.portProblem, undefined);
      assert.deepEqual(vswitch.peers.get(GROUP), [PEER2], 'the bucket toward the peer is back');
      await advance(REFRESH_MS * 2);
      assert.ok(vswitch.sentToPeers.length > sentBefore, 'the peers hear from this node again');
    } finally {
      const stopping = loop.stop({ save: false });
      await advance(2_000);
      await stopping;
    }
  });
});
