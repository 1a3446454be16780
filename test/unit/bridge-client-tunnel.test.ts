/**
 * The bridge client in tunnel mode, on an OpenFlow fake that applies what it is sent: the
 * base's catch-all drops, a group's tunnel layout (peers in link 0, pods from link 1,
 * ingress flows), a second identical sync that sends nothing, the read-back of a new
 * client (a restarted daemon), and the frames to peers and from the tunnel.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { ovsPipeline } from '../../src/adapters/ovs/read-back.js';
import { DEFAULT_PIPELINE_CONFIG, tunnelPriorities } from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import type { FlowMod } from '../../src/protocol/openflow/flow-mod.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { FlowModCommand } from '../../src/protocol/openflow/mod-command.js';
import { MeterModCommand } from '../../src/protocol/openflow/meter-mod.js';
import type { PacketIn } from '../../src/protocol/openflow/packet-in.js';
import type { PacketOut } from '../../src/protocol/openflow/packet-out.js';
import { OfpPort } from '../../src/protocol/openflow/reserved.js';
import { type HostAddress, parseGroupAddress, parseHostAddress } from '../../src/wire/ip-address.js';
import { ApplyingOpenFlow, FakeOpenFlow } from '../fakes/fake-openflow.js';

const GATEWAY = 1;
const TUNNEL = 2;
const POD_A = 3;
const POD_B = 4;
const G = parseGroupAddress('239.1.2.3')!;
const NODE_2 = parseHostAddress('192.168.60.12')!;
const NODE_3 = parseHostAddress('192.168.60.13')!;
const priorities = tunnelPriorities(DEFAULT_PIPELINE_CONFIG.priorities);

function flowMods(messages: readonly OpenFlowMessage[] | undefined): FlowMod[] {
  return (messages ?? []).filter((message): message is FlowMod => message.type === 'FLOW_MOD');
}

/** What a batch did, one word a message: `flow-<command>:<priority>` or `group-<command>:<link>` of G. */
function ops(
  messages: readonly OpenFlowMessage[] | undefined,
  pipeline = ovsPipeline(DEFAULT_PIPELINE_CONFIG),
): string[] {
  const linkOf = (groupId: number) => [0, 1, 2].find((link) => pipeline.groupId(G, link) === groupId) ?? groupId;
  return (messages ?? []).map((message) => {
    if (message.type === 'FLOW_MOD') return `flow-${message.command}:${message.priority}`;
    if (message.type === 'GROUP_MOD') return `group-${message.command}:${linkOf(message.groupId)}`;
    return message.type;
  });
}

function kindOf(flow: FlowStats): number | undefined {
  return decodeFlowCookie(flow.cookie, DEFAULT_PIPELINE_CONFIG.cookiePrefix)?.kind;
}

async function started(ovs = new ApplyingOpenFlow()): Promise<{ ovs: ApplyingOpenFlow; bridge: BridgeClient }> {
  const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline: ovsPipeline(DEFAULT_PIPELINE_CONFIG) });
  await bridge.refresh();
  return { ovs, bridge };
}

const tunnel = (...peers: HostAddress[]) => ({ ofport: TUNNEL, peers });
/** The group's forwarding: `ports` for every source, no (S,G) entry. */
const wanted = (ports: number[], tunnelMembers?: ReturnType<typeof tunnel>) => ({
  group: G,
  ports,
  bySource: [],
  ...(tunnelMembers === undefined ? {} : { tunnel: tunnelMembers }),
});

