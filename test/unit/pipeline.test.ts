/** The multicast pipeline and its planner: pure logic, no switch. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { DEFAULT_PIPELINE_CONFIG, validatePipelineConfig } from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, encodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import {
  MulticastPipeline,
  type FlowEntry,
  type GroupEntry,
  type GroupForwarding,
} from '../../src/domain/pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, groupEntryOf } from '../../src/domain/pipeline/openflow-entries.js';
import { type PipelineChange, planInstall, planUninstall, planUninstallAll } from '../../src/domain/pipeline/plan.js';
import { decode as decodeMessage, encode as encodeMessage } from '../../src/protocol/openflow/message.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';
import { IPV4_FAMILY } from '../../src/domain/family/ipv4.js';
import { IPV6_FAMILY } from '../../src/domain/family/ipv6.js';

const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });

/** What the switch holds after applying `changes` to `state` (a tiny model of OVS's tables). */
function apply(
  state: { flows: FlowEntry[]; groups: GroupEntry[] },
  changes: ReturnType<typeof planInstall>[number]['changes'],
) {
  const flows = new Map(state.flows.map((flow) => [JSON.stringify([flow.table, flow.priority, flow.match]), flow]));
  const groups = new Map(state.groups.map((group) => [group.groupId, group]));
  for (const change of changes) {
    switch (change.op) {
      case 'add-group':
        assert.ok(!groups.has(change.entry.groupId), `add of existing group ${change.entry.groupId}`);
        groups.set(change.entry.groupId, change.entry);
        break;
      case 'modify-group':
        assert.ok(groups.has(change.entry.groupId), `modify of missing group ${change.entry.groupId}`);
        groups.set(change.entry.groupId, change.entry);
        break;
      case 'delete-group':
        groups.delete(change.groupId);
        break;
      case 'modify-flow':
        assert.ok(
          flows.has(JSON.stringify([change.entry.table, change.entry.priority, change.entry.match])),
          'modify of a missing flow',
        );
        flows.set(JSON.stringify([change.entry.table, change.entry.priority, change.entry.match]), change.entry);
        break;
      case 'add-flow':
        assert.ok(
          !flows.has(JSON.stringify([change.entry.table, change.entry.priority, change.entry.match])),
          'add over an existing flow',
        );
        for (const action of change.entry.actions)
          if (action.type === 'group')
            assert.ok(groups.has(action.groupId), 'a flow to a group that does not exist yet');
        flows.set(JSON.stringify([change.entry.table, change.entry.priority, change.entry.match]), change.entry);
        break;
      case 'delete-flow':
        flows.delete(JSON.stringify([change.entry.table, change.entry.priority, change.entry.match]));
        break;
    }
  }
  return { flows: [...flows.values()], groups: [...groups.values()] };
}

describe('FlowCookie', () => {
  it('packs prefix, kind and value, and reads back only our own', () => {
    const cookie = encodeFlowCookie({ prefix: 0x4d43, kind: FlowKind.GroupForward, value: 0xef010203 });
    assert.equal(cookie, 0x4d43_03_00_ef010203n);
    assert.deepEqual(decodeFlowCookie(cookie, 0x4d43), {
      prefix: 0x4d43,
      kind: FlowKind.GroupForward,
      value: 0xef010203,
    });
    assert.equal(decodeFlowCookie(cookie, 0x1234), undefined, 'another prefix');
    assert.equal(decodeFlowCookie(0x4d43_99_00_00000000n, 0x4d43), undefined, 'an unknown kind');
  });
});

