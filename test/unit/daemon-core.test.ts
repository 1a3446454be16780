/**
 * The daemon's pure parts: the snooper (frames to membership calls), the pod port store,
 * the querier's schedule and packets, the table's restore and member events, and the bridge
 * client's planning against a fake switch (test/fakes/). The loop itself runs on the
 * shared fakes in test/unit/daemon-loop.test.ts, and against real OVS and the real
 * kernel in test/e2e/daemon.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { routableGroup, snoopFrame } from '../../src/controllers/daemon/loop/igmp-snooper.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { PodPorts } from '../../src/domain/pods/pod-ports.js';
import { directoryPortOf } from '../../src/adapters/ovs/bridge-ports.js';
import { Querier, type QuerierOptions } from '../../src/controllers/daemon/loop/querier.js';
import * as igmp from '../../src/packet/igmp/index.js';
import { MembershipTable, UNKNOWN_HOST, type MemberChange } from '../../src/domain/membership/membership-table.js';
import { group as groupAction, output as outputAction } from '../../src/protocol/openflow/action.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import { matchFields } from '../../src/domain/pipeline/openflow-entries.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeOpenFlow } from '../fakes/fake-openflow.js';
import type { InterfaceRow } from '../../src/adapters/ovs/vswitch.js';
import { McastError } from '../../src/errors.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { MulticastPipeline } from '../../src/domain/pipeline/multicast-pipeline.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import { ethernetFrame, igmpBytes, ipv4Packet } from '../helpers/bytes.js';
import { groupAddress, hostAddress, sourceAddress } from '../../src/wire/ip-address.js';
import type { SourceAddress } from '../../src/wire/ip-address.js';

const frameOf = (src: string, dst: string, igmpHex: string) =>
  ethernetFrame(ipv4Packet({ src, dst }, igmpBytes(igmpHex)));
const meta = { frame: 1, ts: 0 };

describe('snoopFrame', () => {
  it('v2 report and leave become report and leave calls for the group', () => {
    const report = snoopFrame(frameOf('10.1.0.5', '239.1.2.3', '16 00 0000 ef 01 02 03'), meta)!;
    assert.equal(report.type, 'report');
    assert.equal(report.version, 2);
    assert.deepEqual(report.calls, [
      { op: 'report', group: groupAddress('239.1.2.3'), host: hostAddress('10.1.0.5'), version: 2 },
    ]);
    const leave = snoopFrame(frameOf('10.1.0.5', '224.0.0.2', '17 00 0000 ef 01 02 03'), meta)!;
    assert.deepEqual(leave.calls, [{ op: 'leave', group: groupAddress('239.1.2.3'), host: hostAddress('10.1.0.5') }]);
  });

  it('a v1 report counts as version 1', () => {
    const report = snoopFrame(frameOf('10.1.0.5', '239.1.2.3', '12 00 0000 ef 01 02 03'), meta)!;
    assert.deepEqual(report.calls, [
      { op: 'report', group: groupAddress('239.1.2.3'), host: hostAddress('10.1.0.5'), version: 1 },
    ]);
  });

  it('a v3 report gives one call per record, link-local groups left out', () => {
    // two records: TO_EX {} for 239.1.1.1, IS_IN {10.9.9.1} for 224.0.0.251 (mDNS, link-local)
    const snooped = snoopFrame(
      frameOf(
        '10.1.0.5',
        '224.0.0.22',
        '22 00 0000 0000 0002 04 00 0000 ef 01 01 01 01 00 0001 e0 00 00 fb 0a 09 09 01',
      ),
      meta,
    )!;
    assert.equal(snooped.version, 3);
    assert.deepEqual(snooped.calls, [
      {
        op: 'record',
        host: hostAddress('10.1.0.5'),
        record: { type: 'CHANGE_TO_EXCLUDE_MODE', group: groupAddress('239.1.1.1'), sources: [] },
      },
    ]);
  });

  it('queries are counted and change nothing; malformed IGMP is reported, not thrown', () => {
    const query = snoopFrame(frameOf('10.1.0.1', '224.0.0.1', '11 64 0000 00000000'), meta)!;
    assert.equal(query.type, 'query');
    assert.deepEqual(query.calls, []);
    const broken = snoopFrame(frameOf('10.1.0.5', '239.1.2.3', '16 00 0000 ef 01'), meta)!;
    assert.equal(broken.type, 'malformed');
    assert.deepEqual(broken.calls, []);
    assert.equal(snoopFrame(ethernetFrame(Buffer.from([1, 2, 3]), 0x0806), meta), undefined, 'neither IPv4 nor IPv6');
  });

  it('MLD is snooped like IGMP: an MLDv1 report is a report in IGMPv2 terms; broken MLD is counted as malformed', () => {
    const report = mldFrame.encodeFrame({
      message: { kind: 'report', version: 1, group: 'ff0e::1234' },
      src: 'fe80::1',
      dst: 'ff0e::1234',
    });
    assert.equal(decodeFrame(ipLocator(1), report, meta)?.kind, 'mld', 'the frame is MLD');
    assert.deepEqual(snoopFrame(report, meta)!.calls, [
      { op: 'report', group: groupAddress('ff0e::1234'), host: hostAddress('fe80::1'), version: 2 },
    ]);
    const broken = Buffer.from(report);
    broken[broken.length - 1] = broken[broken.length - 1]! ^ 0xff; // the checksum no longer matches
    assert.equal(decodeFrame(ipLocator(1), broken, meta)?.kind, 'malformed', 'the frame is malformed MLD');
    assert.deepEqual([snoopFrame(broken, meta)!.type, snoopFrame(broken, meta)!.calls], ['malformed', []]);
  });

  it('the decoded event is what snoop decodes from the same frame', () => {
    const frame = frameOf('10.1.0.5', '239.1.2.3', '16 00 0000 ef 01 02 03');
    assert.deepEqual(snoopFrame(frame, meta)!.event, decodeFrame(ipLocator(1), frame, meta));
  });

  it('routable groups: multicast outside 224.0.0.0/24', () => {
    assert.deepEqual(
      ['239.1.1.1', '224.0.1.1', '232.1.1.1', '224.0.0.251', '10.0.0.1', 'x'].map(
        (text) => routableGroup(text) !== undefined,
      ),
      [true, true, true, false, false, false],
    );
  });
});

function row(name: string, ofport: number | undefined, externalIds: Record<string, string> = {}): InterfaceRow {
  return { uuid: `uuid-${name}`, name, ofport, external_ids: externalIds, type: '', mac_in_use: undefined };
}
/** The rows as the OVSDB pod directory tells them. */
const interfaces = (...rows: InterfaceRow[]) => rows.flatMap((r) => directoryPortOf(r) ?? []);

