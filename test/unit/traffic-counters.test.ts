/**
 * Per-pod traffic counters: the GROUP statistics codec, the sender counting flows of the
 * pipeline (build, read-back, plans), the mapping of bucket and flow counters to pods and
 * groups, the bound on (pod, group) pairs, and the metrics' series.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { TrafficCarry, trafficOf } from '../../src/adapters/ovs/traffic-counters.js';
import { TrafficCounterBudget } from '../../src/controllers/daemon/loop/traffic-counters.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { counterPriorities, DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import { type FlowEntry, MulticastPipeline } from '../../src/domain/pipeline/multicast-pipeline.js';
import { changeMessage } from '../../src/domain/pipeline/openflow-entries.js';
import { planInstall, planUninstall } from '../../src/domain/pipeline/plan.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import { type GroupStats, OFPG_ALL, reply, request } from '../../src/protocol/openflow/group-stats.js';
import { decode as decodeMessage, encode as encodeMessage } from '../../src/protocol/openflow/message.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

const G = groupAddress('239.1.2.3');
const S = sourceAddress('10.0.0.7');
const [A, B, GW] = [1, 2, 9];

const pipeline = () => new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });

/** What the switch dumps of `flow`, with counters: the wire's FLOW_MOD decoded back into a flow stats entry. */
function dumped(flow: FlowEntry, packets: bigint, bytes: bigint): FlowStats {
  const mod = changeMessage({ op: 'add-flow', entry: flow });
  assert.equal(mod.type, 'FLOW_MOD');
  return {
    tableId: flow.table,
    durationSec: 1,
    durationNsec: 0,
    priority: flow.priority,
    idleTimeout: 0,
    hardTimeout: 0,
    flags: 0,
    importance: 0,
    cookie: flow.cookie,
    packetCount: packets,
    byteCount: bytes,
    match: mod.match,
    instructions: mod.instructions,
  } as FlowStats;
}

describe('GROUP statistics codec', () => {
  const entries: GroupStats[] = [
    {
      groupId: 0x1f000001,
      refCount: 3,
      packetCount: 150n,
      byteCount: 36_300n,
      durationSec: 12,
      durationNsec: 5,
      bucketStats: [
        { packetCount: 150n, byteCount: 36_300n },
        { packetCount: 2n ** 63n, byteCount: 1n },
      ],
    },
    { groupId: 7, refCount: 0, packetCount: 0n, byteCount: 0n, durationSec: 0, durationNsec: 0, bucketStats: [] },
  ];

  it('round-trips a reply body, 40 octets an entry plus 16 a bucket', () => {
    assert.equal(reply.encodingLength(entries), 40 + 32 + 40);
    assert.deepEqual(reply.decode(reply.encode(entries)), entries);
  });

  it('round-trips the request and the multipart messages (type 6)', () => {
    assert.deepEqual(request.decode(request.encode({ kind: 'GROUP', groupId: OFPG_ALL })), {
      kind: 'GROUP',
      groupId: OFPG_ALL,
    });
    const asked = encodeMessage({
      type: 'MULTIPART_REQUEST',
      xid: 9,
      flags: 0,
      body: { kind: 'GROUP', groupId: OFPG_ALL },
    });
    assert.equal((asked[8]! << 8) | asked[9]!, 6);
    assert.deepEqual(decodeMessage(asked), {
      type: 'MULTIPART_REQUEST',
      xid: 9,
      flags: 0,
      body: { kind: 'GROUP', groupId: OFPG_ALL },
    });
    const answer = { type: 'MULTIPART_REPLY', xid: 9, flags: 0, body: { kind: 'GROUP', groups: entries } } as const;
    assert.deepEqual(decodeMessage(encodeMessage(answer)), answer);
  });

  it('refuses a length that is not 40 plus a multiple of 16, and a cut entry', () => {
    const bytes = reply.encode(entries.slice(0, 1));
    const bad = Uint8Array.from(bytes);
    bad[1] = 41;
    assert.throws(() => reply.decode(bad), /40 plus a multiple of 16/);
    assert.throws(() => reply.decode(bytes, 0, bytes.length - 8));
  });
});

