/**
 * The daemon's control loop (MulticastController), the real one, on the shared fakes of
 * test/fakes/: a switch, a port watch, a router, a clock with timers and a state store
 * in memory. No root, no OVS, no network namespace; time moves only when a test says so.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import type { BridgeLockPort } from '../../src/controllers/daemon/loop/ports.js';
import type { SavedState } from '../../src/controllers/daemon/state/state-format.js';
import { UNKNOWN_HOST } from '../../src/domain/membership/membership-table.js';
import { McastError } from '../../src/errors.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeRouter } from '../fakes/fake-router.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { decodeQuery, v1Report, v2GeneralQuery, v2Leave, v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';
import { groupAddress, hostAddress, sourceAddress, type HostAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';

const GROUP = groupAddress('239.1.1.1');
const GATEWAY = 1;
/** Robustness 2, Query Interval 125 s, Query Response Interval 10 s: GMI 260 s. */
const GMI_MS = 260_000;
/** Robustness 2 × Last Member Query Interval 1 s. */
const LMQT_MS = 2_000;

interface LoopSetup {
  config?: Partial<DaemonConfig>;
  /** Before the loop starts: what OVS and the state directory hold from an earlier run. */
  prepare?: (fakes: { vswitch: FakeSwitch; store: MemoryStateStore; podDirectory: FakePodDirectory }) => void;
  router?: boolean;
  bridgeLock?: BridgeLockPort;
}

/** The loop started on fresh fakes: the gateway on port 1, pods p1..p3 on ports 2..4, eth1 (no pod) on 9. */
async function startLoop(setup: LoopSetup = {}) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('p1', 2, 'shop/web')
    .addPort('p2', 3, 'shop/db');
  podDirectory.addPort('p3', 4, 'cache').addPort('eth1', 9);
  const router = setup.router === true ? new FakeRouter() : undefined;
  const store = new MemoryStateStore();
  const logger = new RecordingLogger();
  const fatal: McastError[] = [];
  setup.prepare?.({ vswitch, store, podDirectory });
  const loop = new MulticastController({
    config: testDaemonConfig(setup.config),
    logger,
    vswitch,
    podDirectory,
    ...(router === undefined ? {} : { router }),
    ...(setup.bridgeLock === undefined ? {} : { bridgeLock: setup.bridgeLock }),
    host: { interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined) },
    clock,
    stateStore: store,
    onFatal: (error) => fatal.push(error),
    pid: 4242,
  });
  const events: DaemonEvent[] = [];
  loop.subscribe((event) => events.push(event));
  await loop.start();
  await settle();
  const stop = async () => {
    const stopping = loop.stop();
    clock.advance(2_000); // the longest stop() waits for syncs
    await stopping;
  };
  /** A frame from `ofport`, and what it set off. */
  const packetIn = async (frame: Uint8Array, ofport: number) => {
    vswitch.packetIn(frame, ofport);
    await settle();
  };
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  const queriesAbout = (group: string) =>
    vswitch.sent.flatMap((sent) => (decodeQuery(sent.frame)?.group === group ? [sent.ports] : []));
  return {
    loop,
    clock,
    vswitch,
    podDirectory,
    router,
    store,
    logger,
    events,
    fatal,
    stop,
    packetIn,
    advance,
    queriesAbout,
  };
}

const ofEvents = <T extends DaemonEvent['type']>(events: DaemonEvent[], type: T) =>
  events.filter((event): event is Extract<DaemonEvent, { type: T }> => event.type === type);