describe('MulticastPipeline', () => {
  it('gives each group a stable OVS group id from its address, and reads it back', () => {
    assert.equal(pipeline.groupId(groupAddress('239.1.2.3')), 0x10000000 + 0x0f010203);
    assert.equal(pipeline.groupId(groupAddress('224.0.1.0')), 0x10000100);
    assert.equal(pipeline.groupIds.groupOf(pipeline.groupId(groupAddress('232.255.0.9'))), '232.255.0.9');
    assert.equal(pipeline.groupId(groupAddress('239.1.2.3'), 1), 0x20000000 + 0x0f010203, 'chain link 1');
    assert.ok(pipeline.ownsGroupId(0x2f010203) && !pipeline.ownsGroupId(0x0f010203) && !pipeline.ownsGroupId(7));
  });
  it('forwards a group to its member ports with one ALL group and one flow', () => {
    const forwarding = pipeline.forwarding({ group: groupAddress('239.1.2.3'), ports: [7, 3, 3, 5] });
    assert.deepEqual(forwarding.groups, [
      { groupId: 0x1f010203, buckets: [3, 5, 7].map((port) => ({ type: 'output', port })) },
    ]);
    assert.deepEqual(forwarding.flow, {
      table: 0,
      priority: 200,
      cookie: 0x4d43_03_00_ef010203n,
      match: { ethType: 0x0800, ipDst: '239.1.2.3' },
      actions: [{ type: 'group', groupId: 0x1f010203 }],
    });
  });
  it('chains a group too large for one message, tail first', () => {
    const forwarding = pipeline.forwarding({ group: groupAddress('239.0.0.1'), ports: [1, 2, 3, 4, 5, 6, 7, 8] });
    // 4 buckets a group: 3 ports + a jump, 3 ports + a jump, 2 ports.
    assert.deepEqual(
      forwarding.groups.map((group) => [
        group.groupId.toString(16),
        group.buckets.map((b) => (b.type === 'output' ? b.port : `g${b.groupId.toString(16)}`)),
      ]),
      [
        ['3f000001', [7, 8]],
        ['2f000001', [4, 5, 6, 'g3f000001']],
        ['1f000001', [1, 2, 3, 'g2f000001']],
      ],
    );
    const installed = pipeline.readInstalled([forwarding.flow], forwarding.groups);
    assert.deepEqual(installed.groups[0]?.ports, [1, 2, 3, 4, 5, 6, 7, 8]);
  });
  it('reads back what it installed, and reports what does not fit together', () => {
    const a = pipeline.forwarding({ group: groupAddress('239.1.1.1'), ports: [1, 2] });
    const b = pipeline.forwarding({ group: groupAddress('239.1.1.2'), ports: [3] });
    const foreignFlow: FlowEntry = { ...a.flow, cookie: 0x1234n };
    const stray: GroupEntry = { groupId: pipeline.groupId(groupAddress('239.9.9.9')), buckets: [] };
    const installed = pipeline.readInstalled(
      [a.flow, b.flow, foreignFlow, ...pipeline.linkLocalFlood()],
      [...a.groups, stray],
    );
    assert.deepEqual(
      installed.groups.map((g) => [g.group, g.ports, g.problem]),
      [
        ['239.1.1.1', [1, 2], undefined],
        ['239.1.1.2', [], `OVS group ${pipeline.groupId(groupAddress('239.1.1.2'))} is missing`],
      ],
    );
    assert.deepEqual(installed.strayGroups, [stray]);
    // ours but no group's: the two families' link-scope floods; the foreign flow is nobody's here
    assert.deepEqual(installed.otherFlows, pipeline.linkLocalFlood());
    assert.deepEqual(
      installed.otherFlows.map((flow) => flow.match.ethType),
      [0x0800, 0x86dd],
    );
  });
  it('a flow with our cookie whose value is no multicast address is ours to remove, not a group', () => {
    const odd: FlowEntry = {
      ...pipeline.groupFlow(groupAddress('239.1.1.1')),
      cookie: encodeFlowCookie({ prefix: 0x4d43, kind: FlowKind.GroupForward, value: 0x0a000001 }),
    };
    const installed = pipeline.readInstalled([odd], []);
    assert.deepEqual(installed.groups, []);
    assert.deepEqual(installed.otherFlows, [odd]);
  });
});

