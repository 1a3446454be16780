/**
 * The router-side source state of each member (RFC 3376 §6): records add to it by the tables of
 * §6.4.1 and §6.4.2, its timers run it down (§6.3, §6.5), and it survives a restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import {
  type MembershipEffect,
  type MembershipRecord,
  MembershipTable,
} from '../../src/domain/membership/membership-table.js';
import { PodPorts } from '../../src/domain/pods/pod-ports.js';
import { podName } from '../../src/domain/pods/pod-directory.js';
import {
  restoreSavedState,
  savedStateInTurns,
  savedStateNow,
  savedStateOf,
} from '../../src/controllers/daemon/state/saved-state.js';
import { parseSavedState } from '../../src/controllers/daemon/state/state-format.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { groupAddress, hostAddress, type SourceAddress, sourceAddress } from '../../src/wire/ip-address.js';

const GMI = 260_000;
const LMQT = 2_000;
const T0 = 1_000;
const G = groupAddress('239.1.1.1');
const H = hostAddress('10.1.0.5');
const S = Array.from({ length: 11 }, (_, n) => sourceAddress(`10.9.0.${n}`));
const [, S1, S2, S3, S4] = S as [SourceAddress, SourceAddress, SourceAddress, SourceAddress, SourceAddress];

function table(fastLeave: boolean) {
  const clock = { t: T0, now: () => clock.t };
  return {
    clock,
    m: new MembershipTable({
      clock,
      timing: { groupMembershipIntervalMs: GMI, lastMemberQueryTimeMs: LMQT },
      fastLeave,
    }),
  };
}

const rec = (type: MembershipRecord['type'], ...sources: SourceAddress[]): MembershipRecord => ({
  type,
  group: G,
  sources,
});
const changed: MembershipEffect = { kind: 'members', group: G, ports: [5] };
const asked = (...sources: SourceAddress[]): MembershipEffect => ({
  kind: 'query',
  group: G,
  port: 5,
  ...(sources.length === 0 ? {} : { sources }),
});

/** The one member's state: forwarded filter, source timers (relative to T0), group timer (relative to T0). */
function stateOf(m: MembershipTable) {
  const member = m.snapshot()[0]?.members[0];
  if (member === undefined) return undefined;
  return {
    forwarded: `${member.filter.mode} {${member.filter.sources.join(',')}}`,
    timers: Object.fromEntries((member.sourceTimers ?? []).map(({ source, until }) => [source, until - T0])),
    ...(member.groupTimerUntil === undefined ? {} : { group: member.groupTimerUntil - T0 }),
  };
}

describe('router-side state: a record split over reports', () => {
  it('IS_IN {S1..S5} then IS_IN {S6..S10} from one host: all ten forwarded', () => {
    const { m } = table(true);
    m.record(5, H, rec('MODE_IS_INCLUDE', ...S.slice(1, 6)));
    m.record(5, H, rec('MODE_IS_INCLUDE', ...S.slice(6, 11)));
    assert.deepEqual([...(m.portFiltersOf(G)[0]?.filter.sources ?? [])].sort(), S.slice(1, 11).map(String).sort());
  });

  it('TO_IN split in two: the first part’s sources stay while the second comes (fast leave on, nobody asked)', () => {
    const { clock, m } = table(true);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1, S2, S3, S4));
    assert.deepEqual(m.record(5, H, rec('CHANGE_TO_INCLUDE_MODE', S1, S2)), []);
    assert.deepEqual(stateOf(m)?.timers, { [S1]: GMI, [S2]: GMI, [S3]: LMQT, [S4]: LMQT });
    clock.t += 10;
    assert.deepEqual(m.record(5, H, rec('CHANGE_TO_INCLUDE_MODE', S3, S4)), []);
    clock.t = T0 + LMQT;
    assert.deepEqual(m.expire(), []);
    assert.equal(stateOf(m)?.forwarded, `include {${[S1, S2, S3, S4].join(',')}}`);
  });
});