describe('BridgeClient: the base in tunnel mode', () => {
  it('adds the tunnel catch-all drop, and the gateway one with a gateway', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    const drops = ovs.flows.filter((flow) => kindOf(flow) === FlowKind.IngressDrop);
    // One drop a family on each port: IPv4's 224.0.0.0/4 and IPv6's ff00::/8.
    const fieldValue = (flow: FlowStats, name: string) => {
      const field = flow.match.find((each) => each.field === name);
      return field !== undefined && 'value' in field ? field.value : undefined;
    };
    const slots = drops
      .map((flow) => `${flow.priority}/${fieldValue(flow, 'IN_PORT')}/${fieldValue(flow, 'ETH_TYPE')?.toString(16)}`)
      .sort();
    assert.deepEqual(
      slots,
      [
        `${priorities.gatewayDrop}/${GATEWAY}/800`,
        `${priorities.gatewayDrop}/${GATEWAY}/86dd`,
        `${priorities.tunnelDrop}/${TUNNEL}/800`,
        `${priorities.tunnelDrop}/${TUNNEL}/86dd`,
      ].sort(),
    );
    assert.ok(
      drops.every(
        (flow) =>
          flow.instructions.length === 0 ||
          flow.instructions.every((instruction) => 'actions' in instruction && instruction.actions.length === 0),
      ),
      'they drop',
    );
  });

  it('without a gateway only the tunnel drop; without a tunnel none, and the kind-8 flows of before go', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    await bridge.installBase(undefined, { ofport: TUNNEL, peers: [] });
    assert.deepEqual(
      ovs.flows.filter((flow) => kindOf(flow) === FlowKind.IngressDrop).map((flow) => flow.priority),
      [priorities.tunnelDrop, priorities.tunnelDrop],
      'one a family',
    );
    await bridge.installBase(GATEWAY, { ofport: 7, peers: [] });
    const restarted = await started(ovs);
    await restarted.bridge.installBase(GATEWAY);
    assert.deepEqual(
      ovs.flows.filter((flow) => kindOf(flow) === FlowKind.IngressDrop),
      [],
      'read back and removed by a base without the tunnel',
    );
    const deleted = flowMods(ovs.batches.at(-1)).filter((mod) => mod.command === FlowModCommand.DELETE_STRICT);
    const kindOfMod = (mod: { cookie: bigint }) =>
      decodeFlowCookie(mod.cookie, DEFAULT_PIPELINE_CONFIG.cookiePrefix)?.kind;
    assert.deepEqual(
      deleted
        .filter((mod) => kindOfMod(mod) === FlowKind.IngressDrop)
        .map((mod) => mod.priority)
        .sort(),
      [priorities.gatewayDrop, priorities.gatewayDrop, priorities.tunnelDrop, priorities.tunnelDrop].sort(),
    );
    assert.equal(
      deleted.filter((mod) => kindOfMod(mod) === FlowKind.TunnelMembership).length,
      5,
      "the tunnel's membership drops (IGMP and MLD's four types) go with it",
    );
    assert.equal(deleted.length, 9);
  });

  it("lets in the tunnel's membership messages from its peers only, and follows a new peer list", async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: ['192.0.2.2', '192.0.2.3'] });
    const membership = () => ovs.flows.filter((flow) => kindOf(flow) === FlowKind.TunnelMembership);
    const tunSrcOf = (flow: FlowStats) => {
      const field = flow.match.find((each) => each.field === 'TUN_IPV4_SRC');
      return field !== undefined && 'value' in field ? field.value : undefined;
    };
    const peerFlows = (peer: string) => membership().filter((flow) => tunSrcOf(flow) === peer);
    // IGMP and MLD's four types: five drops for anyone, five to the controller for each peer, above them.
    assert.equal(membership().filter((flow) => tunSrcOf(flow) === undefined).length, 5);
    assert.equal(peerFlows('192.0.2.2').length, 5);
    assert.equal(peerFlows('192.0.2.3').length, 5);
    const [drop] = membership().filter((flow) => tunSrcOf(flow) === undefined);
    const [fromPeer] = peerFlows('192.0.2.2');
    assert.ok(drop !== undefined && fromPeer !== undefined);
    assert.ok(fromPeer.priority > drop.priority, 'a peer above the drop');
    assert.deepEqual(
      drop.instructions.flatMap((instruction) => ('actions' in instruction ? instruction.actions : [])),
      [],
      'the drop has no action',
    );
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: ['192.0.2.3'] });
    assert.equal(peerFlows('192.0.2.2').length, 0, 'a peer gone is let in no more');
    assert.equal(peerFlows('192.0.2.3').length, 5);
    const deleted = flowMods(ovs.batches.at(-1)).filter((mod) => mod.command === FlowModCommand.DELETE_STRICT);
    assert.equal(deleted.length, 5, "only the gone peer's flows are deleted");
  });

  it("meters the peers' membership messages: the meter before the flows that use it, and deleted after them", async () => {
    const { ovs, bridge } = await started();
    const meterId = ovsPipeline(DEFAULT_PIPELINE_CONFIG).tunnelMeterId;
    const peers = ['192.0.2.2', '192.0.2.3'];
    const meteredFlows = () =>
      ovs.flows.filter(
        (flow) =>
          kindOf(flow) === FlowKind.TunnelMembership &&
          flow.instructions.some((instruction) => instruction.type === 'METER' && instruction.meterId === meterId),
      );
    const meterMods = () =>
      (ovs.batches.at(-1) ?? []).flatMap((message, index) =>
        message.type === 'METER_MOD' ? [{ index, command: message.command, bands: message.bands }] : [],
      );
    const firstFlowMod = () => (ovs.batches.at(-1) ?? []).findIndex((message) => message.type === 'FLOW_MOD');
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers, meter: { rate: 400, burst: 2000 } });
    assert.equal(meteredFlows().length, 10, "every peer's five flows, none of the drops");
    assert.equal(meterMods().length, 1);
    assert.equal(meterMods()[0]?.command, MeterModCommand.ADD);
    assert.ok(meterMods()[0]!.index < firstFlowMod(), 'added before a flow uses it');
    assert.equal(meterId, DEFAULT_PIPELINE_CONFIG.meterIdBase, 'the slot no port has: 0');
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers, meter: { rate: 400, burst: 2000 } });
    assert.deepEqual(meterMods(), [], 'the same meter is not written again');
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: peers.slice(1), meter: { rate: 200, burst: 1000 } });
    assert.equal(meterMods()[0]?.command, MeterModCommand.MODIFY);
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: peers.slice(1) });
    assert.equal(meteredFlows().length, 0, 'the flows written again without it');
    const batch = ovs.batches.at(-1) ?? [];
    assert.equal(meterMods()[0]?.command, MeterModCommand.DELETE);
    assert.equal(
      meterMods()[0]?.index,
      batch.filter((message) => message.type !== 'BARRIER_REQUEST').length - 1,
      'last',
    );
  });

  it('a switch without meters lets the peers in unmetered', async () => {
    const ovs = new ApplyingOpenFlow();
    ovs.features = { ...ovs.features, maxMeter: 0 };
    const { bridge } = await started(ovs);
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: ['192.0.2.2'], meter: { rate: 200, burst: 1000 } });
    assert.ok(!(ovs.batches.at(-1) ?? []).some((message) => message.type === 'METER_MOD'));
    assert.ok(
      ovs.flows.every((flow) => flow.instructions.every((instruction) => instruction.type !== 'METER')),
      'no flow uses a meter',
    );
  });

  it('without a tunnel the base is what it always was', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY);
    // IGMP and MLD's four types to the controller, then per family the link-scope flood and unknown groups to the
    // gateway: no drops.
    assert.deepEqual(ops(ovs.batches.at(-1)), [
      ...Array<string>(5).fill('flow-0:300'),
      ...Array<string>(2).fill('flow-0:250'),
      ...Array<string>(2).fill('flow-0:190'),
    ]);
    assert.equal(ovs.flows.filter((flow) => kindOf(flow) === FlowKind.IngressDrop).length, 0);
  });
});

