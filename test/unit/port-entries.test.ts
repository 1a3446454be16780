/**
 * A pod port's own entries: the metered IGMP flow and send-policy drops the pipeline
 * builds, their messages on the wire (the METER instruction before the actions, and read
 * back), the plan between two states (meter before the flows that use it, deleted after
 * them, nothing for what is already right), and the bridge client that keeps them, reading
 * what of them is on the switch at a refresh.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { ovsPipeline } from '../../src/adapters/ovs/read-back.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { changeMessage, flowEntryOf } from '../../src/domain/pipeline/openflow-entries.js';
import { installedPortEntries, planPortSync, portEntries } from '../../src/domain/pipeline/port-entries.js';
import type { FlowMod } from '../../src/protocol/openflow/flow-mod.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import { MeterFlag, MeterModCommand, type MeterMod } from '../../src/protocol/openflow/meter-mod.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { FakeOpenFlow } from '../fakes/fake-openflow.js';

const pipeline = ovsPipeline(DEFAULT_PIPELINE_CONFIG);
const METER = { rate: 200, burst: 1000 };
const DROP_239 = { address: '239.0.0.0', mask: '255.0.0.0' };

/** A FLOW_MOD as the switch would dump the flow it adds. */
function dumped(message: OpenFlowMessage): FlowStats {
  const mod = message as FlowMod;
  return {
    ...{
      tableId: mod.tableId,
      priority: mod.priority,
      cookie: mod.cookie,
      match: mod.match,
      instructions: mod.instructions,
    },
    ...{ durationSec: 0, durationNsec: 0, idleTimeout: 0, hardTimeout: 0, flags: 0, packetCount: 0n, byteCount: 0n },
  } as FlowStats;
}

const ops = (messages: readonly OpenFlowMessage[]) =>
  messages.map((m) =>
    m.type === 'METER_MOD'
      ? `meter-${m.command}:${m.meterId}`
      : m.type === 'FLOW_MOD'
        ? `flow-${m.command}:${m.priority}`
        : m.type,
  );

describe('per-port entries in the pipeline', () => {
  it("sends a pod's IGMP through its meter, one above the flow for every port", () => {
    const flows = pipeline.membershipToControllerMetered(7);
    const flow = flows[0]!;
    assert.ok(flows.every((each) => each.priority === DEFAULT_PIPELINE_CONFIG.priorities.igmp + 1));
    assert.ok(
      flows.every((each) => each.meterId === DEFAULT_PIPELINE_CONFIG.meterIdBase + 7),
      'one meter for both families',
    );
    assert.deepEqual(flow.match, { inPort: 7, ethType: 0x0800, ipProto: 2 });
    assert.deepEqual(flows[4]!.match, { inPort: 7, ethType: 0x86dd, ipProto: 58, icmpv6Type: 143 });
    assert.equal(pipeline.meterPort(flow.meterId!), 7);
    assert.equal(pipeline.meterPort(DEFAULT_PIPELINE_CONFIG.meterIdBase - 1), undefined);
    assert.equal(pipeline.meterPort(DEFAULT_PIPELINE_CONFIG.meterIdBase + 0x10000), undefined);
    const message = changeMessage({ op: 'add-flow', entry: flow }) as FlowMod;
    assert.deepEqual(
      message.instructions.map((instruction) => instruction.type),
      ['METER', 'APPLY_ACTIONS'],
    );
    assert.deepEqual(flowEntryOf(dumped(message)), flow, 'read back as written, meter and all');
  });

  it('drops what a pod may not send above every forwarding flow, matching an exact group without a mask', () => {
    const range = pipeline.sendPolicyDrop(5, DROP_239);
    assert.equal(range.priority, DEFAULT_PIPELINE_CONFIG.priorities.sendPolicy);
    assert.ok(
      range.priority > DEFAULT_PIPELINE_CONFIG.priorities.linkLocal &&
        range.priority < DEFAULT_PIPELINE_CONFIG.priorities.igmp,
    );
    assert.deepEqual(range.match, { inPort: 5, ethType: 0x0800, ipDst: '239.0.0.0', ipDstMask: '255.0.0.0' });
    assert.deepEqual(range.actions, []);
    assert.deepEqual(
      pipeline.sendPolicyDrop(5, { address: '239.1.2.3', mask: '255.255.255.255' }).match.ipDstMask,
      undefined,
    );
    assert.deepEqual(flowEntryOf(dumped(changeMessage({ op: 'add-flow', entry: range }))), range);
  });

  it('a meter goes before the flow that uses it, and after the flows when it goes', () => {
    const wanted = portEntries(pipeline, 5, { meter: METER, deniedSend: [DROP_239] });
    const adding = planPortSync(pipeline, 5, undefined, wanted);
    // the meter, the five metered flows (IGMP, MLD's four types), the drop
    assert.deepEqual(
      adding.map((change) => change.op),
      ['add-meter', 'add-flow', 'add-flow', 'add-flow', 'add-flow', 'add-flow', 'add-flow'],
    );
    const added = adding.flatMap((change) => (change.op === 'add-flow' ? [change.entry] : []));
    assert.deepEqual(added.slice(0, 5), pipeline.membershipToControllerMetered(5));
    assert.deepEqual(added[5], pipeline.sendPolicyDrop(5, DROP_239));
    const meter = changeMessage(adding[0]!) as MeterMod;
    assert.equal(meter.command, MeterModCommand.ADD);
    assert.equal(meter.flags, MeterFlag.PKTPS | MeterFlag.BURST | MeterFlag.STATS);
    assert.deepEqual(meter.bands, [{ type: 'DROP', rate: 200, burstSize: 1000 }]);
    assert.deepEqual(planPortSync(pipeline, 5, wanted, wanted), [], 'nothing for what is already right');
    assert.deepEqual(
      planPortSync(pipeline, 5, wanted, undefined).map((change) => change.op),
      ['delete-flow', 'delete-flow', 'delete-flow', 'delete-flow', 'delete-flow', 'delete-flow', 'delete-meter'],
    );
    const faster = portEntries(pipeline, 5, { meter: { rate: 50, burst: 1000 }, deniedSend: [DROP_239] });
    assert.deepEqual(
      planPortSync(pipeline, 5, wanted, faster).map((change) => change.op),
      ['modify-meter'],
      'a new rate changes the meter alone',
    );
    const otherRange = portEntries(pipeline, 5, {
      meter: METER,
      deniedSend: [{ address: '238.0.0.0', mask: '255.0.0.0' }],
    });
    assert.deepEqual(
      planPortSync(pipeline, 5, wanted, otherRange).map((change) => change.op),
      ['delete-flow', 'add-flow'],
      'a new policy changes its drops alone',
    );
  });

  it('reads the ports back from our flows and meters, by the port their cookie and id name', () => {
    const flows = [
      ...portEntries(pipeline, 5, { meter: METER, deniedSend: [DROP_239] }).flows,
      ...pipeline.membershipToController(),
      ...pipeline.linkLocalFlood(),
    ];
    const meters = new Map([
      [pipeline.meterIdOf(5), METER],
      [pipeline.meterIdOf(9), METER],
      [7, METER], // not ours
    ]);
    const read = installedPortEntries(pipeline, flows, meters);
    assert.deepEqual([...read.keys()].sort(), [5, 9]);
    assert.deepEqual(read.get(5)?.flows, [
      ...pipeline.membershipToControllerMetered(5),
      pipeline.sendPolicyDrop(5, DROP_239),
    ]);
    assert.deepEqual(read.get(9), { flows: [], meter: METER });
  });
});

