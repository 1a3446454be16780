/**
 * The OpenFlow client against a real ovs-vswitchd (a lab node, test/lab/ovs.ts): what it
 * installs, `ovs-ofctl -O OpenFlow13` (an independent reader) shows exactly; what is
 * there, it reads back; OVS's errors arrive typed; a pod's real IGMP report arrives as a
 * PACKET_IN; a PACKET_OUT query reaches the pods; a restarted ovs-vswitchd is noticed and
 * reconnected to. Also measured here: the largest GROUP_MOD OVS accepts (limits.ts).
 *
 * Needs root, iproute2, ethtool, tcpdump, python3 and Open vSwitch 3.x. Never touches the
 * machine's own OVS.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { UnavailableError } from '../../src/errors.js';
import * as ethernet from '../../src/packet/ethernet.js';
import { EtherType } from '../../src/packet/ethernet.js';
import * as igmp from '../../src/packet/igmp/index.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import { IP_PROTOCOL_IGMP, ROUTER_ALERT } from '../../src/packet/ipv4/header.js';
import { group, output, toController } from '../../src/protocol/openflow/action.js';
import { bucket } from '../../src/protocol/openflow/bucket.js';
import { OpenFlowConnection } from '../../src/transport/openflow/connection.js';
import { OpenFlowError } from '../../src/protocol/openflow/errors.js';
import { flowMod, type FlowMod } from '../../src/protocol/openflow/flow-mod.js';
import { groupMod } from '../../src/protocol/openflow/group-mod.js';
import { applyActions } from '../../src/protocol/openflow/instruction.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD } from '../../src/protocol/openflow/limits.js';
import * as openflow from '../../src/protocol/openflow/message.js';
import { FlowModCommand, GroupModCommand, GroupType } from '../../src/protocol/openflow/mod-command.js';
import type { OxmField } from '../../src/protocol/openflow/oxm.js';
import { inPortOf, type PacketIn } from '../../src/protocol/openflow/packet-in.js';
import { OfpGroup } from '../../src/protocol/openflow/reserved.js';
import { readPcapFile } from '../../src/packet/pcap/read-file.js';
import { decodeFrame, ipLocator, type FrameEvent } from '../../src/packet/frame-decoder.js';
import { Lab, sleep } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const IP: OxmField = { field: 'ETH_TYPE', value: EtherType.IPv4 };
const IGMP_MATCH: OxmField[] = [IP, { field: 'IP_PROTO', value: IP_PROTOCOL_IGMP }];
const GROUP_ADDRESS = '239.20.0.1';
const COOKIE_IGMP = 0x6d63_0001_0000_0001n;

/** `ovs-ofctl dump-flows` lines without the counters that change (duration, n_packets, n_bytes). */
function flowLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(' cookie='))
    .map((line) =>
      line
        .trim()
        .replace(/ duration=[^,]+,/, '')
        .replace(/ n_packets=\d+, n_bytes=\d+,/, ''),
    )
    .sort();
}

function groupLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(' group_id='))
    .map((line) => line.trim())
    .sort();
}

/** An IGMPv3 general query from 10.1.0.1, as a querier would send it: TTL 1, Router Alert, to 224.0.0.1. */
function generalQueryFrame(): Uint8Array {
  const query: igmp.IgmpMessage = {
    kind: 'query',
    version: 3,
    group: '0.0.0.0',
    maxRespCode: 10,
    sFlag: false,
    qrv: 2,
    qqic: 125,
    sources: [],
  };
  const igmpLength = igmp.encodingLength(query);
  const ipHeader: ipv4.Ipv4Header = {
    tos: 0xc0,
    totalLength: 0,
    identification: 0,
    dontFragment: false,
    moreFragments: false,
    fragmentOffset: 0,
    ttl: 1,
    protocol: IP_PROTOCOL_IGMP,
    src: '10.1.0.1',
    dst: '224.0.0.1',
    options: [ROUTER_ALERT],
  };
  const ipLength = ipv4.encodingLength(ipHeader);
  ipHeader.totalLength = ipLength + igmpLength;
  const ethHeader = {
    dst: ethernet.multicastMacForGroup('224.0.0.1'),
    src: '02:00:00:00:00:01',
    vlanIds: [],
    etherType: EtherType.IPv4,
  };
  const ethLength = ethernet.encodingLength(ethHeader);
  const frame = new Uint8Array(ethLength + ipLength + igmpLength);
  ethernet.encode(ethHeader, frame, 0);
  ipv4.encode(ipHeader, frame, ethLength);
  igmp.encode(query, frame, ethLength + ipLength);
  return frame;
}

