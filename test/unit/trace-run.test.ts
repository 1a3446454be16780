/** `mcastctl trace`'s decisions (runTrace) on plain facts: a fake TraceSources, stage by stage. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { encodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import type { TraceReport, TraceStage } from '../../src/controllers/trace/trace-report.js';
import type {
  InstalledEntry,
  KernelFacts,
  TracePort,
  TraceRequest,
  TraceSources,
} from '../../src/controllers/trace/trace-facts.js';
import { runTrace } from '../../src/controllers/trace/trace-run.js';
import { traceLines } from '../../src/cli/render/trace-lines.js';
import { Chalk } from 'chalk';
import type { GroupView, MemberView, PortActivityView, PortQuery } from '../../src/transport/control/daemon-view.js';
import type { AddressFamily } from '../../src/wire/ip-address.js';
import { groupAddress } from '../../src/wire/ip-address.js';
import { sampleStatus } from '../helpers/fake-daemon-view.js';

const GROUP = groupAddress('239.1.2.3');
const PREFIX = 0x6d63;
const POD_A = 'default/pod-a';
const POD_B = 'default/pod-b';
const GW: TracePort = { ofport: 1, name: 'gw0' };
const PORT_A: TracePort = { ofport: 3, name: 'veth-a', pod: POD_A, addresses: ['10.0.0.5'] };
const PORT_B: TracePort = { ofport: 4, name: 'veth-b', pod: POD_B, addresses: ['10.0.0.6'] };

/** ofproto/trace's text: the first rule (with its cookie) and the datapath actions. */
function traceText(actions: string, rule = ' 0. ip,nw_dst=239.1.2.3, priority 200, cookie 0x6d63030000000000'): string {
  return [
    'Flow: udp,in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:6d:63,dl_dst=01:00:5e:01:02:03,nw_src=192.0.2.1,nw_dst=239.1.2.3',
    '',
    'bridge("br-int")',
    '----------------',
    rule,
    '    group:1',
    '',
    'Final flow: unchanged',
    'Megaflow: recirc_id=0,eth,ip,in_port=1,nw_dst=239.1.2.3,nw_frag=no',
    `Datapath actions: ${actions}`,
    '',
  ].join('\n');
}

function activityOf(
  port: TracePort,
  overrides: Partial<PortActivityView> = {},
  group: Partial<NonNullable<PortActivityView['group']>> | null = {},
): PortActivityView {
  return {
    port: { ofport: port.ofport, name: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }) },
    since: '2026-01-01T00:00:00.000Z',
    messages: 3,
    lastMessageAt: '2026-01-01T00:01:00.000Z',
    queryIntervalMs: 125_000,
    reportedGroups: [],
    refusals: {},
    meterDropped: 0,
    ...(group === null
      ? {}
      : {
          group: {
            group: GROUP,
            reports: 2,
            lastReportAt: '2026-01-01T00:01:00.000Z',
            refusals: {},
            policy: { join: { allowed: true }, send: { allowed: true } },
            ...group,
          },
        }),
    ...overrides,
  };
}

function memberOf(port: TracePort, overrides: Partial<MemberView> = {}): MemberView {
  return {
    port: { ofport: port.ofport, name: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }) },
    host: port.addresses?.[0] ?? '0.0.0.0',
    compatibility: 3,
    mode: 'exclude',
    sources: [],
    lastReportAt: new Date(Date.now() - 10_000).toISOString(),
    expiresAt: new Date(Date.now() + 200_000).toISOString(),
    ...overrides,
  };
}

/** The facts behind a fake TraceSources: by default everything delivers 239.1.2.3 to pod-a from outside through gw0. */
class World {
  ports: TracePort[] = [GW, PORT_A, PORT_B];
  gateway: string | undefined = 'gw0';
  tunnel: string | undefined = undefined;
  multicastInterfaces: string[] = ['eth0'];
  daemonPresent = true;
  daemonState: TraceReport['daemon'] = 'reachable';
  members: MemberView[] = [memberOf(PORT_A)];
  activities = new Map<string, PortActivityView>([
    [POD_A, activityOf(PORT_A)],
    [POD_B, activityOf(PORT_B)],
  ]);
  installedEntries: InstalledEntry[] = [{ group: GROUP, groupId: 1, ports: [3] }];
  text = traceText('4');
  datapathPorts = new Map<number, number>([[4, 3]]);
  kernelFacts: KernelFacts = {
    routerActive: true,
    interfaces: ['gw0', 'eth0'],
    routes: [{ source: '10.1.1.1', group: GROUP, iif: 'eth0', oifs: ['gw0'], packets: 5, bytes: 500 }],
    memberships: [{ name: 'eth0', group: GROUP }],
  };
  // What the trace asked.
  installedCalls = 0;
  portQueries: PortQuery[] = [];
  flowPackets: Array<{ inPort: number; source: string; sourceMac?: string }> = [];
  tracedFlows: string[] = [];
  kernelCalls: AddressFamily[] = [];