describe('daemon loop: joins and leaves', () => {
  it('a join: the group and its flow go to the member and the gateway, the kernel is told', async () => {
    const t = await startLoop({ router: true });
    assert.deepEqual(t.vswitch.baseFlows, [GATEWAY], 'base flows at start, with the gateway');
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.deepEqual(t.vswitch.applied, [{ group: GROUP, ports: [GATEWAY, 2], outcome: 'added' }]);
    assert.deepEqual(t.router!.localMembers, [{ group: GROUP, present: true }]);
    assert.deepEqual(
      ofEvents(t.events, 'join').map((e) => [e.group, e.port.name, e.host]),
      [[GROUP, 'p1', '10.1.0.2']],
    );
    const sync = ofEvents(t.events, 'sync').at(-1);
    assert.equal(sync?.ok, true);
    assert.equal(sync.sentMs, 0, 'written as soon as it was asked for (the clock stood still)');
    assert.equal(sync.clockMs, t.clock.monotonicMs(), 'timed on the monotonic clock');
    assert.equal(ofEvents(t.events, 'igmp').at(-1)?.clockMs, t.clock.monotonicMs());
    const [view] = t.loop.groups();
    assert.equal(view!.synced, true);
    assert.deepEqual(
      view!.members.map((m) => [m.port.pod, m.host, m.compatibility]),
      [['shop/web', '10.1.0.2', 2]],
    );
    assert.equal(t.loop.status().counters.igmpMessages.v2_report, 1);
    await t.stop();
    assert.equal(t.vswitch.closed && t.podDirectory.closed && t.router!.closed, true, 'stop closes every port');
  });

  it("the status gives the node's group limit and when the state written last was taken", async () => {
    const t = await startLoop({ config: { maxGroups: 321 } });
    assert.equal(t.loop.status().maxGroups, 321);
    const atStart = t.loop.status().stateSavedAt;
    assert.equal(atStart, new Date(t.store.state!.savedAt).toISOString(), 'the save at start');
    await t.advance(5_000);
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.advance(2_000);
    const after = t.loop.status().stateSavedAt;
    assert.equal(after, new Date(t.store.state!.savedAt).toISOString());
    assert.ok(Date.parse(after!) > Date.parse(atStart!), `${after} after ${atStart}`);
    await t.stop();
  });

  it('a second member on another port is added to the group', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.packetIn(v3Report('10.1.0.3', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), 3);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2, 3]);
    assert.deepEqual(
      t.vswitch.applied.map((a) => a.outcome),
      ['added', 'updated'],
    );
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    assert.equal(t.vswitch.applied.length, 2, 'a repeated report changes nothing');
    await t.stop();
  });

  it('a leave with fast leave removes the port at once', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.packetIn(v2Leave('10.1.0.2', GROUP), 2);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    assert.equal(t.vswitch.applied.at(-1)?.outcome, 'removed');
    assert.deepEqual(
      ofEvents(t.events, 'leave').map((e) => e.reason),
      ['fast-leave'],
    );
    assert.deepEqual(t.queriesAbout(GROUP), [], 'nobody asked');
    await t.stop();
  });

  it('a leave without fast leave: group-specific queries to the port, removal after the Last Member Query Time', async () => {
    const t = await startLoop({ config: { fastLeave: false } });
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.packetIn(v2Leave('10.1.0.2', GROUP), 2);
    assert.deepEqual(t.queriesAbout(GROUP), [[2]], 'the first query at once, to that port only');
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2], 'still forwarded while asked');
    await t.advance(1_000);
    assert.deepEqual(t.queriesAbout(GROUP), [[2], [2]], 'Robustness queries, LMQI apart');
    await t.advance(LMQT_MS - 1_000 - 1);
    assert.equal(t.vswitch.groups.has(GROUP), true, 'not before the Last Member Query Time');
    await t.advance(1);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    assert.deepEqual(
      ofEvents(t.events, 'leave').map((e) => e.reason),
      ['no-answer'],
    );
    await t.stop();
  });

  it('a member nobody hears from expires after the Group Membership Interval', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.advance(GMI_MS - 1);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    await t.advance(1);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    assert.deepEqual(
      ofEvents(t.events, 'leave').map((e) => e.reason),
      ['expired'],
    );
    assert.ok(t.store.saves >= 2, 'the expiry is saved');
    await t.stop();
  });

  it('v1 and v2 hosts: a v1 host on the port makes leaves and v3 blocks not count (RFC 3376 §7.3.2)', async () => {
    const t = await startLoop();
    await t.packetIn(v1Report('10.1.0.2', GROUP), 2);
    assert.equal(t.loop.groups()[0]!.members[0]!.compatibility, 1);
    await t.packetIn(v2Leave('10.1.0.2', GROUP), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2], 'a v2 leave is ignored in v1 mode');
    await t.packetIn(v2Report('10.1.0.3', GROUP), 3);
    await t.packetIn(
      v3Report('10.1.0.3', [{ type: 'BLOCK_OLD_SOURCES', group: GROUP, sources: [sourceAddress('10.9.9.9')] }]),
      3,
    );
    const members = t.loop.groups()[0]!.members;
    assert.deepEqual(
      members.map((m) => [m.port.ofport, m.compatibility, m.mode]),
      [
        [2, 1, 'exclude'],
        [3, 2, 'exclude'],
      ],
      'v2 mode: the BLOCK is ignored',
    );
    await t.packetIn(v2Leave('10.1.0.3', GROUP), 3);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2], 'a v2 leave counts in v2 mode');
    await t.stop();
  });

  it('a deleted pod port leaves every group at once', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.packetIn(v2Report('10.1.0.2', '239.2.2.2'), 2);
    await t.packetIn(v2Report('10.1.0.3', GROUP), 3);
    t.podDirectory.removePort('p1');
    await settle();
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 3]);
    assert.equal(t.vswitch.groups.has(groupAddress('239.2.2.2')), false);
    assert.deepEqual(
      ofEvents(t.events, 'leave').map((e) => [e.group, e.reason]),
      [
        [GROUP, 'port-removed'],
        ['239.2.2.2', 'port-removed'],
      ],
    );
    assert.equal(t.loop.status().podPorts, 2);
    await t.stop();
  });

  it('IGMP from a port that is no pod is counted and ignored', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.9.0.9', GROUP), 9);
    await t.packetIn(v2GeneralQuery('10.9.0.1'), 9);
    assert.equal(t.loop.status().counters.ignoredNonPod, 2);
    assert.equal(t.loop.status().counters.packetIns, 2);
    assert.deepEqual(t.loop.groups(), []);
    assert.deepEqual(t.vswitch.applied, []);
    await t.stop();
  });
});

