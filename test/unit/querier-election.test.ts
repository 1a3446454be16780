/**
 * The querier election (RFC 3376 §6.6.2, RFC 3810 §7.6.2): QuerierElection on an injected
 * clock, then the daemon loop on fakes, whose general queries stop on a pod port while a
 * lower-addressed querier queries there and come back after the Other Querier Present
 * Interval.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { otherQuerierPresentMs, QuerierElection } from '../../src/domain/membership/querier-election.js';
import { groupAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { decodeQuery, v2GeneralQuery, v2Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

describe('QuerierElection', () => {
  const at = (start = 0) => {
    let now = start;
    return { clock: () => now, advance: (ms: number) => void (now += ms) };
  };
  const heard = (election: QuerierElection, address: string, ours = '10.1.0.1', port = 2) =>
    election.heard({ port, protocol: 'igmp', address, ours, presentMs: 1000 });

  it('the lowest address wins: a lower one silences the port, a higher one or our own does not', () => {
    const time = at();
    const election = new QuerierElection('auto', time.clock);
    assert.equal(heard(election, '10.1.0.2'), false);
    assert.equal(heard(election, '10.1.0.1'), false);
    assert.equal(election.queries(2, 'igmp'), true);
    assert.equal(heard(election, '10.0.0.9'), true);
    assert.equal(election.queries(2, 'igmp'), false);
    assert.equal(election.queries(3, 'igmp'), true, 'other ports are not touched');
    assert.equal(election.queries(2, 'mld'), true, 'nor the other protocol');
    assert.deepEqual(election.present(), [{ port: 2, protocol: 'igmp', address: '10.0.0.9', untilMs: 1000 }]);
  });

  it('the other querier is present for the interval, each query starts it again, then we query again', () => {
    const time = at();
    const election = new QuerierElection('auto', time.clock);
    heard(election, '10.0.0.9');
    time.advance(900);
    heard(election, '10.0.0.9');
    time.advance(900);
    assert.equal(election.queries(2, 'igmp'), false, 'the second query started the interval again');
    time.advance(100);
    assert.equal(election.queries(2, 'igmp'), true);
    assert.deepEqual(election.present(), []);
  });

  it('0.0.0.0 takes part in no election: ours yields to any querier with an address, theirs elects nobody', () => {
    const election = new QuerierElection('auto', at().clock);
    assert.equal(heard(election, '0.0.0.0'), false);
    assert.equal(heard(election, '10.9.9.9', '0.0.0.0'), true);
    const mld = election.heard({
      port: 4,
      protocol: 'mld',
      address: 'fe80::1',
      ours: 'fe80::ff:fe00:1',
      presentMs: 10,
    });
    assert.equal(mld, true, 'MLD: fe80::1 is below fe80::ff:fe00:1');
    assert.equal(election.heard({ port: 5, protocol: 'mld', address: '::', ours: 'fe80::2', presentMs: 10 }), false);
    // A global source is below fe80:: but no listener heeds such an MLD query: it elects nobody.
    assert.equal(
      election.heard({ port: 6, protocol: 'mld', address: '2001:db8::1', ours: 'fe80::2', presentMs: 10 }),
      false,
    );
  });

  it('always and never', () => {
    const always = new QuerierElection('always', at().clock);
    heard(always, '10.0.0.9');
    assert.equal(always.queries(2, 'igmp'), true);
    const never = new QuerierElection('never', at().clock);
    assert.equal(never.queries(2, 'igmp'), false);
  });

  it('the Other Querier Present Interval is Robustness × Query Interval + half the Query Response Interval', () => {
    assert.equal(
      otherQuerierPresentMs({ robustness: 2, queryIntervalMs: 125_000, queryResponseIntervalMs: 10_000 }),
      255_000,
    );
  });
});

describe('the daemon loop with another querier on a pod port', () => {
  async function startLoop(config: Partial<DaemonConfig>) {
    const clock = new FakeClock();
    const vswitch = new FakeSwitch();
    const podDirectory = new FakePodDirectory()
      .addPort('gw0', 1)
      .addPort('p1', 2, 'shop/web')
      .addPort('p2', 3, 'shop/db');
    const logger = new RecordingLogger();
    const loop = new MulticastController({
      config: testDaemonConfig({ queryIntervalMs: 10_000, queryResponseIntervalMs: 2_000, ...config }),
      logger,
      vswitch,
      podDirectory,
      host: {
        interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined),
      },
      clock,
      stateStore: new MemoryStateStore(),
      pid: 4242,
    });
    await loop.start();
    await settle();
    const advance = async (ms: number) => {
      clock.advance(ms);
      await settle();
    };
    /** The ports each IGMP general query sent from now on went out of. */
    const generalQueryPorts = () =>
      vswitch.sent.flatMap((sent) => (decodeQuery(sent.frame)?.group === '0.0.0.0' ? [[...sent.ports].sort()] : []));
    return {
      loop,
      vswitch,
      logger,
      advance,
      generalQueryPorts,
      packetIn: async (frame: Uint8Array, port: number) => {
        vswitch.packetIn(frame, port);
        await settle();
      },
    };
  }

  it('auto: a lower-addressed querier on p1 silences our general queries there until the interval passes; membership goes on', async () => {
    const t = await startLoop({});
    await t.advance(10_000); // past the startup queries
    t.vswitch.sent.length = 0;
    await t.packetIn(v2GeneralQuery('10.0.0.9'), 2);
    assert.ok(t.logger.lines.some((line) => line.message.startsWith('another querier present')));
    await t.advance(10_000);
    assert.deepEqual(t.generalQueryPorts().at(-1), [3], 'p2 only: p1 has another querier');
    assert.deepEqual(
      t.loop.status().querier?.otherQueriers.map((other) => [other.port.name, other.address, other.protocol]),
      [['p1', '10.0.0.9', 'igmp']],
    );
    // Snooping goes on: p1's report still makes it a member.
    await t.packetIn(v2Report('10.1.0.2', groupAddress('239.1.1.1')), 2);
    assert.deepEqual(t.vswitch.groups.get(groupAddress('239.1.1.1')), [1, 2]);
    // The interval (2 × 10 s + 1 s) passes without another query: p1 is queried again.
    t.vswitch.sent.length = 0;
    await t.advance(20_000);
    assert.deepEqual(t.generalQueryPorts().at(-1), [2, 3]);
    assert.deepEqual(t.loop.status().querier?.otherQueriers, []);
    await t.loop.stop();
  });

  it('always: the other querier changes nothing; never: no general query at all', async () => {
    const always = await startLoop({ querierElection: 'always' });
    await always.advance(10_000);
    await always.packetIn(v2GeneralQuery('10.0.0.9'), 2);
    always.vswitch.sent.length = 0;
    await always.advance(10_000);
    assert.deepEqual(always.generalQueryPorts().at(-1), [2, 3]);
    await always.loop.stop();
    const never = await startLoop({ querierElection: 'never' });
    await never.advance(30_000);
    assert.deepEqual(never.generalQueryPorts(), []);
    assert.equal(never.loop.status().querier?.election, 'never');
    await never.loop.stop();
  });
});
