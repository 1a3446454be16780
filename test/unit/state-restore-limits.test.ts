/**
 * A saved state is held to the membership limits (and the group policy) as live joins are:
 * what a live join would have been refused is left out at restore, counted by reason in one
 * warning, and what is within them restores exactly as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { type MembershipLimitSettings, UNLIMITED } from '../../src/domain/membership/membership-limits.js';
import { MembershipTable, type RestoredMember } from '../../src/domain/membership/membership-table.js';
import { ANY_SOURCE } from '../../src/domain/membership/source-filter.js';
import { PodPorts } from '../../src/domain/pods/pod-ports.js';
import { podName } from '../../src/domain/pods/pod-directory.js';
import { restoreSavedState, seedPlaceholders } from '../../src/controllers/daemon/state/saved-state.js';
import type { SavedMember, SavedState } from '../../src/controllers/daemon/state/state-format.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import {
  type GroupAddress,
  groupAddress,
  type HostAddress,
  hostAddress,
  sourceAddress,
} from '../../src/wire/ip-address.js';

const LIMITS: MembershipLimitSettings = { maxGroupsPerPort: 1024, maxSourcesPerGroup: 256, maxGroups: 2048 };
const PORTS = [1, 2, 3] as const;
const hostOf = (port: number): HostAddress => hostAddress(`10.1.0.${port}`);
/** Group n, in address order as n grows. */
const groupOf = (n: number): GroupAddress => groupAddress(`239.1.${n >> 8}.${n & 0xff}`);
/** Port p is a member of 2,000 groups, half of them shared with the port before it and half with the one after. */
const groupsOfPort = (port: number): number[] => Array.from({ length: 2_000 }, (_, n) => (port - 1) * 1_000 + n);

function tableOf(limits: MembershipLimitSettings, clock: FakeClock): MembershipTable {
  return new MembershipTable({ clock: { now: () => clock.monotonicMs() }, fastLeave: true, limits });
}

/** Every group with its members' ports, hosts and filters: what forwarding is made of. */
function membersOf(table: MembershipTable): [string, [number, string, string, string[]][]][] {
  return table
    .snapshot()
    .map(({ group, members }) => [
      group,
      members.map((m): [number, string, string, string[]] => [m.port, m.host, m.filter.mode, m.filter.sources]),
    ]);
}

/** The same members joined live, one MODE_IS_EXCLUDE {} (or INCLUDE of its sources) each, in this order. */
function joinedLive(order: readonly RestoredMember[], limits: MembershipLimitSettings, clock: FakeClock) {
  const table = tableOf(limits, clock);
  for (const { port, host, group, filter } of order) {
    const type = filter.mode === 'exclude' ? 'MODE_IS_EXCLUDE' : 'MODE_IS_INCLUDE';
    table.record(port, host, { type, group, sources: [...filter.sources] });
  }
  return table;
}

function pods(): PodPorts {
  const ports = new PodPorts(undefined);
  ports.update(
    PORTS.map((port) => ({ name: `p${port}`, ofport: port, pod: podName('shop', `web-${port}`), type: '' })),
  );
  return ports;
}

/** A saved state of every port's groups, in the file's order (groups by address, members by port). */
function savedState(clock: FakeClock, memberOf: (port: number, group: number) => Partial<SavedMember> = () => ({})) {
  const byGroup = new Map<number, SavedMember[]>();
  for (const port of PORTS) {
    for (const n of groupsOfPort(port)) {
      const member: SavedMember = {
        ...{ portName: `p${port}`, pod: `shop/web-${port}`, host: hostOf(port), mode: 'exclude', sources: [] },
        ...{ compatibility: 3, lastReportAt: clock.wallMs() - 10_000, ...memberOf(port, n) },
      };
      byGroup.set(n, [...(byGroup.get(n) ?? []), member]);
    }
  }
  const groups = [...byGroup].sort(([a], [b]) => a - b).map(([n, members]) => ({ group: groupOf(n), members }));
  return { version: 2, savedAt: clock.wallMs() - 5_000, bridge: 'br-int', groups } satisfies SavedState;
}

async function restart(state: SavedState, clock: FakeClock, limits = LIMITS, extra = {}) {
  const table = tableOf(limits, clock);
  const logger = new RecordingLogger();
  const store = new MemoryStateStore(state);
  await restoreSavedState({ store, bridge: 'br-int', table, pods: pods(), clock, logger, ...extra });
  return { table, logger, warnings: logger.lines.filter((line) => line.level === 'warn') };
}