describe('daemon loop: the switch', () => {
  it('a failed sync is retried with backoff, then succeeds', async () => {
    const t = await startLoop();
    t.vswitch.failNextSyncs(2);
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    assert.deepEqual(
      t.loop.groups().map((g) => [g.synced, g.error]),
      [[false, 'OVS refused 2 of 2 changes for group 239.1.1.1: OFPGMFC_GROUP_EXISTS']],
    );
    assert.deepEqual(
      t.logger.find('sync failed; retrying').map((line) => line.fields.retryInMs),
      [500],
    );
    await t.advance(499);
    assert.equal(ofEvents(t.events, 'sync').length, 1, 'no retry before the backoff');
    await t.advance(1);
    assert.deepEqual(
      t.logger.find('sync failed; retrying').map((line) => line.fields.retryInMs),
      [500, 1_000],
      'the backoff doubles',
    );
    await t.advance(1_000);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.deepEqual(
      ofEvents(t.events, 'sync').map((e) => e.ok),
      [false, false, true],
    );
    assert.equal(ofEvents(t.events, 'sync').at(-1)!.latencyMs, 1_500, 'the latency counts the retries');
    assert.deepEqual(
      t.loop.groups().map((g) => [g.synced, g.error]),
      [[true, undefined]],
    );
    assert.equal(t.loop.status().counters.syncErrors, 2);
    await t.stop();
  });

  it('ovs-vswitchd restarted (reconnect): the base flows and every group are replayed', async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    await t.packetIn(v2Report('10.1.0.3', '239.2.2.2'), 3);
    t.vswitch.restartVswitchd();
    await settle();
    assert.deepEqual(t.vswitch.baseFlows, [GATEWAY, GATEWAY]);
    assert.deepEqual(Object.fromEntries(t.vswitch.groups), { [GROUP]: [GATEWAY, 2], '239.2.2.2': [GATEWAY, 3] });
    assert.deepEqual(
      ofEvents(t.events, 'replay').map((e) => [e.what, e.groups]),
      [['openflow', 2]],
    );
    assert.equal(t.loop.status().counters.replays, 1);
    assert.equal(t.logger.find('OpenFlow connection lost; reconnecting').length, 1);
    await t.stop();
  });

  it('a group installed statically is left alone', async () => {
    const t = await startLoop({ prepare: ({ vswitch }) => vswitch.staticGroups.set(groupAddress('239.3.3.3'), [9]) });
    assert.deepEqual(t.vswitch.applied, [], 'not synced at start');
    await t.packetIn(v2Report('10.1.0.2', '239.3.3.3'), 2);
    assert.deepEqual(t.vswitch.staticGroups.get(groupAddress('239.3.3.3')), [9]);
    assert.deepEqual(t.vswitch.applied, []);
    assert.match(t.loop.groups()[0]!.error ?? '', /installed statically/);
    await t.stop();
  });

  it('OVSDB reconnected: the ports are resynced, the bridge lock taken again; another daemon holding it stops this one', async () => {
    const answers = [true, false];
    const t = await startLoop({
      bridgeLock: { reacquire: async () => answers.shift()!, release: async () => undefined },
    });
    t.podDirectory.reconnect();
    await settle();
    assert.equal(t.fatal.length, 0, 'the lock is held again');
    assert.deepEqual(
      ofEvents(t.events, 'replay').map((e) => e.what),
      ['ovsdb'],
    );
    assert.equal(t.logger.find('OVSDB reconnected; ports resynced').length, 1);
    t.podDirectory.reconnect();
    await settle();
    const busy = 'another mcastctl daemon took bridge br-test while OVSDB was unreachable';
    assert.deepEqual(
      t.fatal.map((error) => [error.code, error.message]),
      [['busy', busy]],
    );
    await t.stop();
  });
});