/** Collects packet-ins until `predicate` holds for one, or `timeoutMs` passes. */
function nextPacketIn(
  connection: OpenFlowConnection,
  predicate: (packetIn: PacketIn) => boolean,
  timeoutMs = 5000,
): Promise<PacketIn | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      connection.off('packet-in', listener);
      resolve(undefined);
    }, timeoutMs);
    const listener = (packetIn: PacketIn) => {
      if (!predicate(packetIn)) return;
      clearTimeout(timer);
      connection.off('packet-in', listener);
      resolve(packetIn);
    };
    connection.on('packet-in', listener);
  });
}

function igmpEvent(packetIn: PacketIn): FrameEvent | undefined {
  return decodeFrame(ipLocator(1), packetIn.data, { frame: 0, ts: 0 });
}

function reportsGroup(packetIn: PacketIn, address: string): boolean {
  const event = igmpEvent(packetIn);
  if (event?.kind !== 'igmp' || event.message.kind !== 'report') return false;
  return event.message.version === 3
    ? event.message.records.some((record) => record.group === address)
    : event.message.group === address;
}

describe('OpenFlow client against ovs-vswitchd', () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: [OvsPod, OvsPod, OvsPod];
  let connection: OpenFlowConnection;
  const log = (line: string) => console.log(line);

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'of');
    pods = [
      await node.addPod('pod1', { address: '10.1.0.11/24' }),
      await node.addPod('pod2', { address: '10.1.0.12/24' }),
      await node.addPod('pod3', { address: '10.1.0.13/24' }),
    ];
    connection = await OpenFlowConnection.connect({
      endpoint: node.openflowEndpoint,
      reconnect: { minDelayMs: 50, maxDelayMs: 500 },
    });
  });

  after(async () => {
    await connection?.close();
    await lab?.destroy();
  });

  it('connects to br-int.mgmt and reads the datapath id ovs-vsctl reports', async () => {
    const datapathId = (await node.vsctl('get', 'bridge', 'br-int', 'datapath_id')).trim().replace(/"/g, '');
    assert.equal(connection.datapathId.toString(16).padStart(16, '0'), datapathId);
    assert.ok((await connection.echo()) < 1000);
  });

  it('an unreachable endpoint is UnavailableError ENOENT with the hint', async () => {
    const endpoint = `unix:${join(node.rundir, 'br-missing.mgmt')}`;
    await assert.rejects(
      OpenFlowConnection.connect({ endpoint }),
      (error: unknown) => error instanceof UnavailableError && error.exitCode === 69 && /: ENOENT$/.test(error.message),
    );
  });

  it('FLOW_MOD and GROUP_MOD: ovs-ofctl shows exactly what was installed, dumpFlows/dumpGroups read it back', async () => {
    const [pod1, pod2, pod3] = pods;
    const groupAll = groupMod({ groupId: 7, buckets: [bucket([output(pod1.ofport)]), bucket([output(pod2.ofport)])] });
    const groupIndirect = groupMod({
      groupId: 8,
      groupType: GroupType.INDIRECT,
      buckets: [bucket([output(pod3.ofport)])],
    });
    const flows: FlowMod[] = [
      flowMod({
        cookie: 0x1234n,
        priority: 100,
        match: [IP, { field: 'IPV4_DST', value: '239.1.2.3' }],
        instructions: [applyActions([group(7)])],
      }),
      flowMod({
        cookie: 0x10n,
        priority: 50,
        idleTimeout: 300,
        match: [
          { field: 'IN_PORT', value: pod1.ofport },
          { field: 'ETH_SRC', value: pod1.mac },
          { field: 'ETH_DST', value: '01:00:5e:00:00:00', mask: 'ff:ff:ff:80:00:00' },
          IP,
          { field: 'IPV4_SRC', value: '10.1.0.0', mask: '255.255.255.0' },
          { field: 'IPV4_DST', value: '239.0.0.0', mask: '255.0.0.0' },
          { field: 'IP_PROTO', value: 17 },
        ],
        instructions: [applyActions([group(8), output(pod2.ofport)])],
      }),
    ];
    const { errors } = await connection.batch([groupAll, groupIndirect, ...flows]);
    assert.equal(errors.size, 0);

    assert.deepEqual(groupLines(await node.ofctl('dump-groups', 'br-int')), [
      `group_id=7,type=all,bucket=actions=output:${pod1.ofport},bucket=actions=output:${pod2.ofport}`,
      `group_id=8,type=indirect,bucket=actions=output:${pod3.ofport}`,
    ]);
    assert.deepEqual(flowLines(await node.ofctl('dump-flows', 'br-int')), [
      'cookie=0x0, table=0, priority=0 actions=NORMAL',
      `cookie=0x10, table=0, idle_timeout=300, priority=50,udp,in_port=${pod1.ofport},dl_src=${pod1.mac},dl_dst=01:00:5e:00:00:00/ff:ff:ff:80:00:00,nw_src=10.1.0.0/24,nw_dst=239.0.0.0/8 actions=group:8,output:${pod2.ofport}`,
      'cookie=0x1234, table=0, priority=100,ip,nw_dst=239.1.2.3 actions=group:7',
    ]);

    const groups = await connection.dumpGroups();
    assert.deepEqual(
      groups.sort((a, b) => a.groupId - b.groupId),
      [groupAll, groupIndirect].map(({ groupType, groupId, buckets }) => ({ groupType, groupId, buckets })),
    );
    const dumped = await connection.dumpFlows({ cookie: 0x1234n });
    assert.equal(dumped.length, 1);
    assert.deepEqual(
      {
        cookie: dumped[0]!.cookie,
        priority: dumped[0]!.priority,
        match: dumped[0]!.match,
        instructions: dumped[0]!.instructions,
      },
      { cookie: 0x1234n, priority: 100, match: flows[0]!.match, instructions: flows[0]!.instructions },
    );
    // OVS puts the fields in its own order; the set is the same.
    const second = (await connection.dumpFlows({ cookie: 0x10n }))[0]!;
    assert.equal(second.idleTimeout, 300);
    assert.deepEqual(
      new Set(second.match.map((field) => JSON.stringify(field))),
      new Set(flows[1]!.match.map((field) => JSON.stringify(field))),
    );
  });

  it('delete by cookie and mask removes those flows and leaves the others alone', async () => {
    const cookies = [0x5_0001n, 0x5_0002n, 0x6_0001n];
    await connection.batch(
      cookies.map((cookie, i) =>
        flowMod({
          cookie,
          priority: 10 + i,
          match: [IP, { field: 'IPV4_DST', value: `239.9.0.${i + 1}` }],
          instructions: [applyActions([output(pods[0].ofport)])],
        }),
      ),
    );
    const before = (await connection.dumpFlows()).map((flow) => flow.cookie);
    await connection.sendFlowMod(
      flowMod({ command: FlowModCommand.DELETE, tableId: 0xff, cookie: 0x5_0000n, cookieMask: 0xffff_0000n }),
    );
    const afterDelete = (await connection.dumpFlows()).map((flow) => flow.cookie);
    assert.deepEqual(afterDelete.sort(), before.filter((cookie) => cookie >> 16n !== 5n).sort());
    assert.ok(afterDelete.includes(0x6_0001n) && afterDelete.includes(0x1234n) && afterDelete.includes(0n));
    assert.doesNotMatch(await node.ofctl('dump-flows', 'br-int'), /cookie=0x5000[12]/);
  });

  it('GROUP_MOD ADD of an existing id: OpenFlowError GROUP_MOD_FAILED/GROUP_EXISTS', async () => {
    await assert.rejects(
      connection.sendGroupMod(groupMod({ groupId: 7, buckets: [bucket([output(pods[2].ofport)])] })),
      (error: unknown) => {
        assert.ok(error instanceof OpenFlowError);
        assert.equal(error.errorName, 'GROUP_MOD_FAILED/GROUP_EXISTS');
        assert.match(
          error.message,
          /refused GROUP_MOD ADD group 7 \(xid \d+, ALL, 1 bucket\): GROUP_MOD_FAILED\/GROUP_EXISTS/,
        );
        return true;
      },
    );
    // The group is unchanged, and in a batch the same error lands on its index.
    const { errors } = await connection.batch([
      groupMod({ groupId: 9, buckets: [] }),
      groupMod({ groupId: 7, buckets: [] }),
      groupMod({ groupId: 9, command: GroupModCommand.DELETE }),
      groupMod({ groupId: 4242, command: GroupModCommand.MODIFY, buckets: [] }),
    ]);
    assert.deepEqual(
      [...errors].map(([index, error]) => [index, error.errorName]),
      [
        [1, 'GROUP_MOD_FAILED/GROUP_EXISTS'],
        [3, 'GROUP_MOD_FAILED/UNKNOWN_GROUP'],
      ],
    );
    assert.match(
      await node.ofctl('dump-groups', 'br-int'),
      new RegExp(`group_id=7,type=all,bucket=actions=output:${pods[0].ofport},`),
    );
  });

  it('a real IGMP report from a pod arrives as PACKET_IN with its in_port, and decodes as IGMP', async () => {
    await connection.sendFlowMod(
      flowMod({
        cookie: COOKIE_IGMP,
        priority: 1000,
        match: IGMP_MATCH,
        instructions: [applyActions([toController()])],
      }),
    );
    // OVS: a service connection gets nothing until it asks (miss_send_len 0).
    const unasked = nextPacketIn(connection, () => true, 700);
    const early = await pods[1].listen('239.20.0.99', 5999);
    assert.equal(await unasked, undefined, 'no packet-in before enablePacketIn()');
    await early.stop();

    await connection.enablePacketIn();
    const arrived = nextPacketIn(connection, (packetIn) => reportsGroup(packetIn, GROUP_ADDRESS));
    const member = await pods[1].listen(GROUP_ADDRESS, 6000);
    const packetIn = await arrived;
    assert.ok(packetIn, 'a packet-in for the join');
    assert.equal(inPortOf(packetIn), pods[1].ofport);
    assert.equal(packetIn.cookie, COOKIE_IGMP);
    assert.equal(packetIn.reason, 1); // ACTION
    assert.equal(packetIn.totalLen, packetIn.data.length);
    const event = igmpEvent(packetIn);
    assert.ok(event?.kind === 'igmp');
    assert.equal(event.src, pods[1].address);
    assert.equal(event.ip.ttl, 1);
    log(`packet-in: ${JSON.stringify(event.message)} from ofport ${inPortOf(packetIn)}`);
    await member.stop();
  });

  it('OVS: either SET_ASYNC or a nonzero miss_send_len opens a service connection to packet-ins', async () => {
    const viaAsync = await OpenFlowConnection.connect({ endpoint: node.openflowEndpoint });
    const viaConfig = await OpenFlowConnection.connect({ endpoint: node.openflowEndpoint });
    try {
      const current = await viaAsync.getAsync();
      assert.deepEqual(current.packetIn, [3, 0], "OVS's default: NO_MATCH and ACTION while master or equal");
      assert.equal(
        (await viaAsync.getSwitchConfig()).missSendLen,
        0,
        'a service connection starts with miss_send_len 0',
      );
      // SET_ASYNC on a service connection whose miss_send_len is 0 also sets it to 128 (ofproto.c,
      // handle_nxt_set_async_config).
      assert.equal((await viaAsync.batch([{ ...current, type: 'SET_ASYNC' }])).errors.size, 0);
      assert.equal((await viaAsync.getSwitchConfig()).missSendLen, 128);
      // SET_CONFIG alone, async configuration left at its default.
      assert.equal(
        (await viaConfig.batch([{ type: 'SET_CONFIG', xid: 0, flags: 0, missSendLen: 0xffff }])).errors.size,
        0,
      );
      const heard = [viaAsync, viaConfig].map((c) =>
        nextPacketIn(c, (packetIn) => reportsGroup(packetIn, '239.20.0.2')),
      );
      const member = await pods[2].listen('239.20.0.2', 6001);
      const [byAsync, byConfig] = await Promise.all(heard);
      assert.ok(byAsync, 'packet-in after SET_ASYNC');
      assert.ok(byConfig, 'packet-in after SET_CONFIG');
      // The OUTPUT action's max_len (0xffff), not miss_send_len (128), bounds an ACTION packet-in.
      assert.equal(byAsync.data.length, byAsync.totalLen);
      await member.stop();
    } finally {
      await Promise.all([viaAsync.close(), viaConfig.close()]);
    }
  });

  it('PACKET_OUT of an IGMP query reaches the pods (tcpdump sees it; the members answer)', async () => {
    const [pod1, pod2, pod3] = pods;
    const capture = await lab.startTcpdump(pod3.ns, pod3.iface, lab.file('pod3-query.pcap'), { filter: ['igmp'] });
    const member = await pod2.listen('239.20.0.4', 6003);
    await sleep(300); // let the join's own reports pass
    const answer = nextPacketIn(
      connection,
      (packetIn) => inPortOf(packetIn) === pod2.ofport && reportsGroup(packetIn, '239.20.0.4'),
      5000,
    );
    await connection.sendPacketOut({
      data: generalQueryFrame(),
      actions: [output(pod1.ofport), output(pod2.ofport), output(pod3.ofport)],
    });
    assert.ok(await answer, "pod2's kernel answered the query with a report");
    await sleep(200);
    await capture.stop();
    const queries: FrameEvent[] = [];
    await readPcapFile(capture.file, (record) => {
      const event = decodeFrame(ipLocator(1), record.data, { frame: record.index, ts: record.ts });
      if (event?.kind === 'igmp' && event.message.kind === 'query') queries.push(event);
    });
    assert.equal(queries.length, 1, 'pod3 received the query');
    assert.ok(queries[0]?.kind === 'igmp' && queries[0].src === '10.1.0.1' && queries[0].dst === '224.0.0.1');
    await member.stop();
  });

  it('a batch of 3000 flows is pipelined; the dump spans several multipart parts', async () => {
    const mods = Array.from({ length: 3000 }, (_, i) =>
      flowMod({
        cookie: 0x7_0000n + BigInt(i),
        tableId: 3,
        priority: 100,
        match: [IP, { field: 'IPV4_DST', value: `239.30.${i >> 8}.${i & 0xff}` }],
        instructions: [applyActions([output(pods[i % 3]!.ofport)])],
      }),
    );
    const started = performance.now();
    const { errors } = await connection.batch(mods);
    const elapsed = performance.now() - started;
    assert.equal(errors.size, 0);
    log(`3000 FLOW_MODs + barrier: ${elapsed.toFixed(0)} ms`);
    const parts = await connection.multipart({
      kind: 'FLOW',
      tableId: 3,
      outPort: 0xffffffff,
      outGroup: OfpGroup.ANY,
      cookie: 0n,
      cookieMask: 0n,
      match: [],
    });
    assert.ok(parts.length > 1, `${parts.length} parts`);
    assert.ok(parts.slice(0, -1).every((part) => part.flags === 1) && parts.at(-1)!.flags === 0);
    const flows = await connection.dumpFlows({ tableId: 3 });
    assert.equal(flows.length, 3000);
    assert.equal(flowLines(await node.ofctl('dump-flows', 'br-int', 'table=3')).length, 3000);
    log(`dump of 3000 flows came in ${parts.length} parts`);
    await connection.sendFlowMod(flowMod({ command: FlowModCommand.DELETE, tableId: 3 }));
  });

  it(`OVS accepts an ALL group of ${MAX_OUTPUT_BUCKETS_PER_GROUP_MOD} OUTPUT buckets, the most one message holds`, async () => {
    const ports = pods.map((pod) => pod.ofport);
    const buckets = Array.from({ length: MAX_OUTPUT_BUCKETS_PER_GROUP_MOD }, (_, i) => bucket([output(ports[i % 3]!)]));
    const largest = groupMod({ groupId: 100, buckets });
    assert.equal(openflow.encodingLength(largest), 65520);
    await connection.sendGroupMod(largest);
    // (OpenFlow 1.3's GROUP_DESC request cannot name a group: ovs-ofctl lists them all.)
    const line = groupLines(await node.ofctl('dump-groups', 'br-int')).find((text) => text.startsWith('group_id=100,'));
    assert.equal(line?.match(/bucket=/g)?.length, MAX_OUTPUT_BUCKETS_PER_GROUP_MOD);
    const dumped = (await connection.dumpGroups()).find((entry) => entry.groupId === 100);
    assert.equal(dumped?.buckets.length, MAX_OUTPUT_BUCKETS_PER_GROUP_MOD);
    assert.throws(
      () => openflow.encode(groupMod({ groupId: 101, buckets: [...buckets, bucket([output(1)])] })),
      /65552 octets exceeds/,
    );
  });

  it('ovs-vswitchd restart: disconnected, then reconnected; flows are gone, replay works, packet-ins still come', async () => {
    const events: string[] = [];
    connection.on('disconnected', () => events.push('disconnected'));
    const reconnected = new Promise<void>((resolve) =>
      connection.once('reconnected', () => {
        events.push('reconnected');
        resolve();
      }),
    );
    const started = Date.now();
    await node.restartVswitchd();
    await reconnected;
    log(`reconnected ${Date.now() - started} ms after the kill`);
    assert.deepEqual(events, ['disconnected', 'reconnected']);
    assert.deepEqual(flowLines(await node.ofctl('dump-flows', 'br-int')), [
      'cookie=0x0, table=0, priority=0 actions=NORMAL',
    ]);
    assert.deepEqual(await connection.dumpGroups(), []);
    // Replay, as a controller does on `reconnected`.
    await connection.sendFlowMod(
      flowMod({
        cookie: COOKIE_IGMP,
        priority: 1000,
        match: IGMP_MATCH,
        instructions: [applyActions([toController()])],
      }),
    );
    const arrived = nextPacketIn(connection, (packetIn) => reportsGroup(packetIn, '239.20.0.5'));
    const member = await pods[0].listen('239.20.0.5', 6004);
    const packetIn = await arrived;
    assert.ok(packetIn, 'packet-ins re-enabled on the new connection');
    assert.equal(inPortOf(packetIn), pods[0].ofport);
    await member.stop();
  });

  it('a bridge that does not allow OpenFlow 1.3: the connection fails clearly', async () => {
    await connection.close();
    await node.vsctl('set', 'bridge', 'br-int', 'protocols=OpenFlow10');
    try {
      await assert.rejects(
        OpenFlowConnection.connect({ endpoint: node.openflowEndpoint, timeoutMs: 3000 }),
        (error: unknown) => {
          assert.ok(error instanceof UnavailableError);
          log(`OpenFlow10-only bridge: ${error.message}`);
          assert.match(
            error.message,
            /does not speak OpenFlow 1\.3 \(it offers up to 1\.0\)|refused the handshake: HELLO_FAILED/,
          );
          return true;
        },
      );
    } finally {
      await node.vsctl('clear', 'bridge', 'br-int', 'protocols');
    }
  });
});
