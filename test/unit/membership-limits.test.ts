/** What a port and the node may hold: the admission decision, alone and in the MembershipTable. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import {
  type MembershipLimitSettings,
  type MembershipRefusal,
  PortGroupCounts,
  refusalOf,
  UNLIMITED,
} from '../../src/domain/membership/membership-limits.js';
import { MembershipTable } from '../../src/domain/membership/membership-table.js';
import { ANY_SOURCE } from '../../src/domain/membership/source-filter.js';
import { groupAddress, hostAddress, type SourceAddress, sourceAddress } from '../../src/wire/ip-address.js';

const G1 = groupAddress('239.1.1.1');
const H5 = hostAddress('10.1.0.5');
const sources = (...last: number[]): SourceAddress[] => last.map((n) => sourceAddress(`10.9.0.${n}`));
const include = (...last: number[]) => ({ mode: 'include' as const, sources: new Set(sources(...last)) });

describe('refusalOf', () => {
  const limits: MembershipLimitSettings = { maxGroupsPerPort: 2, maxSourcesPerGroup: 2, maxGroups: 3 };
  const base = {
    limits,
    group: G1,
    port: 5,
    host: H5,
    filter: ANY_SOURCE,
    members: undefined,
    groupCount: 0,
    portGroupCount: 0,
  };

  it('admits a join under every limit, and anything with no limits', () => {
    assert.equal(refusalOf(base), undefined);
    assert.equal(
      refusalOf({
        ...base,
        limits: UNLIMITED,
        groupCount: 1e6,
        portGroupCount: 1e6,
        filter: include(...Array.from({ length: 200 }, (_, i) => i)),
      }),
      undefined,
    );
  });

  it('refuses a new group for the node at maxGroups, not a group that has members', () => {
    assert.deepEqual(refusalOf({ ...base, groupCount: 3 }), { reason: 'node-groups', limit: 3 });
    const members = [{ port: 7, host: hostAddress('10.1.0.7'), filter: ANY_SOURCE }];
    assert.equal(refusalOf({ ...base, groupCount: 3, members }), undefined);
    const held = (group: string) => group === base.group;
    assert.equal(
      refusalOf({ ...base, groupCount: 3, heldForOthers: held }),
      undefined,
      'held for the peers: no new one',
    );
    assert.deepEqual(refusalOf({ ...base, groupCount: 3, heldForOthers: () => false }), {
      reason: 'node-groups',
      limit: 3,
    });
  });

  it('refuses a new group for the port at maxGroupsPerPort, not a refresh of one it is in', () => {
    assert.deepEqual(refusalOf({ ...base, portGroupCount: 2 }), { reason: 'port-groups', limit: 2 });
    assert.equal(
      refusalOf({ ...base, portGroupCount: 2, members: [{ port: 5, host: H5, filter: ANY_SOURCE }] }),
      undefined,
    );
  });

  it('refuses a new source past maxSourcesPerGroup; the same sources again, or fewer, pass', () => {
    const members = [{ port: 5, host: H5, filter: include(1, 2) }];
    assert.deepEqual(refusalOf({ ...base, portGroupCount: 1, members, filter: include(1, 2, 3) }), {
      reason: 'group-sources',
      limit: 2,
    });
    assert.equal(refusalOf({ ...base, portGroupCount: 1, members, filter: include(1, 2) }), undefined);
    assert.equal(refusalOf({ ...base, portGroupCount: 1, members, filter: include(2) }), undefined);
    // Another host behind the port counts in the port's filter; another port does not.
    const shared = [...members, { port: 5, host: hostAddress('10.1.0.6'), filter: include(3) }];
    assert.deepEqual(refusalOf({ ...base, portGroupCount: 1, members: shared, filter: include(1, 4) }), {
      reason: 'group-sources',
      limit: 2,
    });
    const otherPort = [{ port: 7, host: hostAddress('10.1.0.7'), filter: include(3, 4) }];
    assert.equal(refusalOf({ ...base, members: otherPort, filter: include(1, 2) }), undefined);
  });
});

describe('PortGroupCounts', () => {
  it('counts groups by port, a group once however many hosts', () => {
    const counts = new PortGroupCounts();
    counts.added(5, G1);
    counts.added(5, G1);
    counts.added(5, groupAddress('239.1.1.2'));
    assert.equal(counts.groupsOf(5), 2);
    counts.removed(5, G1);
    assert.equal(counts.groupsOf(5), 2);
    counts.removed(5, G1);
    assert.equal(counts.groupsOf(5), 1);
    counts.removed(9, G1);
    assert.equal(counts.groupsOf(9), 0);
  });
});

describe('MembershipTable with limits', () => {
  function limited(limits: MembershipLimitSettings) {
    const clock = { t: 1_000, now: () => clock.t };
    const refusals: MembershipRefusal[] = [];
    const timing = { groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 };
    const table = new MembershipTable({
      clock,
      timing,
      fastLeave: true,
      limits,
      onRefusal: (refusal) => refusals.push(refusal),
    });
    return { table, refusals, clock };
  }
  const group = (n: number) => groupAddress(`239.1.1.${n}`);

  it('the (N+1)th group of a port is refused; other ports and refreshes are untouched; a leave makes room', () => {
    const { table, refusals } = limited({ ...UNLIMITED, maxGroupsPerPort: 2 });
    table.report(5, H5, group(1), 2);
    table.report(5, H5, group(2), 2);
    assert.deepEqual(table.report(5, H5, group(3), 2), []);
    assert.deepEqual(refusals, [{ reason: 'port-groups', limit: 2, group: group(3), port: 5, host: H5 }]);
    assert.deepEqual(table.record(5, H5, { type: 'MODE_IS_EXCLUDE', group: group(3), sources: [] }), []);
    assert.equal(refusals.length, 2);
    assert.deepEqual(table.report(7, hostAddress('10.1.0.7'), group(3), 2), [
      { kind: 'members', group: group(3), ports: [7] },
    ]);
    table.report(5, H5, group(1), 2);
    assert.equal(refusals.length, 2);
    assert.deepEqual(table.portsOf(group(3)), [7]);
    table.leave(5, H5, group(1));
    assert.deepEqual(table.report(5, H5, group(3), 2), [{ kind: 'members', group: group(3), ports: [5, 7] }]);
  });

  it('a new source past the limit is refused, the filter kept and the member refreshed', () => {
    const { table, refusals, clock } = limited({ ...UNLIMITED, maxSourcesPerGroup: 2 });
    table.record(5, H5, { type: 'ALLOW_NEW_SOURCES', group: G1, sources: sources(1, 2) });
    clock.t += 100_000;
    assert.deepEqual(table.record(5, H5, { type: 'ALLOW_NEW_SOURCES', group: G1, sources: sources(3) }), []);
    assert.equal(refusals[0]?.reason, 'group-sources');
    const [member] = table.snapshot()[0]!.members;
    assert.deepEqual(member!.filter, { mode: 'include', sources: sources(1, 2) });
    assert.equal(member!.lastReportAt, clock.t);
    // The same sources from another port are its own filter.
    table.record(7, hostAddress('10.1.0.7'), { type: 'ALLOW_NEW_SOURCES', group: G1, sources: sources(3, 4) });
    assert.equal(refusals.length, 1);
  });

  it('a new group for the node past maxGroups is refused for every port; a lowered limit evicts nothing', () => {
    const { table, refusals } = limited({ ...UNLIMITED, maxGroups: 2 });
    table.report(5, H5, group(1), 2);
    table.report(7, hostAddress('10.1.0.7'), group(2), 2);
    table.report(9, hostAddress('10.1.0.9'), group(3), 2);
    assert.deepEqual(
      refusals.map((refusal) => refusal.reason),
      ['node-groups'],
    );
    assert.deepEqual(table.report(9, hostAddress('10.1.0.9'), group(1), 2), [
      { kind: 'members', group: group(1), ports: [5, 9] },
    ]);
    table.reconfigure({ timing: table.timings, fastLeave: true, limits: { ...UNLIMITED, maxGroups: 1 } });
    assert.equal(table.groupCount, 2);
    table.report(5, H5, group(2), 2);
    assert.equal(refusals.length, 1);
    table.removePort(7);
    table.removePort(5);
    table.removePort(9);
    table.report(5, H5, group(4), 2);
    assert.equal(table.groupCount, 1);
  });
});