describe('OVS group ids', () => {
  const fresh = () => new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
  const G = groupAddress('239.1.2.3');
  const H = groupAddress('239.4.5.6');

  it('are taken back from the switch after a restart: the group action of the flow says which', () => {
    // A group whose head sits in another slot than its preferred one (it collided when installed).
    const before = fresh();
    before.groupIds.adopt(G, DEFAULT_PIPELINE_CONFIG.groupIdBase + 77);
    const installed = before.forwarding({ group: G, ports: [1, 2, 3, 4, 5] });
    assert.equal(
      installed.flow.actions[0]?.type === 'group' && installed.flow.actions[0].groupId,
      DEFAULT_PIPELINE_CONFIG.groupIdBase + 77,
    );

    const after = fresh();
    const read = after.readInstalled([installed.flow], installed.groups);
    assert.deepEqual(
      read.groups.map((group) => [group.group, group.ports, group.problem]),
      [[G, [1, 2, 3, 4, 5], undefined]],
    );
    assert.equal(after.groupId(G), DEFAULT_PIPELINE_CONFIG.groupIdBase + 77, 'the recovered head');
    assert.equal(
      after.groupId(G, 1),
      DEFAULT_PIPELINE_CONFIG.groupIdBase + 0x10000000 + 77,
      'its chain in the same slot',
    );
    assert.deepEqual(
      planInstall(after, [{ group: G, ports: [1, 2, 3, 4, 5] }], read)[0]?.changes,
      [],
      'nothing to rewrite',
    );
  });

  it('a group whose preferred slot is held gets the next free one; a released slot is free again', () => {
    const pipeline = fresh();
    const preferredOfH = pipeline.groupIds.idOf(H);
    pipeline.groupIds.release(H);
    assert.ok(pipeline.groupIds.adopt(G, preferredOfH), 'G holds the slot H would like');
    assert.equal(pipeline.groupId(H), preferredOfH + 1);
    assert.equal(pipeline.groupIds.adopt(H, preferredOfH), false, 'a held slot is not taken over');
    pipeline.groupIds.release(G);
    assert.equal(pipeline.groupIds.groupOf(preferredOfH), undefined);
    assert.equal(pipeline.groupIds.adopt(H, preferredOfH), true);
    assert.equal(pipeline.groupId(H), preferredOfH);
  });

  it('a flow that points at no head of ours is reported, not followed', () => {
    const pipeline = fresh();
    const forwarding = pipeline.forwarding({ group: G, ports: [1] });
    const chainLink = { ...forwarding.flow, actions: [{ type: 'group' as const, groupId: pipeline.groupId(G, 1) }] };
    const read = fresh().readInstalled([chainLink], forwarding.groups);
    assert.match(read.groups[0]?.problem ?? '', /not the head of one of ours/);
    assert.deepEqual(read.strayGroups, forwarding.groups, 'the group it should use is unreached');
  });
});

