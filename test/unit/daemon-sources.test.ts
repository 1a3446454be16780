/**
 * Per-source forwarding in the daemon: the loop on the shared fakes (test/fakes/) fed
 * real IGMPv3 reports, down to the fake switch's (S,G) entries and the filter the router
 * is told; and the real bridge client on an OpenFlow fake that applies what it is sent:
 * the order of one group's batch, a second sync that sends nothing, the read-back of a
 * new client, and the removal of every source.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import { BridgeClient } from '../../src/adapters/ovs/bridge-client.js';
import { ovsPipeline } from '../../src/adapters/ovs/read-back.js';
import { DEFAULT_PIPELINE_CONFIG, sourcePriorities } from '../../src/domain/pipeline/config.js';
import { changeMessage } from '../../src/domain/pipeline/openflow-entries.js';
import { planInstall } from '../../src/domain/pipeline/plan.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { groupAddress, sourceAddress, type GroupAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { ApplyingOpenFlow } from '../fakes/fake-openflow.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeRouter } from '../fakes/fake-router.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

const GROUP = groupAddress('239.1.1.1');
const GATEWAY = 1;
const [A, B, C] = [2, 3, 4];
const S1 = sourceAddress('10.9.0.1');
const S2 = sourceAddress('10.9.0.2');
const S3 = sourceAddress('10.9.0.3');

/** FakeRouter that also keeps the filter each setLocalMembers call was told. */
class FilterRecordingRouter extends FakeRouter {
  readonly filters: Array<SourceFilter | undefined> = [];

  override setLocalMembers(group: GroupAddress, present: boolean, filter?: SourceFilter): void {
    super.setLocalMembers(group, present);
    this.filters.push(filter);
  }
}

/** The loop on fresh fakes: the gateway on port 1, pods A, B, C on ports 2..4. */
async function startLoop(prepare?: (vswitch: FakeSwitch) => void) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  prepare?.(vswitch);
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('pa', A, 'ns/a')
    .addPort('pb', B, 'ns/b')
    .addPort('pc', C, 'ns/c');
  const router = new FilterRecordingRouter();
  const loop = new MulticastController({
    config: testDaemonConfig(),
    logger: new RecordingLogger(),
    vswitch,
    podDirectory,
    router,
    host: { interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined) },
    clock,
    stateStore: new MemoryStateStore(),
    onFatal: (error) => assert.fail(error),
    pid: 4242,
  });
  const events: DaemonEvent[] = [];
  loop.subscribe((event) => events.push(event));
  await loop.start();
  await settle();
  const report = async (
    ofport: number,
    host: string,
    type: Parameters<typeof v3Report>[1][number]['type'],
    sources: string[],
  ) => {
    vswitch.packetIn(v3Report(host, [{ type, group: GROUP, sources }]), ofport);
    await settle();
  };
  const stop = async () => {
    const stopping = loop.stop();
    clock.advance(2_000);
    await stopping;
  };
  return { loop, vswitch, router, events, report, stop };
}

const describeFilter = (filter: SourceFilter | undefined) =>
  filter === undefined ? 'any' : `${filter.mode} {${[...filter.sources].sort().join(',')}}`;

