/** The pipeline's (S,G) entries: per-source flows and chains, their ids, tunnel mode, the wire, read-back and plans. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import {
  DEFAULT_PIPELINE_CONFIG,
  DEFAULT_SOURCE_PRIORITIES,
  DEFAULT_TUNNEL_PRIORITIES,
  GROUP_ID_BLOCK,
  sourcePriorities,
  validatePipelineConfig,
} from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, FlowCookieFlag, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import { forwardingKey } from '../../src/domain/pipeline/forwarding-key.js';
import {
  type FlowEntry,
  type GroupEntry,
  type GroupForwarding,
  type GroupMembership,
  MulticastPipeline,
  type TunnelMembers,
} from '../../src/domain/pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, groupEntryOf, matchFields } from '../../src/domain/pipeline/openflow-entries.js';
import { type PipelineChange, planInstall, planUninstall, planUninstallAll } from '../../src/domain/pipeline/plan.js';
import { splitBySource } from '../../src/domain/pipeline/source-split.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../src/protocol/openflow/limits.js';
import { decode as decodeMessage, encode as encodeMessage } from '../../src/protocol/openflow/message.js';
import { groupAddress, hostAddress, type SourceAddress, sourceAddress } from '../../src/wire/ip-address.js';

const G = groupAddress('239.1.2.3');
const S1 = sourceAddress('10.0.0.1');
const S2 = sourceAddress('10.0.0.2');
const S3 = sourceAddress('10.0.0.3');
const A = 1;
const B = 2;
const C = 3;
const TUN = 20;
const GW = 9;
const BASE = DEFAULT_PIPELINE_CONFIG.groupIdBase;
const G_VALUE = 0xef010203;

const small = () => new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
const real = () =>
  new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD });

const include = (...sources: SourceAddress[]): SourceFilter => ({ mode: 'include', sources: new Set(sources) });
const exclude = (...sources: SourceAddress[]): SourceFilter => ({ mode: 'exclude', sources: new Set(sources) });

/** FNV-1a 32, written out here to hold the allocator to the documented preferred slot. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return hash;
}

/**
 * The design's example: A IN{S1}, B IN{S2}, C EX{S1}, with the gateway in every entry, as the daemon's sync adds it.
 */
function exampleMemberships(): GroupMembership[] {
  const split = splitBySource([
    { port: A, filter: include(S1) },
    { port: B, filter: include(S2) },
    { port: C, filter: exclude(S1) },
  ]);
  assert.deepEqual(split, {
    other: [C],
    bySource: [
      { source: S1, ports: [A] },
      { source: S2, ports: [B, C] },
    ],
  });
  return [
    { group: G, ports: [...split.other, GW], learned: true },
    ...split.bySource.map(
      ({ source, ports }): GroupMembership => ({ group: G, source, ports: [...ports, GW], learned: true }),
    ),
  ];
}

const outputs = (entry: GroupEntry) =>
  entry.buckets.map((bucket) => (bucket.type === 'group' ? `group:${bucket.groupId}` : `output:${bucket.port}`));

/** What the switch would dump after taking these entries: each through the codec's bytes and back. */
function throughTheWire(forwardings: readonly GroupForwarding[]): { groups: GroupEntry[]; flows: FlowEntry[] } {
  const roundTrip = (change: PipelineChange) => decodeMessage(encodeMessage(changeMessage(change)));
  const groups = forwardings.flatMap((forwarding) => forwarding.groups);
  const flows = forwardings.flatMap((forwarding) => [forwarding.flow, ...(forwarding.ingress ?? [])]);
  return {
    groups: groups.map((entry) => {
      const message = roundTrip({ op: 'add-group', entry });
      if (message.type !== 'GROUP_MOD') throw new Error('not a GROUP_MOD');
      return groupEntryOf({ groupType: message.groupType, groupId: message.groupId, buckets: message.buckets });
    }),
    flows: flows.map((entry) => {
      const message = roundTrip({ op: 'add-flow', entry });
      if (message.type !== 'FLOW_MOD') throw new Error('not a FLOW_MOD');
      const flow = flowEntryOf({ ...message, durationSec: 0, durationNsec: 0, packetCount: 0n, byteCount: 0n });
      assert.ok(flow !== undefined, 'read back as one of ours');
      return flow;
    }),
  };
}