describe('BridgeClient: per-port entries', () => {
  it('adds and removes a port (the meter first, then last), and sends nothing when it is right', async () => {
    const ovs = new FakeOpenFlow();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    assert.deepEqual(await bridge.syncPort(5, { meter: METER, deniedSend: [] }), { metered: true });
    assert.deepEqual(await bridge.syncPort(5, { meter: METER, deniedSend: [] }), { metered: true });
    assert.deepEqual(await bridge.syncPort(5, undefined), { metered: false });
    assert.deepEqual(bridge.portsWithEntries, []);
    const id = pipeline.meterIdOf(5);
    // one meter for the five metered flows of both families
    assert.deepEqual(ovs.batches.map(ops), [
      [`meter-0:${id}`, ...Array<string>(5).fill('flow-0:301')],
      [...Array<string>(5).fill('flow-4:301'), `meter-2:${id}`],
    ]);
  });

  it('leaves a port past the switch meters unmetered, and takes the meters on the switch as they are', async () => {
    const ovs = new FakeOpenFlow();
    ovs.features = { ...ovs.features, maxMeter: pipeline.meterIdOf(8) };
    ovs.meters = [
      {
        flags: MeterFlag.PKTPS | MeterFlag.BURST | MeterFlag.STATS,
        meterId: pipeline.meterIdOf(5),
        bands: [{ type: 'DROP', rate: 200, burstSize: 1000 }],
      },
    ];
    ovs.flows = pipeline
      .membershipToControllerMetered(5)
      .map((entry) => dumped(changeMessage({ op: 'add-flow', entry })));
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    assert.deepEqual(bridge.portsWithEntries, [5]);
    await bridge.syncPort(5, { meter: METER, deniedSend: [] });
    assert.equal(ovs.batches.length, 0, 'a restarted daemon leaves a right meter and its counters alone');
    assert.deepEqual(await bridge.syncPort(9, { meter: METER, deniedSend: [] }), { metered: false });
    assert.deepEqual(bridge.portsWithEntries, [5]);
  });

  it("reads each port's drops from its meter's band counters", async () => {
    const ovs = new FakeOpenFlow();
    const band = (packetCount: bigint) => ({ packetCount, byteCount: 0n });
    const stats = (meterId: number, dropped: bigint) => ({
      meterId,
      flowCount: 1,
      packetInCount: 0n,
      byteInCount: 0n,
      durationSec: 0,
      durationNsec: 0,
      bandStats: [band(dropped)],
    });
    ovs.meterCounters = [stats(pipeline.meterIdOf(5), 42n), stats(3, 9n)];
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    assert.deepEqual([...(await bridge.meterDrops())], [[5, 42n]]);
  });
});
