/**
 * Per-source forwarding as it is seen: the group view's sources, other sources and SSM mark,
 * the sync event's line, the metrics, and groups' lines by source.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { Chalk } from 'chalk';
import { formatDaemonEvent } from '../../src/cli/render/daemon-events.js';
import { sourceReceiverLines } from '../../src/cli/render/group-sources.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { groupViewsOf } from '../../src/controllers/daemon/observe/group-views.js';
import type { PodPorts } from '../../src/domain/pods/pod-ports.js';
import type { GroupSnapshot } from '../../src/domain/membership/membership-table.js';
import type { PortView } from '../../src/transport/control/daemon-view.js';
import { groupAddress, hostAddress, sourceAddress, type SourceAddress } from '../../src/wire/ip-address.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

const clock = { monotonicMs: () => 50_000, wallMs: () => Date.parse('2026-01-01T12:00:00.000Z') };
const [S1, S2] = [sourceAddress('10.0.0.1'), sourceAddress('10.0.0.2')];
const GATEWAY: PortView = { ofport: 1, name: 'gw0' };
const PODS: Record<number, PortView> = {
  5: { ofport: 5, name: 'veth-a', pod: 'default/a' },
  6: { ofport: 6, name: 'veth-b', pod: 'default/b' },
  7: { ofport: 7, name: 'veth-c', pod: 'default/c' },
};

function pods(gateway: PortView | undefined): PodPorts {
  return {
    gateway,
    view: (ofport: number) => PODS[ofport] ?? (ofport === gateway?.ofport ? gateway : undefined),
  } as unknown as PodPorts;
}

function member(
  port: number,
  host: string,
  mode: 'include' | 'exclude',
  sources: SourceAddress[],
): GroupSnapshot['members'][number] {
  return { port, host: hostAddress(host), compatibility: 3, filter: { mode, sources }, lastReportAt: 40_000 };
}

function snapshot(group: string, members: GroupSnapshot['members']): GroupSnapshot {
  return {
    group: groupAddress(group),
    ports: [...new Set(members.map((item) => item.port))].sort((a, b) => a - b),
    members,
  };
}

/** The acceptance case: A IN{S1}, B IN{S2}, C EX{S1}. */
const ABC = snapshot('232.1.1.1', [
  member(5, '10.1.0.5', 'include', [S1]),
  member(6, '10.1.0.6', 'include', [S2]),
  member(7, '10.1.0.7', 'exclude', [S1]),
]);

function views(
  groups: GroupSnapshot[],
  gateway: PortView | null = GATEWAY,
  extra: Partial<Parameters<typeof groupViewsOf>[0]> = {},
) {
  return groupViewsOf({
    clock,
    groups,
    pods: pods(gateway ?? undefined),
    groupMembershipIntervalMs: 260_000,
    dirty: new Set(),
    syncErrors: new Map(),
    ...extra,
  });
}

