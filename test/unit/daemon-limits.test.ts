/**
 * The daemon loop against a hostile pod, on the shared fakes: the membership limits
 * (groups per port, sources per group, groups per node) refuse only the new join, and
 * reports from an address that is not the pod's are ignored; both are counted (status,
 * metrics) and logged at most once per interval.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import type { MemoryPort } from '../../src/controllers/daemon/loop/ports.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeMemory } from '../fakes/fake-memory.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { igmpFrame, v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';
import { groupAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';

const GATEWAY = 1;
const P1 = 2;
const P2 = 3;
const P3 = 4;
const group = (n: number) => groupAddress(`239.1.1.${n}`);

/** The gateway on 1; pods p1 (10.1.0.2) on 2, p2 (10.1.0.3/24 and an IPv6 address) on 3, p3 (no ip-address) on 4. */
async function startLoop(overrides: Partial<DaemonConfig> = {}, memory?: MemoryPort) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory().addPort('gw0', GATEWAY).addPort('p1', P1, 'shop/web', '10.1.0.2');
  podDirectory.addPort('p2', P2, 'shop/db', '10.1.0.3/24,fd00::3').addPort('p3', P3, 'cache');
  const logger = new RecordingLogger();
  const loop = new MulticastController({
    config: testDaemonConfig(overrides),
    logger,
    vswitch,
    podDirectory,
    host: { interfaceIPv4: () => undefined },
    clock,
    pid: 4242,
    ...(memory === undefined ? {} : { memory }),
  });
  await loop.start();
  await settle();
  const packetIn = async (frame: Uint8Array, ofport: number) => {
    vswitch.packetIn(frame, ofport);
    await settle();
  };
  const warnings = (text: string) =>
    logger.lines.filter((line) => line.level === 'warn' && line.message.includes(text));
  const stop = async () => {
    const stopping = loop.stop();
    clock.advance(2_000);
    await stopping;
  };
  return { loop, clock, vswitch, podDirectory, logger, packetIn, warnings, stop };
}

const refused = (loop: MulticastController) => loop.status().igmpRefused!;

describe('daemon limits: groups per port', () => {
  it('the (N+1)th group of a port is refused and counted; the same join from another port works; OVS sees nothing of it', async () => {
    const t = await startLoop({ maxGroupsPerPort: 2 });
    await t.packetIn(v2Report('10.1.0.2', group(1)), P1);
    await t.packetIn(v2Report('10.1.0.2', group(2)), P1);
    const applied = t.vswitch.applied.length;
    await t.packetIn(v2Report('10.1.0.2', group(3)), P1);
    assert.equal(t.vswitch.groups.has(group(3)), false, 'no OVS group for the refused join');
    assert.equal(t.vswitch.applied.length, applied, 'the refused join writes nothing to the switch');
    assert.equal(refused(t.loop).total['port-groups'], 1);
    assert.deepEqual(refused(t.loop).byPort, [
      {
        port: { ofport: P1, name: 'p1', pod: 'shop/web' },
        counts: {
          'port-groups': 1,
          'group-sources': 0,
          'node-groups': 0,
          ssm: 0,
          policy: 0,
          'off-link': 0,
          spoofed: 0,
          'port-rate': 0,
        },
      },
    ]);
    // A refresh of a group it is in is no new join.
    await t.packetIn(v2Report('10.1.0.2', group(1)), P1);
    assert.equal(refused(t.loop).total['port-groups'], 1);
    // Another port is untouched by p1's limit.
    await t.packetIn(v2Report('10.1.0.3', group(3)), P2);
    assert.deepEqual(t.vswitch.groups.get(group(3)), [GATEWAY, P2]);
    assert.deepEqual(t.vswitch.groups.get(group(1)), [GATEWAY, P1], 'existing members stay');
    await t.stop();
  });

  it('a flood of refused joins is one warning per interval, the next one saying how many were held back', async () => {
    const t = await startLoop({ maxGroupsPerPort: 1 });
    await t.packetIn(v2Report('10.1.0.2', group(1)), P1);
    for (let n = 2; n <= 6; n++) await t.packetIn(v2Report('10.1.0.2', group(n)), P1);
    assert.equal(refused(t.loop).total['port-groups'], 5);
    const [first, ...rest] = t.warnings('maxGroupsPerPort');
    assert.equal(rest.length, 0);
    assert.equal(first!.fields.port, 'p1');
    assert.equal(first!.fields.group, group(2));
    assert.equal(first!.fields.suppressed, undefined);
    t.clock.advance(10_000);
    await t.packetIn(v2Report('10.1.0.2', group(7)), P1);
    const lines = t.warnings('maxGroupsPerPort');
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.fields.suppressed, 4);
    assert.equal(lines[1]!.fields.refusedOnPort, 6);
    await t.stop();
  });
});