describe('daemon loop: per-source forwarding', () => {
  it('A IN{S1}, B IN{S2}, C EX{S1}: each split source gets its own entry, the router the merged filter', async () => {
    const t = await startLoop();
    await t.report(A, '10.1.0.2', 'MODE_IS_INCLUDE', [S1]);
    await t.report(B, '10.1.0.3', 'MODE_IS_INCLUDE', [S2]);
    await t.report(C, '10.1.0.4', 'MODE_IS_EXCLUDE', [S1]);
    assert.deepEqual(t.vswitch.everySource.get(GROUP), [GATEWAY, C], '(*,G): the EXCLUDE port and the gateway');
    assert.deepEqual(t.vswitch.sources.get(GROUP), [
      { source: S1, ports: [GATEWAY, A] },
      { source: S2, ports: [GATEWAY, B, C] },
    ]);
    assert.deepEqual(t.router.filters.map(describeFilter), [
      'include {10.9.0.1}',
      'include {10.9.0.1,10.9.0.2}',
      'exclude {}',
    ]);
    assert.deepEqual(
      t.router.localMembers.map((call) => call.present),
      [true, true, true],
    );
    const sync = t.events.filter((event) => event.type === 'sync').at(-1);
    assert.deepEqual(sync?.type === 'sync' ? sync.sources : undefined, [
      { source: S1, ports: [A, GATEWAY] },
      { source: S2, ports: [B, C, GATEWAY] },
    ]);
    await t.stop();
  });

  it('A adds S3: one more sync of the group, with (S3,G); B drops S2: (S2,G) goes, nobody else splits on it', async () => {
    const t = await startLoop();
    await t.report(A, '10.1.0.2', 'MODE_IS_INCLUDE', [S1]);
    await t.report(B, '10.1.0.3', 'MODE_IS_INCLUDE', [S2]);
    await t.report(C, '10.1.0.4', 'MODE_IS_EXCLUDE', [S1]);
    const before = t.vswitch.applied.length;
    await t.report(A, '10.1.0.2', 'ALLOW_NEW_SOURCES', [S3]);
    assert.equal(t.vswitch.applied.length, before + 1, 'a filter-only change syncs the group once');
    assert.deepEqual(t.vswitch.applied.at(-1), {
      group: GROUP,
      ports: [GATEWAY, C],
      outcome: 'updated',
      sources: [
        { source: S1, ports: [GATEWAY, A] },
        { source: S2, ports: [GATEWAY, B, C] },
        { source: S3, ports: [GATEWAY, A, C] },
      ],
    });
    await t.report(B, '10.1.0.3', 'BLOCK_OLD_SOURCES', [S2]);
    assert.deepEqual(t.vswitch.sources.get(GROUP), [
      { source: S1, ports: [GATEWAY, A] },
      { source: S3, ports: [GATEWAY, A, C] },
    ]);
    assert.deepEqual(t.vswitch.everySource.get(GROUP), [GATEWAY, C]);
    assert.equal(describeFilter(t.router.filters.at(-1)), 'exclude {}');
    // C leaves too: only INCLUDE ports remain, and every source they name goes to them alone.
    await t.report(C, '10.1.0.4', 'CHANGE_TO_INCLUDE_MODE', []);
    assert.deepEqual(t.vswitch.everySource.get(GROUP), [GATEWAY], '(*,G): the gateway only');
    assert.deepEqual(t.vswitch.sources.get(GROUP), [
      { source: S1, ports: [GATEWAY, A] },
      { source: S3, ports: [GATEWAY, A] },
    ]);
    assert.equal(describeFilter(t.router.filters.at(-1)), 'include {10.9.0.1,10.9.0.3}');
    await t.stop();
  });

  it('a restart without saved state: placeholders get the filters the (S,G) entries express, and the sync changes nothing', async () => {
    const t = await startLoop((vswitch) => {
      vswitch.preinstall(GROUP, [GATEWAY, C]);
      vswitch.preinstallSources(GROUP, [
        { source: S1, ports: [GATEWAY, A] },
        { source: S2, ports: [GATEWAY, B, C] },
      ]);
    });
    const [view] = t.loop.groups();
    assert.deepEqual(
      view?.members.map((member) => [member.port.ofport, member.mode, member.sources]),
      [
        [A, 'include', [S1]],
        [B, 'include', [S2]],
        [C, 'exclude', [S1]],
      ],
    );
    assert.deepEqual(t.vswitch.applied, [], 'the switch already forwards as the placeholders want');
    await t.stop();
  });
});

const SOURCE_PRIORITY = sourcePriorities(DEFAULT_PIPELINE_CONFIG.priorities).sourceGroup;
const GROUP_PRIORITY = DEFAULT_PIPELINE_CONFIG.priorities.group;