describe('PodPorts', () => {
  it('pods are ports with pod-name; the gateway by name; LOCAL and unnumbered ports never', () => {
    const ports = new PodPorts('gw0');
    const changes = ports.update(
      interfaces(
        row('br-int', 65534),
        row('gw0', 1),
        row('p1', 2, { 'pod-name': 'web', 'pod-namespace': 'shop' }),
        row('p2', 3, { 'pod-name': 'db' }),
        row('eth1', 4),
        row('p3', undefined, { 'pod-name': 'late' }),
      ),
    );
    assert.deepEqual(changes.added, [
      { ofport: 2, name: 'p1', pod: 'shop/web' },
      { ofport: 3, name: 'p2', pod: 'db' },
    ]);
    assert.equal(changes.gatewayChanged, true);
    assert.deepEqual(ports.gateway, { ofport: 1, name: 'gw0' });
    assert.equal(ports.pod(4), undefined, 'not a pod');
    assert.equal(ports.pod(1), undefined, 'the gateway is no pod');
    assert.deepEqual(ports.view(1), { ofport: 1, name: 'gw0' });
    assert.equal(ports.byName('p2')?.ofport, 3);
  });

  it('says which pods went, which came, and when a port changed its number', () => {
    const ports = new PodPorts(undefined);
    ports.update(interfaces(row('p1', 2, { 'pod-name': 'a' }), row('p2', 3, { 'pod-name': 'b' })));
    const changes = ports.update(interfaces(row('p1', 5, { 'pod-name': 'a' }), row('p3', 6, { 'pod-name': 'c' })));
    assert.deepEqual(changes.removed.map((p) => p.ofport).sort(), [2, 3]);
    assert.deepEqual(changes.added.map((p) => p.ofport).sort(), [5, 6]);
    assert.equal(changes.gatewayChanged, false);
    assert.equal(ports.size, 2);
  });
});

interface SentQuery {
  at: number;
  ports: readonly number[];
  message: igmp.IgmpMessage;
  src: string;
  dst: string;
}

