/**
 * The daemon, dual-stack: MLD snooped into the same membership as IGMP (the snooper's
 * calls, the loop on the shared fakes of test/fakes/), its guard (hop limit, link-local
 * source, the IPv6 SSM range), the querier's MLD queries, and the IPv4-only paths
 * (upstream joins, the kernel router, the announcer to peers) that an IPv6 group must
 * never reach.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { snoopFrame } from '../../src/controllers/daemon/loop/igmp-snooper.js';
import { counterLabel } from '../../src/controllers/daemon/loop/igmp-intake.js';
import { Querier } from '../../src/controllers/daemon/loop/querier.js';
import { eui64LinkLocal } from '../../src/wire/ipv6-address.js';
import { parseMldQueryVersions } from '../../src/controllers/daemon/config/setting-values.js';
import { isIPv6SsmGroup, refusalOf, UNLIMITED } from '../../src/domain/membership/membership-limits.js';
import { ANY_SOURCE, type SourceFilter } from '../../src/domain/membership/source-filter.js';
import { PeerAnnouncer } from '../../src/domain/peers/announcer.js';
import { KernelRouter } from '../../src/adapters/kernel-router.js';
import { UpstreamMemberships } from '../../src/adapters/upstream-memberships.js';
import { McastError } from '../../src/errors.js';
import { decodeFrame, ipLocator, type MldFrameEvent } from '../../src/packet/frame-decoder.js';
import * as mld from '../../src/packet/mld/index.js';
import type { MldMessage, MldRecord } from '../../src/packet/mld/message.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import { FALLBACK_SOURCE_MAC } from '../../src/packet/ethernet.js';
import { MLD_ROUTER_ALERT } from '../../src/packet/ipv6/header.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { groupAddress, hostAddress, sourceAddress } from '../../src/wire/ip-address.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeRouter } from '../fakes/fake-router.js';
import { FakeRoutingKernel } from '../fakes/fake-routing-kernel.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { decodeQuery, v2Report as igmpV2Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';

const meta = { frame: 1, ts: 0 };
/** A site-scope group, outside the SSM range. */
const GROUP = groupAddress('ff05::1:3');
const SSM_GROUP = groupAddress('ff3e::8000:1');
const HOST = 'fe80::a8bb:ccff:fedd:ee02';
const GATEWAY = 1;
const GATEWAY_MAC = '02:00:00:00:00:01';

/** An MLD frame from `src` (hop limit 1, Router Alert, as a listener sends it). */
function mldFrameOf(message: MldMessage, src: string, dst: string, options: { hopLimit?: number } = {}): Uint8Array {
  const frame = mldFrame.encodeFrame({ message, src, dst });
  // The hop limit is octet 7 of the IPv6 header, after the 14-octet Ethernet header; no checksum covers it.
  if (options.hopLimit !== undefined) frame[14 + 7] = options.hopLimit;
  return frame;
}
const mldV2Report = (
  src: string,
  records: Array<Omit<MldRecord, 'sources'> & { sources?: string[] }>,
  options?: { hopLimit?: number },
) =>
  mldFrameOf(
    { kind: 'report', version: 2, records: records.map((record) => ({ ...record, sources: record.sources ?? [] })) },
    src,
    'ff02::16',
    options,
  );
const v1Report = (src: string, group: string) => mldFrameOf({ kind: 'report', version: 1, group }, src, group);
const v1Done = (src: string, group: string) => mldFrameOf({ kind: 'leave', version: 1, group }, src, 'ff02::2');

/** An MLD frame the daemon sent, decoded. */
function decodeMld(frame: Uint8Array): MldFrameEvent | undefined {
  const event = decodeFrame(ipLocator(1), frame, meta);
  return event?.kind === 'mld' ? event : undefined;
}

