/** The daemon's group state machine: joins, leaves, expiry, compatibility, on a fake clock. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MembershipTable, type MembershipEffect } from '../../src/domain/membership/membership-table.js';
import { groupAddress, hostAddress, sourceAddress } from '../../src/wire/ip-address.js';

const timing = { groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 };
function table(fastLeave: boolean) {
  const clock = {
    t: 1_000,
    now() {
      return this.t;
    },
  };
  return { clock, members: new MembershipTable({ clock, timing, fastLeave }) };
}
const members = (group: string, ports: number[]): MembershipEffect => ({
  kind: 'members',
  group: groupAddress(group),
  ports,
});

describe('MembershipTable', () => {
  it('a first report adds the port; a second host or a repeat changes nothing', () => {
    const { members: m } = table(true);
    assert.deepEqual(m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2), [members('239.1.1.1', [5])]);
    assert.deepEqual(m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2), []);
    assert.deepEqual(m.report(7, hostAddress('10.1.0.7'), groupAddress('239.1.1.1'), 2), [
      members('239.1.1.1', [5, 7]),
    ]);
    assert.deepEqual(
      m.record(5, hostAddress('10.1.0.6'), { type: 'MODE_IS_EXCLUDE', group: groupAddress('239.1.1.1'), sources: [] }),
      [],
    );
  });

  it('fast leave: the port goes at once, unless another host behind it is still a member', () => {
    const { members: m } = table(true);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2);
    m.report(5, hostAddress('10.1.0.6'), groupAddress('239.1.1.1'), 2);
    m.report(7, hostAddress('10.1.0.7'), groupAddress('239.1.1.1'), 2);
    assert.deepEqual(m.leave(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1')), []);
    assert.deepEqual(m.leave(5, hostAddress('10.1.0.6'), groupAddress('239.1.1.1')), [members('239.1.1.1', [7])]);
    assert.deepEqual(
      m.record(7, hostAddress('10.1.0.7'), {
        type: 'CHANGE_TO_INCLUDE_MODE',
        group: groupAddress('239.1.1.1'),
        sources: [],
      }),
      [members('239.1.1.1', [])],
    );
    assert.deepEqual(m.snapshot(), []);
  });

  it('without fast leave: a leave asks the port; an answer keeps it, silence ends it after the LMQT', () => {
    const { clock, members: m } = table(false);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2);
    assert.deepEqual(m.leave(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1')), [
      { kind: 'query', group: '239.1.1.1', port: 5 },
    ]);
    assert.deepEqual(m.leave(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1')), [], 'asked once');
    assert.equal(m.nextDeadline(), 3_000);
    clock.t = 2_500;
    assert.deepEqual(m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2), [], 'still a member');
    clock.t = 3_000;
    assert.deepEqual(m.expire(), []);
    m.leave(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'));
    clock.t = 4_999;
    assert.deepEqual(m.expire(), []);
    clock.t = 5_000;
    assert.deepEqual(m.expire(), [members('239.1.1.1', [])]);
  });

  it('a member that falls silent expires after the Group Membership Interval', () => {
    const { clock, members: m } = table(true);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2);
    clock.t = 100_000;
    m.report(7, hostAddress('10.1.0.7'), groupAddress('239.1.1.1'), 2);
    assert.equal(m.nextDeadline(), 261_000);
    clock.t = 260_999;
    assert.deepEqual(m.expire(), []);
    clock.t = 261_000;
    assert.deepEqual(m.expire(), [members('239.1.1.1', [7])]);
    clock.t = 360_000;
    assert.deepEqual(m.expire(), [members('239.1.1.1', [])]);
    assert.equal(m.nextDeadline(), undefined);
  });

  it('IGMPv3 filters per RFC 3376 §6.4; INCLUDE {} is a leave', () => {
    const { members: m } = table(true);
    assert.deepEqual(
      m.record(5, hostAddress('10.1.0.5'), {
        type: 'ALLOW_NEW_SOURCES',
        group: groupAddress('232.1.1.1'),
        sources: [sourceAddress('10.9.9.1')],
      }),
      [members('232.1.1.1', [5])],
    );
    m.record(5, hostAddress('10.1.0.5'), {
      type: 'ALLOW_NEW_SOURCES',
      group: groupAddress('232.1.1.1'),
      sources: [sourceAddress('10.9.9.2')],
    });
    assert.deepEqual(m.snapshot()[0]?.members[0]?.filter, { mode: 'include', sources: ['10.9.9.1', '10.9.9.2'] });
    assert.deepEqual(
      m.record(5, hostAddress('10.1.0.5'), {
        type: 'BLOCK_OLD_SOURCES',
        group: groupAddress('232.1.1.1'),
        sources: [sourceAddress('10.9.9.1'), sourceAddress('10.9.9.2')],
      }),
      [members('232.1.1.1', [])],
    );
  });

  it('host compatibility (§7.3.2): with a v1 host, leaves are ignored; with v2, BLOCK and TO_EX sources are', () => {
    const { clock, members: m } = table(true);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 1);
    assert.deepEqual(
      m.leave(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1')),
      [],
      'a v1 host never says it leaves',
    );
    assert.deepEqual(
      m.record(5, hostAddress('10.1.0.5'), {
        type: 'CHANGE_TO_INCLUDE_MODE',
        group: groupAddress('239.1.1.1'),
        sources: [],
      }),
      [],
    );
    assert.equal(m.snapshot()[0]?.members[0]?.compatibility, 1);

    m.report(6, hostAddress('10.1.0.6'), groupAddress('239.2.2.2'), 2);
    m.record(6, hostAddress('10.1.0.6'), {
      type: 'CHANGE_TO_EXCLUDE_MODE',
      group: groupAddress('239.2.2.2'),
      sources: [sourceAddress('10.9.9.1')],
    });
    assert.deepEqual(m.snapshot()[1]?.members[0]?.filter, { mode: 'exclude', sources: [] }, 'TO_EX sources ignored');
    assert.deepEqual(
      m.record(6, hostAddress('10.1.0.6'), {
        type: 'BLOCK_OLD_SOURCES',
        group: groupAddress('239.2.2.2'),
        sources: [sourceAddress('10.9.9.2')],
      }),
      [],
    );
    assert.deepEqual(
      m.leave(6, hostAddress('10.1.0.6'), groupAddress('239.2.2.2')),
      [members('239.2.2.2', [])],
      'a v2 leave counts in v2 mode',
    );

    // after the Older Host Present Interval the port is v3 again
    clock.t += 260_000;
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2);
    assert.equal(m.snapshot()[0]?.members[0]?.compatibility, 2);
    clock.t += 260_000;
    m.record(5, hostAddress('10.1.0.5'), { type: 'MODE_IS_EXCLUDE', group: groupAddress('239.1.1.1'), sources: [] });
    assert.equal(m.snapshot()[0]?.members[0]?.compatibility, 3);
  });

  it('a removed port leaves every group at once', () => {
    const { members: m } = table(false);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.1.1.1'), 2);
    m.report(5, hostAddress('10.1.0.5'), groupAddress('239.2.2.2'), 2);
    m.report(7, hostAddress('10.1.0.7'), groupAddress('239.2.2.2'), 2);
    assert.deepEqual(m.removePort(5), [members('239.1.1.1', []), members('239.2.2.2', [7])]);
    assert.deepEqual(
      m.snapshot().map((g) => [g.group, g.ports]),
      [['239.2.2.2', [7]]],
    );
  });
});
