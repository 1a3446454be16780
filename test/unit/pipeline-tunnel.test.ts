/**
 * Tunnel mode's pipeline: link 0 with the gateway and the peers, ingress flows, catch-all drops, read-back and plans.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { McastError } from '../../src/errors.js';
import {
  DEFAULT_PIPELINE_CONFIG,
  DEFAULT_TUNNEL_PRIORITIES,
  validatePipelineConfig,
} from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import {
  type Bucket,
  type FlowEntry,
  type GroupEntry,
  type GroupMembership,
  type InstalledPipeline,
  MulticastPipeline,
  type TunnelMembers,
} from '../../src/domain/pipeline/multicast-pipeline.js';
import { changeMessage, flowEntryOf, groupEntryOf } from '../../src/domain/pipeline/openflow-entries.js';
import { type PipelineChange, planInstall, planUninstall, planUninstallAll } from '../../src/domain/pipeline/plan.js';
import { maxTunnelPeers } from '../../src/domain/pipeline/tunnel-layout.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../src/protocol/openflow/limits.js';
import { decode as decodeMessage, encode as encodeMessage } from '../../src/protocol/openflow/message.js';
import { groupAddress, hostAddress } from '../../src/wire/ip-address.js';

const TUN = 2;
const GW = 9;
const G = groupAddress('239.1.2.3');
const PEER_12 = hostAddress('192.168.60.12');
const PEER_13 = hostAddress('192.168.60.13');
const HEAD = 0x1f010203;
const LINK_1 = 0x2f010203;

/** A small switch (4 buckets a group) to see chains, and a real one for the caps. */
const small = () => new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
const real = () =>
  new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD });

function member(ports: number[], peers: string[], options: { gateway?: number } = { gateway: GW }): GroupMembership {
  const tunnel: TunnelMembers = { ofport: TUN, peers: peers.map(hostAddress) };
  return { group: G, ports, learned: true, tunnel, ...options };
}

/** One group as `ovs-ofctl dump-groups` prints it. */
function describeGroup(entry: GroupEntry): string {
  const bucketText = (bucket: Bucket) =>
    bucket.type === 'group'
      ? `group:${bucket.groupId}`
      : bucket.tunnelDestination === undefined
        ? `output:${bucket.port}`
        : `set_field:${bucket.tunnelDestination}->tun_dst,output:${bucket.port}`;
  return [
    `group_id=${entry.groupId}`,
    'type=all',
    ...entry.buckets.map((bucket) => `bucket=actions=${bucketText(bucket)}`),
  ].join(',');
}

/** One flow as `ovs-ofctl dump-flows` prints it (the fields the pipeline writes). */
function describeFlow(flow: FlowEntry): string {
  const { inPort, ethType, ipDst, ipDstMask } = flow.match;
  const ipv6 = ethType === 0x86dd;
  const match = [
    ...(inPort === undefined ? [] : [`in_port=${inPort}`]),
    ipv6 ? 'ipv6' : 'ip',
    ...(ipDst === undefined
      ? []
      : [`${ipv6 ? 'ipv6_dst' : 'nw_dst'}=${ipDst}${ipDstMask === undefined ? '' : `/${ipDstMask}`}`]),
  ];
  const actions =
    flow.actions.map((action) => (action.type === 'group' ? `group:${action.groupId}` : action.type)).join(',') ||
    'drop';
  return `priority=${flow.priority},${match.join(',')} actions=${actions}`;
}

/** What the switch would dump after taking `forwarding`'s entries: each through the codec's bytes and back. */
function throughTheWire(
  groups: readonly GroupEntry[],
  flows: readonly FlowEntry[],
): { groups: GroupEntry[]; flows: FlowEntry[] } {
  const roundTrip = (change: PipelineChange) => decodeMessage(encodeMessage(changeMessage(change)));
  return {
    groups: groups.map((entry) => {
      const message = roundTrip({ op: 'add-group', entry });
      assert.equal(message.type, 'GROUP_MOD');
      if (message.type !== 'GROUP_MOD') throw new Error('not a GROUP_MOD');
      return groupEntryOf({ groupType: message.groupType, groupId: message.groupId, buckets: message.buckets });
    }),
    flows: flows.map((entry) => {
      const message = roundTrip({ op: 'add-flow', entry });
      if (message.type !== 'FLOW_MOD') throw new Error('not a FLOW_MOD');
      const stats = { ...message, durationSec: 0, durationNsec: 0, packetCount: 0n, byteCount: 0n };
      const flow = flowEntryOf(stats);
      assert.ok(flow !== undefined);
      return flow;
    }),
  };
}

