/** PortActivity: what each pod port said lately, group by group, bounded per port. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MAX_GROUPS_PER_PORT, PortActivity } from '../../src/controllers/daemon/loop/port-activity.js';

/** A wall clock that moves only when told. */
function clock(start = 1_000_000) {
  let now = start;
  return { wallMs: () => now, set: (ms: number) => void (now = ms), advance: (ms: number) => void (now += ms) };
}

describe('PortActivity', () => {
  it('a port never heard from: watched since construction, nothing said', () => {
    const time = clock(5000);
    const activity = new PortActivity(time.wallMs);
    time.advance(10_000);
    assert.deepEqual(activity.snapshot(3, '239.1.2.3'), {
      sinceMs: 5000,
      messages: 0,
      lastMessageAtMs: undefined,
      group: undefined,
      otherGroups: [],
    });
  });

  it('message counts messages and keeps the time of the last', () => {
    const time = clock(1000);
    const activity = new PortActivity(time.wallMs);
    time.set(2000);
    activity.message(3);
    time.set(3500);
    activity.message(3);
    const snapshot = activity.snapshot(3, undefined);
    assert.equal(snapshot.messages, 2);
    assert.equal(snapshot.lastMessageAtMs, 3500);
    // A port first heard after the start but never added is watched since construction.
    assert.equal(snapshot.sinceMs, 1000);
    assert.equal(activity.snapshot(4, undefined).messages, 0);
  });

  it('reported counts reports of a group and keeps the last time', () => {
    const time = clock(0);
    const activity = new PortActivity(time.wallMs);
    time.set(100);
    activity.reported(3, '239.1.2.3');
    time.set(250);
    activity.reported(3, '239.1.2.3');
    activity.reported(3, '239.9.9.9');
    const group = activity.snapshot(3, '239.1.2.3').group;
    assert.deepEqual(group, { reports: 2, lastReportAtMs: 250, refusals: {}, lastRefusal: undefined });
    // Reports are not messages: message() counts those.
    assert.equal(activity.snapshot(3, '239.1.2.3').messages, 0);
  });

  it('refused counts by reason and keeps the last refusal with its rule', () => {
    const time = clock(0);
    const activity = new PortActivity(time.wallMs);
    activity.reported(3, '239.1.2.3');
    time.set(10);
    activity.refused(3, '239.1.2.3', 'policy', 7);
    time.set(20);
    activity.refused(3, '239.1.2.3', 'policy', 7);
    time.set(30);
    activity.refused(3, '239.1.2.3', 'port-groups');
    const group = activity.snapshot(3, '239.1.2.3').group!;
    assert.deepEqual(group.refusals, { policy: 2, 'port-groups': 1 });
    assert.deepEqual(group.lastRefusal, { reason: 'port-groups', atMs: 30 });
    time.set(40);
    activity.refused(3, '239.1.2.3', 'policy', 9);
    assert.deepEqual(activity.snapshot(3, '239.1.2.3').group!.lastRefusal, { reason: 'policy', atMs: 40, rule: 9 });
  });

  it("a snapshot is a copy: changing its refusals changes nothing, and later refusals don't change it", () => {
    const activity = new PortActivity(() => 0);
    activity.refused(3, '239.1.2.3', 'spoofed');
    const first = activity.snapshot(3, '239.1.2.3').group!;
    first.refusals.spoofed = 99;
    activity.refused(3, '239.1.2.3', 'spoofed');
    assert.equal(first.refusals.spoofed, 99);
    assert.equal(activity.snapshot(3, '239.1.2.3').group!.refusals.spoofed, 2);
  });

  it('otherGroups: newest first, without the group asked about', () => {
    const activity = new PortActivity(() => 0);
    activity.reported(3, '239.0.0.1');
    activity.reported(3, '239.0.0.2');
    activity.reported(3, '239.0.0.3');
    assert.deepEqual(activity.snapshot(3, '239.0.0.2').otherGroups, ['239.0.0.3', '239.0.0.1']);
    assert.deepEqual(activity.snapshot(3, undefined).otherGroups, ['239.0.0.3', '239.0.0.2', '239.0.0.1']);
    // Touching a group again (a refusal too) makes it the newest.
    activity.refused(3, '239.0.0.1', 'spoofed');
    assert.deepEqual(activity.snapshot(3, undefined).otherGroups, ['239.0.0.1', '239.0.0.3', '239.0.0.2']);
    assert.deepEqual(activity.snapshot(3, '239.9.9.9').otherGroups, ['239.0.0.1', '239.0.0.3', '239.0.0.2']);
    assert.equal(activity.snapshot(3, '239.9.9.9').group, undefined);
  });

  it('ports are kept apart', () => {
    const activity = new PortActivity(() => 0);
    activity.reported(3, '239.0.0.1');
    activity.message(3);
    activity.reported(4, '239.0.0.2');
    assert.deepEqual(activity.snapshot(3, undefined).otherGroups, ['239.0.0.1']);
    assert.deepEqual(activity.snapshot(4, undefined).otherGroups, ['239.0.0.2']);
    assert.equal(activity.snapshot(4, undefined).messages, 0);
    assert.equal(activity.snapshot(3, '239.0.0.2').group, undefined);
  });

  it(`keeps at most ${MAX_GROUPS_PER_PORT} groups a port, evicting the one touched longest ago`, () => {
    const activity = new PortActivity(() => 0);
    for (let index = 0; index < MAX_GROUPS_PER_PORT; index++) activity.reported(3, `239.0.0.${index}`);
    assert.equal(activity.snapshot(3, undefined).otherGroups.length, MAX_GROUPS_PER_PORT);
    // Touch the oldest: 239.0.0.1 is now the one touched longest ago.
    activity.reported(3, '239.0.0.0');
    assert.equal(activity.snapshot(3, undefined).otherGroups.length, MAX_GROUPS_PER_PORT);
    activity.reported(3, '239.1.0.0');
    const groups = activity.snapshot(3, undefined).otherGroups;
    assert.equal(groups.length, MAX_GROUPS_PER_PORT);
    assert.equal(groups[0], '239.1.0.0');
    assert.ok(!groups.includes('239.0.0.1'), 'the least recently touched group went');
    assert.ok(groups.includes('239.0.0.0'), 'the re-touched group stayed');
    assert.equal(activity.snapshot(3, '239.0.0.1').group, undefined);
    assert.equal(activity.snapshot(3, '239.0.0.0').group!.reports, 2);
    // Another port's groups are not counted against it.
    activity.reported(4, '239.2.0.0');
    assert.equal(activity.snapshot(3, undefined).otherGroups.length, MAX_GROUPS_PER_PORT);
  });

  it('portAdded: watched from then on, with a clean record', () => {
    const time = clock(1000);
    const activity = new PortActivity(time.wallMs);
    time.set(8000);
    activity.portAdded(5);
    assert.equal(activity.snapshot(5, undefined).sinceMs, 8000);
    assert.equal(activity.snapshot(6, undefined).sinceMs, 1000);
    // Re-added (a new pod on a reused ofport): what the old one said is gone.
    activity.message(5);
    activity.reported(5, '239.1.2.3');
    time.set(9000);
    activity.portAdded(5);
    assert.deepEqual(activity.snapshot(5, '239.1.2.3'), {
      sinceMs: 9000,
      messages: 0,
      lastMessageAtMs: undefined,
      group: undefined,
      otherGroups: [],
    });
  });

  it('forgetPort drops what the port said; it is watched since construction again', () => {
    const time = clock(1000);
    const activity = new PortActivity(time.wallMs);
    time.set(2000);
    activity.portAdded(5);
    activity.message(5);
    activity.reported(5, '239.1.2.3');
    activity.forgetPort(5);
    assert.deepEqual(activity.snapshot(5, '239.1.2.3'), {
      sinceMs: 1000,
      messages: 0,
      lastMessageAtMs: undefined,
      group: undefined,
      otherGroups: [],
    });
  });
});
