/**
 * The SSM range (RFC 4607, RFC 4604 §2.2.1): a group in it is joined only for named
 * sources. The rule on the membership table, in the daemon loop (counted, nothing
 * installed), and the setting that holds the range (flag, YAML, reload).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { Command } from 'commander';
import { addDaemonOptions } from '../../src/cli/options/daemon-options.js';
import { type DaemonConfig, type DaemonFlags, loadDaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import { membershipLimits } from '../../src/controllers/daemon/config/daemon-config.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { planReload } from '../../src/controllers/daemon/config/reload.js';
import {
  type MembershipLimitSettings,
  type MembershipRefusal,
  refusalOf,
  UNLIMITED,
} from '../../src/domain/membership/membership-limits.js';
import { type MembershipRecord, MembershipTable } from '../../src/domain/membership/membership-table.js';
import { ANY_SOURCE } from '../../src/domain/membership/source-filter.js';
import type { IpPrefix } from '../../src/domain/policy/ip-prefix.js';
import { UsageError } from '../../src/errors.js';
import { groupAddress, hostAddress, sourceAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

const SSM_DEFAULT: readonly IpPrefix[] = [{ family: 'ipv4', address: '232.0.0.0', length: 8 }];
const SSM_GROUP = groupAddress('232.1.1.1');
const ASM_GROUP = groupAddress('239.1.1.1');
const H5 = hostAddress('10.1.0.5');
const S1 = sourceAddress('10.9.0.1');
const S2 = sourceAddress('10.9.0.2');

function ssmTable(limits: MembershipLimitSettings = { ...UNLIMITED, ssmRange: SSM_DEFAULT }) {
  const clock = { t: 1_000, now: () => clock.t };
  const refusals: MembershipRefusal[] = [];
  const timing = { groupMembershipIntervalMs: 260_000, lastMemberQueryTimeMs: 2_000 };
  const table = new MembershipTable({
    clock,
    timing,
    fastLeave: true,
    limits,
    onRefusal: (refusal) => refusals.push(refusal),
  });
  const record = (type: MembershipRecord['type'], group = SSM_GROUP, sources = [S1]) =>
    table.record(5, H5, { type, group, sources });
  return { table, refusals, clock, record };
}

describe('the SSM rule: refusalOf', () => {
  const base = {
    limits: { ...UNLIMITED, ssmRange: SSM_DEFAULT },
    group: SSM_GROUP,
    port: 5,
    host: H5,
    members: undefined,
    groupCount: 0,
    portGroupCount: 0,
  };

  it('refuses any source in the range, before the counts; admits named sources and groups outside it', () => {
    assert.deepEqual(refusalOf({ ...base, filter: ANY_SOURCE }), { reason: 'ssm' });
    assert.deepEqual(refusalOf({ ...base, filter: { mode: 'exclude', sources: new Set([S1]) } }), { reason: 'ssm' });
    // A group the node has no room for is still refused as ssm: what it asks for is refused first.
    assert.deepEqual(
      refusalOf({ ...base, limits: { ...base.limits, maxGroups: 1 }, groupCount: 1, filter: ANY_SOURCE }),
      { reason: 'ssm' },
    );
    assert.equal(refusalOf({ ...base, filter: { mode: 'include', sources: new Set([S1]) } }), undefined);
    assert.equal(refusalOf({ ...base, group: ASM_GROUP, filter: ANY_SOURCE }), undefined);
    assert.equal(refusalOf({ ...base, group: groupAddress('232.255.255.255'), filter: ANY_SOURCE })?.reason, 'ssm');
    assert.equal(refusalOf({ ...base, group: groupAddress('233.0.0.0'), filter: ANY_SOURCE }), undefined);
  });

  it('no range (absent or empty) refuses nothing', () => {
    assert.equal(refusalOf({ ...base, limits: UNLIMITED, filter: ANY_SOURCE }), undefined);
    assert.equal(refusalOf({ ...base, limits: { ...UNLIMITED, ssmRange: [] }, filter: ANY_SOURCE }), undefined);
  });
});

describe('the SSM rule on the membership table', () => {
  it('a v2 report, IS_EX {} and TO_EX {S} to 232.1.1.1 are refused as ssm and install nothing', () => {
    const { table, refusals, record } = ssmTable();
    assert.deepEqual(table.report(5, H5, SSM_GROUP, 2), []);
    assert.deepEqual(record('MODE_IS_EXCLUDE', SSM_GROUP, []), []);
    assert.deepEqual(record('CHANGE_TO_EXCLUDE_MODE', SSM_GROUP, [S1]), []);
    assert.deepEqual(table.snapshot(), []);
    assert.equal(table.groupCount, 0);
    assert.deepEqual(refusals, [
      { reason: 'ssm', limit: undefined, group: SSM_GROUP, port: 5, host: H5 },
      { reason: 'ssm', limit: undefined, group: SSM_GROUP, port: 5, host: H5 },
      { reason: 'ssm', limit: undefined, group: SSM_GROUP, port: 5, host: H5 },
    ]);
  });

  it('IS_IN {S} and ALLOW {S} to 232.1.1.1 are admitted, and BLOCK works on the INCLUDE member', () => {
    const { table, refusals, record } = ssmTable();
    assert.deepEqual(record('MODE_IS_INCLUDE'), [{ kind: 'members', group: SSM_GROUP, ports: [5] }]);
    const other = groupAddress('232.1.1.2');
    assert.deepEqual(record('ALLOW_NEW_SOURCES', other), [{ kind: 'members', group: other, ports: [5] }]);
    record('ALLOW_NEW_SOURCES', other, [S2]);
    record('BLOCK_OLD_SOURCES', other, [S1]);
    assert.deepEqual(table.snapshot().find((group) => group.group === other)?.members[0]?.filter, {
      mode: 'include',
      sources: [S2],
    });
    // A change of filter alone changes what is forwarded: the group is synced again.
    assert.deepEqual(record('CHANGE_TO_INCLUDE_MODE', other, [S1]), [{ kind: 'members', group: other, ports: [5] }]);
    assert.deepEqual(refusals, []);
  });

  it('an EXCLUDE record from an INCLUDE member is refused: the member keeps its filter and its timer', () => {
    const { table, refusals, clock, record } = ssmTable();
    record('MODE_IS_INCLUDE');
    const joinedAt = clock.t;
    clock.t += 100_000;
    assert.deepEqual(record('MODE_IS_EXCLUDE', SSM_GROUP, []), []);
    assert.deepEqual(table.report(5, H5, SSM_GROUP, 2), []);
    assert.deepEqual(
      refusals.map((refusal) => refusal.reason),
      ['ssm', 'ssm'],
    );
    const [member] = table.snapshot()[0]!.members;
    assert.deepEqual(member!.filter, { mode: 'include', sources: [S1] });
    // The refused record is ignored (RFC 4604 §2.2.1): it does not keep the member from expiring.
    assert.equal(member!.lastReportAt, joinedAt);
    assert.equal(member!.compatibility, 3, 'a refused v2 report puts the port in no v2 compatibility mode');
  });

  it('a group outside the range is unaffected; "" turns the rule off; a custom range replaces the default', () => {
    const outside = ssmTable();
    assert.deepEqual(outside.table.report(5, H5, ASM_GROUP, 2), [{ kind: 'members', group: ASM_GROUP, ports: [5] }]);
    assert.deepEqual(outside.record('CHANGE_TO_EXCLUDE_MODE', groupAddress('239.1.1.2'), []), [
      { kind: 'members', group: groupAddress('239.1.1.2'), ports: [5] },
    ]);
    assert.deepEqual(outside.refusals, []);

    const off = ssmTable({ ...UNLIMITED, ssmRange: [] });
    assert.deepEqual(off.table.report(5, H5, SSM_GROUP, 2), [{ kind: 'members', group: SSM_GROUP, ports: [5] }]);
    assert.deepEqual(off.refusals, []);

    const custom = ssmTable({ ...UNLIMITED, ssmRange: [{ family: 'ipv4', address: '239.192.0.0', length: 16 }] });
    assert.deepEqual(custom.table.report(5, H5, SSM_GROUP, 2), [{ kind: 'members', group: SSM_GROUP, ports: [5] }]);
    assert.deepEqual(custom.table.report(5, H5, groupAddress('239.192.3.4'), 2), []);
    assert.deepEqual(custom.record('MODE_IS_INCLUDE', groupAddress('239.192.3.4')), [
      { kind: 'members', group: groupAddress('239.192.3.4'), ports: [5] },
    ]);
    assert.deepEqual(
      custom.refusals.map((refusal) => [refusal.reason, refusal.group]),
      [['ssm', '239.192.3.4']],
    );
  });

  it('a reload that sets the range holds for records from then on; existing members stay', () => {
    const { table, refusals } = ssmTable({ ...UNLIMITED, ssmRange: [] });
    table.report(5, H5, SSM_GROUP, 2);
    table.reconfigure({ timing: table.timings, fastLeave: true, limits: { ...UNLIMITED, ssmRange: SSM_DEFAULT } });
    assert.deepEqual(table.portsOf(SSM_GROUP), [5]);
    assert.deepEqual(table.report(7, hostAddress('10.1.0.7'), SSM_GROUP, 2), []);
    assert.equal(refusals[0]?.reason, 'ssm');
  });
});

describe('the SSM rule in the daemon loop', () => {
  const GATEWAY = 1;
  const P1 = 2;

  async function startLoop(overrides: Partial<DaemonConfig> = {}) {
    const clock = new FakeClock();
    const vswitch = new FakeSwitch();
    const podDirectory = new FakePodDirectory().addPort('gw0', GATEWAY).addPort('p1', P1, 'shop/web', '10.1.0.2');
    const logger = new RecordingLogger();
    const loop = new MulticastController({
      config: testDaemonConfig(overrides),
      logger,
      vswitch,
      podDirectory,
      host: { interfaceIPv4: () => undefined },
      clock,
      pid: 4242,
    });
    await loop.start();
    await settle();
    const packetIn = async (frame: Uint8Array) => {
      vswitch.packetIn(frame, P1);
      await settle();
    };
    const stop = async () => {
      const stopping = loop.stop();
      clock.advance(2_000);
      await stopping;
    };
    return { loop, vswitch, logger, packetIn, stop };
  }

  it('a plain join of 232.1.1.1 installs nothing and is counted as ssm (status, metrics, one warning); (S, 232.1.1.2) is installed', async () => {
    const t = await startLoop();
    const metrics = new DaemonMetrics(t.loop);
    await t.packetIn(v3Report('10.1.0.2', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '232.1.1.1' }]));
    await t.packetIn(v2Report('10.1.0.2', '232.1.1.1'));
    assert.equal(t.vswitch.groups.has(SSM_GROUP), false, 'no OVS group for the refused join');
    const refused = t.loop.status().igmpRefused!;
    assert.equal(refused.total.ssm, 2);
    assert.equal(refused.byPort[0]?.counts.ssm, 2);
    assert.match(await metrics.registry.metrics(), /^mcastctl_igmp_refused_total\{reason="ssm"\} 2$/m);
    const warnings = t.logger.lines.filter((line) => line.level === 'warn' && line.message.includes('SSM range'));
    assert.equal(warnings.length, 1, 'one warning for the port, the second held back');
    await t.packetIn(v3Report('10.1.0.2', [{ type: 'ALLOW_NEW_SOURCES', group: '232.1.1.2', sources: ['10.9.0.1'] }]));
    assert.equal(t.vswitch.groups.has(groupAddress('232.1.1.2')), true, 'the source-specific join is installed');
    assert.equal(t.loop.status().igmpRefused!.total.ssm, 2);
    await t.stop();
  });

  it('with ssmRange off, a plain join of 232.1.1.1 is installed', async () => {
    const t = await startLoop({ ssmRange: [] });
    await t.packetIn(v2Report('10.1.0.2', '232.1.1.1'));
    assert.equal(t.vswitch.groups.has(SSM_GROUP), true);
    assert.equal(t.loop.status().igmpRefused!.total.ssm, 0);
    await t.stop();
  });
});

describe('the ssmRange setting', () => {
  const directory = mkdtempSync(join(tmpdir(), 'mcastctl-ssm-range-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  let files = 0;
  const loadFile = (text: string, flags: DaemonFlags = {}) => {
    const path = join(directory, `daemon-${++files}.yaml`);
    writeFileSync(path, text);
    return loadDaemonConfig({ ...flags, config: path }, {});
  };
  const commandFlags = (argv: string[]): DaemonFlags => {
    const command = addDaemonOptions(
      new Command('daemon').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} }),
    );
    command.parse(argv, { from: 'user' });
    return command.opts<DaemonFlags>();
  };
  async function rejectsUsage(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof UsageError, String(error));
      assert.match(error.message, pattern);
      return true;
    });
  }

  it('defaults to 232.0.0.0/8, and goes into the membership limits', async () => {
    const config = await loadDaemonConfig({}, {});
    assert.deepEqual(config.ssmRange, SSM_DEFAULT);
    assert.deepEqual(membershipLimits(config).ssmRange, SSM_DEFAULT);
  });

  it('takes a comma-separated flag, a YAML list or string; "" turns it off', async () => {
    const two = [
      { family: 'ipv4', address: '232.0.0.0', length: 8 },
      { family: 'ipv4', address: '239.192.0.0', length: 14 },
    ];
    assert.deepEqual(
      (await loadDaemonConfig(commandFlags(['--ssm-range', '232.0.0.0/8, 239.192.0.0/14']), {})).ssmRange,
      two,
    );
    assert.deepEqual((await loadDaemonConfig(commandFlags(['--ssm-range', '']), {})).ssmRange, []);
    assert.deepEqual((await loadFile('ssmRange:\n  - 232.0.0.0/8\n  - 239.192.0.0/14\n')).ssmRange, two);
    assert.deepEqual((await loadFile('ssmRange: "232.1.1.1"\n')).ssmRange, [
      { family: 'ipv4', address: '232.1.1.1', length: 32 },
    ]);
    assert.deepEqual((await loadFile('ssmRange: ""\n')).ssmRange, []);
    assert.deepEqual((await loadFile('ssmRange: []\n')).ssmRange, []);
    // The flag wins over the file.
    assert.deepEqual(
      (await loadFile('ssmRange: ""\n', commandFlags(['--ssm-range', '232.0.0.0/8']))).ssmRange,
      SSM_DEFAULT,
    );
  });

  it('refuses a block outside 224.0.0.0/4, host bits, repeats and non-blocks, naming the flag or the line', async () => {
    await rejectsUsage(
      loadDaemonConfig(commandFlags(['--ssm-range', '10.0.0.0/8']), {}),
      /^--ssm-range: entry 1: "10\.0\.0\.0\/8" is not a block of IPv4 multicast groups \(inside 224\.0\.0\.0\/4/,
    );
    await rejectsUsage(
      loadDaemonConfig(commandFlags(['--ssm-range', '232.0.0.0/8,224.0.0.0/3']), {}),
      /^--ssm-range: entry 2: "224\.0\.0\.0\/3" is not a block of IPv4 multicast/,
    );
    await rejectsUsage(
      loadDaemonConfig(commandFlags(['--ssm-range', '232.1.0.0/8']), {}),
      /^--ssm-range: entry 1: "232\.1\.0\.0\/8": host bits are set: the block of 232\.1\.0\.0\/8 is 232\.0\.0\.0\/8/,
    );
    await rejectsUsage(
      loadDaemonConfig(commandFlags(['--ssm-range', 'ssm']), {}),
      /^--ssm-range: entry 1: "ssm": not an address or CIDR block such as 232\.0\.0\.0\/8/,
    );
    await rejectsUsage(
      loadDaemonConfig(commandFlags(['--ssm-range', '232.0.0.0/8,232.0.0.0/8']), {}),
      /^--ssm-range: 232\.0\.0\.0\/8 is listed twice/,
    );
    await rejectsUsage(
      loadFile('queryInterval: 125s\nssmRange:\n  - 232.0.0.0/8\n  - 192.168.0.0/16\n'),
      / line 4: ssmRange: "192\.168\.0\.0\/16" is not a block of IPv4 multicast groups/,
    );
    await rejectsUsage(
      loadFile('ssmRange:\n  - 232\n'),
      / line 2: ssmRange: 232 is not a CIDR block such as 232\.0\.0\.0\/8/,
    );
    await rejectsUsage(loadFile('ssmRange: {a: 1}\n'), /ssmRange: a mapping is not a list/);
  });

  it('a reload applies a changed range', async () => {
    const running = await loadDaemonConfig({}, {});
    const next = await loadDaemonConfig(commandFlags(['--ssm-range', '']), {});
    const plan = planReload(running, next);
    assert.deepEqual(
      plan.applied.map((change) => change.key),
      ['ssmRange'],
    );
    assert.deepEqual(plan.config.ssmRange, []);
    assert.deepEqual(plan.needRestart, []);
  });
});