describe('snoopFrame: MLD', () => {
  it('an MLDv2 report gives one record call per record, as IGMPv3; link-scope groups and :: sources left out', () => {
    const snooped = snoopFrame(
      mldV2Report(HOST, [
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP },
        { type: 'MODE_IS_INCLUDE', group: 'ff02::fb', sources: ['2001:db8::1'] },
        { type: 'ALLOW_NEW_SOURCES', group: 'ff0e::1234', sources: ['2001:DB8::0:7', '::'] },
      ]),
      meta,
    )!;
    assert.equal(snooped.protocol, 'mld');
    assert.equal(snooped.type, 'report');
    assert.equal(snooped.version, 2);
    assert.deepEqual(snooped.calls, [
      { op: 'record', host: hostAddress(HOST), record: { type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP, sources: [] } },
      {
        op: 'record',
        host: hostAddress(HOST),
        record: {
          type: 'ALLOW_NEW_SOURCES',
          group: groupAddress('ff0e::1234'),
          sources: [sourceAddress('2001:db8::7')],
        },
      },
    ]);
  });

  it('an MLDv1 report is an IGMPv2-equivalent report, a Done a leave; link-scope groups ignored', () => {
    const report = snoopFrame(v1Report(HOST, GROUP), meta)!;
    assert.deepEqual([report.protocol, report.type, report.version], ['mld', 'report', 1]);
    assert.deepEqual(report.calls, [{ op: 'report', group: GROUP, host: hostAddress(HOST), version: 2 }]);
    const done = snoopFrame(v1Done(HOST, GROUP), meta)!;
    assert.deepEqual([done.type, done.version], ['leave', 1]);
    assert.deepEqual(done.calls, [{ op: 'leave', group: GROUP, host: hostAddress(HOST) }]);
    assert.deepEqual(
      snoopFrame(v1Report(HOST, 'ff02::1:ff00:1'), meta)!.calls,
      [],
      'a solicited-node group is link scope',
    );
    assert.deepEqual(snoopFrame(v1Report(HOST, 'ff12::1234'), meta)!.calls, [], 'link scope with flags');
  });

  it('a report from :: (a listener during DAD) changes no membership', () => {
    assert.deepEqual(snoopFrame(v1Report('::', GROUP), meta)!.calls, []);
    assert.deepEqual(
      snoopFrame(mldV2Report('::', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), meta)!.calls,
      [],
    );
  });

  it('queries are counted only; malformed MLD is malformed, of protocol mld', () => {
    const query = snoopFrame(
      mldFrameOf({ kind: 'query', version: 1, group: '::', maxRespDelayMs: 1000 }, 'fe80::9', 'ff02::1'),
      meta,
    )!;
    assert.deepEqual([query.protocol, query.type, query.version, query.calls], ['mld', 'query', 1, []]);
    const broken = Buffer.from(v1Report(HOST, GROUP));
    broken[broken.length - 1] = broken[broken.length - 1]! ^ 0xff;
    const malformed = snoopFrame(broken, meta)!;
    assert.deepEqual([malformed.protocol, malformed.type, malformed.calls], ['mld', 'malformed', []]);
  });

  it("status's counters tell the families apart; IGMP's keep their labels", () => {
    assert.equal(counterLabel('igmp', 'report', 2), 'v2_report');
    assert.equal(counterLabel('igmp', 'malformed', 0), 'malformed');
    assert.equal(counterLabel('mld', 'report', 1), 'mld_v1_report');
    assert.equal(counterLabel('mld', 'malformed', 0), 'mld_malformed');
  });
});

interface LoopSetup {
  config?: Partial<DaemonConfig>;
  router?: boolean;
}

/** The loop on fresh fakes: the gateway on port 1, pods p1 and p2 on ports 2 and 3, eth1 (no pod) on 9. */
async function startLoop(setup: LoopSetup = {}) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('p1', 2, 'shop/web')
    .addPort('p2', 3, 'shop/db')
    .addPort('eth1', 9);
  const router = setup.router === true ? new FakeRouter() : undefined;
  const loop = new MulticastController({
    config: testDaemonConfig(setup.config),
    logger: new RecordingLogger(),
    vswitch,
    podDirectory,
    ...(router === undefined ? {} : { router }),
    host: { interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: GATEWAY_MAC } : undefined) },
    clock,
    stateStore: new MemoryStateStore(),
    pid: 4242,
  });
  const events: DaemonEvent[] = [];
  loop.subscribe((event) => events.push(event));
  await loop.start();
  await settle();
  const packetIn = async (frame: Uint8Array, ofport: number) => {
    vswitch.packetIn(frame, ofport);
    await settle();
  };
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  const stop = async () => {
    const stopping = loop.stop();
    clock.advance(2_000);
    await stopping;
  };
  const mldQueriesAbout = (group: string) =>
    vswitch.sent.flatMap((sent) => {
      const event = decodeMld(sent.frame);
      return event?.message.kind === 'query' && event.message.group === group
        ? [{ ports: sent.ports, version: event.message.version }]
        : [];
    });
  const membersOf = (group: string) => loop.groups().find((view) => view.group === group)?.members ?? [];
  return { loop, vswitch, router, events, packetIn, advance, stop, mldQueriesAbout, membersOf };
}