  sources(): TraceSources {
    const groups: GroupView[] = [{ group: GROUP, ports: [], members: this.members, synced: true }];
    return {
      bridge: 'br-int',
      cookiePrefix: PREFIX,
      ports: this.ports,
      installed: async () => {
        this.installedCalls++;
        return this.installedEntries;
      },
      ovsTrace: async (flow) => {
        this.tracedFlows.push(flow);
        return { text: this.text, datapathPorts: this.datapathPorts };
      },
      daemon: this.daemonPresent
        ? {
            status: sampleStatus(),
            groups,
            port: async (query) => {
              this.portQueries.push(query);
              return this.activities.get(query.pod ?? '');
            },
          }
        : undefined,
      daemonState: this.daemonState,
      controlSocket: '/run/mcastctl/test.sock',
      kernel: async (family) => {
        this.kernelCalls.push(family);
        return this.kernelFacts;
      },
      gateway: this.gateway,
      multicastInterfaces: this.multicastInterfaces,
      tunnel: this.tunnel,
      flowText: (packet) => {
        this.flowPackets.push({
          inPort: packet.inPort,
          source: packet.source,
          ...(packet.sourceMac === undefined ? {} : { sourceMac: packet.sourceMac }),
        });
        return `flow:${packet.inPort}:${packet.source}`;
      },
    };
  }

  run(request: Partial<TraceRequest> = {}): Promise<TraceReport> {
    return runTrace({ group: GROUP, pod: POD_A, ...request }, this.sources());
  }
}

function stage(report: TraceReport, name: TraceStage['name']): TraceStage {
  const found = report.stages.find((entry) => entry.name === name);
  assert.ok(found, `no stage ${name} in ${report.stages.map((entry) => entry.name).join(', ')}`);
  return found;
}

/** The report ends at `name`, failed with `code`. */
function assertBlocked(report: TraceReport, name: TraceStage['name'], code: string): TraceStage {
  const last = report.stages.at(-1)!;
  assert.equal(last.name, name);
  assert.equal(last.status, 'fail');
  assert.equal(last.code, code);
  assert.equal(typeof last.hint, 'string');
  assert.equal(report.verdict, 'blocked');
  assert.equal(report.blockedAt, name);
  assert.ok(
    report.stages.slice(0, -1).every((entry) => entry.status !== 'fail'),
    'only the last stage fails',
  );
  return last;
}

describe('runTrace: the whole way', () => {
  it('delivers when every stage passes, numbering the stages as TRACE_STAGES orders them', async () => {
    const world = new World();
    const report = await world.run({ via: 'gateway' });
    assert.equal(report.verdict, 'delivered');
    assert.equal(report.blockedAt, null);
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [5, 'outside', 'pass'],
      ],
    );
    assert.equal(report.daemon, 'reachable');
    assert.equal(report.source, null);
    assert.deepEqual(report.sender, {
      kind: 'outside',
      address: null,
      via: 'gateway',
      port: { ofport: 1, name: 'gw0' },
    });
    assert.equal(report.senderNamed, true);
    assert.deepEqual(
      report.paths.map((path) => [path.from, path.verdict]),
      [['outside', 'delivered']],
    );
    assert.deepEqual(world.portQueries, [{ pod: POD_A, group: GROUP }]);
  });

  it('stops at the first failure: nothing after it is asked', async () => {
    const world = new World();
    world.activities.set(POD_A, activityOf(PORT_A, { messages: 0 }, null));
    world.members = [];
    const report = await world.run();
    assertBlocked(report, 'igmp', 'no-igmp');
    assert.equal(report.stages.length, 2);
    assert.equal(world.installedCalls, 0);
    assert.equal(world.tracedFlows.length, 0);
    assert.equal(world.kernelCalls.length, 0);
  });
});

describe('runTrace: 1 pod-port', () => {
  it("passes with the pod's port and addresses", async () => {
    const report = await new World().run();
    const podPort = stage(report, 'pod-port');
    assert.equal(podPort.status, 'pass');
    assert.deepEqual(podPort.facts, { port: { ofport: 3, name: 'veth-a', pod: POD_A }, addresses: ['10.0.0.5'] });
    assert.match(podPort.summary, /veth-a \(ofport 3\).*10\.0\.0\.5/);
  });

  it('no-such-pod for a pod without a port, naming the pods the bridge has', async () => {
    const world = new World();
    const report = await world.run({ pod: 'default/nope' });
    const failed = assertBlocked(report, 'pod-port', 'no-such-pod');
    assert.equal(report.stages.length, 1);
    assert.deepEqual(failed.facts, { port: null, addresses: [] });
    assert.match(failed.hint!, /default\/pod-a, default\/pod-b/);
    assert.equal(world.portQueries.length, 0);
  });

  it("not-a-pod-port for the gateway's port", async () => {
    const world = new World();
    world.ports = [{ ofport: 1, name: 'gw0', pod: 'kube-system/gw' }, PORT_A];
    const report = await world.run({ pod: 'kube-system/gw' });
    const failed = assertBlocked(report, 'pod-port', 'not-a-pod-port');
    assert.match(failed.summary, /gateway/);
    assert.equal(report.stages.length, 1);
  });

  it("not-a-pod-port for the tunnel's port", async () => {
    const world = new World();
    world.tunnel = 'tun0';
    world.ports = [{ ofport: 9, name: 'tun0', pod: 'kube-system/tun' }, PORT_A];
    const failed = assertBlocked(await world.run({ pod: 'kube-system/tun' }), 'pod-port', 'not-a-pod-port');
    assert.match(failed.summary, /tunnel/);
  });
});