async function started(ovs = new ApplyingOpenFlow()) {
  const pipeline = ovsPipeline(DEFAULT_PIPELINE_CONFIG);
  const bridge = BridgeClient.wrap({ bridge: 'br-int', openflow: ovs, pipeline });
  await bridge.refresh();
  ops([], pipeline);
  return { ovs, bridge, pipeline };
}

/**
 * What a batch did, one word a message: `flow-<command>:<kind>[:S]` or `group-<command>:<S|*>`
 * (whose chain head it is). The head ids are taken once, up front, so that naming a deleted
 * one takes no slot again.
 */
function ops(messages: readonly OpenFlowMessage[] | undefined, pipeline: ReturnType<typeof ovsPipeline>): string[] {
  const heads =
    headsOf.get(pipeline) ??
    new Map([
      [pipeline.groupId(GROUP), '*'],
      ...[S1, S2, S3].map((source) => [pipeline.sourceGroupId(source, GROUP), source] as const),
    ]);
  headsOf.set(pipeline, heads);
  const owner = (groupId: number) => heads.get(groupId) ?? String(groupId);
  return (messages ?? []).map((message) => {
    if (message.type === 'GROUP_MOD') return `group-${message.command}:${owner(message.groupId)}`;
    if (message.type !== 'FLOW_MOD') return message.type;
    const field = message.match.find((oxm) => oxm.field === 'IPV4_SRC');
    const source = field !== undefined && 'value' in field ? field.value : undefined;
    const kind =
      message.priority === SOURCE_PRIORITY
        ? 'source'
        : message.priority === GROUP_PRIORITY
          ? 'group'
          : String(message.priority);
    return `flow-${message.command}:${kind}${source === undefined ? '' : `:${String(source)}`}`;
  });
}

const headsOf = new WeakMap<ReturnType<typeof ovsPipeline>, Map<number, string>>();

const wanted = (ports: number[], bySource: Array<{ source: typeof S1; ports: number[] }>) => ({
  group: GROUP,
  ports,
  bySource,
});