describe('(S,G) forwarding: the A/B/C example', () => {
  it('gives S1 and S2 entries of their own above the group, and the group only C and the gateway', () => {
    const pipeline = small();
    const [star, s1, s2] = exampleMemberships().map((membership) => pipeline.forwarding(membership));
    assert.ok(star !== undefined && s1 !== undefined && s2 !== undefined);
    assert.equal(star.source, undefined);
    assert.equal(s1.source, S1);
    assert.equal(s2.source, S2);
    // Flows: the (*,G) one as before, the (S,G) ones at sourceGroup with the source matched.
    assert.deepEqual(star.flow.match, { ethType: 0x0800, ipDst: G });
    assert.equal(star.flow.priority, 200);
    assert.deepEqual(s1.flow.match, { ethType: 0x0800, ipDst: G, ipSrc: S1 });
    assert.deepEqual(s2.flow.match, { ethType: 0x0800, ipDst: G, ipSrc: S2 });
    for (const forwarding of [s1, s2]) {
      assert.equal(forwarding.flow.priority, 210);
      assert.deepEqual(decodeFlowCookie(forwarding.flow.cookie, 0x4d43), {
        prefix: 0x4d43,
        kind: FlowKind.SourceForward,
        value: G_VALUE,
        flags: FlowCookieFlag.Learned,
      });
      assert.equal(forwarding.ingress, undefined, 'no ingress flows outside tunnel mode');
    }
    assert.equal(decodeFlowCookie(star.flow.cookie, 0x4d43)?.kind, FlowKind.GroupForward);
    // Buckets: each entry its own receivers (and the gateway), each in its own OVS group.
    assert.deepEqual(star.groups.map(outputs), [[`output:${C}`, `output:${GW}`]]);
    assert.deepEqual(s1.groups.map(outputs), [[`output:${A}`, `output:${GW}`]]);
    assert.deepEqual(s2.groups.map(outputs), [[`output:${B}`, `output:${C}`, `output:${GW}`]]);
    assert.deepEqual(star.flow.actions, [{ type: 'group', groupId: pipeline.groupId(G) }]);
    assert.deepEqual(s1.flow.actions, [{ type: 'group', groupId: pipeline.sourceGroupId(S1, G) }]);
    assert.deepEqual(s2.flow.actions, [{ type: 'group', groupId: pipeline.sourceGroupId(S2, G) }]);
    assert.equal(
      new Set([star, s1, s2].map((forwarding) => forwarding.groups[0]!.groupId)).size,
      3,
      'three OVS groups',
    );
    // Not learned: the cookie says so, as for (*,G).
    const declared = pipeline.forwarding({ group: G, source: S1, ports: [A] });
    assert.equal(decodeFlowCookie(declared.flow.cookie, 0x4d43)?.flags, undefined);
  });

  it('puts an (S,G) chain at the hash of its key, in every block, and frees it on release', () => {
    const pipeline = small();
    const slot = fnv1a(`${S1}>${G}`) % GROUP_ID_BLOCK;
    assert.equal(pipeline.sourceGroupId(S1, G), BASE + slot);
    assert.equal(pipeline.sourceGroupId(S1, G, 2), BASE + 2 * GROUP_ID_BLOCK + slot);
    assert.equal(pipeline.groupId(G), BASE + 0x0f010203, 'the group keeps its own slot');
    assert.equal(pipeline.groupIds.groupOf(BASE + slot), undefined, 'an (S,G) head is no group head');
    assert.deepEqual(pipeline.groupIds.targetOf(BASE + slot), { group: G, source: S1 });
    // A group whose preferred slot an (S,G) chain holds probes to the next free one.
    const taken = groupAddress(`${0xe0 + (slot >>> 24)}.${(slot >>> 16) & 0xff}.${(slot >>> 8) & 0xff}.${slot & 0xff}`);
    assert.equal(pipeline.groupId(taken), BASE + ((slot + 1) % GROUP_ID_BLOCK));
    pipeline.groupIds.releaseSource(S1, G);
    assert.equal(pipeline.groupIds.targetOf(BASE + slot), undefined);
    assert.equal(pipeline.groupIds.adoptSource(S2, G, BASE + slot), true, 'a released slot can be adopted');
    assert.equal(pipeline.groupIds.adopt(G, BASE + slot), false, 'held by (S2,G), not by G');
  });

  it('chains an (S,G) entry of 2,500 ports over its own links', () => {
    const pipeline = real();
    const ports = Array.from({ length: 2500 }, (_, index) => index + 1);
    const forwarding = pipeline.forwarding({ group: G, source: S3, ports });
    assert.equal(forwarding.groups.length, 2);
    const [tail, head] = forwarding.groups;
    assert.ok(tail !== undefined && head !== undefined);
    assert.equal(head.groupId, pipeline.sourceGroupId(S3, G));
    assert.equal(tail.groupId, pipeline.sourceGroupId(S3, G, 1));
    assert.equal(head.buckets.length, MAX_OUTPUT_BUCKETS_PER_GROUP_MOD);
    assert.deepEqual(head.buckets.at(-1), { type: 'group', groupId: tail.groupId });
    const reached = [...head.buckets, ...tail.buckets].flatMap((bucket) =>
      bucket.type === 'output' ? [bucket.port] : [],
    );
    assert.deepEqual(reached, ports);
    assert.deepEqual(forwarding.flow.actions, [{ type: 'group', groupId: head.groupId }]);
    assert.throws(
      () =>
        pipeline.forwarding({
          group: G,
          source: S3,
          ports: Array.from({ length: pipeline.maxMembers + 1 }, (_, i) => i + 1),
        }),
      {
        name: 'RangeError',
        message: new RegExp(`\\(${S3}, ${G}\\) has`),
      },
    );
  });
});

