/**
 * What peers can make a node hold and send, on a fake clock: the node's limit of groups (maxGroups) counts the groups
 * only peers want with the local ones, and the answers to a peer's queries are paced, one full state an interval.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { PeerExchange, type PeerExchangeOptions } from '../../src/controllers/daemon/tunnel/peer-exchange.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { type GroupAddress, groupAddress, type HostAddress, hostAddress } from '../../src/wire/ip-address.js';
import { formatIPv4 } from '../../src/wire/ipv4-address.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { igmpFrame, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';

const NODE = hostAddress('192.168.60.11');
const P2 = hostAddress('192.168.60.12');
const P3 = hostAddress('192.168.60.13');
const NODE_LIMIT_WARNING =
  'a peer asked for a group past the limit of groups on the node (maxGroups); new ones refused';

/** One frame handed to the switch: when, to whom, and the groups of its records (none for a query). */
interface Sent {
  at: number;
  peers: HostAddress[];
  kind: string;
  groups: string[];
}

function harness(overrides: Partial<PeerExchangeOptions> = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const sent: Sent[] = [];
  const synced = new Set<GroupAddress>();
  const exchange = new PeerExchange({
    port: {
      async sendToPeers(frame, peers) {
        const event = decodeFrame(ipLocator(1), frame, { frame: 1, ts: 0 });
        if (event?.kind !== 'igmp' && event?.kind !== 'mld') throw new Error('the exchange sends IGMP or MLD');
        const { message } = event;
        const groups = 'records' in message ? message.records.map((record) => record.group) : [];
        sent.push({ at: clock.monotonicMs(), peers: [...peers], kind: message.kind, groups });
        return { sent: peers.length, refused: [] };
      },
      groupsChanged(groups) {
        for (const group of groups) synced.add(group);
      },
      clock,
      logger,
    },
    nodeAddress: NODE,
    sourceMac: () => '02:00:00:00:00:01',
    peers: [P2, P3],
    pathMtu: 1_500,
    refreshIntervalMs: 30_000,
    peerTimeoutMs: 70_000,
    maxGroupsPerPeer: 1_000,
    random: () => 0.5,
    ...overrides,
  });
  /** The frames sent so far, emptied. */
  const take = (): Sent[] => sent.splice(0);
  return { clock, logger, exchange, take, synced };
}

/** `count` IPv4 groups from `first` on: 239.2.0.0 and up. */
const groupsFrom = (first: number, count: number): GroupAddress[] =>
  Array.from({ length: count }, (_, index) => groupAddress(formatIPv4(0xef020000 + first + index)));
const joins = (peer: HostAddress, groups: readonly GroupAddress[]) =>
  v3Report(
    peer,
    groups.map((group) => ({ type: 'MODE_IS_EXCLUDE' as const, group })),
  );
const generalQuery = (peer: HostAddress) =>
  igmpFrame(
    { kind: 'query', version: 3, group: '0.0.0.0', maxRespCode: 10, sFlag: false, qrv: 2, qqic: 30, sources: [] },
    { src: peer, dst: '224.0.0.1' },
  );
/** The groups the node holds: those with local members and those some peer wants. */
const nodeGroups = (local: readonly GroupAddress[], exchange: PeerExchange) =>
  new Set([...local, ...exchange.groupsWithRemoteMembers()]);

describe("peers and the node's limit of groups", () => {
  it('with maxGroups 100 and 60 local groups, two peers asking for 80 more leave 100 on the node; the rest are refused and counted', () => {
    const { exchange, logger, synced } = harness({ maxGroups: () => 100 });
    const local = groupsFrom(0, 60);
    for (const group of local) exchange.localGroupChanged(group, true);
    exchange.start();
    const asked = groupsFrom(1_000, 80);
    exchange.take(joins(P2, asked.slice(0, 50)), P2);
    exchange.take(joins(P3, asked.slice(50)), P3);
    assert.equal(nodeGroups(local, exchange).size, 100);
    assert.deepEqual(exchange.groupCounts, { node: 100, peerOnly: 40 });
    assert.deepEqual([...synced].sort(), asked.slice(0, 40).sort(), 'only the groups let in are synced');
    assert.equal(exchange.counters.drops.refused, 40);
    const drops = (peer: HostAddress) => exchange.view().peers.find((view) => view.address === peer)?.drops.refused;
    assert.equal(drops(P2), 10);
    assert.equal(drops(P3), 30);
    // Logged at most once an interval for each peer, with the limit.
    const warnings = logger.find(NODE_LIMIT_WARNING);
    assert.deepEqual(
      warnings.map((line) => [line.fields.peer, line.fields.limit]),
      [
        [P2, 100],
        [P3, 100],
      ],
    );
    // At the limit a peer still gets a local group, or one another peer has: no new OVS group.
    exchange.take(joins(P3, [local[0]!, asked[0]!]), P3);
    assert.deepEqual(exchange.peersOf(local[0]!), [P3]);
    assert.deepEqual(exchange.peersOf(asked[0]!), [P2, P3]);
    assert.deepEqual(exchange.groupCounts, { node: 100, peerOnly: 40 });
    assert.equal(exchange.counters.drops.refused, 40);
  });

  it("a peer's leave of a group only peers want makes room for another; what the peers have stays when the limit is lowered", () => {
    let maxGroups = 3;
    const { exchange } = harness({ maxGroups: () => maxGroups });
    const [a, b, c, d] = groupsFrom(0, 4) as [GroupAddress, GroupAddress, GroupAddress, GroupAddress];
    exchange.localGroupChanged(a, true);
    exchange.start();
    exchange.take(joins(P2, [b, c, d]), P2);
    assert.deepEqual(exchange.groupsWithRemoteMembers().sort(), [b, c].sort());
    assert.equal(exchange.counters.drops.refused, 1);
    exchange.take(v3Report(P2, [{ type: 'CHANGE_TO_INCLUDE_MODE', group: b }]), P2);
    exchange.take(joins(P3, [d]), P3);
    assert.deepEqual(exchange.peersOf(d), [P3]);
    // The limit is read as the loop has it after a reload: lowered, nothing ends, and the next new group is refused.
    maxGroups = 1;
    exchange.take(joins(P3, [b]), P3);
    assert.deepEqual(exchange.groupsWithRemoteMembers().sort(), [c, d].sort());
    assert.equal(exchange.counters.drops.refused, 2);
    // The local group's last member leaving frees nothing while the node is still past the limit.
    exchange.localGroupChanged(a, false);
    exchange.take(joins(P3, [b]), P3);
    assert.equal(exchange.counters.drops.refused, 3);
  });

  it('without a node limit, only the per-peer limit holds (as before)', () => {
    const { exchange } = harness({ maxGroupsPerPeer: 30 });
    exchange.start();
    exchange.take(joins(P2, groupsFrom(0, 40)), P2);
    exchange.take(joins(P3, groupsFrom(100, 40)), P3);
    assert.equal(exchange.groupsWithRemoteMembers().length, 60);
    assert.equal(exchange.counters.drops.refused, 20);
  });
});