describe('sender counting flows', () => {
  it('sit between the group flow and the (S,G) flows, and above those below the send policy', () => {
    assert.deepEqual(counterPriorities(DEFAULT_PIPELINE_CONFIG.priorities), {
      sendCounter: 205,
      sourceSendCounter: 215,
    });
    assert.equal(counterPriorities({ ...DEFAULT_PIPELINE_CONFIG.priorities, sourceGroup: 201 }).sendCounter, undefined);
  });

  it('one per counter port and entry: the entry match plus in_port, its actions, cookie kind 11 with the group', () => {
    const p = pipeline();
    const star = p.forwarding({ group: G, ports: [A, B, GW], learned: true, counterPorts: [B, A] });
    assert.deepEqual(
      star.counters?.map((flow) => [flow.priority, flow.match.inPort, flow.match.ipSrc]),
      [
        [205, A, undefined],
        [205, B, undefined],
      ],
    );
    for (const flow of star.counters ?? []) {
      assert.deepEqual(flow.actions, star.flow.actions);
      assert.equal(flow.match.ipDst, G);
      const fields = decodeFlowCookie(flow.cookie, DEFAULT_PIPELINE_CONFIG.cookiePrefix);
      assert.equal(fields?.kind, FlowKind.SendCounter);
      assert.equal(fields?.value, 0xef010203);
    }
    const sourced = p.forwarding({ group: G, source: S, ports: [A], learned: true, counterPorts: [A] });
    assert.deepEqual(
      sourced.counters?.map((flow) => [flow.priority, flow.match.inPort, flow.match.ipSrc, flow.actions]),
      [[215, A, S, sourced.flow.actions]],
    );
    assert.equal(p.forwarding({ group: G, ports: [A] }).counters, undefined, 'none without counter ports');
  });

  it('are read back as their entry’s, planned by in_port, and removed with it', () => {
    const p = pipeline();
    const forwarding = p.forwarding({ group: G, ports: [A, B], learned: true, counterPorts: [A, B] });
    const installed = p.readInstalled([forwarding.flow, ...(forwarding.counters ?? [])], forwarding.groups);
    assert.equal(installed.otherFlows.length, 0, 'no stray');
    assert.deepEqual(
      installed.groups[0]?.counters?.map((flow) => flow.match.inPort),
      [A, B],
    );
    // The same wanted: nothing to do; one port fewer: its row alone goes.
    assert.deepEqual(
      planInstall(p, [{ group: G, ports: [A, B], learned: true, counterPorts: [A, B] }], installed)[0]?.changes,
      [],
    );
    const fewer =
      planInstall(p, [{ group: G, ports: [A, B], learned: true, counterPorts: [A] }], installed)[0]?.changes ?? [];
    assert.deepEqual(
      fewer.map((change) => [change.op, change.op === 'delete-flow' ? change.entry.match.inPort : undefined]),
      [['delete-flow', B]],
    );
    const removal = planUninstall([G], installed)[0]?.changes ?? [];
    assert.equal(removal.filter((change) => change.op === 'delete-flow').length, 3);
    assert.equal(removal.at(-1)?.op, 'delete-group', 'the group after every flow that points to it');
    // A row whose entry is gone is a stray of ours.
    const alone = p.readInstalled(forwarding.counters ?? [], []);
    assert.equal(alone.otherFlows.length, 2);
  });
});

