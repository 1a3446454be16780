/** Reconcile's planning: declared state against what was read back, with ownership rules. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { planGroupReconcile, planRouteReconcile } from '../../src/domain/reconcile-plan.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import { gotoTable } from '../../src/protocol/openflow/instruction.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { flowEntryOf, flowSlotOf, matchFields } from '../../src/domain/pipeline/openflow-entries.js';
import {
  MulticastPipeline,
  type FlowEntry,
  type GroupEntry,
  type GroupMembership,
} from '../../src/domain/pipeline/multicast-pipeline.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';

const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });

/** What the switch would hold after these memberships were installed (learned ones by the daemon). */
function switchWith(memberships: GroupMembership[], extra: { flows?: FlowEntry[]; groups?: GroupEntry[] } = {}) {
  const entries = memberships.map((membership) => pipeline.forwarding(membership));
  return pipeline.readInstalled(
    [...entries.map((entry) => entry.flow), ...(extra.flows ?? [])],
    [...entries.flatMap((entry) => entry.groups), ...(extra.groups ?? [])],
  );
}

describe('planGroupReconcile', () => {
  it('in sync: nothing to do', () => {
    const declared = [{ group: groupAddress('239.1.1.1'), ports: [1, 2] }];
    const plan = planGroupReconcile({ pipeline, installed: switchWith(declared), foreignFlows: [], declared });
    assert.deepEqual(plan.drift, []);
    assert.equal(plan.inSync, 1);
  });

  it('adds what is declared and missing, changes what differs, removes what is not declared', () => {
    const installed = switchWith([
      { group: groupAddress('239.1.1.2'), ports: [1] },
      { group: groupAddress('239.1.1.3'), ports: [3] },
    ]);
    const declared = [
      { group: groupAddress('239.1.1.1'), ports: [1, 2] },
      { group: groupAddress('239.1.1.2'), ports: [1, 2] },
    ];
    const plan = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared });
    assert.deepEqual(
      plan.drift.map((entry) =>
        entry.object === 'group' ? [entry.group, entry.action, entry.before, entry.after, entry.detail] : entry,
      ),
      [
        ['239.1.1.1', 'add', [], [1, 2], 'declared, not installed'],
        ['239.1.1.2', 'change', [1], [1, 2], 'ports 2 missing'],
        ['239.1.1.3', 'remove', [3], [], 'installed, not declared'],
      ],
    );
    const ops = plan.drift.flatMap((entry) => entry.changes.map((change) => change.op));
    assert.deepEqual(ops, ['add-group', 'add-flow', 'modify-group', 'delete-flow', 'delete-group']);
  });

  it("never touches the daemon's learned groups; declaring one is a conflict", () => {
    const installed = switchWith([{ group: groupAddress('239.2.2.2'), ports: [5], learned: true }]);
    assert.equal(installed.groups[0]!.learned, true);
    const untouched = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared: [] });
    assert.deepEqual(untouched.drift, []);
    assert.deepEqual(untouched.learnedGroups, ['239.2.2.2']);
    const conflict = planGroupReconcile({
      pipeline,
      installed,
      foreignFlows: [],
      declared: [{ group: groupAddress('239.2.2.2'), ports: [1] }],
    });
    assert.deepEqual(conflict.drift, []);
    assert.match(conflict.conflicts[0]!.problem, /the daemon learned this group/);
  });

  it('a flow deleted by hand: its OVS group is reused (modified, not added) and the flow comes back', () => {
    const declared = [{ group: groupAddress('239.1.1.1'), ports: [1, 2] }];
    const { groups } = pipeline.forwarding(declared[0]!);
    const installed = pipeline.readInstalled([], groups); // the group is there, the flow is gone
    const plan = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared });
    assert.equal(plan.drift.length, 1, 'one drift: no separate stray-group removal');
    assert.deepEqual(
      plan.drift[0]!.changes.map((change) => change.op),
      ['modify-group', 'add-flow'],
    );
    assert.equal(plan.drift[0]!.action, 'change');
    assert.equal(plan.drift[0]!.detail, 'its flow is missing (its OVS group is there)');
  });

  it('a stray OVS group in our range is removed; a changed bucket list is a change', () => {
    const declared = [{ group: groupAddress('239.1.1.1'), ports: [1, 2] }];
    const stray: GroupEntry = {
      groupId: pipeline.groupId(groupAddress('239.7.7.7')),
      buckets: [{ type: 'output', port: 1 }],
    };
    const drifted = switchWith([{ group: groupAddress('239.1.1.1'), ports: [1, 3] }], { groups: [stray] });
    const plan = planGroupReconcile({ pipeline, installed: drifted, foreignFlows: [], declared });
    assert.deepEqual(
      plan.drift.map((entry) => [entry.object, entry.action]),
      [
        ['group', 'change'],
        ['stray-group', 'remove'],
      ],
    );
    assert.match(plan.drift[0]!.detail, /ports 2 missing; ports 3 not declared/);
  });

  it("a declared group whose flow would replace another controller's is a conflict, not a change", () => {
    const declared = [{ group: groupAddress('239.1.1.1'), ports: [1] }];
    const theirs = { ...pipeline.groupFlow(groupAddress('239.1.1.1')), cookie: 0x1234n };
    const plan = planGroupReconcile({ pipeline, installed: switchWith([]), foreignFlows: [theirs], declared });
    assert.deepEqual(plan.drift, []);
    assert.match(plan.conflicts[0]!.problem, /another controller's flow/);
  });
});