describe('(S,G) forwarding in tunnel mode', () => {
  const tunnel: TunnelMembers = { ofport: TUN, peers: [hostAddress('192.168.60.13'), hostAddress('192.168.60.12')] };

  it('keeps link 0 for the gateway and every peer, the pods of the source from link 1, and ingress flows to link 1', () => {
    const pipeline = small();
    const forwarding = pipeline.forwarding({
      group: G,
      source: S1,
      ports: [A, GW],
      gateway: GW,
      tunnel,
      learned: true,
    });
    const linkOne = pipeline.sourceGroupId(S1, G, 1);
    const head = forwarding.groups.at(-1)!;
    assert.equal(head.groupId, pipeline.sourceGroupId(S1, G));
    assert.deepEqual(head.buckets, [
      { type: 'output', port: GW },
      { type: 'output', port: TUN, tunnelDestination: '192.168.60.12' },
      { type: 'output', port: TUN, tunnelDestination: '192.168.60.13' },
      { type: 'group', groupId: linkOne },
    ]);
    assert.deepEqual(forwarding.groups.slice(0, -1), [{ groupId: linkOne, buckets: [{ type: 'output', port: A }] }]);
    assert.deepEqual(
      forwarding.ingress?.map((flow) => [flow.priority, flow.match, flow.actions]),
      [TUN, GW].map((inPort) => [
        275,
        { inPort, ethType: 0x0800, ipDst: G, ipSrc: S1 },
        [{ type: 'group', groupId: linkOne }],
      ]),
    );
    for (const flow of forwarding.ingress ?? []) {
      assert.deepEqual(decodeFlowCookie(flow.cookie, 0x4d43), {
        prefix: 0x4d43,
        kind: FlowKind.SourceIngressForward,
        value: G_VALUE,
        flags: 1,
      });
    }
  });

  it('drops a source from the tunnel and the gateway when no pod here wants it', () => {
    const pipeline = small();
    const forwarding = pipeline.forwarding({ group: G, source: S2, ports: [GW], gateway: GW, tunnel });
    assert.equal(forwarding.groups.length, 1, 'link 0 only');
    assert.deepEqual(outputs(forwarding.groups[0]!), [`output:${GW}`, `output:${TUN}`, `output:${TUN}`]);
    assert.deepEqual(
      forwarding.ingress?.map((flow) => [flow.match.inPort, flow.priority, flow.actions]),
      [
        [TUN, 275, []],
        [GW, 275, []],
      ],
    );
    // The (*,G) entry without pods still has no ingress flow: the catch-all drops take that traffic.
    assert.deepEqual(pipeline.forwarding({ group: G, ports: [GW], gateway: GW, tunnel }).ingress, []);
  });
});