describe('router-side state: the tables of RFC 3376 §6.4.1 and §6.4.2, one host, fast leave off', () => {
  const rows: Array<{
    name: string;
    from: MembershipRecord[];
    next: MembershipRecord;
    effects: MembershipEffect[];
    state: ReturnType<typeof stateOf>;
  }> = [
    {
      name: 'INCLUDE (A) + IS_IN (B) → INCLUDE (A+B); (B) = GMI',
      from: [rec('MODE_IS_INCLUDE', S1, S2)],
      next: rec('MODE_IS_INCLUDE', S2, S3),
      effects: [changed],
      state: { forwarded: `include {${S1},${S2},${S3}}`, timers: { [S1]: GMI, [S2]: GMI + 10, [S3]: GMI + 10 } },
    },
    {
      name: 'INCLUDE (A) + IS_EX (B) → EXCLUDE (A*B, B−A); (B−A) = 0; delete (A−B); group timer = GMI',
      from: [rec('MODE_IS_INCLUDE', S1, S2)],
      next: rec('MODE_IS_EXCLUDE', S2, S3),
      effects: [changed],
      state: { forwarded: `exclude {${S3}}`, timers: { [S2]: GMI }, group: GMI + 10 },
    },
    {
      name: 'EXCLUDE (X, Y) + IS_IN (A) → EXCLUDE (X+A, Y−A); (A) = GMI',
      from: [rec('MODE_IS_EXCLUDE', S1, S2)],
      next: rec('MODE_IS_INCLUDE', S2, S3),
      effects: [changed],
      state: { forwarded: `exclude {${S1}}`, timers: { [S2]: GMI + 10, [S3]: GMI + 10 }, group: GMI },
    },
    {
      name: 'EXCLUDE (X, Y) + IS_EX (A) → EXCLUDE (A−Y, Y*A); (A−X−Y) = GMI; delete (X−A), (Y−A); group timer = GMI',
      from: [rec('MODE_IS_EXCLUDE', S1, S2), rec('ALLOW_NEW_SOURCES', S3)],
      next: rec('MODE_IS_EXCLUDE', S2, S4),
      effects: [changed],
      state: { forwarded: `exclude {${S2}}`, timers: { [S4]: GMI + 10 }, group: GMI + 10 },
    },
    {
      name: 'INCLUDE (A) + ALLOW (B) → INCLUDE (A+B); (B) = GMI',
      from: [rec('MODE_IS_INCLUDE', S1)],
      next: rec('ALLOW_NEW_SOURCES', S2),
      effects: [changed],
      state: { forwarded: `include {${S1},${S2}}`, timers: { [S1]: GMI, [S2]: GMI + 10 } },
    },
    {
      name: 'INCLUDE (A) + BLOCK (B) → INCLUDE (A); Q(G, A*B)',
      from: [rec('MODE_IS_INCLUDE', S1, S2)],
      next: rec('BLOCK_OLD_SOURCES', S2, S3),
      effects: [asked(S2)],
      state: { forwarded: `include {${S1},${S2}}`, timers: { [S1]: GMI, [S2]: 10 + LMQT } },
    },
    {
      name: 'INCLUDE (A) + TO_EX (B) → EXCLUDE (A*B, B−A); (B−A) = 0; delete (A−B); Q(G, A*B); group timer = GMI',
      from: [rec('MODE_IS_INCLUDE', S1, S2)],
      next: rec('CHANGE_TO_EXCLUDE_MODE', S2, S3),
      effects: [changed, asked(S2)],
      state: { forwarded: `exclude {${S3}}`, timers: { [S2]: 10 + LMQT }, group: GMI + 10 },
    },
    {
      name: 'INCLUDE (A) + TO_IN (B) → INCLUDE (A+B); (B) = GMI; Q(G, A−B)',
      from: [rec('MODE_IS_INCLUDE', S1, S2)],
      next: rec('CHANGE_TO_INCLUDE_MODE', S2, S3),
      effects: [changed, asked(S1)],
      state: { forwarded: `include {${S1},${S2},${S3}}`, timers: { [S1]: 10 + LMQT, [S2]: GMI + 10, [S3]: GMI + 10 } },
    },
    {
      name: 'EXCLUDE (X, Y) + ALLOW (A) → EXCLUDE (X+A, Y−A); (A) = GMI',
      from: [rec('MODE_IS_EXCLUDE', S1, S2)],
      next: rec('ALLOW_NEW_SOURCES', S1),
      effects: [changed],
      state: { forwarded: `exclude {${S2}}`, timers: { [S1]: GMI + 10 }, group: GMI },
    },
    {
      name: 'EXCLUDE (X, Y) + BLOCK (A) → EXCLUDE (X+(A−Y), Y); (A−X−Y) = group timer; Q(G, A−Y)',
      from: [rec('MODE_IS_EXCLUDE', S1)],
      next: rec('BLOCK_OLD_SOURCES', S1, S2),
      effects: [asked(S2)],
      state: { forwarded: `exclude {${S1}}`, timers: { [S2]: 10 + LMQT }, group: GMI },
    },
    {
      name: 'EXCLUDE (X, Y) + TO_EX (A) → EXCLUDE (A−Y, Y*A); (A−X−Y) = group timer; delete (X−A), (Y−A); Q(G, A−Y); group timer = GMI',
      from: [rec('MODE_IS_EXCLUDE', S1, S2), rec('ALLOW_NEW_SOURCES', S3)],
      next: rec('CHANGE_TO_EXCLUDE_MODE', S2, S4),
      effects: [changed, asked(S4)],
      state: { forwarded: `exclude {${S2}}`, timers: { [S4]: 10 + LMQT }, group: GMI + 10 },
    },
    {
      name: 'EXCLUDE (X, Y) + TO_IN (A) → EXCLUDE (X+A, Y−A); (A) = GMI; Q(G, X−A); Q(G)',
      from: [rec('MODE_IS_EXCLUDE', S1, S2), rec('ALLOW_NEW_SOURCES', S3)],
      next: rec('CHANGE_TO_INCLUDE_MODE', S2),
      effects: [changed, asked()],
      state: { forwarded: `exclude {${S1}}`, timers: { [S2]: GMI + 10, [S3]: 10 + LMQT }, group: 10 + LMQT },
    },
  ];
  for (const { name, from, next, effects, state } of rows) {
    it(name, () => {
      const { clock, m } = table(false);
      for (const record of from) m.record(5, H, record);
      clock.t += 10;
      assert.deepEqual(m.record(5, H, next), effects);
      assert.deepEqual(stateOf(m), state);
    });
  }
});