describe('daemon loop: MLD', () => {
  it('an MLDv2 report makes the pod a member of the IPv6 group, as an IGMPv3 one does', async () => {
    const t = await startLoop();
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.deepEqual(
      t.membersOf(GROUP).map((member) => [member.port.name, member.host, member.compatibility]),
      [['p1', HOST, 3]],
    );
    assert.equal(t.loop.status().counters.igmpMessages.mld_v2_report, 1);
    const published = t.events.find((event) => event.type === 'igmp');
    assert.ok(published?.type === 'igmp' && published.record.protocol === 'mld', 'the event stream says MLD');
    await t.stop();
  });

  it('an MLDv1 report: a member in v1 compatibility (IGMPv2-equivalent); its Done is a fast leave', async () => {
    const t = await startLoop();
    await t.packetIn(v1Report(HOST, GROUP), 2);
    assert.deepEqual(
      t.membersOf(GROUP).map((member) => [member.port.name, member.compatibility]),
      [['p1', 2]],
    );
    // v1 compatibility: BLOCK is ignored (RFC 3810 §8.3.2), so the member stays.
    await t.packetIn(mldV2Report(HOST, [{ type: 'BLOCK_OLD_SOURCES', group: GROUP, sources: ['2001:db8::1'] }]), 2);
    assert.equal(t.membersOf(GROUP).length, 1);
    await t.packetIn(v1Done(HOST, GROUP), 2);
    assert.equal(t.vswitch.groups.has(GROUP), false, 'fast leave: the group is gone at once');
    assert.deepEqual(t.mldQueriesAbout(GROUP), [], 'nobody asked');
    await t.stop();
  });

  it('without fast leave, a Done makes MLDv1 last-member queries to the port (v1 host), MLDv2 for a v2 host', async () => {
    const t = await startLoop({ config: { fastLeave: false } });
    await t.packetIn(v1Report(HOST, GROUP), 2);
    await t.packetIn(v1Done(HOST, GROUP), 2);
    assert.deepEqual(
      t.mldQueriesAbout(GROUP),
      [{ ports: [2], version: 1 }],
      'the first query at once, to that port only',
    );
    const query = decodeMld(t.vswitch.sent.at(-1)!.frame)!;
    assert.equal(query.dst, GROUP, 'to the group');
    assert.ok(query.message.kind === 'query' && query.message.version === 1 && query.message.maxRespDelayMs === 1_000);
    await t.advance(1_000);
    assert.equal(t.mldQueriesAbout(GROUP).length, 2, 'Robustness queries, LMQI apart');
    await t.advance(1_000);
    assert.equal(t.vswitch.groups.has(GROUP), false, 'nobody answered: removed after the Last Member Query Time');

    const other = groupAddress('ff05::1:4');
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: other }]), 3);
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_INCLUDE_MODE', group: other }]), 3);
    assert.deepEqual(t.mldQueriesAbout(other), [{ ports: [3], version: 2 }]);
    assert.equal(decodeQuery(t.vswitch.sent.at(-1)!.frame), undefined, 'no IGMP query about an IPv6 group');
    await t.stop();
  });

  it('MLD from a source that is not link-local, or with a hop limit other than 1, is ignored and counted as off-link', async () => {
    const t = await startLoop();
    await t.packetIn(v1Report('2001:db8::5', GROUP), 2);
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }], { hopLimit: 2 }), 2);
    assert.equal(t.vswitch.groups.has(GROUP), false);
    assert.equal(t.loop.status().igmpRefused!.total['off-link'], 2);
    // Any link-local source of a pod port is its own: no spoof check against external_ids.
    await t.packetIn(v1Report('fe80::1234', GROUP), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.equal(t.loop.status().igmpRefused!.total.spoofed, 0);
    await t.stop();
  });

  it('a join of any source to an IPv6 SSM group (ff3x::/96) is refused as ssm; a join of named sources is not', async () => {
    const t = await startLoop();
    await t.packetIn(v1Report(HOST, SSM_GROUP), 2);
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: SSM_GROUP }]), 2);
    assert.equal(t.vswitch.groups.has(SSM_GROUP), false);
    assert.equal(t.loop.status().igmpRefused!.total.ssm, 2);
    await t.packetIn(mldV2Report(HOST, [{ type: 'ALLOW_NEW_SOURCES', group: SSM_GROUP, sources: ['2001:db8::1'] }]), 2);
    assert.deepEqual(
      t.membersOf(SSM_GROUP).map((member) => member.port.name),
      ['p1'],
    );
    await t.stop();
  });

  it('an IPv6 group is synced to the switch beside an IPv4 one, and the MLD general query goes with the IGMP one', async () => {
    const t = await startLoop({ router: true });
    const ipv4 = groupAddress('239.1.1.1');
    await t.packetIn(mldV2Report(HOST, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), 2);
    await t.packetIn(igmpV2Report('10.1.0.2', ipv4), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.deepEqual(t.vswitch.groups.get(ipv4), [GATEWAY, 2]);
    const general = t.mldQueriesAbout('::');
    assert.ok(general.length > 0 && general.every((query) => query.version === 2), 'startup MLDv2 general queries');
    assert.ok(
      t.vswitch.sent.some((sent) => decodeQuery(sent.frame)?.group === '0.0.0.0'),
      'and the IGMP ones',
    );
    await t.stop();
  });

  it('--mld-query-versions none: no MLD general query', async () => {
    const t = await startLoop({ config: { mldQueryVersions: [] } });
    assert.deepEqual(t.mldQueriesAbout('::'), []);
    assert.ok(t.vswitch.sent.some((sent) => decodeQuery(sent.frame)?.group === '0.0.0.0'));
    await t.stop();
  });
});