describe('(S,G) entries on the wire and read back', () => {
  it('encodes IPV4_SRC between IP_PROTO and IPV4_DST and decodes it back', () => {
    const pipeline = small();
    const flow = pipeline.sourceIngressForward({ group: G, source: S1, inPort: TUN, linkOne: 7 });
    assert.deepEqual(
      matchFields({ ...flow.match, ipProto: 17 }).map((field) => field.field),
      ['IN_PORT', 'ETH_TYPE', 'IP_PROTO', 'IPV4_SRC', 'IPV4_DST'],
    );
    const sourceFlow = pipeline.sourceFlow({ group: G, source: S2 });
    assert.deepEqual(throughTheWire([{ group: G, groups: [], flow: sourceFlow, ingress: [flow] }]).flows, [
      sourceFlow,
      flow,
    ]);
    // A masked source is nothing the pipeline writes.
    const message = decodeMessage(encodeMessage(changeMessage({ op: 'add-flow', entry: sourceFlow })));
    if (message.type !== 'FLOW_MOD') throw new Error('not a FLOW_MOD');
    const masked = message.match.map((field) =>
      field.field === 'IPV4_SRC' ? { ...field, mask: '255.255.255.0' } : field,
    );
    assert.equal(
      flowEntryOf({ ...message, match: masked, durationSec: 0, durationNsec: 0, packetCount: 0n, byteCount: 0n }),
      undefined,
    );
  });

  it('reads (*,G) and (S,G) entries back into a fresh pipeline with the same items and ids', () => {
    const writer = small();
    // Push (S1,G) off its preferred slot, so that only the read-back can tell the fresh pipeline its id.
    const preferred = BASE + (fnv1a(`${S1}>${G}`) % GROUP_ID_BLOCK);
    assert.equal(writer.groupIds.adoptSource(S3, groupAddress('239.9.9.9'), preferred), true);
    const forwardings = exampleMemberships().map((membership) => writer.forwarding(membership));
    assert.equal(writer.sourceGroupId(S1, G), preferred + 1);
    const dumped = throughTheWire(forwardings);
    const reader = small();
    const installed = reader.readInstalled(dumped.flows, dumped.groups);
    assert.deepEqual(
      installed.groups.map((entry) => [entry.group, entry.source, entry.ports, entry.learned, entry.problem]),
      [
        [G, undefined, [C, GW], true, undefined],
        [G, S1, [A, GW], true, undefined],
        [G, S2, [B, C, GW], true, undefined],
      ],
    );
    assert.deepEqual(installed.otherFlows, []);
    assert.deepEqual(installed.strayGroups, []);
    assert.equal(reader.sourceGroupId(S1, G), preferred + 1, 'adopted from the switch');
    assert.equal(reader.sourceGroupId(S2, G), writer.sourceGroupId(S2, G));
    assert.equal(reader.groupId(G), writer.groupId(G));
    const plans = planInstall(reader, exampleMemberships(), installed);
    assert.deepEqual(
      plans.map((plan) => [plan.source, plan.outcome, plan.changes.length]),
      [
        [undefined, 'unchanged', 0],
        [S1, 'unchanged', 0],
        [S2, 'unchanged', 0],
      ],
    );
  });

  it('reads tunnel mode (S,G) entries back with their ingress flows (by in_port), the drops included', () => {
    const tunnel: TunnelMembers = { ofport: TUN, peers: [hostAddress('192.168.60.12')] };
    const writer = small();
    const memberships: GroupMembership[] = [
      { group: G, ports: [C, GW], gateway: GW, tunnel, learned: true },
      { group: G, source: S1, ports: [A, GW], gateway: GW, tunnel, learned: true },
      { group: G, source: S2, ports: [GW], gateway: GW, tunnel, learned: true },
    ];
    const forwardings = memberships.map((membership) => writer.forwarding(membership));
    const dumped = throughTheWire(forwardings);
    const reader = small();
    const installed = reader.readInstalled(dumped.flows, dumped.groups);
    assert.deepEqual(
      installed.groups.map((entry) => [
        entry.source,
        entry.ports,
        entry.ingress?.map((flow) => [flow.priority, flow.match.inPort, flow.actions.length]),
      ]),
      [
        [
          undefined,
          [C, GW],
          [
            [270, GW, 1],
            [270, TUN, 1],
          ],
        ],
        [
          S1,
          [A, GW],
          [
            [275, GW, 1],
            [275, TUN, 1],
          ],
        ],
        [
          S2,
          [GW],
          [
            [275, GW, 0],
            [275, TUN, 0],
          ],
        ],
      ],
    );
    assert.deepEqual(installed.otherFlows, []);
    assert.ok(planInstall(reader, memberships, installed).every((plan) => plan.outcome === 'unchanged'));
  });

  it('leaves flows whose match and cookie disagree as other flows of ours', () => {
    const pipeline = small();
    const wrongValue = {
      ...pipeline.sourceFlow({ group: G, source: S1 }),
      match: { ethType: 0x0800, ipDst: '239.1.2.4', ipSrc: S1 },
    };
    const noSource = { ...pipeline.sourceFlow({ group: G, source: S1 }), match: { ethType: 0x0800, ipDst: G } };
    const groupWithSource = { ...pipeline.groupFlow(G), match: { ethType: 0x0800, ipDst: G, ipSrc: S1 } };
    const orphanIngress = pipeline.sourceIngressForward({ group: G, source: S3, inPort: TUN, linkOne: undefined });
    const installed = pipeline.readInstalled([wrongValue, noSource, groupWithSource, orphanIngress], []);
    assert.deepEqual(installed.groups, []);
    assert.deepEqual(installed.otherFlows, [wrongValue, noSource, groupWithSource, orphanIngress]);
  });
});