function querier(options: Partial<QuerierOptions> = {}) {
  const clock = new FakeClock();
  const sent: SentQuery[] = [];
  const q = new Querier({
    versions: [3],
    queryIntervalMs: 125_000,
    queryResponseIntervalMs: 10_000,
    lastMemberQueryIntervalMs: 1_000,
    robustness: 2,
    source: () => ({ address: '10.1.0.1', mac: '02:00:00:00:00:01' }),
    ports: () => [2, 3],
    send: async (frame, ports) => {
      const event = decodeFrame(ipLocator(1), frame, meta);
      assert.ok(event?.kind === 'igmp', 'the querier sends decodable IGMP');
      sent.push({ at: clock.monotonicMs(), ports, message: event.message, src: event.src, dst: event.dst });
      return ports.length;
    },
    onError: (error) => assert.fail(String(error)),
    timers: clock,
    ...options,
  });
  return { q, sent, clock };
}

describe('Querier', () => {
  it('startup: Robustness general queries a quarter interval apart, then one per Query Interval (RFC 3376 §8.6-8.7)', async () => {
    const { q, sent, clock } = querier();
    q.start();
    clock.advance(125_000 / 4);
    clock.advance(125_000);
    clock.advance(125_000);
    await Promise.resolve();
    assert.deepEqual(
      sent.map((s) => s.at),
      [0, 31_250, 156_250, 281_250],
    );
    const first = sent[0]!;
    assert.deepEqual(first.ports, [2, 3]);
    assert.equal(first.src, '10.1.0.1');
    assert.equal(first.dst, '224.0.0.1');
    assert.ok(first.message.kind === 'query' && first.message.version === 3);
    assert.equal(igmp.maxRespTimeMs(first.message), 10_000);
    assert.equal(first.message.group, '0.0.0.0');
    assert.equal(first.message.sFlag, false);
    assert.equal(first.message.qrv, 2);
    assert.equal(igmp.qqicSeconds(first.message), 125);
    q.stop();
    clock.advance(1_000_000);
    assert.equal(sent.length, 4, 'nothing after stop');
  });

  it('one general query per configured version, each as that version encodes it', async () => {
    const { q, sent } = querier({ versions: [1, 2, 3] });
    await q.generalQueries();
    assert.deepEqual(
      sent.map((s) => (s.message.kind === 'query' ? s.message.version : 0)),
      [1, 2, 3],
    );
    assert.equal(igmp.maxRespTimeMs(sent[1]!.message as igmp.IgmpQuery), 10_000);
  });

  it('a last-member query goes Robustness times, LMQI apart, to the one port, about the group', () => {
    const { q, sent, clock } = querier();
    q.groupQueries(groupAddress('239.1.2.3'), 3, 3);
    clock.advance(5_000);
    assert.deepEqual(
      sent.map((s) => [s.at, s.ports, s.dst, s.message.kind === 'query' ? s.message.group : '']),
      [
        [0, [3], '239.1.2.3', '239.1.2.3'],
        [1_000, [3], '239.1.2.3', '239.1.2.3'],
      ],
    );
    assert.equal(igmp.maxRespTimeMs(sent[0]!.message as igmp.IgmpQuery), 1_000);
  });

  it('no ports, no queries', async () => {
    const { q, sent } = querier({ ports: () => [] });
    await q.generalQueries();
    assert.equal(sent.length, 0);
  });
});