describe('router-side state: timers', () => {
  it('a source of INCLUDE ends by itself a GMI after it was last reported, while the others are reported', () => {
    const { clock, m } = table(true);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1, S2));
    clock.t = T0 + 100_000;
    m.record(5, H, rec('MODE_IS_INCLUDE', S1));
    assert.equal(m.nextDeadline(), T0 + GMI);
    clock.t = T0 + GMI - 1;
    assert.deepEqual(m.expire(), []);
    clock.t = T0 + GMI;
    assert.deepEqual(m.expire(), [changed]);
    assert.equal(stateOf(m)?.forwarded, `include {${S1}}`);
    assert.equal(m.nextDeadline(), T0 + 100_000 + GMI);
  });

  it('EXCLUDE: the group timer ends and the member turns to INCLUDE (X) with the X timers (§6.5); an empty X ends it', () => {
    const { clock, m } = table(true);
    m.record(5, H, rec('MODE_IS_EXCLUDE', S1));
    clock.t = T0 + 50_000;
    m.record(5, H, rec('ALLOW_NEW_SOURCES', S2));
    clock.t = T0 + GMI;
    assert.deepEqual(m.expire(), [changed]);
    assert.deepEqual(stateOf(m), { forwarded: `include {${S2}}`, timers: { [S2]: 50_000 + GMI } });
    clock.t = T0 + 50_000 + GMI;
    assert.deepEqual(m.expire(), [{ kind: 'members', group: G, ports: [] }]);
    const { clock: other, m: n } = table(true);
    n.record(5, H, rec('MODE_IS_EXCLUDE', S1));
    other.t = T0 + GMI;
    assert.deepEqual(n.expire(), [{ kind: 'members', group: G, ports: [] }]);
  });

  it('EXCLUDE: a requested source whose timer ends becomes excluded (§6.3)', () => {
    const { clock, m } = table(false);
    m.record(5, H, rec('MODE_IS_EXCLUDE', S1));
    m.record(5, H, rec('BLOCK_OLD_SOURCES', S2));
    clock.t = T0 + LMQT;
    assert.deepEqual(m.expire(), [changed]);
    assert.equal(stateOf(m)?.forwarded, `exclude {${S1},${S2}}`);
  });

  it('TO_IN keeps the sources it dropped for the LMQT and asks about them (fast leave off); an answer keeps them', () => {
    const { clock, m } = table(false);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1, S2, S3));
    assert.deepEqual(m.record(5, H, rec('CHANGE_TO_INCLUDE_MODE', S1)), [asked(S2, S3)]);
    assert.equal(m.nextDeadline(), T0 + LMQT);
    m.record(5, H, rec('MODE_IS_INCLUDE', S3));
    clock.t = T0 + LMQT;
    assert.deepEqual(m.expire(), [changed]);
    assert.equal(stateOf(m)?.forwarded, `include {${S1},${S3}}`);
  });

  it('BLOCK with fast leave: the sources go at once, unasked; the last one ends the membership', () => {
    const { m } = table(true);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1, S2));
    assert.deepEqual(m.record(5, H, rec('BLOCK_OLD_SOURCES', S1)), [changed]);
    assert.equal(stateOf(m)?.forwarded, `include {${S2}}`);
    assert.deepEqual(m.record(5, H, rec('BLOCK_OLD_SOURCES', S2)), [{ kind: 'members', group: G, ports: [] }]);
    m.record(5, H, rec('MODE_IS_EXCLUDE'));
    assert.deepEqual(m.record(5, H, rec('BLOCK_OLD_SOURCES', S3)), [changed]);
    assert.equal(stateOf(m)?.forwarded, `exclude {${S3}}`);
  });

  it('BLOCK without fast leave of every source: asked about them, the member leaves after the LMQT unless it answers', () => {
    const { clock, m } = table(false);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1));
    assert.deepEqual(m.record(5, H, rec('BLOCK_OLD_SOURCES', S1)), [asked(S1)]);
    assert.equal(m.snapshot()[0]?.members[0]?.leavingUntil, T0 + LMQT);
    clock.t = T0 + LMQT;
    assert.deepEqual(m.expire(), [{ kind: 'members', group: G, ports: [] }]);
  });
});