describe('(S,G) plans', () => {
  const memberships = (s3Ports: number[]): GroupMembership[] => [
    { group: G, ports: [C], learned: true },
    { group: G, source: S1, ports: [A], learned: true },
    { group: G, source: S2, ports: [B, C], learned: true },
    { group: G, source: S3, ports: s3Ports, learned: true },
  ];

  it('changes only S3 entries when only S3 ports change', () => {
    const pipeline = small();
    const dumped = throughTheWire(memberships([A, B]).map((membership) => pipeline.forwarding(membership)));
    const installed = pipeline.readInstalled(dumped.flows, dumped.groups);
    const plans = planInstall(pipeline, memberships([A, B, C, 4, 5]), installed);
    assert.deepEqual(
      plans.map((plan) => [plan.source, plan.outcome]),
      [
        [undefined, 'unchanged'],
        [S1, 'unchanged'],
        [S2, 'unchanged'],
        [S3, 'updated'],
      ],
    );
    const s3Ids = new Set([0, 1, 2].map((link) => pipeline.sourceGroupId(S3, G, link)));
    const changes = plans[3]!.changes;
    assert.ok(changes.length > 0);
    for (const change of changes) {
      if (change.op === 'add-group' || change.op === 'modify-group')
        assert.ok(s3Ids.has(change.entry.groupId), `group ${change.entry.groupId} is S3's`);
      else if (change.op === 'delete-group') assert.ok(s3Ids.has(change.groupId));
      else if (change.op === 'add-flow' || change.op === 'modify-flow' || change.op === 'delete-flow')
        assert.equal(change.entry.match.ipSrc, S3);
      else assert.fail(`unexpected ${change.op}`);
    }
    assert.deepEqual(
      changes.map((change) => change.op),
      ['add-group', 'modify-group'],
      'a second link, then the head: the flow stays',
    );
  });

  it('uninstalls a bare group as its (*,G) entry only, and an (S,G) entry by its target', () => {
    const pipeline = small();
    const dumped = throughTheWire(memberships([A]).map((membership) => pipeline.forwarding(membership)));
    const installed = pipeline.readInstalled(dumped.flows, dumped.groups);
    const [bare, sourced, absent] = planUninstall(
      [G, { group: G, source: S2 }, { group: G, source: sourceAddress('10.0.0.99') }],
      installed,
    );
    assert.deepEqual([bare?.source, bare?.outcome, bare?.ports], [undefined, 'removed', [C]]);
    assert.deepEqual(
      bare?.changes.map((change) => (change.op === 'delete-flow' ? change.entry.match.ipSrc : change.op)),
      [undefined, 'delete-group'],
    );
    assert.deepEqual([sourced?.source, sourced?.outcome, sourced?.ports], [S2, 'removed', [B, C]]);
    assert.deepEqual(
      sourced?.changes.map((change) => change.op),
      ['delete-flow', 'delete-group'],
    );
    assert.equal(absent?.outcome, 'absent');
    assert.deepEqual(
      planUninstallAll(installed).groups.map((plan) => forwardingKey(plan)),
      [G, `${S1}>${G}`, `${S2}>${G}`, `${S3}>${G}`],
    );
  });

  it('tells an (S,G) flow apart from a foreign flow of the (*,G) match', () => {
    const pipeline = small();
    const foreign: FlowEntry = { ...pipeline.groupFlow(G), cookie: 0x77n, actions: [] };
    const empty = { groups: [], otherFlows: [], strayGroups: [] };
    const [star, sourced] = planInstall(
      pipeline,
      [
        { group: G, ports: [A] },
        { group: G, source: S1, ports: [A] },
      ],
      empty,
      [foreign],
    );
    assert.equal(star?.outcome, 'conflict');
    assert.equal(sourced?.outcome, 'added');
    const foreignSource: FlowEntry = { ...pipeline.sourceFlow({ group: G, source: S1 }), cookie: 0x77n, actions: [] };
    assert.equal(
      planInstall(pipeline, [{ group: G, source: S1, ports: [A] }], empty, [foreignSource])[0]?.outcome,
      'conflict',
    );
  });
});