describe("other controllers' flows, whatever their actions", () => {
  it('a flow with actions the pipeline never writes (goto_table) still holds its place: ours may not replace it', () => {
    const theirs = {
      tableId: 0,
      priority: pipeline.groupFlow(groupAddress('239.1.1.1')).priority,
      cookie: 0x99n,
      match: matchFields({ ethType: 0x0800, ipDst: '239.1.1.1' }),
      instructions: [gotoTable(10)],
      packetCount: 0n,
      byteCount: 0n,
    } as unknown as FlowStats;
    assert.equal(flowEntryOf(theirs), undefined, 'not a flow the pipeline could have written');
    const slot = flowSlotOf(theirs);
    assert.ok(slot !== undefined);
    const plan = planGroupReconcile({
      pipeline,
      installed: switchWith([]),
      foreignFlows: [slot],
      declared: [{ group: groupAddress('239.1.1.1'), ports: [1] }],
    });
    assert.deepEqual(plan.drift, []);
    assert.match(plan.conflicts[0]!.problem, /another controller's flow \(cookie 0x99\)/);
  });

  it('an OVS group of ours of another type than ALL is drift', () => {
    const declared = [{ group: groupAddress('239.1.1.1'), ports: [1, 2] }];
    const { flow, groups } = pipeline.forwarding(declared[0]!);
    const installed = pipeline.readInstalled(
      [flow],
      groups.map((entry) => ({ ...entry, groupType: 1 /* SELECT */ })),
    );
    const plan = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared });
    assert.deepEqual(
      plan.drift.map((entry) => [entry.action, entry.changes.map((change) => change.op)]),
      [['change', ['modify-group']]],
    );
  });
});

describe('planRouteReconcile', () => {
  it('adds, changes (oifs compared as a set) and removes routes', () => {
    const declared = [
      { source: sourceAddress('10.0.0.5'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['gw0', 'eth1'] },
      { source: sourceAddress('10.0.0.6'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['gw0'] },
      { source: sourceAddress('10.0.0.7'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['gw0'] },
    ];
    const actual = [
      { source: sourceAddress('10.0.0.5'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['eth1', 'gw0'] },
      { source: sourceAddress('10.0.0.6'), group: groupAddress('239.1.1.1'), iif: 'eth1', oifs: ['gw0'] },
      { source: sourceAddress('10.0.0.9'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['gw0'] },
    ];
    const plan = planRouteReconcile(declared, actual);
    assert.equal(plan.inSync, 1);
    assert.deepEqual(
      plan.drift.map((entry) => [entry.source, entry.action]),
      [
        ['10.0.0.6', 'change'],
        ['10.0.0.7', 'add'],
        ['10.0.0.9', 'remove'],
      ],
    );
    assert.equal(plan.drift[0]!.detail, 'eth1 → gw0 instead of eth0 → gw0');
  });

  it("the router's (daemon's) entries: never removed; declared as they are, in sync; declared otherwise, a conflict", () => {
    const daemon = [
      { source: sourceAddress('10.0.0.5'), group: groupAddress('239.1.1.1'), iif: 'gw0', oifs: ['eth0'] },
      { source: sourceAddress('10.0.0.6'), group: groupAddress('239.1.1.1'), iif: 'gw0', oifs: ['eth0'] },
    ];
    const plan = planRouteReconcile(
      [
        { source: sourceAddress('10.0.0.5'), group: groupAddress('239.1.1.1'), iif: 'gw0', oifs: ['eth0'] },
        { source: sourceAddress('10.0.0.6'), group: groupAddress('239.1.1.1'), iif: 'eth0', oifs: ['gw0'] },
      ],
      daemon,
      daemon,
    );
    assert.deepEqual(plan.drift, []);
    assert.equal(plan.inSync, 1);
    assert.deepEqual(
      plan.conflicts.map((conflict) => conflict.source),
      ['10.0.0.6'],
    );
    assert.match(plan.conflicts[0]!.problem, /the daemon routes it gw0 → eth0/);
  });
});