describe('runTrace: 2 igmp', () => {
  it('passes for a member, with its reports in the facts', async () => {
    const igmp = stage(await new World().run(), 'igmp');
    assert.equal(igmp.status, 'pass');
    assert.equal(igmp.facts['reports'], 2);
    assert.equal(igmp.facts['messages'], 3);
  });

  it('not-a-pod-port when the daemon does not snoop the port', async () => {
    const world = new World();
    world.activities.delete(POD_A);
    assertBlocked(await world.run(), 'igmp', 'not-a-pod-port');
  });

  it('no-igmp when the port sent no message at all, with its meter drops', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(POD_A, activityOf(PORT_A, { messages: 0, lastMessageAt: null, meterDropped: 17 }, null));
    const failed = assertBlocked(await world.run(), 'igmp', 'no-igmp');
    assert.equal(failed.facts['messages'], 0);
    assert.equal(failed.facts['reports'], 0);
    assert.match(failed.summary, /IGMP/);
    assert.match(failed.summary, /dropped 17/);
    assert.match(failed.summary, /every 125 s/);
  });

  it('never-reported when the port reports other groups only', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(POD_A, activityOf(PORT_A, { messages: 9, reportedGroups: ['239.9.9.9', '239.8.8.8'] }, null));
    const failed = assertBlocked(await world.run(), 'igmp', 'never-reported');
    assert.deepEqual(failed.facts['reportedGroups'], ['239.9.9.9', '239.8.8.8']);
    assert.match(failed.summary, /239\.9\.9\.9, 239\.8\.8\.8/);
  });

  it('denied-by-policy with the rule, even with no report refused yet', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(
      POD_A,
      activityOf(
        PORT_A,
        {},
        {
          reports: 4,
          refusals: { policy: 4 },
          lastRefusal: { reason: 'policy', at: '2026-01-01T00:01:00.000Z', rule: 7 },
          policy: { join: { allowed: false, rule: 7 }, send: { allowed: true } },
        },
      ),
    );
    const failed = assertBlocked(await world.run(), 'igmp', 'denied-by-policy');
    assert.equal(failed.facts['rule'], 7);
    assert.match(failed.summary, /line 7/);
    assert.deepEqual(failed.facts['lastRefusal'], { reason: 'policy', at: '2026-01-01T00:01:00.000Z', rule: 7 });
  });

  it('denied-by-policy without a rule gives rule null', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(
      POD_A,
      activityOf(PORT_A, {}, { reports: 0, policy: { join: { allowed: false }, send: { allowed: true } } }),
    );
    const failed = assertBlocked(await world.run(), 'igmp', 'denied-by-policy');
    assert.equal(failed.facts['rule'], null);
  });

  for (const limit of ['port-groups', 'node-groups', 'group-sources', 'ssm'] as const) {
    it(`limit-reached (${limit}) from the group's last refusal`, async () => {
      const world = new World();
      world.members = [];
      world.activities.set(
        POD_A,
        activityOf(
          PORT_A,
          {},
          { reports: 1, refusals: { [limit]: 1 }, lastRefusal: { reason: limit, at: '2026-01-01T00:01:00.000Z' } },
        ),
      );
      const failed = assertBlocked(await world.run(), 'igmp', 'limit-reached');
      assert.equal(failed.facts['limit'], limit);
      assert.match(failed.summary, new RegExp(`: ${limit}$`));
    });
  }

  for (const [reason, code] of [
    ['spoofed', 'spoofed'],
    ['off-link', 'off-link'],
    ['port-rate', 'rate-limited'],
  ] as const) {
    it(`${code} from the port's ${reason} refusals`, async () => {
      const world = new World();
      world.members = [];
      world.activities.set(POD_A, activityOf(PORT_A, { refusals: { [reason]: 2 } }, { reports: 3 }));
      const failed = assertBlocked(await world.run(), 'igmp', code);
      assert.match(failed.summary, new RegExp(`refused: ${reason}`));
    });
  }

  it("a member passes even with the port's refusals counted", async () => {
    const world = new World();
    world.activities.set(POD_A, activityOf(PORT_A, { refusals: { spoofed: 2 } }));
    assert.equal(stage(await world.run(), 'igmp').status, 'pass');
  });

  it('reports without a refusal, not a member: igmp passes and membership fails', async () => {
    const world = new World();
    world.members = [memberOf(PORT_B)];
    const report = await world.run();
    assert.equal(stage(report, 'igmp').status, 'pass');
    const failed = assertBlocked(report, 'membership', 'not-member');
    assert.equal(failed.facts['member'], false);
    assert.equal(report.stages.length, 3);
  });

  it('MLD for an IPv6 group', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(POD_A, activityOf(PORT_A, { messages: 0 }, null));
    const failed = assertBlocked(await world.run({ group: groupAddress('ff3e::1:2') }), 'igmp', 'no-igmp');
    assert.match(failed.summary, /no MLD/);
    assert.match(failed.hint!, /ICMPv6/);
  });
});