describe('router-side state: saved and restored', () => {
  it('a state taken a slice of groups a turn is the state taken at once; a group gone between slices is left out', async () => {
    const { m } = table(true);
    const pods = new PodPorts(undefined);
    pods.update(Array.from({ length: 20 }, (_, i) => ({ name: `p${i}`, ofport: 10 + i, type: '' })));
    // 300 groups of 20 members: 6,000 members, a dozen slices.
    for (let g = 0; g < 300; g++)
      for (let p = 0; p < 20; p++)
        m.record(10 + p, hostAddress(`10.1.0.${p + 2}`), {
          type: 'MODE_IS_EXCLUDE',
          group: groupAddress(`239.3.${g >> 8}.${g & 0xff}`),
          sources: [],
        });
    const clock = new FakeClock();
    const input = { bridge: 'br-int', table: m, pods, clock };
    assert.deepEqual(await savedStateInTurns(input), savedStateNow(input));
    const inTurns = savedStateInTurns(input);
    // Between the first slice and the next, the last group loses its members.
    for (let p = 0; p < 20; p++)
      m.record(10 + p, hostAddress(`10.1.0.${p + 2}`), {
        type: 'CHANGE_TO_INCLUDE_MODE',
        group: groupAddress('239.3.1.43'),
        sources: [],
      });
    const saved = await inTurns;
    assert.equal(saved.groups.length, 299);
    assert.equal(saved.groups.at(-1)?.group, '239.3.1.42');
  });

  it('the timers are saved and come back; a saved member without them lives a GMI from its last report', async () => {
    const { clock, m } = table(false);
    m.record(5, H, rec('MODE_IS_INCLUDE', S1, S2));
    clock.t = T0 + 100_000;
    m.record(5, H, rec('MODE_IS_INCLUDE', S1));
    const pods = new PodPorts(undefined);
    pods.update([{ name: 'p1', ofport: 5, pod: podName(undefined, 'web'), type: '' }]);
    const wall = new FakeClock();
    // The table's clock reads T0 + 100 s while the wall clock starts at its epoch.
    const saved = savedStateOf({
      bridge: 'br-int',
      groups: m.snapshot(),
      pods,
      clock: { monotonicMs: () => clock.t, wallMs: () => wall.wallMs() },
    });
    const store = new MemoryStateStore(parseSavedState(JSON.parse(JSON.stringify(saved))));
    const restart = async (state = store) => {
      const after = table(false);
      after.clock.t = 5_000_000;
      const restartClock = Object.assign(new FakeClock(), {
        monotonicMs: () => after.clock.t,
        wallMs: () => wall.wallMs() + 30_000,
      });
      await restoreSavedState({
        store: state,
        bridge: 'br-int',
        table: after.m,
        pods,
        clock: restartClock,
        logger: new RecordingLogger(),
      });
      return after;
    };
    const back = await restart();
    // 30 s down: S2 has GMI − 100 s − 30 s left, S1 GMI − 30 s.
    const member = back.m.snapshot()[0]?.members[0];
    assert.deepEqual(
      member?.sourceTimers?.map(({ source, until }) => [source, until - 5_000_000]),
      [
        [S1, GMI - 30_000],
        [S2, GMI - 130_000],
      ],
    );
    assert.equal(back.m.nextDeadline(), 5_000_000 + GMI - 130_000);
    const older = structuredClone(store.state!);
    for (const group of older.groups) for (const saved of group.members) delete saved.sourceTimers;
    const fromOlder = await restart(new MemoryStateStore(older));
    assert.deepEqual(
      fromOlder.m.snapshot()[0]?.members[0]?.sourceTimers?.map(({ until }) => until - 5_000_000),
      [GMI - 30_000, GMI - 30_000],
    );
  });

  it('a saved timer that is no timer makes the file unusable, as any bad field does', () => {
    const member = { portName: 'p1', host: H, mode: 'include', sources: [S1], compatibility: 3, lastReportAt: 1 };
    const state = (extra: object) => ({
      version: 1,
      savedAt: 2,
      bridge: 'br-int',
      groups: [{ group: G, members: [{ ...member, ...extra }] }],
    });
    assert.deepEqual(
      parseSavedState(state({ sourceTimers: [{ source: S1, endsAt: 5 }], groupTimerEndsAt: 6 })).groups[0]?.members[0]
        ?.sourceTimers,
      [{ source: S1, endsAt: 5 }],
    );
    assert.throws(
      () => parseSavedState(state({ sourceTimers: [{ source: 'x', endsAt: 5 }] })),
      /sourceTimers\[0\]\.source/,
    );
    assert.throws(
      () => parseSavedState(state({ sourceTimers: [{ source: S1, endsAt: -1 }] })),
      /sourceTimers\[0\]\.endsAt/,
    );
    assert.throws(() => parseSavedState(state({ sourceTimers: {} })), /sourceTimers is not an array/);
    assert.throws(() => parseSavedState(state({ groupTimerEndsAt: 'soon' })), /groupTimerEndsAt/);
  });
});