describe('restoring a saved state past the membership limits', () => {
  it('the table admits restored members as it admits live joins, in the order given', () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    const now = clock.monotonicMs();
    // Group by group, each group's members by port: the file's order.
    const order = Array.from({ length: 4_000 }, (_, n) => n).flatMap((n) =>
      PORTS.filter((port) => groupsOfPort(port).includes(n)).map(
        (port): RestoredMember => ({
          ...{ group: groupOf(n), port, host: hostOf(port), filter: ANY_SOURCE },
          ...{ lastReportAt: now, compatibility: 3 },
        }),
      ),
    );
    const table = tableOf(LIMITS, clock);
    const refused = new Map<string, number>();
    table.restore(order, (reason) => refused.set(reason, (refused.get(reason) ?? 0) + 1));
    // Port 1 fills at group 1023; port 2 at 2023, by when ports 1 and 2 have made 2,024 groups; port 3 then
    // starts the groups up to 2047, and every group after that is one too many for the node.
    assert.deepEqual(
      PORTS.map((port) => table.snapshot().filter((g) => g.ports.includes(port)).length),
      [1024, 1024, 48],
    );
    assert.equal(table.groupCount, 2048);
    assert.deepEqual(Object.fromEntries(refused), { 'port-groups': 1000, 'node-groups': 2904 });
    assert.deepEqual(table.snapshot(), joinedLive(order, LIMITS, clock).snapshot(), 'timers and all');
  });

  it('restoreSavedState keeps the members reported last and says what the limits left out', async () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    // Port 3 reported last, port 1 first: port 3's groups are admitted first, then port 2's, then port 1's.
    const state = savedState(clock, (port, n) => ({ lastReportAt: clock.wallMs() - 10_000 * (4 - port) - n }));
    const { table, logger, warnings } = await restart(state, clock);
    assert.deepEqual(
      PORTS.map((port) => table.snapshot().filter((g) => g.ports.includes(port)).length),
      [1024, 1024, 1024],
    );
    assert.equal(table.groupCount, 2048);
    const byRecency = state.groups
      .flatMap(({ group, members }) => members.map((member) => ({ group, member })))
      .sort((a, b) => b.member.lastReportAt - a.member.lastReportAt)
      .map(({ group, member }): RestoredMember => {
        const port = Number(member.portName.slice(1));
        return { group, port, host: member.host, filter: ANY_SOURCE, lastReportAt: 0, compatibility: 3 };
      });
    assert.deepEqual(membersOf(table), membersOf(joinedLive(byRecency, LIMITS, clock)));
    assert.deepEqual(
      warnings.map((line) => line.message),
      [
        'state file: 6,000 members saved, 3,072 restored, 2,928 dropped past the limits ' +
          '(node-groups 976, port-groups 1,952)',
      ],
    );
    assert.deepEqual(warnings[0]?.fields, {
      saved: 6000,
      restored: 3072,
      dropped: 2928,
      'node-groups': 976,
      'port-groups': 1952,
    });
    assert.equal(logger.find('state restored')[0]?.fields.members, 3072);
  });

  it('a state within the limits restores exactly as it does without them, and says nothing of them', async () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    const roomy = { ...LIMITS, maxGroupsPerPort: 2_000, maxGroups: 4_000 };
    const within = await restart(savedState(clock), clock, roomy);
    const unlimited = await restart(savedState(clock), clock, UNLIMITED);
    assert.equal(within.table.memberCount, 6_000);
    assert.deepEqual(within.table.snapshot(), unlimited.table.snapshot());
    assert.deepEqual(within.warnings, []);
  });

  it('sources past maxSourcesPerGroup and EXCLUDE members of SSM groups are left out whole', async () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    const sources = (count: number) =>
      Array.from({ length: count }, (_, n) => sourceAddress(`10.9.${n >> 8}.${n & 255}`));
    const limits = {
      ...LIMITS,
      maxGroups: 10_000,
      maxGroupsPerPort: 10_000,
      ssmRange: [{ family: 'ipv4' as const, address: '239.1.0.0', length: 24 }],
    };
    const state = savedState(clock, (port, n) => {
      if (n === 0) return { mode: 'include', sources: sources(257) }; // one more than a filter may hold
      if (n === 1) return { mode: 'include', sources: sources(256) };
      if (n === 1_500 && port === 2) return { mode: 'include', sources: [sourceAddress('10.8.0.1')] };
      return {}; // EXCLUDE {}: in 239.1.0.0/24 (groups 0 to 255), refused as ssm
    });
    const { table, warnings } = await restart(state, clock, limits);
    assert.equal(table.portsOf(groupOf(0)).length, 0);
    assert.deepEqual(table.portFiltersOf(groupOf(1))[0]?.filter.sources.size, 256);
    assert.equal(table.portsOf(groupOf(2)).length, 0);
    assert.deepEqual(table.portsOf(groupOf(256)), [1]);
    assert.deepEqual(table.portsOf(groupOf(1_500)), [1, 2]);
    assert.equal(table.memberCount, 6_000 - 255);
    assert.deepEqual(warnings[0]?.fields, { saved: 6000, restored: 5745, dropped: 255, ssm: 254, 'group-sources': 1 });
  });

  it('members the group policy denies take no place under the limits', async () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    const limits = { ...LIMITS, maxGroups: 1_000 };
    // Port 1 may not join; ports 2 and 3 then share the 1,000 groups the node may have.
    const deniesMember = (_group: GroupAddress, port: number) => port === 1;
    const { table, warnings } = await restart(savedState(clock), clock, limits, { deniesMember });
    assert.equal(table.groupCount, 1_000);
    assert.deepEqual(table.portsOf(groupOf(1_000)), [2]);
    assert.equal(table.snapshot().filter((g) => g.ports.includes(1)).length, 0);
    assert.deepEqual(warnings[0]?.fields, {
      saved: 6000,
      restored: 1000,
      dropped: 5000,
      policy: 2000,
      'node-groups': 3000,
    });
  });

  it('placeholders for entries found in OVS are held to the limits too', () => {
    const clock = new FakeClock();
    clock.advance(1_000_000);
    const table = tableOf({ ...LIMITS, maxGroups: 1 }, clock);
    const logger = new RecordingLogger();
    seedPlaceholders({
      learned: [
        { group: groupOf(1), ports: [1, 2] },
        { group: groupOf(2), ports: [3] },
      ],
      config: { robustness: 2, queryIntervalMs: 125_000, queryResponseIntervalMs: 10_000 },
      ...{ table, pods: pods(), clock, logger },
    });
    assert.deepEqual(table.portsOf(groupOf(1)), [1, 2]);
    assert.equal(table.groupCount, 1);
    const [line] = logger.find('ports found in OVS without saved members kept until the startup queries are answered');
    assert.deepEqual(line?.fields, { members: 2, seconds: 43, droppedPastTheLimits: 1, 'node-groups': 1 });
  });
});
