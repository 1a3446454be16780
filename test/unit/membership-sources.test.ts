/**
 * Per-port source filters of the membership table: the merge, what counts as a change, and each record type's effect.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import {
  type MembershipEffect,
  type MembershipRecord,
  MembershipTable,
} from '../../src/domain/membership/membership-table.js';
import { admits, mergeFilters, type SourceFilter } from '../../src/domain/membership/source-filter.js';
import { Querier } from '../../src/controllers/daemon/loop/querier.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import type { IgmpMessage } from '../../src/packet/igmp/index.js';
import { FakeClock } from '../fakes/fake-clock.js';
import {
  type GroupAddress,
  groupAddress,
  type HostAddress,
  hostAddress,
  type SourceAddress,
  sourceAddress,
} from '../../src/wire/ip-address.js';

const timing = { groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 };
const G = groupAddress('239.1.1.1');
const S1 = sourceAddress('10.9.0.1');
const S2 = sourceAddress('10.9.0.2');
const S3 = sourceAddress('10.9.0.3');
const hostA = hostAddress('10.1.0.5');
const hostB = hostAddress('10.1.0.6');
const hostC = hostAddress('10.1.0.7');

function table(fastLeave = true) {
  const clock = {
    t: 1_000,
    now() {
      return this.t;
    },
  };
  return { clock, members: new MembershipTable({ clock, timing, fastLeave }) };
}

const include = (...sources: SourceAddress[]): SourceFilter => ({ mode: 'include', sources: new Set(sources) });
const exclude = (...sources: SourceAddress[]): SourceFilter => ({ mode: 'exclude', sources: new Set(sources) });
const members = (group: GroupAddress, ports: number[]): MembershipEffect => ({ kind: 'members', group, ports });

/** A filter in a comparable form: mode and sorted sources. */
function plain(filter: SourceFilter | undefined): { mode: string; sources: string[] } | undefined {
  return filter === undefined ? undefined : { mode: filter.mode, sources: [...filter.sources].sort() };
}

function filtersOf(table: MembershipTable, group: GroupAddress = G) {
  return table.portFiltersOf(group).map(({ port, filter }) => ({ port, ...plain(filter) }));
}

function record(type: MembershipRecord['type'], ...sources: SourceAddress[]): MembershipRecord {
  return { type, group: G, sources };
}

describe('mergeFilters and admits', () => {
  const cases: Array<{ name: string; filters: SourceFilter[]; merged: SourceFilter | undefined }> = [
    { name: 'include + include: the union', filters: [include(S1, S2), include(S2, S3)], merged: include(S1, S2, S3) },
    {
      name: 'include + exclude: exclude of what the exclude blocks and no include asks',
      filters: [include(S1), exclude(S1, S2)],
      merged: exclude(S2),
    },
    { name: 'exclude + exclude: what both block', filters: [exclude(S1, S2), exclude(S2, S3)], merged: exclude(S2) },
    { name: 'any source wins over every block', filters: [exclude(S1), exclude()], merged: exclude() },
    { name: 'one filter: itself', filters: [include(S3)], merged: include(S3) },
    { name: 'no filter: none', filters: [], merged: undefined },
  ];
  for (const { name, filters, merged } of cases) {
    it(name, () => assert.deepEqual(plain(mergeFilters(filters)), plain(merged)));
  }

  it('admits: include passes its sources only, exclude every source but its own', () => {
    assert.equal(admits(include(S1), S1), true);
    assert.equal(admits(include(S1), S2), false);
    assert.equal(admits(include(), S1), false);
    assert.equal(admits(exclude(S1), S1), false);
    assert.equal(admits(exclude(S1), S2), true);
    assert.equal(admits(exclude(), S3), true);
  });
});

