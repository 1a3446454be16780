/** The daemon's membership exchange with its peers over the tunnel, on a fake clock and a fake switch port. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import {
  PeerExchange,
  type PeerExchangeOptions,
  type PeerExchangePort,
} from '../../src/controllers/daemon/tunnel/peer-exchange.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import type { IgmpMessage } from '../../src/packet/igmp/message.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import type { MldMessage, MldRecord } from '../../src/packet/mld/message.js';
import type { PeerMessageNotice } from '../../src/transport/control/daemon-view.js';
import { type GroupAddress, groupAddress, type HostAddress, hostAddress } from '../../src/wire/ip-address.js';
import { formatIPv4 } from '../../src/wire/ipv4-address.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { igmpFrame, v2GeneralQuery, v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { NO_SEAL_DROPS } from '../helpers/fake-daemon-view.js';

const NODE = hostAddress('192.168.60.11');
const P2 = hostAddress('192.168.60.12');
const P3 = hostAddress('192.168.60.13');
const P4 = hostAddress('192.168.60.14');
const G1 = groupAddress('239.1.1.1');
const G2 = groupAddress('239.1.1.2');
const REFRESH_MS = 30_000;
const TIMEOUT_MS = 70_000;

interface SentFrame {
  at: number;
  peers: HostAddress[];
  src: string;
  dst: string;
  message: IgmpMessage | MldMessage;
}

/** The exchange on a fake clock; what it sends and syncs is kept for the assertions. */
function harness(
  overrides: Partial<PeerExchangeOptions> & { refuse?: boolean; refusedBySwitch?: boolean; watched?: boolean } = {},
) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const sent: SentFrame[] = [];
  const changes: { groups: GroupAddress[]; peer: HostAddress | undefined }[] = [];
  const notices: PeerMessageNotice[] = [];
  /** Whether someone follows the messages now (`snoop --daemon`). */
  const watching = { now: overrides.watched ?? false };
  const port: PeerExchangePort = {
    async sendToPeers(frame, peers) {
      const event = decodeFrame(ipLocator(1), frame, { frame: 1, ts: 0 });
      assert.ok(event?.kind === 'igmp' || event?.kind === 'mld', 'the exchange sends well-formed IGMP or MLD');
      if (event?.kind !== 'igmp' && event?.kind !== 'mld') throw new Error('unreachable');
      sent.push({ at: clock.monotonicMs(), peers: [...peers], src: event.src, dst: event.dst, message: event.message });
      if (overrides.refuse === true) throw new Error('switch gone');
      if (overrides.refusedBySwitch === true) return { sent: 0, refused: peers.map(() => new Error('no such port')) };
      return { sent: peers.length, refused: [] };
    },
    groupsChanged(groups, peer) {
      changes.push({ groups: [...groups], peer });
    },
    clock,
    logger,
    watchers: { listened: () => watching.now, publish: (notice) => notices.push(notice) },
  };
  const exchange = new PeerExchange({
    port,
    nodeAddress: NODE,
    sourceMac: () => '02:00:00:00:00:01',
    peers: [P2, P3],
    pathMtu: 1_500,
    refreshIntervalMs: REFRESH_MS,
    peerTimeoutMs: TIMEOUT_MS,
    maxGroupsPerPeer: 100,
    random: () => 0.5,
    ...overrides,
  });
  /** The sent frames so far, emptied. */
  const take = (): SentFrame[] => sent.splice(0);
  return { clock, logger, sent, take, changes, exchange, notices, watching };
}

/** "TYPE group" of every record of every report in `frames`. */
const recordsOf = (frames: SentFrame[]) =>
  frames.flatMap((frame) =>
    frame.message.kind === 'report' && 'records' in frame.message
      ? frame.message.records.map((r) => `${r.type} ${r.group}`)
      : [],
  );
const reports = (frames: SentFrame[]) => frames.filter((frame) => frame.message.kind === 'report');
const queries = (frames: SentFrame[]) => frames.filter((frame) => frame.message.kind === 'query');
const v3GeneralQuery = (querier: string) =>
  igmpFrame(
    { kind: 'query', version: 3, group: '0.0.0.0', maxRespCode: 10, sFlag: false, qrv: 2, qqic: 30, sources: [] },
    { src: querier, dst: '224.0.0.1' },
  );