describe('(S,G) priorities', () => {
  const withPriorities = (priorities: object) =>
    validatePipelineConfig({
      ...DEFAULT_PIPELINE_CONFIG,
      priorities: { ...DEFAULT_PIPELINE_CONFIG.priorities, ...priorities },
    });

  it('defaults to 275 and 210, and to just above the lower neighbour when those do not fit', () => {
    assert.deepEqual(sourcePriorities(DEFAULT_PIPELINE_CONFIG.priorities), { sourceIngress: 275, sourceGroup: 210 });
    const { sendPolicy, linkLocal, group, unknownGroup } = DEFAULT_PIPELINE_CONFIG.priorities;
    const { ingress, tunnelDrop, gatewayDrop } = DEFAULT_TUNNEL_PRIORITIES;
    const { sourceIngress, sourceGroup } = DEFAULT_SOURCE_PRIORITIES;
    const order = [
      sendPolicy,
      sourceIngress,
      ingress,
      tunnelDrop,
      linkLocal,
      gatewayDrop,
      sourceGroup,
      group,
      unknownGroup,
    ];
    assert.deepEqual(
      order,
      [...order].sort((a, b) => b - a),
    );
    assert.equal(new Set(order).size, order.length);
    const moved = { ...DEFAULT_PIPELINE_CONFIG.priorities, ingress: 275, tunnelDrop: 255, gatewayDrop: 210 };
    assert.deepEqual(sourcePriorities(moved), { sourceIngress: 276, sourceGroup: 201 });
    assert.doesNotThrow(() => withPriorities({ ingress: 275, tunnelDrop: 255, gatewayDrop: 210 }));
    assert.doesNotThrow(() => withPriorities({ sourceIngress: 279, sourceGroup: 201 }));
    assert.equal(small().sourceFlow({ group: G, source: S1 }).priority, 210);
  });

  it('refuses source priorities out of order', () => {
    assert.throws(
      () => withPriorities({ sourceIngress: 280 }),
      /priority sendPolicy \(280\) must be above sourceIngress \(280\)/,
    );
    assert.throws(
      () => withPriorities({ sourceIngress: 270 }),
      /priority sourceIngress \(270\) must be above ingress \(270\)/,
    );
    assert.throws(
      () => withPriorities({ sourceGroup: 245 }),
      /priority gatewayDrop \(245\) must be above sourceGroup \(245\)/,
    );
    assert.throws(
      () => withPriorities({ sourceGroup: 200 }),
      /priority sourceGroup \(200\) must be above group and unknownGroup \(200\)/,
    );
    assert.throws(() => withPriorities({ sourceGroup: 0 }), /priority sourceGroup 0 is not 1 to 65535/);
    // No room left between gatewayDrop and group for the default.
    assert.throws(
      () => withPriorities({ gatewayDrop: 201 }),
      /priority gatewayDrop \(201\) must be above sourceGroup \(201\)/,
    );
  });
});