describe('daemon limits: sources per group', () => {
  it("a new source past the limit of a port's filter is refused; the group keeps forwarding; another port has its own", async () => {
    const t = await startLoop({ maxSourcesPerGroup: 2 });
    await t.packetIn(
      v3Report('10.1.0.2', [{ type: 'ALLOW_NEW_SOURCES', group: group(1), sources: ['10.9.0.1', '10.9.0.2'] }]),
      P1,
    );
    const applied = t.vswitch.applied.length;
    await t.packetIn(v3Report('10.1.0.2', [{ type: 'ALLOW_NEW_SOURCES', group: group(1), sources: ['10.9.0.3'] }]), P1);
    assert.equal(refused(t.loop).total['group-sources'], 1);
    assert.equal(t.vswitch.applied.length, applied, 'nothing written to the switch');
    const [view] = t.loop.groups();
    assert.deepEqual(
      view!.members.map((member) => member.sources),
      [['10.9.0.1', '10.9.0.2']],
    );
    // The same report again (no new source) is a refresh.
    await t.packetIn(
      v3Report('10.1.0.2', [{ type: 'MODE_IS_INCLUDE', group: group(1), sources: ['10.9.0.1', '10.9.0.2'] }]),
      P1,
    );
    assert.equal(refused(t.loop).total['group-sources'], 1);
    await t.packetIn(
      v3Report('10.1.0.3', [{ type: 'ALLOW_NEW_SOURCES', group: group(1), sources: ['10.9.0.3', '10.9.0.4'] }]),
      P2,
    );
    assert.equal(refused(t.loop).total['group-sources'], 1);
    assert.deepEqual(t.vswitch.groups.get(group(1)), [GATEWAY, P1, P2]);
    await t.stop();
  });
});

describe('daemon limits: groups per node', () => {
  it('a new group past the node limit is refused from every port; joining a group that exists works; a reload lowers the limit without evicting', async () => {
    const t = await startLoop({ maxGroups: 2 });
    await t.packetIn(v2Report('10.1.0.2', group(1)), P1);
    await t.packetIn(v2Report('10.1.0.3', group(2)), P2);
    const applied = t.vswitch.applied.length;
    await t.packetIn(v2Report('10.1.0.2', group(3)), P1);
    await t.packetIn(v2Report('10.1.0.9', group(3)), P3);
    assert.equal(refused(t.loop).total['node-groups'], 2);
    assert.equal(t.vswitch.groups.has(group(3)), false);
    assert.equal(t.vswitch.applied.length, applied);
    await t.packetIn(v2Report('10.1.0.9', group(1)), P3);
    assert.deepEqual(t.vswitch.groups.get(group(1)), [GATEWAY, P1, P3]);
    t.loop.reconfigure({ ...t.loop.configuration, maxGroups: 1 });
    assert.equal(t.loop.status().groups, 2, 'nothing evicted');
    t.loop.reconfigure({ ...t.loop.configuration, maxGroups: 3 });
    await t.packetIn(v2Report('10.1.0.2', group(3)), P1);
    assert.deepEqual(t.vswitch.groups.get(group(3)), [GATEWAY, P1]);
    await t.stop();
  });
});

