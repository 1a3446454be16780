/**
 * What a node tells its peers: change records, batching, retransmission of the current state, reports split to the path
 * MTU.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { PeerAnnouncer, recordsPerReport } from '../../src/domain/peers/announcer.js';
import { encodeReportFrame, encodeReportPacket } from '../../src/domain/peers/report-packet.js';
import { SEAL_LENGTH } from '../../src/domain/peers/peer-seal.js';
import * as igmp from '../../src/packet/igmp/index.js';
import type { PeerReport } from '../../src/domain/peers/announcer.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import * as ethernet from '../../src/packet/ethernet.js';
import { type GroupAddress, groupAddress, hostAddress } from '../../src/wire/ip-address.js';
import { formatIPv4 } from '../../src/wire/ipv4-address.js';

const G1 = groupAddress('239.1.1.1');
const G2 = groupAddress('239.1.1.2');
const G10 = groupAddress('239.1.1.10');
const NODE = hostAddress('192.168.60.11');

const announcer = (pathMtu = 1_500) => new PeerAnnouncer({ pathMtu, retransmitIntervalMs: 1_000 });
const groups = (...list: GroupAddress[]) => new Set(list);
/** The records of some reports, as "TYPE group" lines. */
const recordsOf = (reports: PeerReport[]) =>
  reports.flatMap((report) => report.records.map((record) => `${record.type} ${record.group}`));
const manyGroups = (count: number) =>
  Array.from({ length: count }, (_, index) => groupAddress(formatIPv4(0xef010000 + index)));

describe('recordsPerReport', () => {
  it('is 173 for a 1,500-octet path (a seal kept free), and follows the formula', () => {
    assert.equal(recordsPerReport(1_500), 173);
    assert.equal(recordsPerReport(1_600), 185);
    assert.equal(recordsPerReport(9_000), 1_110);
    assert.equal(recordsPerReport(122), 1);
  });

  it('is 68 for IPv6 on a 1,500-octet path (MLDv2: 48 octets of IP headers, 20 a record)', () => {
    assert.equal(recordsPerReport(1_500, 'ipv6'), 68);
    assert.equal(recordsPerReport(1_280, 'ipv6'), 57);
    assert.equal(recordsPerReport(158, 'ipv6'), 1);
  });

  it('a path too small for one record of either family is refused', () => {
    assert.throws(() => announcer(157), RangeError);
    assert.doesNotThrow(() => announcer(158));
    assert.throws(() => announcer(1_500.5), RangeError);
  });
});