describe('trafficOf', () => {
  it("a pod's received is its buckets less what its counting flow sent (OVS counts the skipped in_port copy too); sent is its rows", () => {
    const p = pipeline();
    const star = p.forwarding({ group: G, ports: [A, B, GW], learned: true, counterPorts: [A, B] });
    const sourced = p.forwarding({ group: G, source: S, ports: [B, GW], learned: true, counterPorts: [A, B] });
    const entries = p.readInstalled(
      [star.flow, sourced.flow, ...(star.counters ?? []), ...(sourced.counters ?? [])],
      [...star.groups, ...sourced.groups],
    ).groups;
    const frame = 242n;
    const bucket = (packets: bigint) => ({ packetCount: packets, byteCount: packets * frame });
    // (*,G): 100 from outside plus 50 from A; (S,G): 10 from S, 3 of them sent by B.
    const groupStats: GroupStats[] = [
      {
        groupId: star.groups[0]!.groupId,
        refCount: 3,
        ...bucket(150n),
        durationSec: 1,
        durationNsec: 0,
        bucketStats: [bucket(150n), bucket(150n), bucket(150n)],
      },
      {
        groupId: sourced.groups[0]!.groupId,
        refCount: 3,
        ...bucket(10n),
        durationSec: 1,
        durationNsec: 0,
        bucketStats: [bucket(10n), bucket(10n)],
      },
    ];
    const [starA, starB] = star.counters!;
    const [sourcedA, sourcedB] = sourced.counters!;
    const flows = [
      dumped(starA!, 50n, 50n * frame),
      dumped(starB!, 0n, 0n),
      dumped(sourcedA!, 0n, 0n),
      dumped(sourcedB!, 3n, 3n * frame),
    ];
    const traffic = trafficOf({ pipeline: p, entries, groupStats, flows });
    const of = (port: number) => traffic.find((entry) => entry.ofport === port);
    assert.deepEqual(of(A), {
      group: G,
      ofport: A,
      received: { packets: 100n, bytes: 100n * frame },
      sent: { packets: 50n, bytes: 50n * frame },
    });
    assert.deepEqual(of(B), {
      group: G,
      ofport: B,
      received: { packets: 157n, bytes: 157n * frame },
      sent: { packets: 3n, bytes: 3n * frame },
    });
    assert.deepEqual(
      of(GW)?.received,
      { packets: 160n, bytes: 160n * frame },
      'the gateway has no row: nothing taken off',
    );
    assert.equal(of(GW)?.sent, undefined);
  });
});

describe('TrafficCarry', () => {
  it('keeps what a port received across a rewrite of its OVS group, which zeroes the buckets but not the sending rows', () => {
    const carry = new TrafficCarry();
    const at = (bucket: bigint, sent: bigint) => ({
      group: G,
      entryKey: G,
      ofport: A,
      bucket: { packets: bucket, bytes: bucket },
      sent: { packets: sent, bytes: sent },
    });
    // 150 through the group, 50 of them A's own: 100 received.
    assert.deepEqual(carry.received(at(150n, 50n)), { packets: 100n, bytes: 100n });
    carry.rewritten([at(150n, 50n)]);
    // After the rewrite: 12 through the group, 2 of them A's own (sent 52 in all).
    assert.deepEqual(carry.received(at(12n, 52n)), { packets: 110n, bytes: 110n });
    carry.keep(G, new Set([B]));
    assert.deepEqual(
      carry.received(at(12n, 52n)),
      { packets: 0n, bytes: 0n },
      'A left: what it had is not carried (its row counts afresh too)',
    );
  });

  it("keeps and forgets one entry's carries without touching another entry's", () => {
    const carry = new TrafficCarry();
    const at = (entryKey: string, ofport: number) => ({
      group: G,
      entryKey,
      ofport,
      bucket: { packets: 10n, bytes: 10n },
    });
    carry.rewritten([at('star', A), at('star', B), at('source', A)]);
    carry.keep('star', new Set([B]));
    carry.forget('other');
    assert.deepEqual(carry.received(at('star', A)), { packets: 10n, bytes: 10n }, 'A left the entry: afresh');
    assert.deepEqual(carry.received(at('star', B)), { packets: 20n, bytes: 20n }, 'B stayed: carried');
    assert.deepEqual(carry.received(at('source', A)), { packets: 20n, bytes: 20n }, 'the other entry untouched');
    carry.forget('source');
    assert.deepEqual(carry.received(at('source', A)), { packets: 10n, bytes: 10n }, 'forgotten');
  });
});