describe('runTrace: 3 membership', () => {
  it('passes for an EXCLUDE {} member, admitsSource null without --source', async () => {
    const membership = stage(await new World().run(), 'membership');
    assert.equal(membership.status, 'pass');
    assert.equal(membership.facts['admitsSource'], null);
    assert.equal(membership.facts['mode'], 'exclude');
    assert.match(membership.summary, /any source/);
    const expires = membership.facts['expiresInMs'] as number;
    assert.ok(expires > 150_000 && expires <= 200_000, `expiresInMs ${expires}`);
  });

  it('source-not-admitted: INCLUDE without the source', async () => {
    const world = new World();
    world.members = [memberOf(PORT_A, { mode: 'include', sources: ['10.9.9.9'] })];
    const report = await world.run({ source: '10.1.1.1' });
    const failed = assertBlocked(report, 'membership', 'source-not-admitted');
    assert.equal(failed.facts['admitsSource'], false);
    assert.equal(report.source, '10.1.1.1');
  });

  it('source-not-admitted: EXCLUDE with the source', async () => {
    const world = new World();
    world.members = [memberOf(PORT_A, { mode: 'exclude', sources: ['10.1.1.1'] })];
    const failed = assertBlocked(await world.run({ source: '10.1.1.1' }), 'membership', 'source-not-admitted');
    assert.equal(failed.facts['admitsSource'], false);
  });

  it('admits INCLUDE with the source, and EXCLUDE without it', async () => {
    for (const member of [
      memberOf(PORT_A, { mode: 'include', sources: ['10.1.1.1'] }),
      memberOf(PORT_A, { mode: 'exclude', sources: ['10.2.2.2'] }),
    ]) {
      const world = new World();
      world.members = [member];
      const membership = stage(await world.run({ source: '10.1.1.1' }), 'membership');
      assert.equal(membership.status, 'pass', member.mode);
      assert.equal(membership.facts['admitsSource'], true, member.mode);
    }
  });

  it("another pod's membership does not count", async () => {
    const world = new World();
    world.members = [memberOf(PORT_B)];
    assertBlocked(await world.run(), 'membership', 'not-member');
  });
});