describe('BridgeClient: a group in tunnel mode', () => {
  it('installs the tunnel layout tail first, and a second identical sync sends nothing', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    const before = ovs.batches.length;
    assert.equal(await bridge.syncForwarding(wanted([POD_B, GATEWAY], tunnel(NODE_2))), 'added');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['group-0:1', 'group-0:0', 'flow-0:270', 'flow-0:270', 'flow-0:200']);
    const head = ovs.groups.find((group) => group.groupId === bridge.pipeline.groupId(G))!;
    assert.equal(head.buckets.length, 3, 'gateway, node 2, link 1');
    assert.equal(await bridge.syncForwarding(wanted([GATEWAY, POD_B], tunnel(NODE_2, NODE_2))), 'unchanged');
    assert.equal(ovs.batches.length, before + 1, 'nothing sent for the same members and peers');
    assert.deepEqual(bridge.learnedGroups, [{ group: G, ports: [GATEWAY, POD_B], peers: [NODE_2] }]);
  });

  it('a new peer changes link 0 alone; the last pod going takes link 1 and the ingress flows', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    await bridge.syncForwarding(wanted([POD_B, GATEWAY], tunnel(NODE_2)));
    assert.equal(await bridge.syncForwarding(wanted([POD_B, GATEWAY], tunnel(NODE_3, NODE_2))), 'updated');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['group-1:0']);
    assert.equal(await bridge.syncForwarding(wanted([], tunnel(NODE_2, NODE_3))), 'updated');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['group-1:0', 'flow-4:270', 'flow-4:270', 'group-2:1']);
    const head = ovs.groups.find((group) => group.groupId === bridge.pipeline.groupId(G))!;
    assert.equal(head.buckets.length, 3, 'the gateway stays with remote members only, and two peers');
    assert.equal(ovs.flows.filter((flow) => kindOf(flow) === FlowKind.IngressForward).length, 0);
    assert.equal(await bridge.syncForwarding(wanted([], tunnel(NODE_3, NODE_2))), 'unchanged');
    assert.deepEqual(bridge.learnedGroups, [{ group: G, ports: [GATEWAY], peers: [NODE_2, NODE_3] }]);
  });

  it('with neither pods nor peers the group goes, flows before groups', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    await bridge.syncForwarding(wanted([POD_A, GATEWAY], tunnel(NODE_2)));
    assert.equal(await bridge.syncForwarding(wanted([], tunnel())), 'removed');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['flow-4:200', 'flow-4:270', 'flow-4:270', 'group-2:0', 'group-2:1']);
    assert.deepEqual(bridge.installedGroups, []);
    assert.equal(await bridge.syncForwarding(wanted([], tunnel())), 'absent');
    assert.deepEqual(
      ovs.flows.filter((flow) => kindOf(flow) !== FlowKind.IngressDrop && flow.priority === 200),
      [],
    );
  });

  it('a restarted client reads the peers and ingress flows back and plans nothing for the same input', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    await bridge.syncForwarding(wanted([POD_A, POD_B, GATEWAY], tunnel(NODE_3, NODE_2)));
    const restarted = await started(ovs);
    assert.deepEqual(restarted.bridge.learnedGroups, [
      { group: G, ports: [GATEWAY, POD_A, POD_B], peers: [NODE_2, NODE_3] },
    ]);
    // As the daemon starts: read back, the base, then the syncs.
    await restarted.bridge.installBase(GATEWAY, { ofport: TUNNEL, peers: [] });
    const before = ovs.batches.length;
    assert.equal(
      await restarted.bridge.syncForwarding(wanted([GATEWAY, POD_B, POD_A], tunnel(NODE_2, NODE_3))),
      'unchanged',
    );
    assert.equal(ovs.batches.length, before);
    assert.equal(await restarted.bridge.syncForwarding(wanted([GATEWAY, POD_B], tunnel(NODE_2, NODE_3))), 'updated');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['group-1:1'], 'one pod less: link 1 alone');
  });

  it('without a tunnel a group keeps the layout of before', async () => {
    const { ovs, bridge } = await started();
    await bridge.installBase(GATEWAY);
    assert.equal(await bridge.syncForwarding(wanted([POD_A, GATEWAY])), 'added');
    assert.deepEqual(ops(ovs.batches.at(-1)), ['group-0:0', 'flow-0:200']);
    assert.deepEqual(bridge.learnedGroups, [{ group: G, ports: [GATEWAY, POD_A] }]);
    assert.equal(await bridge.syncForwarding(wanted([GATEWAY, POD_A])), 'unchanged');
  });
});