describe('TrafficCounterBudget', () => {
  const budget = (max: number, on = true) => {
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (message: string) => void warnings.push(message) };
    return {
      warnings,
      budget: new TrafficCounterBudget({
        settings: () => ({ trafficCounters: on, maxTrafficCounters: max }),
        logger,
        now: () => 0,
      }),
    };
  };

  it('takes pairs up to the bound, keeps them while members, frees them when they leave; one warning', () => {
    const { budget: b, warnings } = budget(2);
    assert.deepEqual(b.counterPorts(G, [A, B]), [A, B]);
    const other = groupAddress('239.9.9.9');
    assert.deepEqual(b.counterPorts(other, [A]), []);
    assert.deepEqual(b.counterPorts(other, [A, B]), []);
    assert.equal(b.uncounted, 2);
    assert.equal(warnings.length, 1, 'rate-limited');
    assert.deepEqual(b.counterPorts(G, [B]), [B], 'A left G: its place is free');
    assert.deepEqual(b.counterPorts(other, [A, B]), [A]);
    assert.equal(b.uncounted, 1);
    const view = b.view(
      [
        { group: G, ofport: B, received: { packets: 1n, bytes: 2n }, sent: { packets: 3n, bytes: 4n } },
        { group: other, ofport: B, received: { packets: 9n, bytes: 9n } },
      ],
      (ofport) => ({ ofport, name: `p${ofport}` }),
    );
    assert.deepEqual(view, {
      counting: true,
      limit: 2,
      uncounted: 1,
      entries: [
        {
          group: G,
          port: { ofport: B, name: 'p2' },
          received: { packets: 1, bytes: 2 },
          sent: { packets: 3, bytes: 4 },
        },
      ],
    });
  });

  it('with trafficCounters off: pairs are still bounded and shown, but get no rows and no sent', () => {
    const { budget: b } = budget(10, false);
    assert.deepEqual(b.counterPorts(G, [A]), []);
    assert.equal(b.has(G, A), true);
    const view = b.view(
      [{ group: G, ofport: A, received: { packets: 1n, bytes: 2n }, sent: { packets: 3n, bytes: 4n } }],
      (ofport) => ({ ofport, name: 'a' }),
    );
    assert.equal(view.counting, false);
    assert.equal(view.entries[0]?.sent, undefined);
  });
});

describe('traffic metrics', () => {
  it('one series per counted pair, by pod and group, and the uncounted pairs', async () => {
    const text = await new DaemonMetrics(new FakeDaemonView()).registry.metrics();
    const labels = '{pod="default/pod-a",group="239.1.2.3"}';
    assert.match(text, new RegExp(`^mcastctl_pod_group_received_packets_total${labels} 100$`, 'm'));
    assert.match(text, new RegExp(`^mcastctl_pod_group_received_bytes_total${labels} 24200$`, 'm'));
    assert.match(text, new RegExp(`^mcastctl_pod_group_sent_packets_total${labels} 50$`, 'm'));
    assert.match(text, new RegExp(`^mcastctl_pod_group_sent_bytes_total${labels} 12100$`, 'm'));
    assert.match(text, /^mcastctl_pod_group_uncounted 1$/m);
    assert.match(text, /^# TYPE mcastctl_pod_group_sent_packets_total counter$/m);
  });

  it('no series while the switch does not answer, and the scrape still works', async () => {
    const view = new FakeDaemonView();
    view.stats = () => {
      throw new Error('the daemon is starting');
    };
    const text = await new DaemonMetrics(view).registry.metrics();
    assert.doesNotMatch(text, /^mcastctl_pod_group_received_packets_total\{/m);
    assert.match(text, /^mcastctl_pod_group_uncounted 0$/m);
  });
});