describe('runTrace: 4 ovs', () => {
  it("passes when OVS's trace outputs to the pod's OpenFlow port (datapath port 4 is ofport 3)", async () => {
    const world = new World();
    const ovs = stage(await world.run({ via: 'gateway' }), 'ovs');
    assert.equal(ovs.status, 'pass');
    assert.equal(ovs.facts['groupId'], 1);
    assert.equal(ovs.facts['bucket'], true);
    const trace = ovs.facts['trace'] as Record<string, unknown>;
    assert.deepEqual(trace['outputs'], [3]);
    assert.equal(trace['reachesPod'], true);
    assert.equal(trace['inPort'], 1);
    assert.deepEqual(trace['firstRule'], { table: 0, match: 'ip,nw_dst=239.1.2.3', priority: 200, ours: true });
    // Traced from the gateway's port, from the documentation source when none is named.
    assert.deepEqual(world.flowPackets, [{ inPort: 1, source: '192.0.2.1' }]);
    assert.deepEqual(world.tracedFlows, ['flow:1:192.0.2.1']);
  });

  it('no-flow without an entry of ours for the group', async () => {
    const world = new World();
    world.installedEntries = [{ group: groupAddress('239.9.9.9'), groupId: 2, ports: [3] }];
    const failed = assertBlocked(await world.run(), 'ovs', 'no-flow');
    assert.equal(failed.facts['groupId'], null);
    assert.match(failed.hint!, /mcastctl status/);
    assert.equal(world.tracedFlows.length, 0);
  });

  it('no-bucket when the OVS group has no bucket for the pod', async () => {
    const world = new World();
    world.installedEntries = [{ group: GROUP, groupId: 0x1a, ports: [4], problem: 'chain broken' }];
    const failed = assertBlocked(await world.run(), 'ovs', 'no-bucket');
    assert.equal(failed.facts['bucket'], false);
    assert.deepEqual(failed.facts['flowPorts'], [4]);
    assert.match(failed.summary, /0x1a/);
    assert.match(failed.summary, /chain broken/);
    assert.equal(world.tracedFlows.length, 0);
  });

  it("trace-misses-pod when OVS's trace outputs elsewhere", async () => {
    const world = new World();
    world.text = traceText('5', ' 0. ip,nw_dst=239.1.2.3, priority 500, cookie 0xdead000000000001');
    world.datapathPorts = new Map([
      [4, 3],
      [5, 4],
    ]);
    const failed = assertBlocked(await world.run(), 'ovs', 'trace-misses-pod');
    const trace = failed.facts['trace'] as Record<string, unknown>;
    assert.deepEqual(trace['outputs'], [4]);
    assert.equal(trace['reachesPod'], false);
    assert.deepEqual(trace['firstRule'], { table: 0, match: 'ip,nw_dst=239.1.2.3', priority: 500, ours: false });
    assert.match(failed.summary, /not ours/);
  });

  it('trace-misses-pod when the datapath drops it (no rule of the send policy)', async () => {
    const world = new World();
    world.text = traceText('drop');
    const failed = assertBlocked(await world.run(), 'ovs', 'trace-misses-pod');
    assert.deepEqual((failed.facts['trace'] as Record<string, unknown>)['outputs'], []);
    assert.match(failed.summary, /outputs to nothing/);
  });

  it("send-denied when the first rule's cookie is our SendPolicyDrop", async () => {
    const world = new World();
    const cookie = encodeFlowCookie({ prefix: PREFIX, kind: FlowKind.SendPolicyDrop, value: 1 });
    world.text = traceText('drop', ` 0. ip,in_port=1,nw_dst=239.1.2.3, priority 300, cookie 0x${cookie.toString(16)}`);
    const failed = assertBlocked(await world.run(), 'ovs', 'send-denied');
    assert.equal(
      ((failed.facts['trace'] as Record<string, unknown>)['firstRule'] as Record<string, unknown>)['ours'],
      true,
    );
  });

  it('a SendPolicyDrop cookie of another prefix is not ours: trace-misses-pod', async () => {
    const world = new World();
    const cookie = encodeFlowCookie({ prefix: 0x1234, kind: FlowKind.SendPolicyDrop, value: 1 });
    world.text = traceText('drop', ` 0. ip,in_port=1, priority 300, cookie 0x${cookie.toString(16)}`);
    assertBlocked(await world.run(), 'ovs', 'trace-misses-pod');
  });

  it('a datapath port with no OpenFlow port does not count as the pod', async () => {
    const world = new World();
    world.text = traceText('3');
    world.datapathPorts = new Map();
    const failed = assertBlocked(await world.run(), 'ovs', 'trace-misses-pod');
    assert.deepEqual((failed.facts['trace'] as Record<string, unknown>)['outputs'], [-3]);
  });

  it('chooses the (S,G) entry over the (*,G) one when the source matches', async () => {
    const world = new World();
    world.installedEntries = [
      { group: GROUP, groupId: 1, ports: [4] },
      { group: GROUP, source: '10.1.1.1', groupId: 2, ports: [3] },
    ];
    const ovs = stage(await world.run({ via: 'gateway', source: '10.1.1.1' }), 'ovs');
    assert.equal(ovs.status, 'pass');
    assert.equal(ovs.facts['groupId'], 2);
    assert.equal(ovs.facts['entrySource'], '10.1.1.1');
    assert.deepEqual(world.flowPackets, [{ inPort: 1, source: '10.1.1.1' }]);
  });

  it('takes the (*,G) entry for another source', async () => {
    const world = new World();
    world.installedEntries = [
      { group: GROUP, source: '10.1.1.1', groupId: 2, ports: [3] },
      { group: GROUP, groupId: 1, ports: [4] },
    ];
    const failed = assertBlocked(await world.run({ source: '10.7.7.7' }), 'ovs', 'no-bucket');
    assert.equal(failed.facts['groupId'], 1);
    assert.equal('entrySource' in failed.facts, false);
  });

  it('passes without tracing when there is no sender port (--via gateway, no gateway known); outside says why', async () => {
    const world = new World();
    world.gateway = undefined;
    const report = await world.run({ via: 'gateway' });
    assert.equal(stage(report, 'ovs').status, 'pass');
    assert.match(stage(report, 'ovs').summary, /no sender port/);
    assert.equal(world.tracedFlows.length, 0);
    assertBlocked(report, 'outside', 'no-router');
  });
});

