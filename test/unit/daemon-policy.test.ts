/**
 * The daemon loop's per-port entries and group policy, on the shared fakes: every pod
 * port gets its IGMP meter (and loses it with the port, and after a switch restart gets
 * it back), the meters' drops reach status and metrics; joins the policy denies are
 * refused and counted, sending it denies becomes the port's drop ranges, a new policy
 * removes the members it denies and changes only the ports whose ranges differ, and the
 * policy's extra source addresses widen the spoof check.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { parseGroupPolicy } from '../../src/domain/policy/policy-file.js';
import type { GroupPolicy } from '../../src/domain/policy/group-policy.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { groupAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { decodeQuery, v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';

const GATEWAY = 1;
const WEB = 2;
const DB = 3;

const POLICY = parseGroupPolicy(
  [
    'rules:',
    '  - {action: allow, pods: shop/web, groups: 239.2.0.0/16}',
    '  - {action: deny, pods: "shop/*", groups: 239.0.0.0/8}',
    '  - {action: deny, pods: shop/db, groups: 238.1.0.0/16, directions: send}',
    'sourceAddresses:',
    '  - {pods: shop/db, addresses: [10.9.0.0/24]}',
  ].join('\n'),
  'policy.yaml',
);

async function startLoop(options: { config?: Partial<DaemonConfig>; policy?: GroupPolicy } = {}) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('web', WEB, 'shop/web', '10.1.0.2')
    .addPort('db', DB, 'shop/db', '10.1.0.3');
  const logger = new RecordingLogger();
  const loop = new MulticastController({
    config: testDaemonConfig(options.config),
    logger,
    vswitch,
    podDirectory,
    host: { interfaceIPv4: () => undefined },
    clock,
    pid: 4242,
    ...(options.policy === undefined ? {} : { policy: { policy: options.policy, file: 'policy.yaml' } }),
  });
  await loop.start();
  await settle();
  const packetIn = async (frame: Uint8Array, ofport: number) => {
    vswitch.packetIn(frame, ofport);
    await settle();
  };
  const stop = async () => {
    const stopping = loop.stop();
    clock.advance(2_000);
    await stopping;
  };
  return { loop, clock, vswitch, podDirectory, packetIn, stop, logger };
}

const members = (loop: MulticastController, group: string) =>
  loop
    .groups()
    .find((view) => view.group === group)
    ?.members.map((member) => member.port.ofport) ?? [];

describe('daemon: per-port IGMP meters', () => {
  it('meters every pod port (not the gateway) at the configured rate, and changes them on a reload', async () => {
    const t = await startLoop({ config: { igmpRatePerPort: 50, igmpBurstPerPort: 80 } });
    assert.deepEqual([...t.vswitch.ports.keys()].sort(), [WEB, DB]);
    assert.deepEqual(t.vswitch.ports.get(WEB), { deniedSend: [], meter: { rate: 50, burst: 80 } });
    assert.equal(t.loop.status().igmpMeter?.meteredPorts, 2);
    t.loop.reconfigure({ ...t.loop.configuration, igmpRatePerPort: 20 });
    await t.loop.whenIdle();
    assert.deepEqual(t.vswitch.ports.get(DB)?.meter, { rate: 20, burst: 80 });
    t.loop.reconfigure({ ...t.loop.configuration, igmpMeter: false });
    await t.loop.whenIdle();
    assert.equal(t.vswitch.ports.size, 0, 'meters off: no per-port entries at all');
    assert.equal(t.loop.status().igmpMeter?.enabled, false);
    await t.stop();
  });

  it('a new pod port gets its meter, a removed one loses it, and a restarted switch gets them all back', async () => {
    const t = await startLoop();
    t.podDirectory.addPort('cache', 4, 'shop/cache', '10.1.0.4');
    await t.loop.whenIdle();
    assert.ok(t.vswitch.ports.has(4));
    t.podDirectory.removePort('web');
    await t.loop.whenIdle();
    assert.equal(t.vswitch.ports.has(WEB), false);
    t.vswitch.restartVswitchd();
    await settle();
    await t.loop.whenIdle();
    assert.deepEqual([...t.vswitch.ports.keys()].sort(), [DB, 4]);
    await t.stop();
  });

  it('a switch without meters leaves ports unmetered, and says so', async () => {
    const clock = new FakeClock();
    const vswitch = new FakeSwitch();
    vswitch.meters = false;
    const logger = new RecordingLogger();
    const podDirectory = new FakePodDirectory().addPort('web', WEB, 'shop/web', '10.1.0.2');
    const loop = new MulticastController({
      config: testDaemonConfig(),
      logger,
      vswitch,
      podDirectory,
      host: { interfaceIPv4: () => undefined },
      clock,
    });
    await loop.start();
    await loop.whenIdle();
    assert.equal(loop.status().igmpMeter?.meteredPorts, 0);
    assert.ok(logger.lines.some((line) => line.level === 'warn' && line.message.includes('cannot hold a meter')));
    const stopping = loop.stop();
    clock.advance(2_000);
    await stopping;
  });

  it("reads the meters' drops into status and the metrics, and keeps counting across a counter reset", async () => {
    const t = await startLoop();
    t.vswitch.drops.set(WEB, 700n);
    t.clock.advance(5_000);
    await settle();
    assert.equal(t.loop.status().igmpMeter?.dropped, 700);
    t.vswitch.drops.set(WEB, 30n); // the meter was modified: its counter starts again
    t.clock.advance(5_000);
    await settle();
    assert.deepEqual(
      t.loop.status().igmpMeter?.byPort.map((entry) => [entry.port.name, entry.dropped]),
      [['web', 730]],
    );
    const metrics = await new DaemonMetrics(t.loop).registry.metrics();
    assert.match(metrics, /mcastctl_igmp_meter_drops_total\{port="web",pod="shop\/web"\} 730/);
    await t.stop();
  });
});

describe('daemon: group policy', () => {
  it('refuses the joins it denies (counted, streamed) and admits the rest', async () => {
    const t = await startLoop({ policy: POLICY });
    const events: DaemonEvent[] = [];
    t.loop.subscribe((event) => events.push(event));
    await t.packetIn(v2Report('10.1.0.2', '239.1.0.1'), WEB); // denied by the second rule
    await t.packetIn(v2Report('10.1.0.2', '239.2.0.1'), WEB); // the first rule's exception
    // db has no exception
    await t.packetIn(v3Report('10.1.0.3', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.2.0.1' }]), DB);
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '239.1.0.1'), []);
    assert.deepEqual(members(t.loop, '239.2.0.1'), [WEB]);
    assert.equal(t.vswitch.groups.has(groupAddress('239.1.0.1')), false, 'a denied join never reaches OVS');
    assert.equal(t.loop.status().igmpRefused?.total.policy, 2);
    const refused = events.filter((event) => event.type === 'refused');
    assert.deepEqual(
      refused.map((event) => event.type === 'refused' && [event.port.name, event.group, event.rule]),
      [
        ['web', '239.1.0.1', 3],
        ['db', '239.2.0.1', 3],
      ],
    );
    // A leave of a denied group is no join: nothing to refuse, nothing counted.
    await t.packetIn(v3Report('10.1.0.2', [{ type: 'CHANGE_TO_INCLUDE_MODE', group: '239.1.0.1' }]), WEB);
    assert.equal(t.loop.status().igmpRefused?.total.policy, 2);
    await t.stop();
  });

  it('gives each pod port the ranges it may not send to, outside the link-local groups', async () => {
    const t = await startLoop({ policy: POLICY });
    const ranges = (ofport: number) =>
      t.vswitch.ports.get(ofport)?.deniedSend.map((range) => `${range.address}/${range.mask}`);
    assert.deepEqual(ranges(DB), ['238.1.0.0/255.255.0.0', '239.0.0.0/255.0.0.0']);
    assert.deepEqual(ranges(WEB), [
      '239.0.0.0/255.254.0.0',
      '239.3.0.0/255.255.0.0',
      '239.4.0.0/255.252.0.0',
      '239.8.0.0/255.248.0.0',
      '239.16.0.0/255.240.0.0',
      '239.32.0.0/255.224.0.0',
      '239.64.0.0/255.192.0.0',
      '239.128.0.0/255.128.0.0',
    ]);
    assert.equal(t.loop.status().groupPolicy?.portsDeniedSending, 2);
    await t.stop();
  });

  it('a pod denied more ranges than maxSendDenyRanges may send to link-scope groups only; a reload of the bound redoes it', async () => {
    const t = await startLoop({ policy: POLICY, config: { maxSendDenyRanges: 4 } });
    await t.loop.whenIdle();
    const ranges = (ofport: number) =>
      t.vswitch.ports.get(ofport)?.deniedSend.map((range) => `${range.address}/${range.mask}`) ?? [];
    // web's 8 ranges are past 4: every multicast group but the link-scope ones is dropped from it.
    const web = ranges(WEB);
    assert.equal(web.length, 68);
    assert.ok(web.includes('224.0.1.0/255.255.255.0') && web.includes('232.0.0.0/248.0.0.0'), web.join(' '));
    assert.ok(!web.some((range) => range.startsWith('224.0.0.0/')), 'link-scope groups (mDNS, IGMP) stay sendable');
    assert.deepEqual(ranges(DB), ['238.1.0.0/255.255.0.0', '239.0.0.0/255.0.0.0'], 'within the bound: as the policy');
    assert.equal(t.loop.status().groupPolicy?.portsSendCapped, 1);
    const warned = t.logger.lines.filter((line) =>
      line.message.includes('more ranges of groups than maxSendDenyRanges'),
    );
    assert.deepEqual(
      warned.map((line) => line.fields),
      [{ port: 'web', ofport: WEB, ranges: 8 }],
    );
    t.loop.reconfigure({ ...t.loop.configuration, maxSendDenyRanges: 8 });
    await t.loop.whenIdle();
    assert.equal(ranges(WEB).length, 8, 'the bound raised: the policy as it is');
    assert.equal(t.loop.status().groupPolicy?.portsSendCapped, 0);
    await t.stop();
  });

  it('a new policy removes the members it denies at once and changes only the ports whose ranges differ', async () => {
    const t = await startLoop({ policy: POLICY });
    await t.packetIn(v2Report('10.1.0.2', '239.2.0.1'), WEB);
    await t.packetIn(v2Report('10.1.0.3', '237.1.0.1'), DB);
    await t.loop.whenIdle();
    const dbBefore = t.vswitch.ports.get(DB);
    const next = parseGroupPolicy(
      [
        'rules:',
        '  - {action: deny, pods: "shop/*", groups: 239.0.0.0/8}',
        '  - {action: deny, pods: shop/db, groups: 238.1.0.0/16, directions: send}',
      ].join('\n'),
      'policy.yaml',
    );
    t.loop.setPolicy(next, 'policy.yaml');
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '239.2.0.1'), [], 'the exception is gone: web leaves 239.2.0.1');
    assert.equal(t.vswitch.groups.has(groupAddress('239.2.0.1')), false);
    assert.deepEqual(members(t.loop, '237.1.0.1'), [DB], 'an allowed member stays');
    assert.deepEqual(t.vswitch.ports.get(WEB)?.deniedSend, [{ address: '239.0.0.0', mask: '255.0.0.0' }]);
    assert.deepEqual(t.vswitch.ports.get(DB), dbBefore);
    await t.stop();
  });

  it('a policy that lets a port back into a group asks it at once, whether it was refused or removed', async () => {
    const t = await startLoop({ policy: POLICY });
    await t.packetIn(v2Report('10.1.0.2', '239.2.0.1'), WEB);
    await t.packetIn(v2Report('10.1.0.3', '239.5.0.1'), DB);
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '239.5.0.1'), [], 'db is refused 239.5.0.1');
    const denyAll = parseGroupPolicy('rules:\n  - {action: deny, pods: "*/*", groups: 224.0.0.0/4}', 'policy.yaml');
    t.loop.setPolicy(denyAll, 'policy.yaml');
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '239.2.0.1'), [], 'web removed from 239.2.0.1');
    const asked = (group: string, from: number) =>
      t.vswitch.sent.slice(from).flatMap((sent) => (decodeQuery(sent.frame)?.group === group ? [sent.ports] : []));
    const before = t.vswitch.sent.length;
    assert.equal(t.loop.setPolicy(parseGroupPolicy('rules: []', 'policy.yaml'), 'policy.yaml'), true);
    await settle();
    assert.deepEqual(asked('239.2.0.1', before), [[WEB]], 'web asked about the group it was removed from');
    assert.deepEqual(asked('239.5.0.1', before), [[DB]], 'db asked about the group it was refused');
    // Its answer makes it a member again.
    await t.packetIn(v2Report('10.1.0.2', '239.2.0.1'), WEB);
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '239.2.0.1'), [WEB]);
    // A policy that lets nobody back in asks nobody.
    const quiet = t.vswitch.sent.length;
    t.loop.setPolicy(denyAll, 'policy.yaml');
    await settle();
    assert.deepEqual(asked('239.5.0.1', quiet), []);
    await t.stop();
  });

  it('a policy read again that decides alike (a comment added, a rule written otherwise) redoes nothing', async () => {
    const t = await startLoop({ policy: POLICY });
    await t.packetIn(v2Report('10.1.0.2', '239.2.0.1'), WEB);
    await t.loop.whenIdle();
    const same = parseGroupPolicy(
      [
        '# the same rules, written otherwise',
        'rules:',
        '  - {action: allow, pods: [shop/web], groups: [239.2.0.0/16], directions: [join, send]}',
        '  - {action: deny, pods: "shop/*", groups: 239.0.0.0/8}',
        '  - {action: deny, pods: shop/db, groups: 238.1.0.0/16, directions: send}',
        'sourceAddresses:',
        '  - {pods: shop/db, addresses: [10.9.0.0/24]}',
      ].join('\n'),
      'policy.yaml',
    );
    assert.equal(t.loop.setPolicy(same, 'policy.yaml'), false);
    assert.equal(t.loop.setPolicy(parseGroupPolicy('rules: []', 'policy.yaml'), 'policy.yaml'), true);
    await t.stop();
  });

  it("admits IGMP from the policy's extra source addresses of a pod, and from no other pod", async () => {
    const t = await startLoop({ policy: POLICY });
    await t.packetIn(v2Report('10.9.0.7', '237.1.0.1'), DB);
    await t.packetIn(v2Report('10.9.0.7', '237.1.0.2'), WEB);
    await t.loop.whenIdle();
    assert.deepEqual(members(t.loop, '237.1.0.1'), [DB]);
    assert.deepEqual(members(t.loop, '237.1.0.2'), []);
    assert.equal(t.loop.status().igmpRefused?.total.spoofed, 1);
    await t.stop();
  });
});