describe('daemon limits: the per-port IGMP budget', () => {
  it('a port past its burst has its messages dropped unread and counted, while another port is handled; the budget refills at its rate', async () => {
    const t = await startLoop({ igmpRatePerPort: 10, igmpBurstPerPort: 5 });
    for (let n = 1; n <= 8; n++) await t.packetIn(v2Report('10.1.0.2', group(n)), P1);
    assert.equal(refused(t.loop).total['port-rate'], 3);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => t.vswitch.groups.has(group(n))),
      [true, true, true, true, true, false],
    );
    assert.equal(t.loop.status().counters.igmpMessages.v2_report, 5, 'the dropped ones were not decoded');
    await t.packetIn(v2Report('10.1.0.3', group(6)), P2);
    assert.deepEqual(t.vswitch.groups.get(group(6)), [GATEWAY, P2], 'another port is not held up');
    t.clock.advance(300); // 10 a second: 3 more
    for (let n = 6; n <= 9; n++) await t.packetIn(v2Report('10.1.0.2', group(n)), P1);
    assert.equal(refused(t.loop).total['port-rate'], 4);
    assert.deepEqual(t.vswitch.groups.get(group(8)), [GATEWAY, P1]);
    assert.equal(t.vswitch.groups.has(group(9)), false);
    assert.equal(t.warnings('igmpRatePerPort').length, 1, 'logged once in the interval');
    await t.stop();
  });
});

describe('daemon limits: spoofed reports', () => {
  it("a report from an address not the pod's is counted and ignored; its own address, 0.0.0.0, and a port without ip-address pass", async () => {
    const t = await startLoop();
    await t.packetIn(v2Report('10.1.0.99', group(1)), P1);
    await t.packetIn(v3Report('10.1.0.2', [{ type: 'MODE_IS_EXCLUDE', group: group(2) }]), P1);
    await t.packetIn(v2Report('0.0.0.0', group(3)), P1);
    await t.packetIn(v2Report('10.1.0.3', group(4)), P2);
    await t.packetIn(v2Report('10.1.0.2', group(5)), P2);
    await t.packetIn(v2Report('10.7.7.7', group(6)), P3);
    assert.equal(t.vswitch.groups.has(group(1)), false, 'the spoofed report joins nothing');
    assert.equal(t.vswitch.groups.has(group(5)), false, "p1's address is not p2's");
    for (const n of [2, 3, 4, 6]) assert.ok(t.vswitch.groups.has(group(n)), `group ${n}`);
    assert.equal(refused(t.loop).total.spoofed, 2);
    assert.deepEqual(
      refused(t.loop).byPort.map(({ port, counts }) => [port.name, counts.spoofed]),
      [
        ['p1', 1],
        ['p2', 1],
      ],
    );
    const [line] = t.warnings('not the pod');
    assert.deepEqual([line!.fields.port, line!.fields.source, line!.fields.addresses], ['p1', '10.1.0.99', '10.1.0.2']);
    // A port that goes away takes its counts along; the totals stay.
    t.podDirectory.removePort('p1');
    await settle();
    assert.deepEqual(
      refused(t.loop).byPort.map(({ port }) => port.name),
      ['p2'],
    );
    assert.equal(refused(t.loop).total.spoofed, 2);
    await t.stop();
  });

  it('the metrics count refusals by reason', async () => {
    const t = await startLoop({ maxGroupsPerPort: 1 });
    const metrics = new DaemonMetrics(t.loop);
    assert.match(await metrics.registry.metrics(), /^mcastctl_igmp_refused_total\{reason="spoofed"\} 0$/m);
    await t.packetIn(v2Report('10.1.0.99', group(1)), P1);
    await t.packetIn(v2Report('10.1.0.2', group(1)), P1);
    await t.packetIn(v2Report('10.1.0.2', group(2)), P1);
    const text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_igmp_refused_total\{reason="spoofed"\} 1$/m);
    assert.match(text, /^mcastctl_igmp_refused_total\{reason="port-groups"\} 1$/m);
    assert.match(text, /^mcastctl_igmp_refused_total\{reason="node-groups"\} 0$/m);
    assert.match(text, /^# TYPE mcastctl_igmp_refused_total counter$/m);
    await t.stop();
  });
});

