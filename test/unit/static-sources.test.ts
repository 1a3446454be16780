/**
 * Static (S,G) entries: the declared-state file's `source` (unique with its group, checked, placed by line) and
 * reconcile's drift per forwarding key.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { parseDeclaredState } from '../../src/domain/declared-state/declared-state.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { MulticastPipeline, type GroupMembership } from '../../src/domain/pipeline/multicast-pipeline.js';
import { planGroupReconcile } from '../../src/domain/reconcile-plan.js';
import { installGroups, uninstallGroups, type StaticGroupsBridge } from '../../src/controllers/static/static-groups.js';
import type { PipelineChange } from '../../src/domain/pipeline/plan.js';
import { UsageError } from '../../src/errors.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';

const G = groupAddress('232.1.1.1');
const [S1, S2] = [sourceAddress('10.0.0.1'), sourceAddress('10.0.0.2')];

function refused(text: string, pattern: RegExp): void {
  assert.throws(
    () => parseDeclaredState(text, 'state.yaml'),
    (error: unknown) => error instanceof UsageError && pattern.test(error.message),
  );
}

describe('declared (S,G) entries', () => {
  it('a group may be declared once for every source and once for each source, each placed by its line', () => {
    const state = parseDeclaredState(
      [
        'groups:',
        '  - {group: 232.1.1.1, ports: [pod-c]}',
        '  - group: 232.1.1.1',
        '    source: 10.0.0.1',
        '    ports: [pod-a]',
        '  - {group: 232.1.1.1, source: 10.0.0.2, ports: [pod-b, 7]}',
        '',
      ].join('\n'),
      'state.yaml',
    );
    assert.deepEqual(
      state.groups.map(({ group, source, ports }) => ({ group, source, ports })),
      [
        { group: G, source: undefined, ports: [{ name: 'pod-c' }] },
        { group: G, source: S1, ports: [{ name: 'pod-a' }] },
        { group: G, source: S2, ports: [{ name: 'pod-b' }, { ofport: 7 }] },
      ],
    );
    assert.equal('source' in state.groups[0]!, false, 'no source key for a (*,G) entry');
    assert.deepEqual(
      state.groups.map((entry) => entry.where()),
      ['state.yaml:2', 'state.yaml:3', 'state.yaml:6'],
    );
  });

  it('the same (group, source) twice is refused at the second, naming the first', () => {
    const entries = [
      '{group: 232.1.1.1, source: 10.0.0.1, ports: [a]}',
      '{group: 232.1.1.1, ports: [b]}',
      '{group: 232.1.1.1, source: 10.0.0.1, ports: [c]}',
    ];
    refused(
      `groups:\n${entries.map((entry) => `  - ${entry}\n`).join('')}`,
      /^state\.yaml:4: \(10\.0\.0\.1, 232\.1\.1\.1\) is declared twice \(first at line 2\)$/,
    );
    refused(
      'groups:\n  - {group: 232.1.1.1, source: 10.0.0.1, ports: [a]}\n  - {group: 232.1.1.1, ports: [b]}\n  - {group: 232.1.1.1, ports: [c]}\n',
      /^state\.yaml:4: group 232\.1\.1\.1 is declared twice \(first at line 3\)$/,
    );
  });

  it('a source that is no unicast host address is refused with its line', () => {
    for (const bad of ['239.1.1.1', '0.0.0.0', '255.255.255.255', '10.0.0', '7', '[10.0.0.1]']) {
      refused(
        `groups:\n  - group: 232.1.1.1\n    ports: [a]\n    source: ${bad}\n`,
        /^state\.yaml:4: "source" must be a unicast host address such as 10\.0\.0\.5$/,
      );
    }
  });

  it('an unknown key names source among the known ones', () => {
    refused(
      'groups:\n  - {group: 232.1.1.1, src: 10.0.0.1, ports: [a]}\n',
      /unknown key "src" in a group \(known: group, source, ports\)/,
    );
  });
});

describe('reconcile of (S,G) entries', () => {
  const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
  const switchWith = (memberships: GroupMembership[]) => {
    const entries = memberships.map((membership) => pipeline.forwarding(membership));
    return pipeline.readInstalled(
      entries.map((entry) => entry.flow),
      entries.flatMap((entry) => entry.groups),
    );
  };
  const plan = (installed: GroupMembership[], declared: GroupMembership[]) =>
    planGroupReconcile({ pipeline, installed: switchWith(installed), foreignFlows: [], declared });

  it('in sync with (*,G) and (S,G) entries of one group', () => {
    const entries = [
      { group: G, ports: [3] },
      { group: G, source: S1, ports: [1] },
    ];
    const result = plan(entries, entries);
    assert.deepEqual(result.drift, []);
    assert.equal(result.inSync, 2);
  });

  it('each entry drifts by its own key: a missing (S,G), a changed (S,G), an undeclared (S,G), the (*,G) right', () => {
    const result = plan(
      [
        { group: G, ports: [3] },
        { group: G, source: S1, ports: [1, 2] },
        { group: G, source: S2, ports: [2] },
      ],
      [
        { group: G, ports: [3] },
        { group: G, source: S1, ports: [1] },
        { group: groupAddress('232.2.2.2'), source: S2, ports: [4] },
      ],
    );
    assert.deepEqual(
      result.drift.map((entry) =>
        entry.object === 'group'
          ? { group: entry.group, source: entry.source, action: entry.action, after: entry.after }
          : entry,
      ),
      [
        { group: G, source: S1, action: 'change', after: [1] },
        { group: G, source: S2, action: 'remove', after: [] },
        { group: groupAddress('232.2.2.2'), source: S2, action: 'add', after: [4] },
      ],
    );
    assert.equal(result.inSync, 1, 'the (*,G) entry');
    const removal = result.drift[1]!;
    assert.ok(removal.changes.some((change) => change.op === 'delete-flow' && change.entry.match.ipSrc === S2));
  });

  it('a declared (S,G) of a group the daemon learned is a conflict, left alone', () => {
    const result = plan([{ group: G, ports: [5], learned: true }], [{ group: G, source: S1, ports: [1] }]);
    assert.deepEqual(result.drift, []);
    assert.deepEqual(
      result.conflicts.map(({ group, source }) => ({ group, source })),
      [{ group: G, source: S1 }],
    );
    assert.deepEqual(result.learnedGroups, [G]);
  });
});

describe('static (S,G) entries on a bridge', () => {
  /** A bridge on a switch holding `memberships`, recording what it is sent. */
  function bridgeWith(memberships: GroupMembership[]) {
    const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
    const entries = memberships.map((membership) => pipeline.forwarding(membership));
    const installed = pipeline.readInstalled(
      entries.map((entry) => entry.flow),
      entries.flatMap((entry) => entry.groups),
    );
    const sent: PipelineChange[] = [];
    const bridge: StaticGroupsBridge = {
      pipeline,
      readInstalled: async () => ({
        pipeline: installed,
        counters: new Map(),
        foreignFlows: [],
        groupIds: new Set(),
        meters: new Map(),
      }),
      apply: async (changes: readonly PipelineChange[]) => {
        sent.push(...changes);
        return new Map();
      },
      resolvePort: (ref: { ofport: number } | { name: string }) => ({
        ofport: 'ofport' in ref ? ref.ofport : 9,
        name: 'p',
      }),
      portByNumber: (ofport: number) => ({ ofport, name: `p${ofport}` }),
    };
    return { bridge, sent, pipeline };
  }
  const whole = [
    { group: G, ports: [3] },
    { group: G, source: S1, ports: [1] },
    { group: G, source: S2, ports: [2] },
    { group: groupAddress('232.2.2.2'), ports: [4] },
  ];

  it('uninstall GROUP removes its (*,G) entry and every (S,G) entry of it, no other group', async () => {
    const { bridge } = bridgeWith(whole);
    const outcome = await uninstallGroups(bridge, [G]);
    assert.deepEqual(
      outcome.groups.map(({ group, source, outcome: result }) => ({ group, source, result })),
      [
        { group: G, source: undefined, result: 'removed' },
        { group: G, source: S1, result: 'removed' },
        { group: G, source: S2, result: 'removed' },
      ],
    );
  });

  it('uninstall of one (S,G) entry leaves the rest; of a group with (S,G) entries only, no (*,G) reported absent', async () => {
    const { bridge, sent } = bridgeWith(whole);
    const one = await uninstallGroups(bridge, [{ group: G, source: S2 }]);
    assert.deepEqual(
      one.groups.map(({ source, outcome: result }) => ({ source, result })),
      [{ source: S2, result: 'removed' }],
    );
    assert.ok(sent.every((change) => change.op !== 'delete-flow' || change.entry.match.ipSrc === S2));
    const onlySources = bridgeWith([{ group: G, source: S1, ports: [1] }]);
    const result = await uninstallGroups(onlySources.bridge, [G]);
    assert.deepEqual(
      result.groups.map(({ source, outcome: result }) => ({ source, outcome: result })),
      [{ source: S1, outcome: 'removed' }],
    );
    const none = await uninstallGroups(bridgeWith([]).bridge, [G]);
    assert.deepEqual(
      none.groups.map(({ group, outcome: result }) => ({ group, outcome: result })),
      [{ group: G, outcome: 'absent' }],
    );
  });

  it('install of an (S,G) entry beside the group’s own: one result each, the (S,G) with its own chain head', async () => {
    const { bridge, pipeline } = bridgeWith([{ group: G, ports: [3] }]);
    const outcome = await installGroups(bridge, [
      { group: G, ports: [{ ofport: 3 }], where: () => 'x' },
      { group: G, source: S1, ports: [{ ofport: 1 }], where: () => 'y' },
    ]);
    assert.deepEqual(
      outcome.groups.map(({ group, source, outcome: result, groupId }) => ({ group, source, result, groupId })),
      [
        { group: G, source: undefined, result: 'unchanged', groupId: pipeline.groupId(G) },
        { group: G, source: S1, result: 'added', groupId: pipeline.sourceGroupId(S1, G) },
      ],
    );
    assert.notEqual(pipeline.sourceGroupId(S1, G), pipeline.groupId(G));
  });
});