describe('the query probe flow', () => {
  it("sends a queried port's IGMP to the controller above the snooping flows (the pod's metered one too), with a hard timeout on the wire", () => {
    const probes = pipeline.queryProbe(IPV4_FAMILY, { ofport: 7, runId: 0xdeadbeef, hardTimeoutSeconds: 12.2 });
    assert.equal(probes.length, 1);
    const probe = probes[0]!;
    assert.equal(probe.priority, DEFAULT_PIPELINE_CONFIG.priorities.igmp + 2);
    assert.ok(pipeline.membershipToControllerMetered(7).every((flow) => probe.priority > flow.priority));
    assert.deepEqual(probe.match, { inPort: 7, ethType: 0x0800, ipProto: 2 });
    assert.deepEqual(probe.actions, [{ type: 'controller' }]);
    assert.equal(probe.hardTimeout, 13);
    assert.equal(
      pipeline.queryProbe(IPV4_FAMILY, { ofport: 7, runId: 1, hardTimeoutSeconds: 1e9 })[0]?.hardTimeout,
      0xffff,
    );
    // the run's id in the cookie: a run deletes its own flows, never another run's
    assert.deepEqual(decodeFlowCookie(probe.cookie, DEFAULT_PIPELINE_CONFIG.cookiePrefix), {
      prefix: 0x4d43,
      kind: FlowKind.IgmpQueryProbe,
      value: 0xdeadbeef,
    });
    const message = changeMessage({ op: 'add-flow', entry: probe });
    assert.equal(message.type === 'FLOW_MOD' && message.hardTimeout, 13);
    assert.equal(message.type === 'FLOW_MOD' && message.idleTimeout, 0);
  });
  it("MLD: one flow per MLD ICMPv6 type of the queried port (Neighbor Discovery stays in the switch), IGMP's priority, cookie and timeout", () => {
    const probes = pipeline.queryProbe(IPV6_FAMILY, { ofport: 7, runId: 0xdeadbeef, hardTimeoutSeconds: 12.2 });
    assert.deepEqual(
      probes.map((probe) => probe.match),
      [130, 131, 132, 143].map((icmpv6Type) => ({ inPort: 7, ethType: 0x86dd, ipProto: 58, icmpv6Type })),
    );
    const [igmp] = pipeline.queryProbe(IPV4_FAMILY, { ofport: 7, runId: 0xdeadbeef, hardTimeoutSeconds: 12.2 });
    for (const probe of probes) {
      assert.equal(probe.priority, igmp!.priority);
      assert.equal(probe.cookie, igmp!.cookie);
      assert.equal(probe.hardTimeout, 13);
      assert.deepEqual(probe.actions, [{ type: 'controller' }]);
    }
    // above the MLD snooping flows, metered or not
    const snooping = [...pipeline.membershipToController(), ...pipeline.membershipToControllerMetered(7)];
    assert.ok(snooping.every((flow) => probes[0]!.priority > flow.priority));
  });
  it('needs room above the snooping flow', () => {
    assert.throws(
      () =>
        validatePipelineConfig({
          ...DEFAULT_PIPELINE_CONFIG,
          priorities: { ...DEFAULT_PIPELINE_CONFIG.priorities, igmp: 0xffff },
        }),
      /below 65534/,
    );
    assert.throws(
      () =>
        validatePipelineConfig({
          ...DEFAULT_PIPELINE_CONFIG,
          priorities: { ...DEFAULT_PIPELINE_CONFIG.priorities, igmp: 250 },
        }),
      /above sendPolicy/,
    );
    assert.throws(
      () =>
        validatePipelineConfig({
          ...DEFAULT_PIPELINE_CONFIG,
          priorities: { ...DEFAULT_PIPELINE_CONFIG.priorities, sendPolicy: 240 },
        }),
      /sendPolicy \(240\) must be above linkLocal/,
    );
  });
});