function installedAfter(pipeline: MulticastPipeline, membership: GroupMembership): InstalledPipeline {
  const forwarding = pipeline.forwarding(membership);
  const dumped = throughTheWire(forwarding.groups, [forwarding.flow, ...(forwarding.ingress ?? [])]);
  return pipeline.readInstalled(dumped.flows, dumped.groups);
}

const ops = (changes: readonly PipelineChange[]) =>
  changes.map((change) => {
    if (change.op === 'add-group' || change.op === 'modify-group')
      return `${change.op} ${change.entry.groupId.toString(16)}`;
    if (change.op === 'delete-group') return `delete-group ${change.groupId.toString(16)}`;
    if (change.op === 'add-flow' || change.op === 'modify-flow' || change.op === 'delete-flow')
      return `${change.op} ${describeFlow(change.entry)}`;
    return change.op;
  });

describe('tunnel mode: layout', () => {
  it('puts the gateway, one bucket per peer (sorted, once each) and the jump to the pods in link 0', () => {
    const forwarding = small().forwarding(
      member([7, 3, GW, 3, TUN], ['192.168.60.13', '192.168.60.12', '192.168.60.12']),
    );
    assert.deepEqual(forwarding.groups.map(describeGroup), [
      `group_id=${LINK_1},type=all,bucket=actions=output:3,bucket=actions=output:7`,
      `group_id=${HEAD},type=all,bucket=actions=output:9,bucket=actions=set_field:192.168.60.12->tun_dst,output:2,` +
        `bucket=actions=set_field:192.168.60.13->tun_dst,output:2,bucket=actions=group:${LINK_1}`,
    ]);
    assert.deepEqual((forwarding.ingress ?? []).map(describeFlow), [
      `priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
    ]);
    assert.equal(describeFlow(forwarding.flow), `priority=200,ip,nw_dst=239.1.2.3 actions=group:${HEAD}`);
    for (const flow of forwarding.ingress ?? []) {
      assert.deepEqual(decodeFlowCookie(flow.cookie, 0x4d43), {
        prefix: 0x4d43,
        kind: FlowKind.IngressForward,
        value: 0xef010203,
        flags: 1,
      });
    }
  });

  it('keeps the gateway in link 0 with remote members only, and has no link 1 and no ingress flow', () => {
    const forwarding = small().forwarding(member([], ['192.168.60.12']));
    assert.deepEqual(forwarding.groups.map(describeGroup), [
      `group_id=${HEAD},type=all,bucket=actions=output:9,bucket=actions=set_field:192.168.60.12->tun_dst,output:2`,
    ]);
    assert.deepEqual(forwarding.ingress, []);
    const noGateway = small().forwarding(member([4], ['192.168.60.12'], {}));
    assert.deepEqual(noGateway.groups.map(describeGroup), [
      `group_id=${LINK_1},type=all,bucket=actions=output:4`,
      `group_id=${HEAD},type=all,bucket=actions=set_field:192.168.60.12->tun_dst,output:2,bucket=actions=group:${LINK_1}`,
    ]);
    assert.deepEqual(
      (noGateway.ingress ?? []).map((flow) => flow.match.inPort),
      [TUN],
      'no gateway: from the tunnel only',
    );
    assert.deepEqual(
      small().forwarding(member([], [])).groups,
      [{ groupId: HEAD, buckets: [] }],
      'no member: no gateway bucket either',
    );
  });

  it('chains the pods from link 1 on, as without a tunnel', () => {
    const forwarding = small().forwarding(member([11, 12, 13, 14, 15, 16, 17, 18], ['192.168.60.12']));
    assert.deepEqual(
      forwarding.groups.map((entry) => entry.groupId.toString(16)),
      ['4f010203', '3f010203', '2f010203', '1f010203'],
    );
    assert.deepEqual(forwarding.groups.map(describeGroup).slice(0, 3), [
      `group_id=${0x4f010203},type=all,bucket=actions=output:17,bucket=actions=output:18`,
      `group_id=${0x3f010203},type=all,bucket=actions=output:14,bucket=actions=output:15,bucket=actions=output:16,bucket=actions=group:${0x4f010203}`,
      `group_id=${LINK_1},type=all,bucket=actions=output:11,bucket=actions=output:12,bucket=actions=output:13,bucket=actions=group:${0x3f010203}`,
    ]);
  });

  it("lets the tunnel's membership messages in from its peers (tun_src) only, and reads them back the same", () => {
    const pipeline = small();
    const flows = pipeline.tunnelMembership({ ofport: TUN, peers: ['192.0.2.2', '192.0.2.3', 'fd00::1'] });
    // IGMP and MLD's four types: a drop for anyone, and one to the controller for each IPv4 peer.
    assert.equal(flows.length, 5 * 3);
    const drops = flows.filter((flow) => flow.match.tunSrc === undefined);
    assert.ok(drops.every((flow) => flow.actions.length === 0 && flow.match.inPort === TUN));
    const fromPeers = flows.filter((flow) => flow.match.tunSrc !== undefined);
    assert.ok(fromPeers.every((flow) => flow.actions[0]?.type === 'controller'));
    assert.ok(fromPeers.every((flow) => flow.priority === drops[0]!.priority + 1));
    assert.deepEqual(
      new Set(fromPeers.map((flow) => decodeFlowCookie(flow.cookie, DEFAULT_PIPELINE_CONFIG.cookiePrefix)?.value)),
      new Set([0xc0000202, 0xc0000203]),
      "each peer's flows carry its address in the cookie",
    );
    assert.deepEqual(throughTheWire([], flows).flows, flows, 'tun_src written and read back as it was');
  });

  it('writes a tunnel bucket as set_field tun_dst (NXM_1 header 0x00014004) then output', () => {
    const message = encodeMessage(
      changeMessage({ op: 'add-group', entry: small().forwarding(member([], ['192.168.60.12'])).groups[0]! }),
    );
    const hex = Buffer.from(message).toString('hex');
    // Bucket header (length 48, no weight, no watch), SET_FIELD 25 of 16 octets, OUTPUT to port 2.
    assert.ok(
      hex.endsWith(
        '00300000ffffffffffffffff00000000' + '0019001000014004c0a83c0c00000000' + '00000010000000020000000000000000',
      ),
      hex,
    );
  });

  it('takes as many peers as one GROUP_MOD carries by their real sizes, and refuses one more', () => {
    const pipeline = real();
    const cap = maxTunnelPeers(pipeline.limits);
    assert.equal(cap, 1363, '(65535 - 16 - 32 - 24) / 48');
    const peers = Array.from({ length: cap + 1 }, (_, index) => `10.1.${index >> 8}.${index & 0xff}`);
    const head = pipeline.forwarding(member([5], peers.slice(0, cap))).groups.at(-1)!;
    assert.equal(head.buckets.length, cap + 2);
    assert.ok(encodeMessage(changeMessage({ op: 'add-group', entry: head })).length <= 0xffff);
    assert.throws(
      () => pipeline.forwarding(member([5], peers)),
      (error: unknown) =>
        error instanceof McastError &&
        error.code === 'usage' &&
        /1364 peers; one OVS group carries at most 1363/.test(error.message),
    );
    assert.equal(maxTunnelPeers({ maxBucketsPerGroup: 4 }), 2, 'and within the switch bucket count');
  });

  it('changes nothing without a tunnel: the same entries as before, gateway or not', () => {
    const pipeline = small();
    const plain = pipeline.forwarding({ group: G, ports: [7, 3, 9], learned: true });
    assert.deepEqual(pipeline.forwarding({ group: G, ports: [7, 3, 9], learned: true, gateway: GW }), plain);
    assert.equal('ingress' in plain, false);
    const chained = pipeline.forwarding({ group: G, ports: [1, 2, 3, 4, 5, 6, 7, 8] });
    assert.deepEqual(chained.groups.map(describeGroup), [
      `group_id=${0x3f010203},type=all,bucket=actions=output:7,bucket=actions=output:8`,
      `group_id=${LINK_1},type=all,bucket=actions=output:4,bucket=actions=output:5,bucket=actions=output:6,bucket=actions=group:${0x3f010203}`,
      `group_id=${HEAD},type=all,bucket=actions=output:1,bucket=actions=output:2,bucket=actions=output:3,bucket=actions=group:${LINK_1}`,
    ]);
    const wire = throughTheWire(plain.groups, [plain.flow]);
    const installed = pipeline.readInstalled(wire.flows, wire.groups);
    assert.deepEqual(Object.keys(installed.groups[0]!).sort(), ['flow', 'group', 'groups', 'learned', 'ports']);
    const bytes = (entries: readonly GroupEntry[]) =>
      entries.map((entry) => Buffer.from(encodeMessage(changeMessage({ op: 'add-group', entry }))).toString('hex'));
    assert.deepEqual(bytes(wire.groups), bytes(plain.groups), 'read back to the same bytes');
  });
});

describe('tunnel mode: catch-all drops and priorities', () => {
  it('drops other multicast from the tunnel above link-local and from the gateway below it', () => {
    const pipeline = small();
    assert.deepEqual(pipeline.tunnelDrop(TUN).map(describeFlow), [
      'priority=260,in_port=2,ip,nw_dst=224.0.0.0/240.0.0.0 actions=drop',
      'priority=260,in_port=2,ipv6,ipv6_dst=ff00::/ff00:: actions=drop',
    ]);
    assert.deepEqual(pipeline.gatewayDrop(GW).map(describeFlow), [
      'priority=245,in_port=9,ip,nw_dst=224.0.0.0/240.0.0.0 actions=drop',
      'priority=245,in_port=9,ipv6,ipv6_dst=ff00::/ff00:: actions=drop',
    ]);
    assert.equal(decodeFlowCookie(pipeline.tunnelDrop(TUN)[0]!.cookie, 0x4d43)?.kind, FlowKind.IngressDrop);
    const { linkLocal, group, unknownGroup, sendPolicy } = DEFAULT_PIPELINE_CONFIG.priorities;
    const { ingress, tunnelDrop, gatewayDrop } = DEFAULT_TUNNEL_PRIORITIES;
    const order = [sendPolicy, ingress, tunnelDrop, linkLocal, gatewayDrop, group, unknownGroup];
    assert.deepEqual(
      order,
      [...order].sort((a, b) => b - a),
    );
    assert.equal(new Set(order).size, order.length);
    const written = [...pipeline.tunnelDrop(TUN), ...pipeline.gatewayDrop(GW)];
    const drops = throughTheWire([], written).flows;
    assert.deepEqual(drops, written, 'read back as written');
    const installed = pipeline.readInstalled(drops, []);
    assert.equal(installed.otherFlows.length, 4, 'ours, in otherFlows');
    assert.equal(planUninstallAll(installed).extra.length, 4);
  });

  it('validates the order of the tunnel priorities', () => {
    const withPriorities = (priorities: object) =>
      validatePipelineConfig({
        ...DEFAULT_PIPELINE_CONFIG,
        priorities: { ...DEFAULT_PIPELINE_CONFIG.priorities, ...priorities },
      });
    assert.doesNotThrow(() => withPriorities({}));
    assert.doesNotThrow(() => withPriorities({ ingress: 275, tunnelDrop: 255, gatewayDrop: 210 }));
    assert.throws(
      () => withPriorities({ tunnelDrop: 240 }),
      /priority tunnelDrop \(240\) must be above linkLocal \(250\)/,
    );
    assert.throws(
      () => withPriorities({ gatewayDrop: 251 }),
      /priority linkLocal \(250\) must be above gatewayDrop \(251\)/,
    );
    assert.throws(() => withPriorities({ ingress: 281 }), /priority sendPolicy \(280\) must be above ingress \(281\)/);
    assert.throws(
      () => withPriorities({ gatewayDrop: 200 }),
      /priority gatewayDrop \(200\) must be above group and unknownGroup \(200\)/,
    );
  });
});

describe('tunnel mode: read-back and plans', () => {
  it('reads link 0 back: gateway and pods as ports, the peers, the ingress flows; and plans nothing against it', () => {
    const pipeline = small();
    const membership = member([7, 3], ['192.168.60.13', '192.168.60.12', '192.168.60.13']);
    const installed = installedAfter(pipeline, membership);
    const [group] = installed.groups;
    assert.deepEqual(group?.ports, [3, 7, GW]);
    assert.deepEqual(group?.peers, [PEER_12, PEER_13]);
    assert.deepEqual(
      group?.ingress?.map((flow) => flow.match.inPort),
      [TUN, GW],
    );
    assert.deepEqual(
      group?.groups.map((entry) => entry.groupId),
      [HEAD, LINK_1],
    );
    assert.equal(group?.problem, undefined);
    assert.deepEqual(installed.otherFlows, []);
    assert.deepEqual(installed.strayGroups, []);
    const [plan] = planInstall(pipeline, [membership], installed);
    assert.equal(plan?.outcome, 'unchanged');
    assert.deepEqual(plan?.changes, []);
    // Remote members only.
    const remote = member([], ['192.168.60.12']);
    assert.equal(planInstall(pipeline, [remote], installedAfter(pipeline, remote))[0]?.outcome, 'unchanged');
  });

  it('adds link tail first, then link 0, then the ingress flows, then the group flow', () => {
    const pipeline = small();
    const [plan] = planInstall(pipeline, [member([3, 4, 5, 6, 7], ['192.168.60.12'])], {
      groups: [],
      otherFlows: [],
      strayGroups: [],
    });
    assert.equal(plan?.outcome, 'added');
    assert.deepEqual(ops(plan?.changes ?? []), [
      'add-group 3f010203',
      'add-group 2f010203',
      'add-group 1f010203',
      `add-flow priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `add-flow priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `add-flow priority=200,ip,nw_dst=239.1.2.3 actions=group:${HEAD}`,
    ]);
  });

  it('modifies link 0 only when the peers change', () => {
    const pipeline = small();
    const installed = installedAfter(pipeline, member([3], ['192.168.60.12']));
    const [plan] = planInstall(pipeline, [member([3], ['192.168.60.13', '192.168.60.12'])], installed);
    assert.equal(plan?.outcome, 'updated');
    assert.deepEqual(ops(plan?.changes ?? []), ['modify-group 1f010203']);
    const [dropped] = planInstall(pipeline, [member([3], [])], installed);
    assert.deepEqual(ops(dropped?.changes ?? []), ['modify-group 1f010203']);
  });

  it('on the last local leave with peers left: link 0 loses its jump, then the ingress flows go, then link 1', () => {
    const pipeline = small();
    const installed = installedAfter(pipeline, member([3], ['192.168.60.12']));
    const [plan] = planInstall(pipeline, [member([], ['192.168.60.12'])], installed);
    assert.deepEqual(ops(plan?.changes ?? []), [
      'modify-group 1f010203',
      `delete-flow priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `delete-flow priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      'delete-group 2f010203',
    ]);
    // And the first local join again: link 1 first, then link 0 and the ingress flows.
    const [join] = planInstall(
      pipeline,
      [member([3], ['192.168.60.12'])],
      installedAfter(pipeline, member([], ['192.168.60.12'])),
    );
    assert.deepEqual(ops(join?.changes ?? []), [
      'add-group 2f010203',
      'modify-group 1f010203',
      `add-flow priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `add-flow priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
    ]);
  });

  it('removes the flows (group flow and ingress) before the groups', () => {
    const pipeline = small();
    const installed = installedAfter(pipeline, member([3], ['192.168.60.12']));
    const [plan] = planUninstall([G], installed);
    assert.deepEqual(ops(plan?.changes ?? []), [
      `delete-flow priority=200,ip,nw_dst=239.1.2.3 actions=group:${HEAD}`,
      `delete-flow priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `delete-flow priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      'delete-group 1f010203',
      'delete-group 2f010203',
    ]);
  });

  it('leaves tunnel mode by removing the ingress flows, and keeps an ingress flow of no group as ours to remove', () => {
    const pipeline = small();
    const installed = installedAfter(pipeline, member([3], ['192.168.60.12']));
    const [plan] = planInstall(pipeline, [{ group: G, ports: [3, GW], learned: true }], installed);
    assert.deepEqual(ops(plan?.changes ?? []), [
      'modify-group 1f010203',
      `delete-flow priority=270,in_port=2,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      `delete-flow priority=270,in_port=9,ip,nw_dst=239.1.2.3 actions=group:${LINK_1}`,
      'delete-group 2f010203',
    ]);
    const stray = pipeline.ingressForward({ group: groupAddress('239.9.9.9'), inPort: TUN, linkOne: 0x2f090909 });
    assert.deepEqual(pipeline.readInstalled([stray], []).otherFlows, [stray]);
  });

  it('refuses to take the place of another controller ingress-slot flow', () => {
    const pipeline = small();
    const theirs: FlowEntry = {
      ...pipeline.ingressForward({ group: G, inPort: TUN, linkOne: LINK_1 }),
      cookie: 0x1234n,
      actions: [],
    };
    const [plan] = planInstall(
      pipeline,
      [member([3], ['192.168.60.12'])],
      { groups: [], otherFlows: [], strayGroups: [] },
      [theirs],
    );
    assert.equal(plan?.outcome, 'conflict');
  });
});