describe('MembershipTable.portFiltersOf', () => {
  it('is empty for an unknown group, sorted by port otherwise', () => {
    const { members: m } = table();
    assert.deepEqual(m.portFiltersOf(G), []);
    m.record(9, hostC, record('MODE_IS_EXCLUDE', S1));
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1, S2));
    assert.deepEqual(filtersOf(m), [
      { port: 5, mode: 'include', sources: [S1, S2] },
      { port: 9, mode: 'exclude', sources: [S1] },
    ]);
  });

  it('merges two hosts behind one port', () => {
    const { members: m } = table();
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1));
    m.record(5, hostB, record('MODE_IS_INCLUDE', S2));
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1, S2] }]);
    m.record(5, hostC, record('MODE_IS_EXCLUDE', S1, S3));
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'exclude', sources: [S3] }]);
  });

  it('still counts a host whose leave is being asked about', () => {
    const { clock, members: m } = table(false);
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1));
    m.record(5, hostB, record('MODE_IS_INCLUDE', S2));
    assert.deepEqual(m.record(5, hostB, record('CHANGE_TO_INCLUDE_MODE')), [{ kind: 'query', group: G, port: 5 }]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1, S2] }]);
    clock.t += timing.lastMemberQueryTimeMs;
    assert.deepEqual(m.expire(), [members(G, [5])], 'S2 is no longer wanted: a change with the same ports');
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1] }]);
  });

  // One host per port: what the port is forwarded right after the record, by the router-side tables of RFC 3376 §6.4
  // (sources the record stops asking for run out with their timers: test/unit/membership-router-state.test.ts).
  // With fast leave (as here) nobody is asked. `unchanged`: forwarding stays as it was.
  const transitions: Array<{
    name: string;
    from: MembershipRecord;
    next: MembershipRecord;
    to: SourceFilter;
    unchanged?: true;
  }> = [
    {
      name: 'INCLUDE(A) + ALLOW(B) = INCLUDE(A+B)',
      from: record('MODE_IS_INCLUDE', S1),
      next: record('ALLOW_NEW_SOURCES', S3),
      to: include(S1, S3),
    },
    {
      name: 'EXCLUDE(X) + ALLOW(A) = EXCLUDE(X-A)',
      from: record('MODE_IS_EXCLUDE', S1, S2),
      next: record('ALLOW_NEW_SOURCES', S1),
      to: exclude(S2),
    },
    {
      name: 'INCLUDE(A) + BLOCK(B) = INCLUDE(A-B)',
      from: record('MODE_IS_INCLUDE', S1, S2),
      next: record('BLOCK_OLD_SOURCES', S2),
      to: include(S1),
    },
    {
      name: 'EXCLUDE(X) + BLOCK(A) = EXCLUDE(X+A)',
      from: record('MODE_IS_EXCLUDE', S1),
      next: record('BLOCK_OLD_SOURCES', S2),
      to: exclude(S1, S2),
    },
    {
      name: 'INCLUDE(A) + TO_IN(B) = INCLUDE(A+B), A−B lowered',
      from: record('MODE_IS_INCLUDE', S1),
      next: record('CHANGE_TO_INCLUDE_MODE', S2),
      to: include(S1, S2),
    },
    {
      name: 'EXCLUDE(X,Y) + TO_IN(A) = EXCLUDE(X+A, Y−A), group timer lowered',
      from: record('MODE_IS_EXCLUDE', S1),
      next: record('CHANGE_TO_INCLUDE_MODE', S2),
      to: exclude(S1),
      unchanged: true,
    },
    {
      name: 'INCLUDE(A) + TO_EX(B) = EXCLUDE(B)',
      from: record('MODE_IS_INCLUDE', S1),
      next: record('CHANGE_TO_EXCLUDE_MODE', S2),
      to: exclude(S2),
    },
    // An EXCLUDE record is never split over reports: with fast leave the port's one host excludes exactly what it
    // names, at once.
    {
      name: 'EXCLUDE(X) + TO_EX(Y) = EXCLUDE(Y)',
      from: record('MODE_IS_EXCLUDE', S1),
      next: record('CHANGE_TO_EXCLUDE_MODE', S3),
      to: exclude(S3),
    },
    {
      name: 'INCLUDE(A) + IS_IN(B) = INCLUDE(A+B)',
      from: record('MODE_IS_INCLUDE', S1),
      next: record('MODE_IS_INCLUDE', S2, S3),
      to: include(S1, S2, S3),
    },
    {
      name: 'INCLUDE(A) + IS_EX(B) = EXCLUDE(B)',
      from: record('MODE_IS_INCLUDE', S1),
      next: record('MODE_IS_EXCLUDE', S1),
      to: exclude(S1),
    },
    {
      name: 'EXCLUDE(X) + IS_EX(Y) = EXCLUDE(Y)',
      from: record('MODE_IS_EXCLUDE', S1),
      next: record('MODE_IS_EXCLUDE', S2),
      to: exclude(S2),
    },
  ];
  for (const { name, from, next, to, unchanged } of transitions) {
    it(`${name}, ${unchanged ? 'no change' : 'a change of the same ports'}`, () => {
      const { members: m } = table();
      m.record(5, hostA, from);
      m.record(7, hostC, record('MODE_IS_EXCLUDE'));
      assert.deepEqual(m.record(5, hostA, next), unchanged ? [] : [members(G, [5, 7])]);
      assert.deepEqual(filtersOf(m), [
        { port: 5, ...plain(to) },
        { port: 7, mode: 'exclude', sources: [] },
      ]);
    });
  }

  it('BLOCK of the last included source and TO_IN {} are leaves', () => {
    const { members: m } = table();
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1));
    assert.deepEqual(m.record(5, hostA, record('BLOCK_OLD_SOURCES', S1)), [members(G, [])]);
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1));
    assert.deepEqual(m.record(5, hostA, record('CHANGE_TO_INCLUDE_MODE')), [members(G, [])]);
    assert.deepEqual(m.portFiltersOf(G), []);
  });
});