describe("answers to a peer's queries", () => {
  it('100 queries from one peer within a second get two answers: one at once, one when the interval ends; the rest are counted', () => {
    const { exchange, clock, take } = harness();
    const [first, second] = groupsFrom(0, 2) as [GroupAddress, GroupAddress];
    exchange.localGroupChanged(first, true);
    exchange.start();
    clock.advance(5_000);
    take();
    for (let index = 0; index < 100; index++) {
      if (index > 0) clock.advance(10);
      exchange.take(generalQuery(P2), P2);
      if (index === 50) exchange.localGroupChanged(second, true);
    }
    clock.advance(0);
    const inTheSecond = take().filter((frame) => frame.kind === 'report' && frame.peers.join() === P2);
    assert.equal(inTheSecond.length, 1, 'one answer within the second');
    assert.equal(exchange.counters.received.queries, 100);
    assert.equal(exchange.counters.drops.rate, 99);
    clock.advance(10);
    const waiting = take().filter((frame) => frame.peers.join() === P2 && frame.groups.length === 2);
    assert.deepEqual(
      waiting.map((frame) => [frame.at, frame.groups]),
      [[6_000, [first, second]]],
      "the waiting answer goes out at the interval's end, with the state then",
    );
    // Nothing more is owed to the peer alone (the local change is sent again to every peer): no query came after.
    clock.advance(10_000);
    assert.deepEqual(
      take().filter((frame) => frame.peers.join() === P2),
      [],
    );
  });

  it('queries at any rate cost at most one full state an interval toward the peer', () => {
    const { exchange, clock, take } = harness();
    exchange.localGroupChanged(groupsFrom(0, 1)[0]!, true);
    exchange.start();
    clock.advance(1_000);
    take();
    for (let tick = 0; tick < 5_000; tick++) {
      exchange.take(generalQuery(P2), P2);
      exchange.take(generalQuery(P2), P2);
      clock.advance(2);
    }
    const answers = take().filter((frame) => frame.kind === 'report');
    // 10 s of queries, 1,000 a second: an answer at once and one each second after, each a second apart at least.
    assert.equal(answers.length, 11);
    for (const [index, answer] of answers.entries())
      if (index > 0) assert.ok(answer.at - answers[index - 1]!.at >= 1_000, `answer ${index} a second after`);
    assert.equal(exchange.counters.drops.rate, 9_999, 'every query but the first waited for an answer');
  });

  it("two peers' queries are each answered, each on its own allowance", () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    clock.advance(1_000);
    take();
    for (let index = 0; index < 10; index++) {
      exchange.take(generalQuery(P2), P2);
      exchange.take(generalQuery(P3), P3);
      clock.advance(50);
    }
    const before = take().map((frame) => frame.peers.join());
    assert.deepEqual(before, [P2, P3]);
    clock.advance(1_000);
    assert.deepEqual(
      take().map((frame) => frame.peers.join()),
      [P2, P3],
    );
    assert.equal(exchange.counters.drops.rate, 18);
  });

  it('an answer that waits is dropped with its peer (a reload) and at stop', () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    clock.advance(1_000);
    exchange.take(generalQuery(P2), P2);
    exchange.take(generalQuery(P2), P2);
    exchange.take(generalQuery(P3), P3);
    exchange.take(generalQuery(P3), P3);
    take();
    exchange.setPeers([P3]);
    clock.advance(1_000);
    assert.deepEqual(
      take().map((frame) => frame.peers.join()),
      [P3],
    );
    exchange.take(generalQuery(P3), P3);
    exchange.stop();
    assert.deepEqual(clock.dueTimes, []);
  });
});