const join = (peer: string, group: string) => v3Report(peer, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group }]);
/** An MLDv2 report as a peer sends it into the tunnel: from a link-local address to ff02::16. */
const mldReport = (records: Omit<MldRecord, 'sources'>[]) =>
  mldFrame.encodeFrame({
    message: { kind: 'report', version: 2, records: records.map((record) => ({ ...record, sources: [] })) },
    src: 'fe80::2',
    dst: 'ff02::16',
  });
/** Lets the fake port's promises settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('PeerExchange: frames from the tunnel', () => {
  it('a v3 report from a peer makes it a member and asks for a sync in its lane', () => {
    const { exchange, changes } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    assert.deepEqual(changes, [{ groups: [G1], peer: P2 }]);
    assert.deepEqual(exchange.peersOf(G1), [P2]);
    assert.equal(exchange.counters.received.reports, 1);
    const view = exchange.view();
    assert.equal(view.peers.find((peer) => peer.address === P2)?.state, 'up');
    assert.equal(view.peers.find((peer) => peer.address === P3)?.state, 'unknown');
  });

  it('a group past maxGroupsPerPeer is refused and counted; the groups the peer has stay', () => {
    const { exchange } = harness({ maxGroupsPerPeer: 1 });
    exchange.start();
    exchange.take(
      v3Report(P2, [
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: G1 },
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: G2 },
      ]),
      P2,
    );
    assert.deepEqual(exchange.peersOf(G1), [P2]);
    assert.deepEqual(exchange.peersOf(G2), []);
    assert.equal(exchange.counters.drops.refused, 1);
  });

  it('a refresh changes no peers and syncs nothing; TO_IN {} removes the peer at once', () => {
    const { exchange, changes } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    exchange.take(v3Report(P2, [{ type: 'MODE_IS_EXCLUDE', group: G1 }]), P2);
    assert.equal(changes.length, 1);
    exchange.take(v3Report(P2, [{ type: 'CHANGE_TO_INCLUDE_MODE', group: G1 }]), P2);
    assert.deepEqual(changes[1], { groups: [G1], peer: P2 });
    assert.deepEqual(exchange.peersOf(G1), []);
  });

  it('the peer is named by the outer source: a stranger, even naming a peer inside, and this node itself are dropped', () => {
    const { exchange, changes, logger } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P4);
    exchange.take(join(P2, G2), P4);
    exchange.take(join(P2, G1), undefined);
    exchange.take(join(NODE, G1), NODE);
    assert.deepEqual(changes, []);
    assert.deepEqual(exchange.peersOf(G1), []);
    assert.deepEqual(exchange.counters.drops, {
      'unknown-peer': 3,
      self: 1,
      unsupported: 0,
      malformed: 0,
      rate: 0,
      refused: 0,
      ...NO_SEAL_DROPS,
      'over-rate': 0,
    });
    // One warning per reason, not per frame.
    assert.equal(
      logger.lines.filter((line) => line.message === 'dropped a frame from the tunnel: unknown-peer').length,
      1,
    );
    assert.equal(logger.find('dropped a frame from the tunnel: self').length, 1);
  });

  it("the inside is never believed: a peer's frame naming another peer, or a stranger, counts for the peer it came from", () => {
    const { exchange, changes } = harness();
    exchange.start();
    exchange.take(join(P3, G1), P2);
    exchange.take(join('10.9.9.9', G2), P2);
    assert.deepEqual(exchange.peersOf(G1), [P2]);
    assert.deepEqual(exchange.peersOf(G2), [P2]);
    assert.deepEqual(changes, [
      { groups: [G1], peer: P2 },
      { groups: [G2], peer: P2 },
    ]);
  });

  it('IGMPv1/v2 from a peer is unsupported; broken frames and non-IGMP are malformed; nothing throws', () => {
    const { exchange, changes } = harness();
    exchange.start();
    exchange.take(v2Report(P2, G1), P2);
    exchange.take(v2GeneralQuery(P2), P2);
    exchange.take(igmpFrame({ kind: 'report', version: 1, group: G1 }, { src: P2, dst: G1 }), P2);
    const corrupt = Buffer.from(join(P2, G1));
    corrupt[corrupt.length - 1]! ^= 0xff; // the IGMP checksum no longer holds
    exchange.take(corrupt, P2);
    exchange.take(join(P2, G1).subarray(0, 20), P2);
    exchange.take(new Uint8Array(0), P2);
    const udp = Buffer.from(join(P2, G1));
    udp[14 + 9] = 17; // IPv4 protocol: UDP
    exchange.take(udp, P2);
    assert.deepEqual(changes, []);
    assert.deepEqual(exchange.counters.drops, {
      'unknown-peer': 0,
      self: 0,
      unsupported: 3,
      malformed: 4,
      rate: 0,
      refused: 0,
      ...NO_SEAL_DROPS,
      'over-rate': 0,
    });
    assert.deepEqual(exchange.view().peers.find((peer) => peer.address === P2)?.drops, {
      rate: 0,
      unsupported: 3,
      malformed: 4,
      refused: 0,
      ...NO_SEAL_DROPS,
    });
  });

  it("a peer's general query gets our full state, to that peer only, at most once a second", async () => {
    const { exchange, clock, take } = harness();
    exchange.localGroupChanged(G1, true);
    exchange.start();
    clock.advance(2_000);
    take();
    exchange.take(v3GeneralQuery(P2), P2);
    const answer = take();
    assert.deepEqual(
      answer.map((frame) => frame.peers),
      [[P2]],
    );
    assert.deepEqual(recordsOf(answer), [`MODE_IS_EXCLUDE ${G1}`]);
    assert.equal(answer[0]!.src, NODE);
    assert.equal(answer[0]!.dst, '224.0.0.22');
    clock.advance(999);
    exchange.take(v3GeneralQuery(P2), P2);
    assert.deepEqual(take(), []);
    assert.equal(exchange.counters.drops.rate, 1);
    // Another peer has its own allowance.
    exchange.take(v3GeneralQuery(P3), P3);
    assert.deepEqual(
      take().map((frame) => frame.peers),
      [[P3]],
    );
    // The query that came within the second is answered when the second is up, and no more often.
    clock.advance(1);
    assert.deepEqual(
      take().map((frame) => frame.peers),
      [[P2]],
    );
    exchange.take(v3GeneralQuery(P2), P2);
    assert.deepEqual(take(), []);
    assert.equal(exchange.counters.drops.rate, 2);
    assert.equal(exchange.counters.received.queries, 4);
    // A query is contact.
    assert.equal(exchange.view().peers.find((peer) => peer.address === P3)?.state, 'up');
    await settle();
  });
});

describe('PeerExchange: local changes', () => {
  it('changes are batched to the next tick, go to every peer, and are sent again with the current state', () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    clock.advance(1);
    take();
    exchange.localGroupChanged(G1, true);
    exchange.localGroupChanged(G2, true);
    assert.deepEqual(take(), [], 'nothing before the tick');
    clock.advance(0);
    const batch = take();
    assert.equal(batch.length, 1);
    assert.deepEqual(batch[0]!.peers, [P2, P3]);
    assert.deepEqual(recordsOf(batch), [`CHANGE_TO_EXCLUDE_MODE ${G1}`, `CHANGE_TO_EXCLUDE_MODE ${G2}`]);
    // G2's last member leaves before the retransmission: it carries TO_IN for G2.
    clock.advance(500);
    exchange.localGroupChanged(G2, false);
    clock.advance(0);
    assert.deepEqual(recordsOf(take()), [`CHANGE_TO_INCLUDE_MODE ${G2}`]);
    clock.advance(500);
    assert.deepEqual(recordsOf(take()), [`CHANGE_TO_EXCLUDE_MODE ${G1}`]);
    clock.advance(500);
    assert.deepEqual(recordsOf(take()), [`CHANGE_TO_INCLUDE_MODE ${G2}`]);
    clock.advance(5_000);
    assert.deepEqual(reports(take()), [], 'each change goes twice, no more');
  });

  it('a burst of joins is split into reports of at most R records', () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    clock.advance(1);
    take();
    for (let index = 0; index < 300; index++)
      exchange.localGroupChanged(groupAddress(formatIPv4(0xef020000 + index)), true);
    clock.advance(0);
    const burst = take();
    assert.deepEqual(
      burst.map((frame) =>
        frame.message.kind === 'report' && frame.message.version === 3 ? frame.message.records.length : -1,
      ),
      [173, 127],
    );
  });

  it('changes before start wait for it', () => {
    const { exchange, clock, take } = harness();
    exchange.localGroupChanged(G1, true);
    clock.advance(10);
    assert.deepEqual(take(), []);
    exchange.start();
    clock.advance(0);
    assert.ok(recordsOf(take()).includes(`CHANGE_TO_EXCLUDE_MODE ${G1}`));
  });
});

describe('PeerExchange: start, refresh, expiry', () => {
  it('start greets every peer with the full state and an IGMPv3 general query', () => {
    const { exchange, take } = harness();
    exchange.start();
    const greeting = take();
    // The same frames go to every peer.
    assert.ok(greeting.every((frame) => frame.peers.join() === [P2, P3].join()));
    // No local groups: the full state is one report of no records.
    assert.deepEqual(
      reports(greeting).map((frame) => frame.message),
      [{ kind: 'report', version: 3, records: [] }],
    );
    const [query, ...more] = queries(greeting);
    assert.deepEqual(more, []);
    assert.equal(query?.message.kind === 'query' && query.message.version, 3);
    assert.equal(query?.message.kind === 'query' && query.message.group, '0.0.0.0');
    assert.equal(query?.dst, '224.0.0.1');
    assert.equal(query?.src, NODE);
  });

  it('with local groups, the greeting is their full state as MODE_IS_EXCLUDE', () => {
    const { exchange, take } = harness();
    exchange.localGroupChanged(G2, true);
    exchange.localGroupChanged(G1, true);
    exchange.start();
    assert.deepEqual(recordsOf(take()), [`MODE_IS_EXCLUDE ${G1}`, `MODE_IS_EXCLUDE ${G2}`]);
  });

  for (const [label, random, factor] of [
    ['low', () => 0, 0.9],
    ['high', () => 0.999_999, 1.1],
  ] as const) {
    it(`every peer's full state comes back every refresh interval, jittered within ±10 % (${label} end)`, () => {
      const { exchange, clock, take } = harness({ random });
      exchange.localGroupChanged(G1, true);
      exchange.start();
      clock.advance(0);
      take();
      clock.advance(Math.round(REFRESH_MS * factor) - 1);
      assert.deepEqual(
        reports(take()).filter((frame) => recordsOf([frame]).includes(`MODE_IS_EXCLUDE ${G1}`)),
        [],
      );
      clock.advance(1);
      const refresh = take();
      assert.deepEqual(refresh.map((frame) => frame.peers).sort(), [[P2], [P3]]);
      assert.deepEqual(recordsOf(refresh), [`MODE_IS_EXCLUDE ${G1}`, `MODE_IS_EXCLUDE ${G1}`]);
      assert.deepEqual(queries(refresh), [], 'a refresh asks nothing');
      clock.advance(Math.round(REFRESH_MS * factor));
      assert.equal(take().length, 2);
      exchange.stop();
    });
  }

  it('the refresh period is drawn anew for each peer and period', () => {
    const draws = [0, 0.999_999, 0.5, 0.5];
    const { exchange, clock, take } = harness({ random: () => draws.shift() ?? 0.5 });
    exchange.start();
    take();
    clock.advance(27_000);
    assert.deepEqual(
      take().map((frame) => frame.peers),
      [[P2]],
    );
    clock.advance(6_000);
    assert.deepEqual(
      take().map((frame) => frame.peers),
      [[P3]],
    );
  });

  it("a silent peer's groups expire at the peer timeout and are synced", () => {
    const { exchange, clock, changes } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    clock.advance(30_000);
    exchange.take(join(P3, G1), P3);
    changes.length = 0;
    clock.advance(TIMEOUT_MS - 30_000 - 1);
    assert.deepEqual(changes, []);
    clock.advance(1);
    assert.deepEqual(changes, [{ groups: [G1], peer: undefined }]);
    assert.deepEqual(exchange.peersOf(G1), [P3]);
    assert.equal(exchange.view().peers.find((peer) => peer.address === P2)?.state, 'down');
    clock.advance(30_000);
    assert.deepEqual(exchange.peersOf(G1), []);
    assert.equal(changes.length, 2);
  });

  it('a refresh from the peer keeps its group past the first deadline', () => {
    const { exchange, clock, changes } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    clock.advance(60_000);
    exchange.take(v3Report(P2, [{ type: 'MODE_IS_EXCLUDE', group: G1 }]), P2);
    clock.advance(60_000);
    assert.deepEqual(exchange.peersOf(G1), [P2]);
    assert.equal(changes.length, 1);
  });

  it('a seed from the switch is kept for one timeout unless the peer confirms it', () => {
    const { exchange, clock, changes } = harness();
    exchange.seed(G1, [P2]);
    exchange.seed(G2, [P2, P3]);
    exchange.start();
    assert.deepEqual(exchange.peersOf(G2), [P2, P3]);
    clock.advance(10_000);
    exchange.take(v3Report(P2, [{ type: 'MODE_IS_EXCLUDE', group: G2 }]), P2);
    clock.advance(TIMEOUT_MS - 10_000);
    assert.deepEqual(exchange.peersOf(G1), []);
    assert.deepEqual(exchange.peersOf(G2), [P2]);
    assert.deepEqual(changes, [{ groups: [G1, G2], peer: undefined }]);
  });
});

describe('PeerExchange: reload and stop', () => {
  it("setPeers drops a removed peer's groups at once and greets a new peer", () => {
    const { exchange, clock, take, changes } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    exchange.take(join(P3, G2), P3);
    take();
    changes.length = 0;
    exchange.setPeers([P3, P4]);
    assert.deepEqual(changes, [{ groups: [G1], peer: undefined }]);
    assert.deepEqual(exchange.peersOf(G1), []);
    assert.deepEqual(exchange.peersOf(G2), [P3]);
    const greeting = take();
    assert.deepEqual(
      greeting.map((frame) => [frame.message.kind, frame.peers]),
      [
        ['report', [P4]],
        ['query', [P4]],
      ],
    );
    // The removed peer is unknown now; the new one is heard.
    exchange.take(join(P2, G1), P2);
    assert.equal(exchange.counters.drops['unknown-peer'], 1);
    exchange.take(join(P4, G1), P4);
    assert.deepEqual(exchange.peersOf(G1), [P4]);
    // Local changes and refreshes go to the new list only.
    exchange.localGroupChanged(G1, true);
    clock.advance(REFRESH_MS);
    const later = take();
    assert.ok(later.length > 0);
    assert.ok(later.every((frame) => !frame.peers.includes(P2)));
    assert.deepEqual(later[0]!.peers, [P3, P4]);
  });

  it('stop cancels every timer', () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    exchange.take(join(P2, G1), P2);
    exchange.localGroupChanged(G1, true);
    assert.ok(clock.dueTimes.length > 0);
    exchange.stop();
    assert.deepEqual(clock.dueTimes, []);
    take();
    exchange.take(join(P3, G1), P3);
    clock.advance(10 * REFRESH_MS);
    assert.deepEqual(take(), []);
  });

  it('a send the switch refuses is counted and logged, never thrown', async () => {
    const { exchange, logger } = harness({ refuse: true });
    exchange.start();
    await settle();
    assert.equal(exchange.counters.sendErrors, 4);
    assert.equal(exchange.counters.sent.reports, 0);
    assert.equal(logger.find('sending to peers failed').length, 1);
    exchange.stop();
  });

  it('what was sent is counted per peer', async () => {
    const { exchange } = harness();
    exchange.start();
    await settle();
    assert.deepEqual(exchange.counters.sent, { reports: 2, queries: 2 });
    exchange.stop();
  });
});

describe('PeerExchange: the messages as events (snoop --daemon)', () => {
  it("a peer's report and query are told as they come in, the report with its records", () => {
    const { exchange, notices } = harness({ watched: true });
    exchange.take(
      v3Report(P2, [
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: G1 },
        { type: 'MODE_IS_INCLUDE', group: G2, sources: ['10.0.0.9'] },
      ]),
      P2,
    );
    exchange.take(v3GeneralQuery(P3), P3);
    assert.deepEqual(notices, [
      {
        type: 'peer-report',
        direction: 'in',
        peer: P2,
        records: [
          { type: 'CHANGE_TO_EXCLUDE_MODE', group: G1 },
          { type: 'MODE_IS_INCLUDE', group: G2 },
        ],
      },
      { type: 'peer-query', direction: 'in', peer: P3 },
    ]);
  });

  it('what is dropped is not told', () => {
    const { exchange, notices } = harness({ watched: true });
    exchange.take(join('192.168.60.99', G1), undefined);
    exchange.take(join(NODE, G1), undefined);
    exchange.take(v2Report(P2, G1), P2);
    assert.deepEqual(notices, []);
  });

  it('what goes out is told once per message, with every peer it went to, once the switch took it', async () => {
    const { exchange, clock, notices } = harness({ watched: true });
    exchange.start();
    assert.deepEqual(notices, [], 'not before the switch answered');
    await settle();
    assert.deepEqual(notices, [
      { type: 'peer-report', direction: 'out', peers: [P2, P3], records: [] },
      { type: 'peer-query', direction: 'out', peers: [P2, P3] },
    ]);
    notices.length = 0;
    exchange.localGroupChanged(G1, true);
    clock.advance(0);
    await settle();
    assert.deepEqual(notices, [
      {
        type: 'peer-report',
        direction: 'out',
        peers: [P2, P3],
        records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: G1 }],
      },
    ]);
    exchange.stop();
  });

  it('nothing is built while no one listens, and a message the switch refused is not told', async () => {
    const quiet = harness();
    quiet.exchange.start();
    quiet.exchange.take(join(P2, G1), P2);
    await settle();
    assert.equal(quiet.notices.length, 0);
    quiet.watching.now = true;
    quiet.exchange.take(v3GeneralQuery(P2), P2);
    await settle();
    assert.deepEqual(
      quiet.notices.map((notice) => `${notice.type} ${notice.direction}`),
      ['peer-query in', 'peer-report out'],
    );
    quiet.exchange.stop();
    for (const failure of [{ refuse: true }, { refusedBySwitch: true }]) {
      const refused = harness({ watched: true, ...failure });
      refused.exchange.start();
      await settle();
      assert.deepEqual(refused.notices, []);
      refused.exchange.stop();
    }
  });
});

describe('PeerExchange: IPv6 groups', () => {
  const V6 = groupAddress('ff3e::1234');
  const V6B = groupAddress('ff1e::9');

  it("a local IPv6 member goes to every peer as an MLDv2 report from the gateway MAC's link-local address to ff02::16", async () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    take();
    exchange.localGroupChanged(V6, true);
    exchange.localGroupChanged(G1, true);
    clock.advance(0);
    await settle();
    const frames = take();
    assert.deepEqual(
      frames.map((frame) => [frame.message.kind, frame.src, frame.dst, frame.peers]),
      [
        ['report', NODE, '224.0.0.22', [P2, P3]],
        ['report', 'fe80::ff:fe00:1', 'ff02::16', [P2, P3]],
      ],
    );
    assert.deepEqual(recordsOf(frames), [`CHANGE_TO_EXCLUDE_MODE ${G1}`, `CHANGE_TO_EXCLUDE_MODE ${V6}`]);
    exchange.localGroupChanged(V6, false);
    clock.advance(0);
    await settle();
    assert.deepEqual(recordsOf(take()), [`CHANGE_TO_INCLUDE_MODE ${V6}`]);
  });

  it("a peer's MLDv2 report makes it a member of IPv6 groups, a TO_IN {} takes it out, and it expires like IPv4's", () => {
    const { exchange, clock, changes } = harness();
    exchange.start();
    exchange.take(
      mldReport([
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: V6 },
        { type: 'MODE_IS_EXCLUDE', group: V6B },
      ]),
      P2,
    );
    assert.deepEqual(exchange.peersOf(V6), [P2]);
    assert.deepEqual(exchange.peersOf(V6B), [P2]);
    assert.deepEqual(exchange.groupsWithRemoteMembers().sort(), [V6, V6B].sort());
    exchange.take(mldReport([{ type: 'CHANGE_TO_INCLUDE_MODE', group: V6 }]), P2);
    assert.deepEqual(exchange.peersOf(V6), []);
    clock.advance(TIMEOUT_MS);
    assert.deepEqual(exchange.peersOf(V6B), [], 'expired');
    assert.deepEqual(changes.at(-1), { groups: [V6B], peer: undefined });
  });

  it("a stranger's MLDv2 report changes nothing and is counted", () => {
    const { exchange, changes } = harness();
    exchange.start();
    exchange.take(mldReport([{ type: 'CHANGE_TO_EXCLUDE_MODE', group: V6 }]), P4);
    assert.deepEqual(changes, []);
    assert.equal(exchange.counters.drops['unknown-peer'], 1);
  });

  it("a peer's general query is answered with the full state of both families", async () => {
    const { exchange, clock, take } = harness();
    exchange.start();
    exchange.localGroupChanged(V6, true);
    exchange.localGroupChanged(G1, true);
    clock.advance(0);
    await settle();
    take();
    exchange.take(v3GeneralQuery(P2), P2);
    await settle();
    const answer = take();
    assert.deepEqual(recordsOf(answer), [`MODE_IS_EXCLUDE ${G1}`, `MODE_IS_EXCLUDE ${V6}`]);
    assert.ok(answer.every((frame) => frame.peers.join() === P2));
  });

  it('a seed of an IPv6 group on the switch is kept until the peer timeout', () => {
    const { exchange, clock } = harness();
    exchange.start();
    exchange.seed(V6, [P2]);
    assert.deepEqual(exchange.peersOf(V6), [P2]);
    clock.advance(TIMEOUT_MS);
    assert.deepEqual(exchange.peersOf(V6), []);
  });
});
