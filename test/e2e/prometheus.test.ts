/**
 * Monitoring as people run it: the shipped configuration and alert rules
 * (contrib/prometheus/) pass promtool's checks and their own unit tests; then Debian's
 * Prometheus server, started in a lab node's namespace, scrapes the node's daemon with
 * those rules loaded, and its HTTP API must have the daemon's series with the values the
 * daemon itself reports; a pod that floods joins the group policy denies must make the
 * refusal alert pending.
 *
 * Needs root, iproute2, python3, curl, Open vSwitch, the built CLI, and Prometheus and
 * promtool where scripts/setup.sh unpacks them.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { IGMPV3_RECORD, floodReports } from '../lab/igmp-frames.js';
import { Lab, run, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { CONTRIB_PROMETHEUS, PROMTOOL, type RunningPrometheus, startPrometheus } from '../lab/prometheus.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import type { DaemonStatus } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the monitoring tests run the built CLI: ${missing}`);
if (!existsSync(PROMTOOL)) throw new Error(`no promtool at ${PROMTOOL}: run scripts/setup.sh`);

const GROUP = '239.75.1.1';
const DENIED = '239.76';
const METRICS = '127.0.0.1:9815';

describe('the shipped Prometheus rules: promtool', () => {
  it('promtool check config and check rules pass; promtool test rules passes the rules own tests', async () => {
    const config = await run([PROMTOOL, 'check', 'config', join(CONTRIB_PROMETHEUS, 'prometheus.yml')]);
    assert.match(config.stdout, /SUCCESS: 1 rule files found/, config.stdout);
    const rules = await run([PROMTOOL, 'check', 'rules', join(CONTRIB_PROMETHEUS, 'mcastctl-alerts.yml')]);
    assert.match(rules.stdout, /SUCCESS: 7 rules found/, rules.stdout);
    const tests = await run([PROMTOOL, 'test', 'rules', join(CONTRIB_PROMETHEUS, 'mcastctl-alerts.test.yml')]);
    assert.match(tests.stdout, /SUCCESS/, tests.stdout);
  });

  it('promtool test rules fails when an alert does not do what its test says (the tests can fail)', async () => {
    const lab = Lab.create();
    try {
      const dir = lab.file('rules');
      await run(['mkdir', '-p', dir]);
      copyFileSync(join(CONTRIB_PROMETHEUS, 'mcastctl-alerts.yml'), join(dir, 'mcastctl-alerts.yml'));
      writeFileSync(
        join(dir, 'wrong.test.yml'),
        [
          'rule_files: [mcastctl-alerts.yml]',
          'evaluation_interval: 1m',
          'tests:',
          '  - interval: 1m',
          '    input_series: [{ series: \'up{job="mcastctl", instance="n"}\', values: \'0x10\' }]',
          '    alert_rule_test: [{ eval_time: 5m, alertname: McastctlDaemonDown, exp_alerts: [] }]',
          '',
        ].join('\n'),
      );
      const result = await run([PROMTOOL, 'test', 'rules', join(dir, 'wrong.test.yml')]).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(result instanceof Error, 'a daemon down for 5 minutes must fire McastctlDaemonDown');
      assert.match(String(result), /McastctlDaemonDown/);
    } finally {
      await lab.destroy();
    }
  });
});

describe('a real Prometheus scraping a lab daemon with the shipped rules', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let member: OvsPod;
  let flooder: OvsPod;
  let daemon: RunningDaemon;
  let prometheus: RunningPrometheus;
  const receivers: Receiver[] = [];

  /** The value of an instant query with one sample, once it has one. */
  const sampleOf = async (expression: string): Promise<number> =>
    waitUntil(
      `Prometheus to have ${expression}`,
      async () => (await prometheus.query(expression))[0]?.value,
      15_000,
      250,
    );

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'pm');
    await node.addGateway({ address: '10.75.0.1/24' });
    member = await node.addPod('p1', { address: '10.75.0.11/24', gateway: '10.75.0.1' });
    flooder = await node.addPod('p2', { address: '10.75.0.12/24', gateway: '10.75.0.1' });
    const policy = lab.file('policy.yaml');
    writeFileSync(policy, `rules:\n  - action: deny\n    pods: default/p2\n    groups: ${DENIED}.0.0/16\n`);
    daemon = startDaemon(node, { args: ['--group-policy', policy, '--metrics-address', METRICS] });
    await daemon.ready();
    prometheus = await startPrometheus(lab, node.ns, METRICS);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    await lab?.destroy();
  });

  it("scraped: up is 1, and the daemon's groups, members, limit and last save are what it reports itself", async () => {
    receivers.push(await member.listen(GROUP, 5475));
    await waitForOvsMembers(node, GROUP, [member]);
    assert.equal(await sampleOf('up{job="mcastctl"}'), 1);
    await waitUntil('Prometheus to scrape the member', async () => (await sampleOf('mcastctl_members')) === 1);
    const status = await control<DaemonStatus>(daemon, ['status']);
    assert.equal(await sampleOf('mcastctl_groups'), status.groups);
    assert.equal(await sampleOf('mcastctl_max_groups'), status.maxGroups);
    assert.ok((status.maxGroups ?? 0) > 0, JSON.stringify(status.maxGroups));
    const saved = await waitUntil('a scrape after the last save', async () => {
      const [now, savedAt] = [
        await control<DaemonStatus>(daemon, ['status']),
        await sampleOf('mcastctl_state_saved_timestamp_seconds'),
      ];
      return savedAt === Date.parse(now.stateSavedAt ?? '') / 1000 ? savedAt : undefined;
    });
    assert.ok(saved > Date.now() / 1000 - 120, `saved at ${saved}`);
    assert.deepEqual(
      (await prometheus.alerts()).filter((alert) => alert.state !== 'inactive'),
      [],
      'no alert on a healthy node',
    );
  });

  it('a pod flooding joins the group policy denies: the refusals climb and McastctlIgmpRefused goes pending', async () => {
    const reports = Array.from({ length: 800 }, (_, index) => [
      { type: IGMPV3_RECORD.changeToExclude, group: `${DENIED}.${index >> 7}.${(index & 127) + 1}`, sources: [] },
    ]);
    // The rule averages over 5 minutes: past 1 a second, that is 300 refusals.
    const flood = floodReports(flooder, reports, { ratePerSecond: 100 });
    const pending = await waitUntil(
      'McastctlIgmpRefused to be pending',
      async () =>
        (await prometheus.alerts()).find((alert) => alert.name === 'McastctlIgmpRefused' && alert.state === 'pending'),
      30_000,
      250,
    );
    assert.equal(pending.labels['severity'], 'warning');
    assert.equal(pending.labels['job'], 'mcastctl');
    assert.equal(pending.labels['instance'], METRICS);
    await flood;
    const refused = (await control<DaemonStatus>(daemon, ['status'])).igmpRefused?.total['policy'] ?? 0;
    assert.ok(refused >= 300, `the daemon refused ${refused} joins by policy`);
    const scraped = await waitUntil(
      'Prometheus to have every refusal',
      async () => {
        const value = await sampleOf('mcastctl_igmp_refused_total{reason="policy"}');
        return value === refused ? value : undefined;
      },
      10_000,
      250,
    );
    assert.equal(scraped, refused);
  });
});