/** A client on a switch that refuses the PACKET_OUTs `refuse` picks. */
function frameSwitch(refuse: (out: PacketOut) => boolean = () => false): { ovs: FakeOpenFlow; bridge: BridgeClient } {
  const ovs = new FakeOpenFlow((message) => message.type === 'PACKET_OUT' && refuse(message));
  return {
    ovs,
    bridge: BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline: ovsPipeline(DEFAULT_PIPELINE_CONFIG) }),
  };
}

/** The port a PACKET_OUT outputs to. */
function outPort(out: PacketOut): number | undefined {
  const action = out.actions.find((each) => each.type === 'OUTPUT');
  return action?.type === 'OUTPUT' ? action.port : undefined;
}

describe('BridgeClient: frames out of ports and through the tunnel', () => {
  it('sends one PACKET_OUT from CONTROLLER per peer, its tun_dst set, out of the tunnel port, in one batch', async () => {
    const { ovs, bridge } = frameSwitch();
    const frame = new Uint8Array([1, 2, 3]);
    assert.deepEqual(await bridge.sendToPeers(frame, TUNNEL, [NODE_2, NODE_3]), { sent: 2, refused: [] });
    assert.equal(ovs.batches.length, 1);
    const outs = ovs.batches[0] as PacketOut[];
    assert.deepEqual(
      outs.map((out) => [out.type, out.inPort, out.actions]),
      [NODE_2, NODE_3].map((peer) => [
        'PACKET_OUT',
        OfpPort.CONTROLLER,
        [
          { type: 'SET_FIELD', field: { field: 'TUN_IPV4_DST', value: peer } },
          { type: 'OUTPUT', port: TUNNEL, maxLen: 0 },
        ],
      ]),
    );
    assert.ok(outs.every((out) => out.data === frame));
  });

  it('counts what the switch refused, and sends nothing to no peer', async () => {
    const { ovs, bridge } = frameSwitch((out) =>
      out.actions.some(
        (action) => action.type === 'SET_FIELD' && 'value' in action.field && action.field.value === NODE_2,
      ),
    );
    const result = await bridge.sendToPeers(new Uint8Array(1), TUNNEL, [NODE_2, NODE_3]);
    assert.equal(result.sent, 1);
    assert.equal(result.refused.length, 1);
    assert.deepEqual(await bridge.sendToPeers(new Uint8Array(1), TUNNEL, []), { sent: 0, refused: [] });
    assert.equal(ovs.batches.length, 1);
  });

  it('sends a frame out of each port in one batch, and names the ports the switch refused it on', async () => {
    const { ovs, bridge } = frameSwitch((out) => outPort(out) === POD_B);
    const frame = new Uint8Array([4, 5]);
    const result = await bridge.sendFrame(frame, [POD_A, POD_B]);
    assert.equal(result.sent, 1);
    assert.deepEqual(result.refusedPorts, [POD_B]);
    assert.equal(result.refused.length, 1);
    const outs = ovs.batches[0] as PacketOut[];
    assert.deepEqual(
      outs.map((out) => [out.inPort, out.actions, out.data]),
      [POD_A, POD_B].map((port) => [OfpPort.CONTROLLER, [{ type: 'OUTPUT', port, maxLen: 0 }], frame]),
    );
  });

  it('gives a packet-in from the tunnel its outer source, and one from a pod none', () => {
    const { ovs, bridge } = frameSwitch();
    const heard: Array<[number | undefined, string | undefined]> = [];
    bridge.onPacketIn((_frame, ofport, tunnelSource) => heard.push([ofport, tunnelSource]));
    const packetIn = (match: PacketIn['match']): PacketIn => ({
      type: 'PACKET_IN',
      xid: 0,
      bufferId: 0,
      totalLen: 1,
      reason: 0,
      tableId: 0,
      cookie: 0n,
      match,
      data: new Uint8Array(1),
    });
    ovs.emit(
      'packet-in',
      packetIn([
        { field: 'IN_PORT', value: TUNNEL },
        { field: 'TUN_IPV4_SRC', value: NODE_2 },
        { field: 'TUN_IPV4_DST', value: '192.168.60.11' },
      ] as PacketIn['match']),
    );
    ovs.emit('packet-in', packetIn([{ field: 'IN_PORT', value: POD_A }] as PacketIn['match']));
    assert.deepEqual(heard, [
      [TUNNEL, NODE_2],
      [POD_A, undefined],
    ]);
  });
});