describe('group views by source', () => {
  it('A IN{S1}, B IN{S2}, C EX{S1}: S1 to A, S2 to B and C, the rest to C, the gateway on every list', () => {
    const [view] = views([ABC]);
    assert.deepEqual(view?.sources, [
      { source: '10.0.0.1', ports: [PODS[5], GATEWAY] },
      { source: '10.0.0.2', ports: [PODS[6], PODS[7], GATEWAY] },
    ]);
    assert.deepEqual(view?.otherSources, [PODS[7], GATEWAY]);
    assert.deepEqual(
      view?.ports.map((port) => port.ofport),
      [5, 6, 7, 1],
      'ports stays the union',
    );
    assert.equal(view?.ssm, undefined, 'no range given: no mark');
  });

  it('without a gateway the lists hold the members only', () => {
    const [view] = views([ABC], null);
    assert.deepEqual(view?.sources?.[0]?.ports, [PODS[5]]);
    assert.deepEqual(view?.otherSources, [PODS[7]]);
  });

  it('absent while every port takes every source, also when one host of a port filters and another does not', () => {
    const plain = snapshot('239.1.1.1', [member(5, '10.1.0.5', 'exclude', []), member(6, '10.1.0.6', 'exclude', [])]);
    const merged = snapshot('239.1.1.2', [
      member(5, '10.1.0.5', 'include', [S1]),
      member(5, '10.1.0.8', 'exclude', []),
    ]);
    for (const view of views([plain, merged])) {
      assert.equal(view.sources, undefined, view.group);
      assert.equal(view.otherSources, undefined, view.group);
      assert.equal('sources' in view, false, `${view.group}: no key in the JSON`);
    }
  });

  it('takes the table’s merged filters when given them', () => {
    const [view] = views([ABC], GATEWAY, {
      portFiltersOf: () => [{ port: 6, filter: { mode: 'include', sources: new Set([S2]) } }],
    });
    assert.deepEqual(view?.sources, [{ source: '10.0.0.2', ports: [PODS[6], GATEWAY] }]);
    assert.deepEqual(view?.otherSources, [GATEWAY]);
  });

  it('marks the groups of the SSM range', () => {
    const other = snapshot('239.1.1.1', [member(5, '10.1.0.5', 'exclude', [])]);
    const [ssm, plain] = views([ABC, other], GATEWAY, {
      ssmRange: [{ family: 'ipv4', address: '232.0.0.0', length: 8 }],
    });
    assert.equal(ssm?.ssm, true);
    assert.equal(plain?.ssm, undefined);
  });

  it('marks IPv6 groups in ff3x::/96 as SSM, whatever the IPv4 range; none when SSM is off', () => {
    const v6 = (group: string) => snapshot(group, [member(5, 'fe80::5', 'include', [sourceAddress('fd00::1')])]);
    const groups = [v6('ff3e::8000:1'), v6('ff35::1234'), v6('ff1e::1'), v6('ff3e:1::1')];
    const marked = views(groups, GATEWAY, { ssmRange: [{ family: 'ipv4', address: '232.0.0.0', length: 8 }] }).map(
      (view) => [view.group, view.ssm === true],
    );
    assert.deepEqual(marked, [
      ['ff3e::8000:1', true],
      ['ff35::1234', true],
      ['ff1e::1', false],
      ['ff3e:1::1', false],
    ]);
    assert.ok(views(groups, GATEWAY, { ssmRange: [] }).every((view) => view.ssm === undefined));
  });
});

describe('per-source lines', () => {
  const plain = new Chalk({ level: 0 });
  const time = '2026-01-01T12:00:00.000Z';

  it('a sync event shows each source with its ports after the group’s', () => {
    const line = formatDaemonEvent(
      {
        type: 'sync',
        time,
        group: '232.1.1.1',
        ports: [7, 1],
        sources: [
          { source: '10.0.0.1', ports: [5, 1] },
          { source: '10.0.0.2', ports: [6, 7, 1] },
        ],
        latencyMs: 1.25,
        clockMs: 10,
        ok: true,
      },
      plain,
    );
    assert.match(line, / 232\.1\.1\.1 ports 7,1; 10\.0\.0\.1 → 5,1; 10\.0\.0\.2 → 6,7,1 in 1\.3 ms: ok$/);
    const without = formatDaemonEvent(
      { type: 'sync', time, group: '239.1.1.1', ports: [], latencyMs: 2, clockMs: 12, ok: true },
      plain,
    );
    assert.match(without, / 239\.1\.1\.1 ports none in 2\.0 ms: ok$/);
  });

  it('groups: a block per group that splits its sources, none for the others', () => {
    const [abc] = views([ABC], GATEWAY, { ssmRange: [{ family: 'ipv4', address: '232.0.0.0', length: 8 }] });
    const [plainGroup] = views([snapshot('239.1.1.1', [member(5, '10.1.0.5', 'exclude', [])])]);
    assert.deepEqual(sourceReceiverLines([abc!, plainGroup!]), [
      '232.1.1.1 (SSM) by source:',
      '  10.0.0.1      → veth-a (5), gw0 (1)',
      '  10.0.0.2      → veth-b (6), veth-c (7), gw0 (1)',
      '  other sources → veth-c (7), gw0 (1)',
    ]);
  });
});

describe('source metrics', () => {
  it('the (S,G) entries wanted, and the named sources of each group that names some, rebuilt at each scrape', async () => {
    const view = new FakeDaemonView();
    const metrics = new DaemonMetrics(view);
    view.groupsValue = views([ABC, snapshot('239.1.1.1', [member(5, '10.1.0.5', 'exclude', [])])]);
    let text = await metrics.registry.metrics();
    assert.match(text, /^# TYPE mcastctl_source_entries gauge$/m);
    assert.match(text, /^mcastctl_source_entries 2$/m);
    assert.match(text, /^mcastctl_group_sources\{group="232\.1\.1\.1"\} 2$/m);
    assert.doesNotMatch(text, /mcastctl_group_sources\{group="239\.1\.1\.1"\}/);
    view.groupsValue = [];
    text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_source_entries 0$/m);
    assert.doesNotMatch(text, /^mcastctl_group_sources\{/m);
  });
});