describe('MembershipTable, as the daemon uses it', () => {
  const timing = { groupMembershipIntervalMs: 10_000, lastMemberQueryTimeMs: 2_000 };

  it('tells of each host that joins or leaves, with why', () => {
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const changes: MemberChange[] = [];
    const table = new MembershipTable({
      clock,
      timing,
      fastLeave: true,
      onMemberChange: (change) => changes.push(change),
    });
    table.report(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1'), 2);
    table.report(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1'), 2);
    table.report(3, hostAddress('10.1.0.3'), groupAddress('239.1.1.1'), 2);
    table.leave(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1'));
    table.report(4, hostAddress('10.1.0.4'), groupAddress('239.2.2.2'), 2);
    table.removePort(4);
    clock.t = 10_000;
    table.expire();
    assert.deepEqual(changes, [
      { type: 'join', group: groupAddress('239.1.1.1'), port: 2, host: hostAddress('10.1.0.2') },
      { type: 'join', group: groupAddress('239.1.1.1'), port: 3, host: hostAddress('10.1.0.3') },
      { type: 'leave', group: groupAddress('239.1.1.1'), port: 2, host: hostAddress('10.1.0.2'), reason: 'leave' },
      { type: 'join', group: groupAddress('239.2.2.2'), port: 4, host: hostAddress('10.1.0.4') },
      {
        type: 'leave',
        group: groupAddress('239.2.2.2'),
        port: 4,
        host: hostAddress('10.1.0.4'),
        reason: 'port-removed',
      },
      { type: 'leave', group: groupAddress('239.1.1.1'), port: 3, host: hostAddress('10.1.0.3'), reason: 'expired' },
    ]);
  });

  it('restore puts back members with their report times and compatibility; expired ones stay out', () => {
    const clock = {
      t: 50_000,
      now() {
        return this.t;
      },
    };
    const table = new MembershipTable({ clock, timing, fastLeave: true });
    const effects = table.restore([
      {
        group: groupAddress('239.1.1.1'),
        port: 2,
        host: hostAddress('10.1.0.2'),
        filter: { mode: 'exclude', sources: new Set() },
        lastReportAt: 45_000,
        compatibility: 2,
      },
      {
        group: groupAddress('239.1.1.1'),
        port: 3,
        host: hostAddress('10.1.0.3'),
        filter: { mode: 'include', sources: new Set([sourceAddress('10.9.9.9')]) },
        lastReportAt: 41_000,
        compatibility: 3,
      },
      {
        group: groupAddress('239.2.2.2'),
        port: 2,
        host: hostAddress('10.1.0.2'),
        filter: { mode: 'exclude', sources: new Set() },
        lastReportAt: 40_000,
        compatibility: 3,
      },
    ]);
    assert.deepEqual(effects, [{ kind: 'members', group: groupAddress('239.1.1.1'), ports: [2, 3] }]);
    const [group] = table.snapshot();
    assert.deepEqual(
      group!.members.map((m) => [m.port, m.compatibility, m.filter, m.lastReportAt]),
      [
        [2, 2, { mode: 'exclude', sources: [] }, 45_000],
        [3, 3, { mode: 'include', sources: [sourceAddress('10.9.9.9')] }, 41_000],
      ],
    );
    assert.equal(table.nextDeadline(), 51_000);
    // v2 compatibility restored: a BLOCK from port 2 is ignored (§7.3.2).
    assert.deepEqual(
      table.record(2, hostAddress('10.1.0.2'), {
        type: 'BLOCK_OLD_SOURCES',
        group: groupAddress('239.1.1.1'),
        sources: [sourceAddress('10.9.9.9')],
      }),
      [],
    );
    assert.equal(table.memberCount, 2);
    assert.equal(table.groupCount, 1);
  });
});

describe('placeholder members (ports found in OVS at a restart, without saved state)', () => {
  const timing = { groupMembershipIntervalMs: 10_000, lastMemberQueryTimeMs: 2_000 };
  const placeholder = (port: number, lastReportAt: number) => ({
    group: groupAddress('239.1.1.1'),
    port,
    host: UNKNOWN_HOST,
    filter: { mode: 'exclude' as const, sources: new Set<SourceAddress>() },
    lastReportAt,
    compatibility: 3 as const,
  });

  it('a real report replaces the placeholder, so that its leave ends the membership at once', () => {
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const table = new MembershipTable({ clock, timing, fastLeave: true });
    table.restore([placeholder(2, -5_000)]);
    assert.deepEqual(
      table.report(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1'), 2),
      [],
      'the port was already forwarded to',
    );
    assert.deepEqual(
      table.snapshot()[0]!.members.map((m) => m.host),
      ['10.1.0.2'],
    );
    assert.deepEqual(table.leave(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1')), [
      { kind: 'members', group: groupAddress('239.1.1.1'), ports: [] },
    ]);
  });

  it('a leave from a host not heard since the restart ends the placeholder of its port', () => {
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const table = new MembershipTable({ clock, timing, fastLeave: true });
    table.restore([placeholder(2, -5_000), placeholder(3, -5_000)]);
    assert.deepEqual(table.leave(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1')), [
      { kind: 'members', group: groupAddress('239.1.1.1'), ports: [3] },
    ]);
    assert.deepEqual(
      table.record(3, hostAddress('10.1.0.3'), {
        type: 'CHANGE_TO_INCLUDE_MODE',
        group: groupAddress('239.1.1.1'),
        sources: [],
      }),
      [{ kind: 'members', group: groupAddress('239.1.1.1'), ports: [] }],
    );
  });

  it('without fast leave the placeholder port is asked, and removed when nobody answers', () => {
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const table = new MembershipTable({ clock, timing, fastLeave: false });
    table.restore([placeholder(2, -5_000)]);
    assert.deepEqual(table.leave(2, hostAddress('10.1.0.2'), groupAddress('239.1.1.1')), [
      { kind: 'query', group: groupAddress('239.1.1.1'), port: 2 },
    ]);
    clock.t = 2_000;
    assert.deepEqual(table.expire(), [{ kind: 'members', group: groupAddress('239.1.1.1'), ports: [] }]);
  });

  it('a placeholder nobody reports for ends when its short life is over', () => {
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const table = new MembershipTable({ clock, timing, fastLeave: true });
    table.restore([placeholder(2, -7_000)]); // restored with 3 s to live
    assert.equal(table.nextDeadline(), 3_000);
    clock.t = 3_000;
    assert.deepEqual(table.expire(), [{ kind: 'members', group: groupAddress('239.1.1.1'), ports: [] }]);
  });
});

describe("BridgeClient: the daemon's syncs", () => {
  const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
  /** The group's forwarding: `ports` for every source, no (S,G) entry. */
  const wanted = (group: string, ports: number[]) => ({ group: groupAddress(group), ports, bySource: [] });
  const kinds = (messages: OpenFlowMessage[]) =>
    messages.map((m) =>
      m.type === 'GROUP_MOD' ? `group-${m.command}` : m.type === 'FLOW_MOD' ? `flow-${m.command}` : m.type,
    );

  it('adds, then modifies, then leaves a group alone that is already right, then removes it', async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [2, 1])), 'added');
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [1, 2, 3])), 'updated');
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [3, 2, 1])), 'unchanged');
    assert.equal(ovs.batches.length, 2, 'nothing sent for an unchanged group');
    assert.deepEqual(bridge.installedGroups, ['239.1.1.1']);
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [])), 'removed');
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [])), 'absent');
    assert.deepEqual(ovs.batches.map(kinds), [['group-0', 'flow-0'], ['group-1'], ['flow-4', 'group-2']]);
  });

  it('a group too big for one message is chained, and shrinking it deletes the links it no longer needs', async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    // 4 buckets a message: 3 ports and the chain bucket, then the last 4 ports.
    await bridge.syncForwarding(wanted('239.1.1.1', [1, 2, 3, 4, 5, 6, 7]));
    assert.deepEqual(kinds(ovs.batches[0]!), ['group-0', 'group-0', 'flow-0']);
    await bridge.syncForwarding(wanted('239.1.1.1', [1, 2]));
    assert.deepEqual(kinds(ovs.batches[1]!), ['group-1', 'group-2']);
  });

  it('a refusal fails the sync (the queue retries) and the next plan starts from what the switch has', async () => {
    let refuse = true;
    const ovs = new FakeOpenFlow(() => refuse);
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await assert.rejects(
      bridge.syncForwarding(wanted('239.1.1.1', [1])),
      /OVS refused 2 of 2 changes for group 239.1.1.1/,
    );
    refuse = false;
    assert.equal(await bridge.syncForwarding(wanted('239.1.1.1', [1])), 'added');
  });

  it('learned groups carry the cookie flag that tells them from install, and read back so', async () => {
    const forwarding = pipeline.forwarding({ group: groupAddress('239.1.1.1'), ports: [1], learned: true });
    assert.equal(forwarding.flow.cookie, 0x4d43_03_01_ef010101n);
    const [installed] = pipeline.readInstalled([forwarding.flow], forwarding.groups).groups;
    assert.equal(installed!.learned, true);
    assert.equal(
      pipeline.readInstalled([pipeline.groupFlow(groupAddress('239.1.1.1'))], forwarding.groups).groups[0]!.learned,
      false,
    );
  });

  it("never takes the place of another controller's flow: a group is refused, the base flows too", async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    const theirs = (priority: number, match: FlowStats['match']): FlowStats =>
      ({
        tableId: 0,
        priority,
        cookie: 0x99n,
        match,
        instructions: [],
        packetCount: 0n,
        byteCount: 0n,
      }) as unknown as FlowStats;
    ovs.flows.push(
      theirs(200, [
        { field: 'ETH_TYPE', value: 0x800 },
        { field: 'IPV4_DST', value: '239.1.1.1' },
      ]),
    );
    await bridge.refresh();
    await assert.rejects(
      bridge.syncForwarding(wanted('239.1.1.1', [1])),
      (error: unknown) => error instanceof McastError && error.code === 'conflict',
    );
    assert.equal(await bridge.syncForwarding(wanted('239.2.2.2', [1])), 'added', 'other groups are fine');
    ovs.flows.push(
      theirs(300, [
        { field: 'ETH_TYPE', value: 0x800 },
        { field: 'IP_PROTO', value: 2 },
      ]),
    );
    await bridge.refresh();
    const before = ovs.batches.length;
    await assert.rejects(
      bridge.installBase(1),
      /another controller's flow \(cookie 0x99\) has the match and priority 300 of the daemon's ip,nw_proto=2 flow/,
    );
    assert.equal(ovs.batches.length, before, 'nothing sent');
  });

  it('a group installed statically (install, reconcile) is left alone: members are refused, an empty sync is a no-op', async () => {
    const ovs = new FakeOpenFlow();
    // The switch holds a static group (no learned flag), as `install` wrote it.
    const theirs = pipeline.forwarding({ group: groupAddress('239.3.3.3'), ports: [4] });
    ovs.flows.push({
      tableId: 0,
      priority: theirs.flow.priority,
      cookie: theirs.flow.cookie,
      match: matchFields(theirs.flow.match),
      instructions: [{ type: 'APPLY_ACTIONS', actions: [groupAction(theirs.groups[0]!.groupId)] }],
      packetCount: 0n,
      byteCount: 0n,
    } as unknown as FlowStats);
    ovs.groups = theirs.groups.map((entry) => ({
      groupType: 0,
      groupId: entry.groupId,
      buckets: [{ weight: 0, watchPort: 0, watchGroup: 0, actions: [outputAction(4)] }],
    }));
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    assert.deepEqual(bridge.learnedGroups, []);
    await assert.rejects(
      bridge.syncForwarding(wanted('239.3.3.3', [1])),
      (error: unknown) =>
        error instanceof McastError && error.code === 'conflict' && /installed statically/.test(error.message),
    );
    assert.equal(await bridge.syncForwarding(wanted('239.3.3.3', [])), 'absent');
    assert.equal(ovs.batches.length, 0, 'nothing sent');
    // ovs-vswitchd restarts: the switch is empty, and the declared group stays reconcile's.
    ovs.flows = [];
    ovs.groups = [];
    await bridge.refresh();
    await assert.rejects(bridge.syncForwarding(wanted('239.3.3.3', [1])), /installed statically/);
    assert.equal(await bridge.syncForwarding(wanted('239.4.4.4', [1])), 'added', 'other groups are the daemon’s');
  });

  it('without a gateway, other multicast is dropped rather than left to the bridge to flood', async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.installBase(undefined);
    const drops = pipeline.unknownGroupDrop();
    assert.deepEqual(
      drops.map((drop) => [drop.match.ipDst, drop.actions, drop.priority]),
      [
        ['224.0.0.0', [], 190],
        ['ff00::', [], 190],
      ],
    );
    // IGMP, MLD's four types, link scope and the drop, for each family.
    assert.equal(ovs.batches[0]!.filter((m) => m.type === 'FLOW_MOD').length, 9);
  });

  it('base flows: all IGMP and MLD to the controller, link-local flooded, other multicast to the gateway', async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.installBase(1);
    const flows = ovs.batches[0]!.filter((m) => m.type === 'FLOW_MOD');
    assert.equal(flows.length, 9);
    const membership = pipeline.membershipToController();
    assert.deepEqual(
      membership.map((flow) => [
        flow.match.inPort,
        flow.priority,
        flow.match.ethType,
        flow.match.ipProto,
        flow.match.icmpv6Type,
      ]),
      [
        [undefined, 300, 0x0800, 2, undefined],
        ...[130, 131, 132, 143].map((type) => [undefined, 300, 0x86dd, 58, type]),
      ],
      'every port; MLD by its four types, so Neighbor Discovery stays out',
    );
    assert.deepEqual(
      pipeline.unknownGroupToGateway(1).map((flow) => flow.actions),
      [[{ type: 'output', port: 1 }], [{ type: 'output', port: 1 }]],
    );
    assert.deepEqual(
      pipeline.linkLocalFlood().map((flow) => [flow.match.ipDst, flow.match.ipDstMask]),
      [
        ['224.0.0.0', '255.255.255.0'],
        ['ff02::', 'ff0f::'],
      ],
    );
  });
});