describe('runTrace: 5 outside', () => {
  it('passes with the (S,G) route in on a multicast interface and out to the gateway', async () => {
    const world = new World();
    const outside = stage(await world.run({ via: 'gateway' }), 'outside');
    assert.equal(outside.status, 'pass');
    assert.match(outside.summary, /\(10\.1\.1\.1, 239\.1\.2\.3\) in on eth0 to gw0: 5 packets/);
    assert.deepEqual(outside.facts['upstreamJoins'], [{ interface: 'eth0', joined: true }]);
    assert.deepEqual(world.kernelCalls, ['ipv4']);
  });

  it('passes without a route yet', async () => {
    const world = new World();
    world.kernelFacts = { ...world.kernelFacts, routes: [] };
    const outside = stage(await world.run({ via: 'gateway' }), 'outside');
    assert.equal(outside.status, 'pass');
    assert.equal(outside.facts['route'], null);
    assert.match(outside.summary, /no \(S,G\) route yet/);
  });

  it("with a source, only that source's route counts", async () => {
    const world = new World();
    world.kernelFacts = {
      ...world.kernelFacts,
      routes: [
        { source: '10.1.1.1', group: GROUP, iif: 'gw0', oifs: ['eth0'], packets: 1, bytes: 100 },
        { source: '10.2.2.2', group: GROUP, iif: 'eth0', oifs: ['gw0'], packets: 2, bytes: 200 },
      ],
    };
    const outside = stage(await world.run({ via: 'gateway', source: '10.2.2.2' }), 'outside');
    assert.equal(outside.status, 'pass');
    assert.equal((outside.facts['route'] as { source: string }).source, '10.2.2.2');
  });

  it('no-router without multicast interfaces', async () => {
    const world = new World();
    world.multicastInterfaces = [];
    assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'no-router');
  });

  it('no-router when no multicast router is active', async () => {
    const world = new World();
    world.kernelFacts = { ...world.kernelFacts, routerActive: false };
    const failed = assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'no-router');
    assert.match(failed.summary, /no multicast router is active/);
  });

  it('no-router when a multicast interface is no VIF', async () => {
    const world = new World();
    world.kernelFacts = { ...world.kernelFacts, interfaces: ['gw0'] };
    const failed = assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'no-router');
    assert.match(failed.summary, /eth0 is no routing interface/);
  });

  it('no-upstream-join when no multicast interface joined the group', async () => {
    const world = new World();
    world.kernelFacts = {
      ...world.kernelFacts,
      memberships: [
        { name: 'eth0', group: '239.9.9.9' },
        { name: 'lo', group: GROUP },
      ],
    };
    const failed = assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'no-upstream-join');
    assert.deepEqual(failed.facts['upstreamJoins'], [{ interface: 'eth0', joined: false }]);
  });

  it('route-wrong when the route comes in on the gateway', async () => {
    const world = new World();
    world.kernelFacts = {
      ...world.kernelFacts,
      routes: [{ source: '10.1.1.1', group: GROUP, iif: 'gw0', oifs: ['eth0'], packets: 0, bytes: 0 }],
    };
    assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'route-wrong');
  });

  it('route-wrong when the route does not go out to the gateway', async () => {
    const world = new World();
    world.kernelFacts = {
      ...world.kernelFacts,
      routes: [{ source: '10.1.1.1', group: GROUP, iif: 'eth0', oifs: [], packets: 0, bytes: 0 }],
    };
    const failed = assertBlocked(await world.run({ via: 'gateway' }), 'outside', 'route-wrong');
    assert.match(failed.summary, /goes out to nothing/);
  });
});