describe('MembershipTable: a change of filter alone is a change', () => {
  it('A adds S3, C unblocks S1: each a members effect with the same ports; the same report again: none', () => {
    const { members: m } = table();
    assert.deepEqual(m.record(5, hostA, record('MODE_IS_INCLUDE', S1)), [members(G, [5])]);
    assert.deepEqual(m.record(7, hostC, record('MODE_IS_EXCLUDE', S1)), [members(G, [5, 7])]);
    assert.deepEqual(m.record(5, hostA, record('ALLOW_NEW_SOURCES', S3)), [members(G, [5, 7])], 'A adds S3');
    assert.deepEqual(m.record(7, hostC, record('ALLOW_NEW_SOURCES', S1)), [members(G, [5, 7])], 'C unblocks S1');
    assert.deepEqual(m.record(5, hostA, record('MODE_IS_INCLUDE', S3, S1)), [], 'the same filter again');
    assert.deepEqual(m.record(7, hostC, record('MODE_IS_EXCLUDE')), [], 'the same filter again');
    assert.deepEqual(m.record(5, hostA, record('ALLOW_NEW_SOURCES', S1)), [], 'a source already wanted');
  });

  it('a second host changing nothing of its port’s merged filter is no change', () => {
    const { members: m } = table();
    m.record(5, hostA, record('MODE_IS_EXCLUDE'));
    assert.deepEqual(m.record(5, hostB, record('MODE_IS_INCLUDE', S1)), [], 'EXCLUDE {} already admits S1');
    assert.deepEqual(m.record(5, hostB, record('MODE_IS_INCLUDE', S2)), []);
  });

  it('a v2 host on the port turns the port’s filter into EXCLUDE {}; its v3 hosts’ blocks do not count', () => {
    const { members: m } = table();
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1));
    assert.deepEqual(m.report(5, hostB, G, 2), [members(G, [5])]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'exclude', sources: [] }]);
    assert.deepEqual(
      m.record(5, hostA, record('CHANGE_TO_EXCLUDE_MODE', S2)),
      [],
      'TO_EX {S2} counts as TO_EX {} in v2 mode',
    );
    assert.deepEqual(m.record(5, hostA, record('BLOCK_OLD_SOURCES', S1)), [], 'BLOCK is ignored in v2 mode');
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'exclude', sources: [] }]);
  });

  it('restore keeps each member’s filter, and says so only when something changed', () => {
    const { members: m } = table();
    const saved = (host: HostAddress, port: number, filter: SourceFilter) => ({
      group: G,
      port,
      host,
      filter,
      lastReportAt: 900,
      compatibility: 3 as const,
    });
    assert.deepEqual(m.restore([saved(hostA, 5, include(S1, S2)), saved(hostC, 7, exclude(S1))]), [members(G, [5, 7])]);
    assert.deepEqual(filtersOf(m), [
      { port: 5, mode: 'include', sources: [S1, S2] },
      { port: 7, mode: 'exclude', sources: [S1] },
    ]);
    assert.deepEqual(m.restore([saved(hostA, 5, include(S2, S1))]), [], 'the same again');
    assert.deepEqual(m.restore([saved(hostA, 5, include(S1))]), [members(G, [5, 7])], 'a filter alone changed');
    assert.deepEqual(m.snapshot()[0]?.members[0]?.filter, { mode: 'include', sources: [S1] });
  });
});