describe('planning', () => {
  const empty = { flows: [] as FlowEntry[], groups: [] as GroupEntry[] };
  const read = (state: typeof empty) => pipeline.readInstalled(state.flows, state.groups);

  it('install: adds, then changes nothing the second time', () => {
    const desired = [{ group: groupAddress('239.1.2.3'), ports: [1, 2] }];
    const first = planInstall(pipeline, desired, read(empty));
    assert.deepEqual(
      first.map((p) => [p.outcome, p.changes.map((c) => c.op)]),
      [['added', ['add-group', 'add-flow']]],
    );
    const after = apply(
      empty,
      first.flatMap((p) => p.changes),
    );
    const second = planInstall(pipeline, desired, read(after));
    assert.deepEqual(
      second.map((p) => [p.outcome, p.changes.length]),
      [['unchanged', 0]],
    );
  });
  it('install: a membership change modifies the group only; growing and shrinking a chain', () => {
    let state = apply(
      empty,
      planInstall(pipeline, [{ group: groupAddress('239.1.2.3'), ports: [1, 2] }], read(empty)).flatMap(
        (p) => p.changes,
      ),
    );
    const grow = planInstall(pipeline, [{ group: groupAddress('239.1.2.3'), ports: [1, 2, 3, 4, 5, 6] }], read(state));
    assert.deepEqual(
      grow[0]?.changes.map((c) => c.op),
      ['add-group', 'modify-group'],
    );
    state = apply(
      state,
      grow.flatMap((p) => p.changes),
    );
    assert.deepEqual(read(state).groups[0]?.ports, [1, 2, 3, 4, 5, 6]);
    const shrink = planInstall(pipeline, [{ group: groupAddress('239.1.2.3'), ports: [2] }], read(state));
    assert.deepEqual(
      shrink[0]?.changes.map((c) => c.op),
      ['modify-group', 'delete-group'],
    );
    state = apply(
      state,
      shrink.flatMap((p) => p.changes),
    );
    assert.deepEqual(read(state).groups[0]?.ports, [2]);
    assert.equal(state.groups.length, 1);
  });
  it("install: a group whose flow would replace someone else's is a conflict, and nothing is done for it", () => {
    const foreign: FlowEntry = { ...pipeline.groupFlow(groupAddress('239.1.2.3')), cookie: 0x77n, actions: [] };
    const [plan] = planInstall(pipeline, [{ group: groupAddress('239.1.2.3'), ports: [1] }], read(empty), [foreign]);
    assert.equal(plan?.outcome, 'conflict');
    assert.deepEqual(plan?.changes, []);
    assert.match(plan?.problem ?? '', /cookie 0x77/);
  });
  it('uninstall: removes the named groups, says which were absent, and all removes all of ours', () => {
    const state = apply(
      empty,
      planInstall(
        pipeline,
        [
          { group: groupAddress('239.1.1.1'), ports: [1] },
          { group: groupAddress('239.1.1.2'), ports: [2, 3, 4, 5, 6] },
        ],
        read(empty),
      ).flatMap((p) => p.changes),
    );
    const one = planUninstall([groupAddress('239.1.1.1'), groupAddress('239.7.7.7')], read(state));
    assert.deepEqual(
      one.map((p) => [p.group, p.outcome]),
      [
        ['239.1.1.1', 'removed'],
        ['239.7.7.7', 'absent'],
      ],
    );
    assert.deepEqual(
      read(
        apply(
          state,
          one.flatMap((p) => p.changes),
        ),
      ).groups.map((g) => g.group),
      ['239.1.1.2'],
    );
    const all = planUninstallAll(read({ ...state, flows: [...state.flows, ...pipeline.linkLocalFlood()] }));
    const cleared = apply({ ...state, flows: [...state.flows, ...pipeline.linkLocalFlood()] }, [
      ...all.groups.flatMap((p) => p.changes),
      ...all.extra,
    ]);
    assert.deepEqual(cleared, empty);
  });
});

describe('pipeline configuration', () => {
  it('refuses values that would collide with OpenFlow reserved ranges', () => {
    assert.throws(
      () => validatePipelineConfig({ ...DEFAULT_PIPELINE_CONFIG, groupIdBase: 0x12345678 }),
      /multiple of 0x10000000/,
    );
    assert.throws(
      () => validatePipelineConfig({ ...DEFAULT_PIPELINE_CONFIG, groupIdBase: 0xf0000000 }),
      /multiple of 0x10000000/,
    );
    assert.throws(() => validatePipelineConfig({ ...DEFAULT_PIPELINE_CONFIG, table: 255 }), /table/);
    assert.throws(() => validatePipelineConfig({ ...DEFAULT_PIPELINE_CONFIG, cookiePrefix: 0 }), /cookie prefix/);
    assert.doesNotThrow(() => validatePipelineConfig(DEFAULT_PIPELINE_CONFIG));
  });
});