describe('Querier: MLD', () => {
  function querier(options: { mac?: string; mldVersions?: readonly (1 | 2)[] } = {}) {
    const clock = new FakeClock();
    const sent: Array<{ frame: Uint8Array; ports: readonly number[] }> = [];
    const q = new Querier({
      versions: [3],
      mldVersions: options.mldVersions ?? [2],
      queryIntervalMs: 125_000,
      queryResponseIntervalMs: 10_000,
      lastMemberQueryIntervalMs: 1_000,
      robustness: 2,
      source: () => (options.mac === undefined ? { address: '0.0.0.0' } : { address: '10.1.0.1', mac: options.mac }),
      ports: () => [2, 3],
      send: async (frame, ports) => {
        sent.push({ frame, ports });
        return ports.length;
      },
      onError: (error) => assert.fail(String(error)),
      timers: clock,
    });
    return { q, sent };
  }

  it('the link-local source is the modified EUI-64 of the MAC (RFC 4291 Appendix A)', () => {
    assert.equal(eui64LinkLocal('52:54:00:12:34:56'), 'fe80::5054:ff:fe12:3456');
    assert.equal(
      eui64LinkLocal(GATEWAY_MAC),
      'fe80::ff:fe00:1',
      'the universal/local bit inverted, and the zeros compressed',
    );
    assert.throws(() => eui64LinkLocal('not a mac'), RangeError);
  });

  it('an MLDv2 general query beside the IGMPv3 one: link-local source, ff02::1, hop limit 1, Router Alert, MRC in ms', async () => {
    const { q, sent } = querier({ mac: GATEWAY_MAC });
    await q.generalQueries();
    assert.equal(sent.length, 2);
    assert.equal(decodeFrame(ipLocator(1), sent[0]!.frame, meta)?.kind, 'igmp', 'the IGMP query first');
    const event = decodeMld(sent[1]!.frame)!;
    assert.deepEqual(sent[1]!.ports, [2, 3]);
    assert.equal(event.src, 'fe80::ff:fe00:1');
    assert.equal(event.dst, 'ff02::1');
    assert.equal(event.ip.hopLimit, 1);
    assert.deepEqual(event.ip.hopByHop, [MLD_ROUTER_ALERT]);
    assert.equal(
      Buffer.from(sent[1]!.frame.subarray(0, 6)).toString('hex'),
      '333300000001',
      'to the 33:33 MAC of ff02::1',
    );
    assert.equal(Buffer.from(sent[1]!.frame.subarray(6, 12)).toString('hex'), '020000000001', "from the gateway's MAC");
    const { message } = event;
    assert.ok(message.kind === 'query' && message.version === 2);
    assert.equal(message.group, '::');
    assert.equal(mld.maxRespTimeMs(message), 10_000);
    assert.equal(message.maxRespCode, 10_000, 'milliseconds, below the floating-point range');
    assert.equal(message.qrv, 2);
    assert.equal(mld.qqicSeconds(message), 125);
  });

  it('without a gateway MAC, from the fallback MAC and its link-local address, never ::; MLDv1 when configured', async () => {
    const { q, sent } = querier({ mldVersions: [1, 2] });
    await q.generalQueries();
    const events = sent.slice(1).map((entry) => decodeMld(entry.frame)!);
    assert.deepEqual(
      events.map((event) => (event.message.kind === 'query' ? event.message.version : 0)),
      [1, 2],
    );
    for (const event of events) assert.equal(event.src, eui64LinkLocal(FALLBACK_SOURCE_MAC));
    assert.ok(
      events[0]!.message.kind === 'query' &&
        events[0]!.message.version === 1 &&
        events[0]!.message.maxRespDelayMs === 10_000,
    );
  });

  it('MLDv2 group-and-source-specific queries to the group for an IPv6 group; none in IGMP', () => {
    const { q, sent } = querier({ mac: GATEWAY_MAC });
    q.groupQueries(GROUP, 3, 3, { sources: [sourceAddress('2001:db8::1')] });
    const event = decodeMld(sent[0]!.frame)!;
    assert.deepEqual(sent[0]!.ports, [3]);
    assert.equal(event.dst, GROUP);
    assert.ok(event.message.kind === 'query' && event.message.version === 2);
    assert.deepEqual(event.message.sources, ['2001:db8::1']);
    assert.equal(mld.maxRespTimeMs(event.message), 1_000);
    q.stop();
  });
});