describe('MembershipTable without fast leave: sources a host stops wanting', () => {
  it('BLOCK: the port is asked about the sources, which stay for the LMQT, then go', () => {
    const { clock, members: m } = table(false);
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1, S2));
    assert.deepEqual(m.record(5, hostA, record('BLOCK_OLD_SOURCES', S2, S3)), [
      { kind: 'query', group: G, port: 5, sources: [S2] },
    ]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1, S2] }], 'S2 still forwarded');
    assert.deepEqual(m.snapshot()[0]?.members[0]?.filter, { mode: 'include', sources: [S1, S2] }, 'the forwarded view');
    assert.equal(m.nextDeadline(), 1_000 + timing.lastMemberQueryTimeMs);
    clock.t += timing.lastMemberQueryTimeMs - 1;
    assert.deepEqual(m.expire(), []);
    clock.t += 1;
    assert.deepEqual(m.expire(), [members(G, [5])]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1] }]);
    assert.equal(m.nextDeadline(), 1_000 + timing.groupMembershipIntervalMs);
  });

  it('TO_IN dropping sources asks about them; another host that answers keeps them', () => {
    const { clock, members: m } = table(false);
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1, S2));
    assert.deepEqual(m.record(5, hostA, record('CHANGE_TO_INCLUDE_MODE', S1, S3)), [
      members(G, [5]),
      { kind: 'query', group: G, port: 5, sources: [S2] },
    ]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1, S2, S3] }]);
    m.record(5, hostB, record('MODE_IS_INCLUDE', S2));
    clock.t += timing.lastMemberQueryTimeMs;
    assert.deepEqual(m.expire(), [], 'hostB wants S2: nothing changes');
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1, S2, S3] }]);
  });

  it('EXCLUDE members: a new block asks about it; EXCLUDE to INCLUDE asks about the whole group', () => {
    const { clock, members: m } = table(false);
    m.record(5, hostA, record('MODE_IS_EXCLUDE', S1));
    assert.deepEqual(m.record(5, hostA, record('BLOCK_OLD_SOURCES', S1, S2)), [
      { kind: 'query', group: G, port: 5, sources: [S2] },
    ]);
    assert.deepEqual(m.record(5, hostA, record('CHANGE_TO_INCLUDE_MODE', S3)), [{ kind: 'query', group: G, port: 5 }]);
    assert.deepEqual(
      filtersOf(m),
      [{ port: 5, mode: 'exclude', sources: [S1] }],
      'everything wanted before still forwarded',
    );
    clock.t += timing.lastMemberQueryTimeMs;
    assert.deepEqual(m.expire(), [members(G, [5])]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S3] }]);
  });

  it('with fast leave the sources go at once and nobody is asked', () => {
    const { members: m } = table(true);
    m.record(5, hostA, record('MODE_IS_INCLUDE', S1, S2));
    assert.deepEqual(m.record(5, hostA, record('BLOCK_OLD_SOURCES', S2)), [members(G, [5])]);
    assert.deepEqual(filtersOf(m), [{ port: 5, mode: 'include', sources: [S1] }]);
  });
});

describe('Querier: group-and-source-specific queries', () => {
  function querier(versions: Array<2 | 3>) {
    const clock = new FakeClock();
    const sent: Array<{ at: number; ports: readonly number[]; dst: string; message: IgmpMessage }> = [];
    const q = new Querier({
      versions,
      queryIntervalMs: 125_000,
      queryResponseIntervalMs: 10_000,
      lastMemberQueryIntervalMs: 1_000,
      robustness: 2,
      source: () => ({ address: '10.1.0.1', mac: '02:00:00:00:00:01' }),
      ports: () => [5],
      send: async (frame, ports) => {
        const event = decodeFrame(ipLocator(1), frame, { frame: 1, ts: 0 });
        assert.ok(event?.kind === 'igmp', 'the querier sends decodable IGMP');
        sent.push({ at: clock.monotonicMs(), ports, dst: event.dst, message: event.message });
        return ports.length;
      },
      onError: (error) => assert.fail(String(error)),
      timers: clock,
    });
    return { q, sent, clock };
  }
  const sourcesOf = (message: IgmpMessage) =>
    message.kind === 'query' && message.version === 3 ? message.sources : undefined;

  it('v3: Robustness queries to the group about the sources, LMQI apart; a long list in queries that each fit a frame', () => {
    const { q, sent, clock } = querier([3]);
    q.groupQueries(G, 5, 3, { sources: [S1, S2] });
    clock.advance(5_000);
    assert.deepEqual(
      sent.map((s) => [s.at, s.ports, s.dst, sourcesOf(s.message)]),
      [
        [0, [5], G, [S1, S2]],
        [1_000, [5], G, [S1, S2]],
      ],
    );
    const many = Array.from({ length: 400 }, (_, i) => sourceAddress(`10.8.${i >> 7}.${(i & 127) + 1}`));
    const { q: q2, sent: sent2 } = querier([3]);
    q2.groupQueries(G, 5, 3, { sources: many });
    q2.stop();
    assert.deepEqual(
      sent2.map((s) => sourcesOf(s.message)?.length),
      [366, 34],
    );
    assert.deepEqual(
      sent2.flatMap((s) => sourcesOf(s.message) ?? []),
      many,
    );
  });

  it('v2 has no source list: it asks about the group', () => {
    const { q, sent } = querier([2]);
    q.groupQueries(G, 5, 2, { sources: [S1] });
    q.stop();
    assert.equal(sent.length, 1);
    assert.ok(sent[0]!.message.kind === 'query' && sent[0]!.message.version === 2 && sent[0]!.message.group === G);
  });
});
