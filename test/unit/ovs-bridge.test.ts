/**
 * The OVS adapter's shared parts: the one port model (LOCAL, pods from external_ids, the
 * gateway by name) and the one read-back of the installed pipeline, which the bridge
 * client's read for the commands and its mirror for the daemon both go through.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { BridgePorts, isLocalPort } from '../../src/adapters/ovs/bridge-ports.js';
import { OVSDB_LOCAL_OFPORT } from '../../src/adapters/ovs/ovs-constants.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { ovsPipeline, readInstalled } from '../../src/adapters/ovs/read-back.js';
import type { InterfaceRow } from '../../src/adapters/ovs/vswitch.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { matchFields } from '../../src/domain/pipeline/openflow-entries.js';
import { group as groupAction, output as outputAction } from '../../src/protocol/openflow/action.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../src/protocol/openflow/limits.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../src/protocol/openflow/group-desc.js';
import { groupAddress } from '../../src/wire/ip-address.js';
import { UsageError } from '../../src/errors.js';
import { FakeOpenFlow } from '../fakes/fake-openflow.js';

function row(
  name: string,
  ofport: number | undefined,
  externalIds: Record<string, string> = {},
  mac?: string,
): InterfaceRow {
  return { uuid: `uuid-${name}`, name, ofport, external_ids: externalIds, type: '', mac_in_use: mac };
}

describe('BridgePorts', () => {
  const ports = new BridgePorts([
    row('p2', 3, { 'pod-name': 'db' }),
    row('br-int', OVSDB_LOCAL_OFPORT, {}, '02:00:00:00:00:01'),
    row('gw0', 1),
    row('p1', 2, { 'pod-name': 'web', 'pod-namespace': 'shop' }),
    row('p3', undefined, { 'pod-name': 'late' }),
  ]);

  it('every numbered port, LOCAL included, by number; pods named namespace/name', () => {
    assert.deepEqual(ports.all, [
      { ofport: 1, name: 'gw0' },
      { ofport: 2, name: 'p1', pod: 'shop/web' },
      { ofport: 3, name: 'p2', pod: 'db' },
      { ofport: OVSDB_LOCAL_OFPORT, name: 'br-int' },
    ]);
    assert.equal(ports.localMac, '02:00:00:00:00:01');
    assert.equal(ports.byName('p3'), undefined, 'no OpenFlow port number yet');
    assert.equal(ports.byNumber(2)?.name, 'p1');
  });

  it('members leave out LOCAL; the gateway is a member found by name', () => {
    assert.deepEqual(
      ports.members.map((port) => port.ofport),
      [1, 2, 3],
    );
    assert.equal(isLocalPort({ ofport: OVSDB_LOCAL_OFPORT }), true);
    assert.deepEqual(ports.member('gw0'), { ofport: 1, name: 'gw0' });
    assert.equal(ports.member('br-int'), undefined, 'LOCAL is never the gateway');
    assert.equal(ports.member(undefined), undefined);
  });

  it("a pod's MAC from external_ids attached-mac, in lower case; text that is no MAC is left out", () => {
    const withMacs = new BridgePorts([
      row('p1', 2, { 'pod-name': 'web', 'attached-mac': '0A:58:0A:01:00:02' }),
      row('p2', 3, { 'pod-name': 'db', 'attached-mac': 'not-a-mac' }),
      row('p3', 4, { 'pod-name': 'cache', 'attached-mac': '0a:58:0a:01:00' }),
      row('p4', 5, { 'pod-name': 'queue' }),
    ]);
    assert.deepEqual([...withMacs.macs], [[2, '0a:58:0a:01:00:02']]);
  });
});

describe('BridgeClient: the ports', () => {
  const pipeline = ovsPipeline(DEFAULT_PIPELINE_CONFIG);
  const ports = new BridgePorts([
    row('br-int', OVSDB_LOCAL_OFPORT, {}, '02:00:00:00:00:01'),
    row('p1', 2, {
      'pod-name': 'web',
      'pod-namespace': 'shop',
      'ip-address': '10.1.0.2/24',
      'attached-mac': '0A:58:0A:01:00:02',
    }),
  ]);
  const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: new FakeOpenFlow(), pipeline, ports });
  const where = () => '--ports';

  it('resolves a port by name or number, with its addresses and MAC', () => {
    assert.deepEqual(bridge.resolvePort({ name: 'p1' }, where), { ofport: 2, name: 'p1', pod: 'shop/web' });
    assert.equal(bridge.resolvePort({ ofport: 2 }, where).name, 'p1');
    assert.deepEqual(bridge.addressesOf(2), ['10.1.0.2']);
    assert.equal(bridge.macOf(2), '0a:58:0a:01:00:02');
    assert.equal(bridge.localMac, '02:00:00:00:00:01');
    assert.deepEqual(
      bridge.memberPorts.map((port) => port.name),
      ['p1'],
    );
  });

  it('refuses LOCAL and a port the bridge does not have, naming the ports it has (exit 64)', () => {
    assert.throws(
      () => bridge.resolvePort({ name: 'br-int' }, where),
      (error: unknown) =>
        error instanceof UsageError &&
        error.code === 'no-such-interface' &&
        /^--ports: br-int is the bridge's own \(LOCAL\) port/.test(error.message),
    );
    assert.throws(
      () => bridge.resolvePort({ ofport: 9 }, where),
      (error: unknown) =>
        error instanceof UsageError &&
        /bridge br-int has no port/.test(error.message) &&
        error.hint === 'its ports: p1 (2)',
    );
  });
});

describe('readInstalled', () => {
  const pipeline = ovsPipeline(DEFAULT_PIPELINE_CONFIG);
  const declared = pipeline.forwarding({ group: groupAddress('239.3.3.3'), ports: [4] });
  const flowStats = (fields: Partial<FlowStats> & Pick<FlowStats, 'priority' | 'cookie' | 'match'>): FlowStats =>
    ({ tableId: 0, instructions: [], packetCount: 0n, byteCount: 0n, ...fields }) as unknown as FlowStats;
  const groupDesc = (groupId: number, port: number): GroupDesc => ({
    groupType: 0,
    groupId,
    buckets: [{ weight: 0, watchPort: 0, watchGroup: 0, actions: [outputAction(port)] }],
  });

  function switchWithOneGroup(): FakeOpenFlow {
    const ovs = new FakeOpenFlow();
    ovs.flows = [
      flowStats({
        priority: declared.flow.priority,
        cookie: declared.flow.cookie,
        match: matchFields(declared.flow.match),
        instructions: [{ type: 'APPLY_ACTIONS', actions: [groupAction(declared.groups[0]!.groupId)] }],
        packetCount: 7n,
        byteCount: 700n,
      } as Partial<FlowStats> as FlowStats),
      // Someone else's flow with the place of one of ours.
      flowStats({
        priority: declared.flow.priority,
        cookie: 0x99n,
        match: matchFields(pipeline.groupFlow(groupAddress('239.4.4.4')).match),
      }),
    ];
    const stray = pipeline.groupId(groupAddress('239.5.5.5'));
    ovs.groups = [...declared.groups.map((entry) => groupDesc(entry.groupId, 4)), groupDesc(stray, 5)];
    return ovs;
  }

  it('the pipeline as OVS takes it: no more buckets a group than one GROUP_MOD holds', () => {
    const big = pipeline.forwarding({
      group: groupAddress('239.6.6.6'),
      ports: Array.from({ length: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD + 1 }, (_, i) => i + 1),
    });
    assert.equal(big.groups.length, 2);
  });

  it('reads our groups with their counters, our stray group ids, and the flows of others in our places', async () => {
    const installed = await readInstalled(switchWithOneGroup(), pipeline);
    assert.deepEqual(
      installed.pipeline.groups.map((group) => [group.group, group.ports, group.learned]),
      [['239.3.3.3', [4], false]],
    );
    assert.deepEqual(installed.counters.get(groupAddress('239.3.3.3')), { packets: 7n, bytes: 700n });
    assert.equal(installed.foreignFlows.length, 1);
    assert.equal(installed.foreignFlows[0]!.cookie, 0x99n);
    assert.deepEqual(
      installed.pipeline.strayGroups.map((entry) => entry.groupId),
      [pipeline.groupId(groupAddress('239.5.5.5'))],
    );
    assert.deepEqual(
      [...installed.groupIds].sort(),
      [...declared.groups.map((entry) => entry.groupId), pipeline.groupId(groupAddress('239.5.5.5'))].sort(),
    );
  });

  it("the daemon's mirror sees the switch as the commands do", async () => {
    const ovs = switchWithOneGroup();
    const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
    await bridge.refresh();
    const installed = await bridge.readInstalled();
    assert.deepEqual(
      bridge.installedGroups,
      installed.pipeline.groups.map((group) => group.group),
    );
    await assert.rejects(
      bridge.syncForwarding({ group: groupAddress('239.4.4.4'), ports: [1], bySource: [] }),
      /not programmed/,
      "another controller's flow is in its place",
    );
  });
});