describe('--mld-query-versions', () => {
  it('takes 1, 2 or both, ascending; empty or none: no MLD queries', () => {
    assert.deepEqual(parseMldQueryVersions('2,1'), [1, 2]);
    assert.deepEqual(parseMldQueryVersions([2]), [2]);
    assert.deepEqual(parseMldQueryVersions(''), []);
    assert.deepEqual(parseMldQueryVersions('none'), []);
    assert.deepEqual(parseMldQueryVersions([]), []);
    assert.throws(() => parseMldQueryVersions('3'), /not an MLD version/);
    assert.throws(() => parseMldQueryVersions('2,2'), /listed twice/);
  });
});

describe('membership limits: the IPv6 SSM range', () => {
  const limits = { ...UNLIMITED, ssmRange: [{ family: 'ipv4' as const, address: '232.0.0.0', length: 8 }] };
  const request = (group: string, filter: SourceFilter = ANY_SOURCE) => ({
    limits,
    group: groupAddress(group),
    port: 2,
    host: hostAddress(HOST),
    filter,
    members: undefined,
    groupCount: 0,
    portGroupCount: 0,
  });

  it('ff3x::/96 of any scope is SSM; other ff3x:: groups and other flags are not', () => {
    assert.deepEqual(
      ['ff3e::8000:1', 'ff35::1', 'ff33::1:2', 'ff3e:0:0:0:1::1', 'ff3e:40:2001:db8::1', 'ff1e::1', 'ff0e::1'].map(
        (text) => isIPv6SsmGroup(groupAddress(text)),
      ),
      [true, true, true, false, false, false, false],
    );
  });

  it('a join of any source to an IPv6 SSM group is refused like an IPv4 one; named sources are admitted; no range set: no check', () => {
    assert.deepEqual(refusalOf(request('ff3e::8000:1')), { reason: 'ssm' });
    assert.deepEqual(refusalOf(request('232.1.1.1')), { reason: 'ssm' });
    assert.equal(
      refusalOf(request('ff3e::8000:1', { mode: 'include', sources: new Set([sourceAddress('2001:db8::1')]) })),
      undefined,
    );
    assert.equal(refusalOf(request('ff0e::1')), undefined);
    assert.equal(refusalOf({ ...request('ff3e::8000:1'), limits: { ...UNLIMITED, ssmRange: [] } }), undefined);
  });
});