describe('runTrace: 6 sender', () => {
  it('a pod sender: traced from its port with its address, then passes with its route out', async () => {
    const world = new World();
    world.kernelFacts = {
      ...world.kernelFacts,
      routes: [{ source: '10.0.0.6', group: GROUP, iif: 'gw0', oifs: ['eth0'], packets: 8, bytes: 800 }],
    };
    const report = await world.run({ from: { pod: POD_B } });
    assert.equal(report.verdict, 'delivered');
    assert.deepEqual(
      report.stages.map((entry) => entry.name),
      ['pod-port', 'igmp', 'membership', 'ovs', 'sender'],
    );
    assert.deepEqual(report.sender, {
      kind: 'pod',
      pod: POD_B,
      port: { ofport: 4, name: 'veth-b', pod: POD_B },
      address: '10.0.0.6',
    });
    assert.equal(report.source, '10.0.0.6');
    assert.deepEqual(world.flowPackets, [{ inPort: 4, source: '10.0.0.6' }]);
    const sender = stage(report, 'sender');
    assert.equal(sender.status, 'pass');
    assert.equal(sender.facts['sendAllowed'], true);
    assert.equal((sender.facts['route'] as { source: string }).source, '10.0.0.6');
    assert.deepEqual(world.portQueries.at(-1), { pod: POD_B, group: GROUP });
  });

  it('a pod sender whose port has its MAC: the traced packet comes from that MAC', async () => {
    const world = new World();
    world.ports = [GW, PORT_A, { ...PORT_B, mac: '0a:58:0a:00:00:06' }];
    await world.run({ from: { pod: POD_B } });
    assert.deepEqual(world.flowPackets, [{ inPort: 4, source: '10.0.0.6', sourceMac: '0a:58:0a:00:00:06' }]);
  });

  it("a pod sender whose address the member's INCLUDE filter leaves out: source-not-admitted, without --source", async () => {
    const world = new World();
    world.members = [memberOf(PORT_A, { mode: 'include', sources: ['10.9.9.9'] })];
    const report = await world.run({ from: { pod: POD_B } });
    const failed = assertBlocked(report, 'membership', 'source-not-admitted');
    assert.equal(failed.facts['admitsSource'], false);
    assert.match(failed.summary, /10\.0\.0\.6 is not admitted/);
  });

  it('send-denied when the policy denies the pod sending', async () => {
    const world = new World();
    world.activities.set(
      POD_B,
      activityOf(PORT_B, {}, { policy: { join: { allowed: true }, send: { allowed: false, rule: 9 } } }),
    );
    const failed = assertBlocked(await world.run({ from: { pod: POD_B } }), 'sender', 'send-denied');
    assert.equal(failed.stage, 6);
    assert.equal(failed.facts['rule'], 9);
    assert.equal(failed.facts['sendAllowed'], false);
    assert.match(failed.summary, /line 9/);
  });

  it("--from-address of a local pod's address makes that pod the sender", async () => {
    const world = new World();
    const report = await world.run({ from: { address: '10.0.0.6' } });
    assert.equal(report.sender?.kind, 'pod');
    assert.equal(stage(report, 'sender').status, 'pass');
  });
});

describe('runTrace: without the daemon', () => {
  for (const state of ['unreachable', 'not-asked'] as const) {
    it(`${state}: igmp and membership skipped, the rest run, verdict incomplete`, async () => {
      const world = new World();
      world.daemonPresent = false;
      world.daemonState = state;
      const report = await world.run();
      assert.equal(report.daemon, state);
      // Every sender: another pod on the node decides; the tunnel is the daemon's to say.
      assert.deepEqual(
        report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
        [
          [1, 'pod-port', 'pass'],
          [2, 'igmp', 'skipped'],
          [3, 'membership', 'skipped'],
          [4, 'ovs', 'pass'],
          [6, 'sender', 'pass'],
        ],
      );
      const tunnel = report.paths.find((path) => path.from === 'tunnel')!;
      assert.equal(tunnel.verdict, 'not-applicable');
      assert.match(
        tunnel.stages[0]!.summary,
        state === 'unreachable' ? /the daemon's settings are not known: it did not answer/ : /it was not asked/,
      );
      assert.equal(report.verdict, 'incomplete');
      assert.equal(report.blockedAt, null);
      const summary = stage(report, 'igmp').summary;
      if (state === 'unreachable') assert.match(summary, /\/run\/mcastctl\/test\.sock/);
      else assert.match(summary, /--no-daemon/);
    });
  }

  it('a failure later still blocks, and no-flow asks whether the daemon runs', async () => {
    const world = new World();
    world.daemonPresent = false;
    world.daemonState = 'unreachable';
    world.installedEntries = [];
    const report = await world.run();
    const failed = assertBlocked(report, 'ovs', 'no-flow');
    assert.match(failed.hint!, /is the daemon running/);
  });
});