describe('IPv6 groups in the pipeline', () => {
  const G6 = groupAddress('ff3e::8000:1');
  const S6 = sourceAddress('2001:db8::5');
  const fresh = () => new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });

  /** What the switch would dump after taking these entries: each through the codec's bytes and back. */
  function throughTheWire(forwardings: readonly GroupForwarding[]): { groups: GroupEntry[]; flows: FlowEntry[] } {
    const roundTrip = (change: PipelineChange) => decodeMessage(encodeMessage(changeMessage(change)));
    return {
      groups: forwardings
        .flatMap((forwarding) => forwarding.groups)
        .map((entry) => {
          const message = roundTrip({ op: 'add-group', entry });
          if (message.type !== 'GROUP_MOD') throw new Error('not a GROUP_MOD');
          return groupEntryOf({ groupType: message.groupType, groupId: message.groupId, buckets: message.buckets });
        }),
      flows: forwardings.map((forwarding) => {
        const message = roundTrip({ op: 'add-flow', entry: forwarding.flow });
        if (message.type !== 'FLOW_MOD') throw new Error('not a FLOW_MOD');
        const flow = flowEntryOf({ ...message, durationSec: 0, durationNsec: 0, packetCount: 0n, byteCount: 0n });
        assert.ok(flow !== undefined, 'read back as one of ours');
        return flow;
      }),
    };
  }

  it('a group flow matches the IPv6 ethertype and its destination, and an (S,G) flow its source too', () => {
    const writer = fresh();
    const group = writer.forwarding({ group: G6, ports: [5, 3] });
    assert.deepEqual(group.flow.match, { ethType: 0x86dd, ipDst: 'ff3e::8000:1' });
    assert.deepEqual(group.flow.actions, [{ type: 'group', groupId: writer.groupId(G6) }]);
    assert.deepEqual(group.groups, [
      {
        groupId: writer.groupId(G6),
        buckets: [
          { type: 'output', port: 3 },
          { type: 'output', port: 5 },
        ],
      },
    ]);
    const sourced = writer.forwarding({ group: G6, source: S6, ports: [3] });
    assert.deepEqual(sourced.flow.match, { ethType: 0x86dd, ipDst: 'ff3e::8000:1', ipSrc: '2001:db8::5' });
    assert.ok(sourced.flow.priority > group.flow.priority, 'the source above its group');
    // On the wire: OXM ETH_TYPE 0x86dd, IPV6_SRC, IPV6_DST, never the IPv4 fields.
    const message = changeMessage({ op: 'add-flow', entry: sourced.flow });
    assert.equal(message.type, 'FLOW_MOD');
    assert.deepEqual(message.type === 'FLOW_MOD' && message.match, [
      { field: 'ETH_TYPE', value: 0x86dd },
      { field: 'IPV6_SRC', value: '2001:db8::5' },
      { field: 'IPV6_DST', value: 'ff3e::8000:1' },
    ]);
  });

  it('goes through the wire and reads back into a fresh pipeline as the same group, source and ports', () => {
    const writer = fresh();
    const memberships = [
      { group: G6, ports: [3, 5] },
      { group: G6, source: S6, ports: [3] },
    ];
    const forwardings = memberships.map((membership) => writer.forwarding(membership));
    const dumped = throughTheWire(forwardings);
    assert.deepEqual(
      dumped.flows,
      forwardings.map((forwarding) => forwarding.flow),
    );
    const reader = fresh();
    const installed = reader.readInstalled(dumped.flows, dumped.groups);
    assert.deepEqual(
      installed.groups.map((entry) => [entry.group, entry.source, entry.ports, entry.problem]),
      [
        [G6, undefined, [3, 5], undefined],
        [G6, S6, [3], undefined],
      ],
    );
    assert.deepEqual(installed.otherFlows, []);
    assert.deepEqual(installed.strayGroups, []);
    assert.equal(reader.groupId(G6), writer.groupId(G6));
    assert.equal(reader.sourceGroupId(S6, G6), writer.sourceGroupId(S6, G6));
    assert.deepEqual(
      planInstall(reader, memberships, installed).map((plan) => [plan.group, plan.source, plan.outcome]),
      [
        [G6, undefined, 'unchanged'],
        [G6, S6, 'unchanged'],
      ],
    );
  });

  it('an IPv4 and an IPv6 group side by side get distinct OVS group ids, and both read back', () => {
    const writer = fresh();
    // ff3e::ef01:203 ends in 239.1.2.3's 32 bits: both want the same slot (and carry the same cookie value).
    const G4 = groupAddress('239.1.2.3');
    const G6_SAME_TAIL = groupAddress('ff3e::ef01:203');
    const forwardings = [
      writer.forwarding({ group: G4, ports: [3] }),
      writer.forwarding({ group: G6_SAME_TAIL, ports: [5] }),
      writer.forwarding({ group: G6, ports: [3, 5] }),
    ];
    const ids = [writer.groupId(G4), writer.groupId(G6_SAME_TAIL), writer.groupId(G6)];
    assert.equal(new Set(ids).size, 3, `distinct ids: ${ids.join(', ')}`);
    assert.ok(ids.every((id) => writer.ownsGroupId(id)));
    assert.deepEqual(
      forwardings.map((forwarding) => forwarding.flow.match),
      [
        { ethType: 0x0800, ipDst: '239.1.2.3' },
        { ethType: 0x86dd, ipDst: 'ff3e::ef01:203' },
        { ethType: 0x86dd, ipDst: 'ff3e::8000:1' },
      ],
    );
    const dumped = throughTheWire(forwardings);
    const reader = fresh();
    const installed = reader.readInstalled(dumped.flows, dumped.groups);
    assert.deepEqual(
      installed.groups.map((entry) => [entry.group, entry.ports, entry.problem]),
      [
        [G4, [3], undefined],
        [G6, [3, 5], undefined],
        [G6_SAME_TAIL, [5], undefined],
      ],
    );
    assert.deepEqual(
      [reader.groupId(G4), reader.groupId(G6_SAME_TAIL), reader.groupId(G6)],
      ids,
      'the ids taken back from the switch',
    );
  });

  it('membership to the controller: IGMP and the four MLD types, never Neighbor Discovery', () => {
    const flows = pipeline.membershipToController();
    assert.deepEqual(
      flows.map((flow) => flow.match),
      [
        { ethType: 0x0800, ipProto: 2 },
        ...[130, 131, 132, 143].map((icmpv6Type) => ({ ethType: 0x86dd, ipProto: 58, icmpv6Type })),
      ],
    );
    const types = flows.map((flow) => flow.match.icmpv6Type).filter((type) => type !== undefined);
    for (const neighborDiscovery of [133, 134, 135, 136, 137])
      assert.ok(!types.includes(neighborDiscovery), `ICMPv6 type ${neighborDiscovery}`);
    assert.ok(flows.every((flow) => flow.priority === DEFAULT_PIPELINE_CONFIG.priorities.igmp));
    assert.ok(flows.every((flow) => flow.actions.length === 1 && flow.actions[0]!.type === 'controller'));
    // On the wire each MLD flow carries its prerequisites, and reads back the same.
    for (const flow of flows.slice(1)) {
      const message = changeMessage({ op: 'add-flow', entry: flow });
      assert.ok(message.type === 'FLOW_MOD');
      assert.deepEqual(message.match, [
        { field: 'ETH_TYPE', value: 0x86dd },
        { field: 'IP_PROTO', value: 58 },
        { field: 'ICMPV6_TYPE', value: flow.match.icmpv6Type },
      ]);
      const decoded = decodeMessage(encodeMessage(message));
      assert.ok(decoded.type === 'FLOW_MOD');
      assert.deepEqual(
        flowEntryOf({ ...decoded, durationSec: 0, durationNsec: 0, packetCount: 0n, byteCount: 0n }),
        flow,
      );
    }
  });

  it('link scope floods per family: 224.0.0.0/24 and ff02::/16 with any flags (ff0f:: mask)', () => {
    assert.deepEqual(
      pipeline.linkLocalFlood().map((flow) => flow.match),
      [
        { ethType: 0x0800, ipDst: '224.0.0.0', ipDstMask: '255.255.255.0' },
        { ethType: 0x86dd, ipDst: 'ff02::', ipDstMask: 'ff0f::' },
      ],
    );
  });
});