describe('PeerAnnouncer', () => {
  it('a first member sends TO_EX {}, a last leave TO_IN {}; nothing is sent before flush', () => {
    const a = announcer();
    a.change(groups(), groups(G1));
    assert.equal(a.hasPending, true);
    assert.deepEqual(a.flush(0), [
      { kind: 'report', version: 3, records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: G1, sources: [] }] },
    ]);
    assert.equal(a.hasPending, false);
    a.change(groups(G1), groups());
    assert.deepEqual(recordsOf(a.flush(1_500)), ['CHANGE_TO_INCLUDE_MODE 239.1.1.1']);
  });

  it('an unchanged set, or an empty flush, sends nothing', () => {
    const a = announcer();
    assert.deepEqual(a.flush(0), []);
    a.change(groups(G1), groups(G1));
    assert.equal(a.hasPending, false);
    assert.deepEqual(a.flush(0), []);
    assert.equal(a.nextDeadline(), undefined);
  });

  it('batches a burst into one flush, sorted by address, split at R records', () => {
    const a = announcer();
    let before = groups();
    for (const group of manyGroups(1_000)) {
      const after = new Set(before).add(group);
      a.change(before, after);
      before = after;
    }
    const reports = a.flush(0);
    assert.equal(reports.length, Math.ceil(1_000 / 173));
    assert.deepEqual(
      reports.map((report) => report.records.length),
      [173, 173, 173, 173, 173, 135],
    );
    assert.deepEqual(
      reports.flatMap((report) => report.records.map((record) => record.group)),
      manyGroups(1_000),
    );
  });

  it('173 records make one report, 174 two', () => {
    const a = announcer();
    a.change(groups(), new Set(manyGroups(173)));
    assert.deepEqual(
      a.flush(0).map((report) => report.records.length),
      [173],
    );
    const b = announcer();
    b.change(groups(), new Set(manyGroups(174)));
    assert.deepEqual(
      b.flush(0).map((report) => report.records.length),
      [173, 1],
    );
  });

  it('sends each change once more after the interval, with the current state', () => {
    const a = announcer();
    a.change(groups(), groups(G1, G2));
    assert.deepEqual(recordsOf(a.flush(0)), ['CHANGE_TO_EXCLUDE_MODE 239.1.1.1', 'CHANGE_TO_EXCLUDE_MODE 239.1.1.2']);
    assert.equal(a.nextDeadline(), 1_000);
    assert.deepEqual(a.flush(999), []);
    assert.deepEqual(recordsOf(a.flush(1_000)), [
      'CHANGE_TO_EXCLUDE_MODE 239.1.1.1',
      'CHANGE_TO_EXCLUDE_MODE 239.1.1.2',
    ]);
    assert.equal(a.nextDeadline(), undefined, 'once');
    assert.deepEqual(a.flush(5_000), []);
  });

  it('a join then a leave within the retransmit interval does not re-join', () => {
    const a = announcer();
    a.change(groups(), groups(G1));
    assert.deepEqual(recordsOf(a.flush(0)), ['CHANGE_TO_EXCLUDE_MODE 239.1.1.1']);
    a.change(groups(G1), groups());
    assert.deepEqual(recordsOf(a.flush(500)), ['CHANGE_TO_INCLUDE_MODE 239.1.1.1']);
    // The join's retransmission was due at 1,000: the leave replaced it, and it carries the leave.
    assert.equal(a.nextDeadline(), 1_500);
    assert.deepEqual(a.flush(1_000), []);
    assert.deepEqual(recordsOf(a.flush(1_500)), ['CHANGE_TO_INCLUDE_MODE 239.1.1.1']);
    assert.deepEqual(a.flush(10_000), []);
  });

  it('the retransmission carries the state at the time it goes out', () => {
    const a = announcer();
    a.change(groups(), groups(G1));
    a.flush(0);
    // Leave and join again before any flush: peers still believe "member", nothing new to say now.
    a.change(groups(G1), groups());
    a.change(groups(), groups(G1));
    assert.deepEqual(a.flush(1_000), [
      { kind: 'report', version: 3, records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: G1, sources: [] }] },
    ]);
    assert.equal(a.nextDeadline(), undefined);
  });

  it('a join and a leave before a flush send nothing at all', () => {
    const a = announcer();
    a.change(groups(), groups(G1));
    a.change(groups(G1), groups());
    assert.deepEqual(a.flush(0), []);
    assert.equal(a.nextDeadline(), undefined);
  });

  it('full state is MODE_IS_EXCLUDE {} per group, sorted and split; no groups is one empty report', () => {
    const a = announcer();
    assert.deepEqual(a.fullState(), [{ kind: 'report', version: 3, records: [] }]);
    a.change(groups(), groups(G10, G2, G1, groupAddress('224.0.0.251')));
    assert.deepEqual(recordsOf(a.fullState()), [
      'MODE_IS_EXCLUDE 239.1.1.1',
      'MODE_IS_EXCLUDE 239.1.1.2',
      'MODE_IS_EXCLUDE 239.1.1.10',
    ]);
    // Full state does not touch what the changes still have to send.
    assert.equal(a.hasPending, true);
    const b = announcer();
    b.change(groups(), new Set(manyGroups(400)));
    assert.deepEqual(
      b.fullState().map((report) => report.records.length),
      [173, 173, 54],
    );
  });

  it('never announces link-local groups', () => {
    const a = announcer();
    a.change(groups(), groups(groupAddress('224.0.0.251')));
    assert.deepEqual(a.flush(0), []);
  });

  for (const pathMtu of [1_500, 1_600, 1_280, 9_000]) {
    it(`every encoded report fits a ${pathMtu}-octet path once sealed and encapsulated (at most pathMtu - 82)`, () => {
      const a = announcer(pathMtu);
      const limit = a.recordLimit();
      a.change(groups(), new Set(manyGroups(3 * limit + 1)));
      const reports = [...a.flush(0), ...a.fullState()];
      for (const [index, report] of reports.entries()) {
        const packet = encodeReportPacket({ report, source: NODE, identification: index });
        assert.ok(
          packet.length <= pathMtu - 50 - SEAL_LENGTH,
          `${packet.length} octets for ${report.records.length} records`,
        );
        const decoded = ipv4.decode(packet);
        assert.equal(decoded.headerLength, 24);
        assert.equal(ipv4.hasRouterAlert(decoded.header), true);
        assert.equal(decoded.header.ttl, 1);
        assert.equal(decoded.header.src, NODE);
        assert.equal(decoded.header.dst, '224.0.0.22');
        assert.deepEqual(igmp.decode(packet, decoded.payloadStart, decoded.payloadEnd), report);
      }
      // R is the most that fits: one record more would not.
      const full = reports.find((report) => report.records.length === limit)!;
      const oneMore: PeerReport = {
        ...full,
        records: [...full.records, { type: 'MODE_IS_EXCLUDE', group: G1, sources: [] }],
      };
      const oneMoreLength = encodeReportPacket({ report: oneMore, source: NODE, identification: 0 }).length;
      assert.ok(oneMoreLength > pathMtu - 50 - SEAL_LENGTH);
    });
  }

  it('a 1,500-octet path: 173 records are a 1,416-octet packet, 174 would be 1,424 (over 1,450 - 32)', () => {
    const records = manyGroups(174).map((group) => ({ type: 'MODE_IS_EXCLUDE' as const, group, sources: [] }));
    const size = (count: number) =>
      encodeReportPacket({
        report: { kind: 'report', version: 3, records: records.slice(0, count) },
        source: NODE,
        identification: 0,
      }).length;
    assert.equal(size(173), 1_416);
    assert.equal(size(174), 1_424);
    assert.equal(size(0), 32, 'the heartbeat');
  });

  it('the frame goes to 224.0.0.22 from the given MAC', () => {
    const frame = encodeReportFrame(
      { report: { kind: 'report', version: 3, records: [] }, source: NODE, identification: 7 },
      '02:00:00:00:00:01',
    );
    const header = ethernet.decode(frame);
    assert.equal(header.header.dst, '01:00:5e:00:00:16');
    assert.equal(header.header.src, '02:00:00:00:00:01');
    assert.equal(frame.length, 14 + 32);
  });

  it('IPv6 groups go in MLDv2 reports of their own, after the IPv4 ones, split at their own R', () => {
    const a = announcer();
    const v6 = Array.from({ length: 70 }, (_, index) => groupAddress(`ff3e::${(index + 1).toString(16)}`));
    a.change(groups(), new Set([...v6, G1]));
    const reports = a.flush(0);
    assert.deepEqual(
      reports.map((report) => [report.version, report.records.length]),
      [
        [3, 1],
        [2, 68],
        [2, 2],
      ],
    );
    for (const report of reports.filter((report) => report.version === 2)) {
      const frame = encodeReportFrame({ report, source: NODE, identification: 0 }, '02:00:00:00:00:01');
      assert.ok(frame.length - 14 <= 1_500 - 50, `${frame.length - 14} octets`);
      const header = ethernet.decode(frame);
      assert.equal(header.header.dst, '33:33:00:00:00:16');
    }
    assert.deepEqual(
      a.fullState().map((report) => report.version),
      [3, 2, 2],
    );
  });

  it('setLocalMembers takes one group at a time; a repeat is no change', () => {
    const a = announcer();
    a.setLocalMembers(G2, true);
    a.setLocalMembers(G1, true);
    a.setLocalMembers(G1, true);
    assert.deepEqual(recordsOf(a.flush(0)), ['CHANGE_TO_EXCLUDE_MODE 239.1.1.1', 'CHANGE_TO_EXCLUDE_MODE 239.1.1.2']);
    a.setLocalMembers(G2, false);
    a.setLocalMembers(G10, false);
    assert.deepEqual(recordsOf(a.flush(100)), ['CHANGE_TO_INCLUDE_MODE 239.1.1.2']);
    assert.deepEqual(recordsOf(a.fullState()), ['MODE_IS_EXCLUDE 239.1.1.1']);
  });
});