describe('runTrace: every sender the node carries (no --from, --from-address or --via)', () => {
  const TUNNEL: TracePort = { ofport: 9, name: 'tun0' };
  const kinds = (report: TraceReport) => report.paths.map((path) => [path.from, path.verdict]);

  it('a snooping node (no multicast interfaces): another pod delivers; the tunnel and the outside are not applicable', async () => {
    const world = new World();
    world.multicastInterfaces = [];
    const report = await world.run();
    assert.equal(report.verdict, 'delivered');
    assert.equal(report.senderNamed, false);
    assert.deepEqual(kinds(report), [
      ['pod', 'delivered'],
      ['tunnel', 'not-applicable'],
      ['outside', 'not-applicable'],
    ]);
    assert.deepEqual(report.sender, {
      kind: 'pod',
      pod: POD_B,
      port: { ofport: 4, name: 'veth-b', pod: POD_B },
      address: '10.0.0.6',
    });
    assert.equal(report.source, '10.0.0.6');
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [6, 'sender', 'pass'],
      ],
    );
    // Traced from the other pod's port with its address; the kernel's routing is never asked.
    assert.deepEqual(world.flowPackets, [{ inPort: 4, source: '10.0.0.6' }]);
    const outside = report.paths[2]!.stages;
    assert.deepEqual(
      outside.map((entry) => [entry.stage, entry.name, entry.status]),
      [[5, 'outside', 'not-applicable']],
    );
    assert.match(outside[0]!.summary, /routes no multicast in from outside \(no multicast interfaces\)$/);
    assert.match(report.paths[1]!.stages[0]!.summary, /not in tunnel mode$/);

    const lines = traceLines(report, new Chalk({ level: 0 }));
    assert.match(lines[0]!, /from every sender the node carries/);
    assert.ok(lines.includes('✓ 3 membership    member (IGMPv3, any source), expires in 200 s'), lines.join('\n'));
    assert.ok(
      lines.some((line) => /^ {2}from pod default\/pod-b, 10\.0\.0\.6/.test(line)),
      lines.join('\n'),
    );
    assert.ok(lines.some((line) => /^· 5 from outside +not applicable: the node routes no multicast/.test(line)));
    assert.equal(lines.at(-1), `delivered: ${GROUP} reaches ${POD_A} (from pod ${POD_B})`);
  });

  it('a tunnel node: the pod and the tunnel both followed, the first delivered decides', async () => {
    const world = new World();
    world.ports = [GW, PORT_A, PORT_B, TUNNEL];
    world.tunnel = 'tun0';
    world.multicastInterfaces = [];
    const report = await world.run();
    assert.deepEqual(kinds(report), [
      ['pod', 'delivered'],
      ['tunnel', 'delivered'],
      ['outside', 'not-applicable'],
    ]);
    assert.deepEqual(world.flowPackets, [
      { inPort: 4, source: '10.0.0.6' },
      { inPort: 9, source: '192.0.2.1' },
    ]);
    const tunnel = report.paths[1]!;
    assert.deepEqual(tunnel.sender, {
      kind: 'outside',
      address: null,
      via: 'tunnel',
      port: { ofport: 9, name: 'tun0' },
    });
    assert.match(tunnel.stages[1]!.summary, /from other nodes through the tunnel tun0 \(ofport 9\)/);
    assert.equal(report.sender?.kind, 'pod');
  });

  it('the other pod may not send (policy): the tunnel delivers and decides', async () => {
    const world = new World();
    world.ports = [GW, PORT_A, PORT_B, TUNNEL];
    world.tunnel = 'tun0';
    world.activities.set(
      POD_B,
      activityOf(PORT_B, {}, { policy: { join: { allowed: true }, send: { allowed: false } } }),
    );
    const report = await world.run();
    assert.equal(report.verdict, 'delivered');
    assert.deepEqual(kinds(report), [
      ['pod', 'blocked'],
      ['tunnel', 'delivered'],
      ['outside', 'delivered'],
    ]);
    assert.equal(report.paths[0]!.blockedAt, 'sender');
    assert.equal(report.sender?.kind, 'outside');
    assert.deepEqual(
      report.stages.map((entry) => [entry.stage, entry.name, entry.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [5, 'outside', 'pass'],
      ],
    );
    assert.equal(report.source, null);
  });

  it('blocked for every sender: the first carried one names the stage', async () => {
    const world = new World();
    world.ports = [GW, PORT_A, PORT_B, TUNNEL];
    world.tunnel = 'tun0';
    world.text = traceText('7');
    const report = await world.run();
    assertBlocked(report, 'ovs', 'trace-misses-pod');
    assert.deepEqual(kinds(report), [
      ['pod', 'blocked'],
      ['tunnel', 'blocked'],
      ['outside', 'blocked'],
    ]);
    assert.equal(report.sender?.kind, 'pod');
    const lines = traceLines(report, new Chalk({ level: 0 }));
    assert.equal(
      lines.at(-1),
      'blocked at stage 4 (ovs): trace-misses-pod, and every other sender the node carries is blocked too',
    );
  });

  it('no sender the node carries (one pod, no tunnel, no routing): blocked, no-sender, saying why', async () => {
    const world = new World();
    world.ports = [GW, PORT_A];
    world.multicastInterfaces = [];
    const report = await world.run();
    const failed = assertBlocked(report, 'sender', 'no-sender');
    assert.match(
      failed.summary,
      /no other pod has a port on bridge br-int; the node is not in tunnel mode; the node routes no multicast in from outside \(no multicast interfaces\)$/,
    );
    assert.deepEqual(kinds(report), [
      ['pod', 'not-applicable'],
      ['tunnel', 'not-applicable'],
      ['outside', 'not-applicable'],
    ]);
    assert.equal(report.sender, null);
    assert.equal(world.tracedFlows.length, 0);
  });

  it('a shared stage that fails ends the trace before any sender', async () => {
    const world = new World();
    world.members = [];
    world.activities.set(POD_A, activityOf(PORT_A, { messages: 0 }, null));
    const report = await world.run();
    assertBlocked(report, 'igmp', 'no-igmp');
    assert.deepEqual(report.paths, []);
    assert.equal(report.sender, null);
  });
});