describe('daemon loop: restarts', () => {
  const REPORTED_V2 = { mode: 'exclude' as const, sources: [], compatibility: 2 as const };
  const savedState = (
    members: Array<{ portName: string; pod?: string; host: HostAddress }>,
    savedAt: number,
  ): SavedState => ({
    version: 2,
    savedAt,
    bridge: 'br-test',
    groups: [
      {
        group: GROUP,
        members: members.map((member) => ({ ...member, ...REPORTED_V2, lastReportAt: savedAt - 5_000 })),
      },
    ],
  });

  it('with saved state: the members are back and nothing is written to OVS for groups already right', async () => {
    const t = await startLoop({
      prepare: ({ vswitch, store }) => {
        vswitch.preinstall(GROUP, [GATEWAY, 2, 3]);
        const members = [
          { portName: 'p1', pod: 'shop/web', host: hostAddress('10.1.0.2') },
          { portName: 'p2', pod: 'shop/db', host: hostAddress('10.1.0.3') },
        ];
        store.state = savedState(members, Date.UTC(2026, 0, 1) - 1_000);
      },
    });
    assert.deepEqual(t.vswitch.applied, [], 'nothing written');
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2, 3]);
    const [view] = t.loop.groups();
    assert.deepEqual(
      view!.members.map((m) => [m.host, m.compatibility]),
      [
        ['10.1.0.2', 2],
        ['10.1.0.3', 2],
      ],
    );
    assert.equal(view!.synced, true);
    assert.equal(t.logger.find('state restored')[0]?.fields.members, 2);
    // Restored report times count: the members expire a GMI after their last report, not after the restart.
    await t.advance(GMI_MS - 6_000 - 1);
    assert.equal(t.vswitch.groups.has(GROUP), true);
    await t.advance(1);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    await t.stop();
  });

  it('a saved member whose port now belongs to another pod is not restored', async () => {
    const t = await startLoop({
      prepare: ({ vswitch, store }) => {
        vswitch.preinstall(GROUP, [GATEWAY, 2]);
        store.state = savedState(
          [{ portName: 'p1', pod: 'shop/old', host: hostAddress('10.1.0.2') }],
          Date.UTC(2026, 0, 1),
        );
      },
    });
    assert.equal(t.logger.find('state restored')[0]?.fields.skippedMembersOfGonePods, 1);
    assert.deepEqual(
      t.loop.groups()[0]!.members.map((m) => m.host),
      [UNKNOWN_HOST],
      'a placeholder keeps the port until the queries are answered',
    );
    await t.stop();
  });

  it('without state: the ports found in OVS stay, as placeholders, until the startup queries are answered', async () => {
    const t = await startLoop({ prepare: ({ vswitch }) => vswitch.preinstall(GROUP, [GATEWAY, 2, 3]) });
    assert.deepEqual(t.vswitch.applied, [], 'forwarding kept as it was');
    assert.deepEqual(
      t.loop.groups()[0]!.members.map((m) => [m.port.ofport, m.host]),
      [
        [2, UNKNOWN_HOST],
        [3, UNKNOWN_HOST],
      ],
    );
    assert.equal(t.store.state?.groups[0]?.members.length, 0, 'placeholders are not saved');
    assert.ok(t.queriesAbout('0.0.0.0').length > 0, 'the startup general query went out');
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    // (Robustness - 1) × a quarter Query Interval + the Query Response Interval + 2 s.
    const graceMs = 31_250 + 10_000 + 2_000;
    await t.advance(graceMs - 1);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2, 3]);
    await t.advance(1);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2], 'the port nobody answered for is removed');
    assert.deepEqual(
      t.loop.groups()[0]!.members.map((m) => m.host),
      ['10.1.0.2'],
    );
    await t.stop();
  });
});