describe('BridgeClient: (S,G) entries', () => {
  it('one batch a group: the (S,G) entries first, then (*,G), then the stale (S,G) entries, flow before groups', async () => {
    const { ovs, bridge, pipeline } = await started();
    assert.equal(await bridge.syncForwarding(wanted([GATEWAY, C], [{ source: S1, ports: [GATEWAY, A] }])), 'added');
    assert.deepEqual(ops(ovs.batches[0], pipeline), [
      `group-0:${S1}`,
      `flow-0:source:${S1}`,
      'group-0:*',
      'flow-0:group',
    ]);
    assert.equal(
      await bridge.syncForwarding(
        wanted(
          [GATEWAY, C],
          [
            { source: S2, ports: [GATEWAY, B, C] },
            { source: S3, ports: [GATEWAY, A, C] },
          ],
        ),
      ),
      'updated',
    );
    assert.deepEqual(ops(ovs.batches[1], pipeline), [
      `group-0:${S2}`,
      `flow-0:source:${S2}`,
      `group-0:${S3}`,
      `flow-0:source:${S3}`,
      `flow-4:source:${S1}`,
      `group-2:${S1}`,
    ]);
    assert.equal(ovs.flows.filter((flow) => flow.priority === SOURCE_PRIORITY).length, 2);
  });

  it('a second sync of the same wanted sends nothing; a change of one source sends only its entry', async () => {
    const { ovs, bridge, pipeline } = await started();
    const split = wanted(
      [GATEWAY, C],
      [
        { source: S1, ports: [GATEWAY, A] },
        { source: S2, ports: [GATEWAY, B, C] },
      ],
    );
    await bridge.syncForwarding(split);
    const sent = ovs.batches.length;
    assert.equal(await bridge.syncForwarding(split), 'unchanged');
    assert.equal(ovs.batches.length, sent, 'nothing sent');
    await bridge.syncForwarding(
      wanted(
        [GATEWAY, C],
        [
          { source: S1, ports: [GATEWAY, A, B] },
          { source: S2, ports: [GATEWAY, B, C] },
        ],
      ),
    );
    assert.deepEqual(ops(ovs.batches.at(-1), pipeline), [`group-1:${S1}`]);
    assert.deepEqual(bridge.learnedGroups, [
      {
        group: GROUP,
        ports: [GATEWAY, C],
        sources: [
          { source: S1, ports: [GATEWAY, A, B] },
          { source: S2, ports: [GATEWAY, B, C] },
        ],
      },
    ]);
  });

  it('a new client reads the entries back and plans nothing for the same wanted (a restarted daemon)', async () => {
    const { ovs, bridge } = await started();
    const split = wanted(
      [GATEWAY, C],
      [
        { source: S1, ports: [GATEWAY, A] },
        { source: S2, ports: [GATEWAY, B, C] },
      ],
    );
    await bridge.syncForwarding(split);
    const restarted = await started(ovs);
    assert.deepEqual(restarted.bridge.installedGroups, [GROUP]);
    assert.deepEqual(restarted.bridge.learnedGroups, bridge.learnedGroups);
    const sent = ovs.batches.length;
    assert.equal(await restarted.bridge.syncForwarding(split), 'unchanged');
    assert.equal(ovs.batches.length, sent, 'nothing sent');
  });

  it('removing every source leaves the (*,G) entry alone; removing the group removes everything and frees the slots', async () => {
    const { ovs, bridge, pipeline } = await started();
    await bridge.syncForwarding(
      wanted(
        [GATEWAY, C],
        [
          { source: S1, ports: [GATEWAY, A] },
          { source: S2, ports: [GATEWAY, B, C] },
        ],
      ),
    );
    const s1Head = pipeline.sourceGroupId(S1, GROUP);
    assert.equal(await bridge.syncForwarding(wanted([GATEWAY, A, B, C], [])), 'updated');
    assert.deepEqual(ops(ovs.batches.at(-1), pipeline), [
      'group-1:*',
      `flow-4:source:${S1}`,
      `group-2:${S1}`,
      `flow-4:source:${S2}`,
      `group-2:${S2}`,
    ]);
    assert.deepEqual(bridge.learnedGroups, [{ group: GROUP, ports: [GATEWAY, A, B, C] }]);
    assert.equal(pipeline.groupIds.targetOf(s1Head), undefined, 'the slot of a removed (S,G) entry is free');
    await bridge.syncForwarding(wanted([GATEWAY], [{ source: S3, ports: [GATEWAY, A] }]));
    const s3Head = pipeline.sourceGroupId(S3, GROUP);
    assert.equal(await bridge.syncForwarding(wanted([], [])), 'removed');
    assert.deepEqual(ops(ovs.batches.at(-1), pipeline), [
      `flow-4:source:${S3}`,
      `group-2:${S3}`,
      'flow-4:group',
      'group-2:*',
    ]);
    assert.deepEqual(bridge.installedGroups, []);
    assert.deepEqual(
      ovs.flows.filter((flow) => flow.priority === SOURCE_PRIORITY || flow.priority === GROUP_PRIORITY),
      [],
    );
    assert.deepEqual(ovs.groups, []);
    assert.equal(pipeline.groupIds.targetOf(s3Head), undefined);
    assert.equal(await bridge.syncForwarding(wanted([], [])), 'absent');
  });

  it("a static (S,G) entry (install, reconcile) makes the whole group the operator's", async () => {
    const ovs = new ApplyingOpenFlow();
    const [declared] = planInstall(ovsPipeline(DEFAULT_PIPELINE_CONFIG), [{ group: GROUP, source: S1, ports: [A] }], {
      groups: [],
      otherFlows: [],
      strayGroups: [],
    });
    await ovs.batch(declared!.changes.map(changeMessage));
    const { bridge } = await started(ovs);
    assert.deepEqual(bridge.learnedGroups, []);
    const sent = ovs.batches.length;
    await assert.rejects(bridge.syncForwarding(wanted([GATEWAY, A], [])), /installed statically/);
    assert.equal(await bridge.syncForwarding(wanted([], [])), 'absent');
    assert.equal(ovs.batches.length, sent, 'nothing sent');
  });
});