describe('daemon: IGMP headers no host on the link sends', () => {
  const v3Join = (ttl: number, routerAlert: boolean) =>
    igmpFrame(
      { kind: 'report', version: 3, records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.9', sources: [] }] },
      { src: '10.1.0.2', dst: '224.0.0.22', ttl, routerAlert },
    );
  it('ignores a TTL other than 1, and an IGMPv3 report without Router Alert; keeps an IGMPv2 report without it', async () => {
    const t = await startLoop();
    await t.packetIn(v3Join(64, true), P1);
    await t.packetIn(v3Join(1, false), P1);
    assert.equal(t.loop.groups().length, 0, 'neither joins');
    assert.equal(refused(t.loop).total['off-link'], 2);
    assert.equal(t.warnings('not from a host on the link').length, 1, 'one warning an interval');
    await t.packetIn(
      igmpFrame(
        { kind: 'report', version: 2, group: '239.1.1.8' },
        { src: '10.1.0.2', dst: '239.1.1.8', routerAlert: false },
      ),
      P1,
    );
    await t.packetIn(v3Join(1, true), P1);
    assert.deepEqual(
      t.loop
        .groups()
        .map((view) => view.group)
        .sort(),
      ['239.1.1.8', '239.1.1.9'],
    );
    assert.equal(refused(t.loop).total['off-link'], 2);
    await t.stop();
  });
});

describe('daemon: memory after a burst', () => {
  it("gives memory back once a flood's thousand groups have expired and no more come, not for a few", async () => {
    const memory = new FakeMemory();
    const t = await startLoop({}, memory);
    const join = (from: number, count: number) =>
      v3Report(
        '10.1.0.2',
        Array.from({ length: count }, (_, index) => ({
          type: 'CHANGE_TO_EXCLUDE_MODE' as const,
          group: `239.9.${(from + index) >> 8}.${(from + index) & 0xff}`,
        })),
      );
    await t.packetIn(join(0, 10), P1);
    t.clock.advance(261_000); // past the Group Membership Interval: the ten expire
    await settle();
    t.clock.advance(10_000);
    assert.equal(t.loop.groups().length, 0);
    assert.equal(memory.releases, 0, 'ten groups are not worth a full collection');
    for (let from = 0; from < 1000; from += 100) await t.packetIn(join(from, 100), P1);
    assert.equal(t.loop.status().groups, 1000);
    t.clock.advance(5_000);
    assert.equal(memory.releases, 1, 'a thousand joins, then quiet');
    t.clock.advance(256_000);
    await settle();
    assert.equal(t.loop.status().groups, 0);
    assert.equal(memory.releases, 1, 'not while they may still be expiring');
    t.clock.advance(5_000);
    assert.equal(memory.releases, 2);
    t.clock.advance(60_000);
    assert.equal(memory.releases, 2, 'once');
    await t.stop();
  });

  it('waits for a burst of joins to stop before it gives memory back', async () => {
    const memory = new FakeMemory();
    const t = await startLoop({ maxGroupsPerPort: 2000 }, memory);
    const join = (from: number) =>
      v3Report(
        '10.1.0.2',
        Array.from({ length: 100 }, (_, index) => ({
          type: 'CHANGE_TO_EXCLUDE_MODE' as const,
          group: `239.8.${(from + index) >> 8}.${(from + index) & 0xff}`,
        })),
      );
    for (let from = 0; from < 1500; from += 100) {
      await t.packetIn(join(from), P1);
      t.clock.advance(1_000);
    }
    assert.equal(memory.releases, 0, 'not while joins keep coming');
    // Reports that change nothing (the same groups again) are not changes.
    await t.packetIn(join(0), P1);
    t.clock.advance(4_000);
    assert.equal(memory.releases, 1);
    await t.stop();
  });

  it('gives memory back after a few changes only once the process has grown by 10 MiB since the last time', async () => {
    const memory = new FakeMemory();
    const t = await startLoop({}, memory);
    const join = (n: number) =>
      v3Report('10.1.0.2', [{ type: 'CHANGE_TO_EXCLUDE_MODE' as const, group: `239.7.0.${n}` }]);
    await t.packetIn(join(1), P1);
    memory.resident += 9 * 2 ** 20;
    t.clock.advance(5_000);
    assert.equal(memory.releases, 0, 'one join, 9 MiB more');
    await t.packetIn(join(2), P1);
    memory.resident += 2 * 2 ** 20;
    t.clock.advance(5_000);
    assert.equal(memory.releases, 1, 'two joins, 11 MiB more than at the start');
    memory.resident -= 20 * 2 ** 20; // what the release gave back
    await t.packetIn(join(3), P1);
    memory.resident += 9 * 2 ** 20;
    t.clock.advance(5_000);
    assert.equal(memory.releases, 1, 'measured from after the release');
    t.clock.advance(60_000);
    assert.equal(memory.releases, 1, 'nothing changed since: nothing to give back');
    await t.stop();
  });
});