describe('IPv6 groups in the kernel router and upstream', () => {
  const SSM6 = groupAddress('ff3e::8000:1');
  const S6 = sourceAddress('2001:db8::1');

  /**
   * A router on the fake kernel; 'lo' stands for both the gateway and the uplink (a unit test has no other interface).
   */
  async function openRouter(kernel: FakeRoutingKernel, members: Set<string>) {
    return KernelRouter.open({
      kernel,
      gateway: 'lo',
      multicastInterfaces: ['lo'],
      idleTimeoutMs: 1_000,
      clock: () => 0,
      hasLocalMembers: (group) => members.has(group),
    });
  }

  it('upstream memberships hold an IPv6 group on the socket given, source-specific first', () => {
    const kernel = new FakeRoutingKernel('ipv6');
    const errors: unknown[] = [];
    const memberships = new UpstreamMemberships({
      ...kernel.membershipBounds(),
      openSocket: () => kernel.openMembershipSocket(),
      onFailure: (e) => errors.push(e),
    });
    memberships.join(SSM6, 4, { mode: 'include', sources: new Set([S6]) });
    memberships.join(GROUP, 4);
    memberships.leave(GROUP, 4);
    assert.deepEqual(kernel.memberships, [`source ${SSM6} ${S6} on 4`, `join ${GROUP} on 4`, `leave ${GROUP} on 4`]);
    assert.deepEqual(errors, []);
  });

  it('the IPv6 router takes MIFs, reuses a static one by name, routes a pod source out and an outside source in to members only', async () => {
    const kernel = new FakeRoutingKernel('ipv6');
    kernel.staticInterfaces.push({ index: 0, name: 'pim6reg', static: false });
    const members = new Set<string>();
    const router = await openRouter(kernel, members);
    assert.deepEqual(
      kernel.interfaces.map((mif) => mif.index),
      [1, 2],
      'MIF 0 is taken',
    );
    // From the gateway (a pod): out of the uplink.
    kernel.miss({ index: 1, source: '2001:db8:1::5', group: GROUP });
    assert.deepEqual(kernel.routes.get(`2001:db8:1::5>${GROUP}`)?.oifs, [2]);
    // From the uplink, no members: an entry with no outgoing MIF.
    kernel.miss({ index: 2, source: '2001:db8:9::9', group: GROUP });
    assert.deepEqual(kernel.routes.get(`2001:db8:9::9>${GROUP}`)?.oifs, []);
    // A member joins: the inbound entry gets the gateway, and the group is joined upstream.
    members.add(GROUP);
    router.setLocalMembers(GROUP, true);
    assert.deepEqual(kernel.routes.get(`2001:db8:9::9>${GROUP}`)?.oifs, [1]);
    assert.ok(kernel.memberships.some((line) => line.startsWith(`join ${GROUP}`)));
    assert.deepEqual((await router.routeViews()).map((view) => `${view.iif}>${view.oifs.join(',')}`).sort(), [
      'lo>lo',
      'lo>lo',
    ]);
    router.close();
    assert.equal(kernel.closed, true);
  });

  it('a group of the other family is refused as an internal error (the daemon tells each router its own)', async () => {
    const router = await openRouter(new FakeRoutingKernel('ipv4'), new Set());
    assert.throws(
      () => router.setLocalMembers(GROUP, true),
      (error: unknown) => error instanceof McastError && error.code === 'internal',
    );
    router.close();
  });

  it('the announcer to peers reports an IPv6 group in an MLDv2 report of its own', () => {
    const announcer = new PeerAnnouncer({ pathMtu: 1500, retransmitIntervalMs: 1_000 });
    announcer.setLocalMembers(GROUP, true);
    announcer.setLocalMembers(groupAddress('239.1.1.1'), true);
    assert.deepEqual(
      announcer.flush(0).map((report) => [report.version, report.records.map((record) => record.group)]),
      [
        [3, ['239.1.1.1']],
        [2, [GROUP]],
      ],
    );
    assert.deepEqual(
      announcer.fullState().map((report) => [report.version, report.records.map((record) => record.group)]),
      [
        [3, ['239.1.1.1']],
        [2, [GROUP]],
      ],
    );
  });

  it('in the loop, an IPv6 group syncs without an error and the router port hears it', async () => {
    const t = await startLoop({ router: true });
    await t.packetIn(v1Report(HOST, GROUP), 2);
    assert.deepEqual(t.vswitch.groups.get(GROUP), [GATEWAY, 2]);
    assert.ok(t.router!.localMembers.some((call) => call.group === GROUP));
    assert.equal(t.loop.status().counters.syncErrors, 0);
    await t.stop();
  });
});