describe('daemon loop: mass expiry', () => {
  it('ends a burst of groups that fall due together 128 a turn, a packet-in taken between two turns', async () => {
    const t = await startLoop();
    const groups = Array.from({ length: 300 }, (_, i) => `239.9.${i >> 8}.${i & 255}`);
    for (let first = 0; first < groups.length; first += 100) {
      const records = groups.slice(first, first + 100).map((group) => ({ type: 'MODE_IS_EXCLUDE' as const, group }));
      await t.packetIn(v3Report('10.1.0.2', records), 2);
    }
    assert.equal(t.loop.status().groups, 300);
    await t.advance(GMI_MS);
    assert.equal(t.loop.status().groups, 300 - 128, 'one turn ends 128 of the groups due');
    await t.packetIn(v2Report('10.1.0.3', GROUP), 3);
    assert.ok(t.vswitch.groups.has(GROUP), "the quiet pod's join is taken before the rest expire");
    await t.advance(1);
    assert.equal(t.loop.status().groups, 1 + 300 - 256);
    await t.advance(1);
    assert.equal(t.loop.status().groups, 1, 'the rest a millisecond later; the new join stays');
    await t.stop();
  });
});

describe('daemon loop: kernel routes', () => {
  it('a NOCACHE upcall turned into a route is logged and published; the router asks the loop about members', async () => {
    const t = await startLoop({ router: true });
    assert.equal(t.router!.hasLocalMembers(GROUP), false);
    await t.packetIn(v2Report('10.1.0.2', GROUP), 2);
    assert.equal(t.router!.hasLocalMembers(GROUP), true);
    t.router!.upcall({ source: sourceAddress('192.0.2.7'), group: GROUP, iif: 'eth0', oifs: ['gw0'] });
    await settle(); // events reach the subscribers after the turn
    const route = { action: 'add', source: sourceAddress('192.0.2.7'), group: GROUP, iif: 'eth0', oifs: ['gw0'] };
    assert.deepEqual(
      t.logger.find('route added').map((line) => line.fields),
      [route],
    );
    assert.deepEqual(
      ofEvents(t.events, 'route').map((e) => [e.action, e.source, e.group]),
      [['add', '192.0.2.7', GROUP]],
    );
    assert.equal(t.loop.status().routes, 1);
    assert.deepEqual(
      (await t.loop.routes()).map((route) => route.source),
      ['192.0.2.7'],
    );
    await t.stop();
  });

  it('idle routes are swept a quarter of the idle timeout apart', async () => {
    const t = await startLoop({ router: true });
    t.router!.upcall({ source: sourceAddress('192.0.2.7'), group: GROUP, iif: 'eth0', oifs: [] });
    t.router!.idle.add(`192.0.2.7,${GROUP}`);
    await t.advance(4_999);
    assert.equal(t.router!.sweeps, 0);
    await t.advance(1);
    assert.equal(t.router!.sweeps, 1);
    assert.equal(t.logger.find('idle route removed').length, 1);
    assert.deepEqual(
      ofEvents(t.events, 'route').map((e) => e.action),
      ['add', 'remove'],
    );
    await t.advance(5_000);
    assert.equal(t.router!.sweeps, 2, 'the sweep is armed again');
    await t.stop();
  });

  it('a failed routing socket stops the daemon', async () => {
    const t = await startLoop({ router: true });
    t.router!.fail(new McastError('io', 'recvmsg: ENOBUFS'));
    assert.deepEqual(
      t.fatal.map((error) => error.code),
      ['io'],
    );
    assert.match(t.fatal[0]!.message, /kernel multicast routing failed: recvmsg: ENOBUFS/);
    await t.stop();
  });
});
