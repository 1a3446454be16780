/** The daemon's Prometheus metrics: names, labels, the histogram, gauges read at scrape time, and the HTTP endpoint. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from '../helpers/node-test.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { MetricsServer, parseMetricsAddress } from '../../src/controllers/daemon/observe/metrics-server.js';
import { McastError } from '../../src/errors.js';
import { CLUSTER_MEMBER_SERIES } from '../../src/controllers/daemon/observe/cluster-metrics.js';
import { FakeDaemonView, NO_SEAL_DROPS, sampleStatus } from '../helpers/fake-daemon-view.js';

describe('DaemonMetrics', () => {
  it('counts what the daemon reports, under mcastctl_ names with their labels', async () => {
    const metrics = new DaemonMetrics(new FakeDaemonView());
    metrics.packetIn();
    metrics.packetIn();
    metrics.igmpMessage('v3_report', 3);
    metrics.igmpMessage('v3_report', 3);
    metrics.igmpMessage('v2_leave', 2);
    metrics.ignoredNonPod();
    metrics.error('sync');
    metrics.queriesSent(3);
    metrics.queriesSent(0);
    const text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_packet_ins_total 2$/m);
    assert.match(text, /^mcastctl_igmp_messages_total\{type="v3_report",version="3"\} 2$/m);
    assert.match(text, /^mcastctl_igmp_messages_total\{type="v2_leave",version="2"\} 1$/m);
    assert.match(text, /^mcastctl_ignored_igmp_total\{reason="not-pod-port"\} 1$/m);
    assert.match(text, /^mcastctl_errors_total\{kind="sync"\} 1$/m);
    assert.match(text, /^mcastctl_queries_sent_total 3$/m);
    assert.match(text, /^# TYPE mcastctl_igmp_messages_total counter$/m);
  });

  it('mcastctl_other_queriers: the pod ports with another querier present, by protocol', async () => {
    const view = new FakeDaemonView();
    const metrics = new DaemonMetrics(view);
    assert.match(await metrics.registry.metrics(), /^mcastctl_other_queriers\{protocol="igmp"\} 0$/m);
    const port = { ofport: 5, name: 'veth-a', pod: 'default/pod-a' };
    view.statusValue = sampleStatus({
      querier: {
        election: 'auto',
        otherQueriers: [
          { port, protocol: 'igmp', address: '10.0.0.9', expiresInMs: 1000 },
          { port, protocol: 'mld', address: 'fe80::1', expiresInMs: 1000 },
        ],
      },
    });
    const text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_other_queriers\{protocol="igmp"\} 1$/m);
    assert.match(text, /^mcastctl_other_queriers\{protocol="mld"\} 1$/m);
  });

  it('reads groups, members and routes from the view at each scrape', async () => {
    const view = new FakeDaemonView();
    const metrics = new DaemonMetrics(view);
    assert.match(
      await metrics.registry.metrics(),
      /^mcastctl_groups 2$[\s\S]*^mcastctl_members 3$[\s\S]*^mcastctl_routes 1$/m,
    );
    assert.match(await metrics.registry.metrics(), /^mcastctl_state_saved_timestamp_seconds 0$/m);
    view.statusValue = sampleStatus({
      groups: 7,
      members: 9,
      routes: 0,
      maxGroups: 8192,
      stateSavedAt: '2026-12-07T10:00:00.500Z',
    });
    const text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_max_groups 8192$/m);
    assert.match(text, /^mcastctl_state_saved_timestamp_seconds 1796637600.5$/m);
    assert.match(text, /^mcastctl_groups 7$/m);
    assert.match(text, /^mcastctl_members 9$/m);
    assert.match(text, /^mcastctl_routes 0$/m);
    assert.match(text, /^# TYPE mcastctl_groups gauge$/m);
  });

  it('tunnel mode: mcastctl_peer_up by peer, and a mcastctl_peer_group_member series per (group, peer), bounded', async () => {
    const view = new FakeDaemonView();
    const metrics = new DaemonMetrics(view);
    const none = await metrics.registry.metrics();
    assert.doesNotMatch(none, /^mcastctl_peer_up\{/m, 'no series outside tunnel mode');
    assert.doesNotMatch(none, /^mcastctl_peer_group_member\{/m);
    assert.match(none, /^mcastctl_peer_group_member_uncounted 0$/m);
    view.statusValue = sampleStatus({
      tunnel: {
        port: 'tun0',
        ofport: 9,
        nodeAddress: '192.168.60.13',
        peers: [
          { address: '192.168.60.11', state: 'up', lastContact: '2026-12-07T10:00:00.000Z', members: 2 },
          { address: '192.168.60.12', state: 'down', lastContact: '2026-12-07T09:00:00.000Z', members: 0 },
          { address: '192.168.60.14', state: 'unknown', lastContact: null, members: 0 },
        ],
        drops: {
          'unknown-peer': 0,
          self: 0,
          rate: 0,
          unsupported: 0,
          malformed: 0,
          refused: 0,
          ...NO_SEAL_DROPS,
          'over-rate': 0,
        },
      },
    });
    // More (group, peer) pairs than the limit: the groups in address order fill it, the rest are counted.
    const groups = CLUSTER_MEMBER_SERIES + 2;
    view.groupsValue = Array.from({ length: groups }, (_, index) => ({
      group: `239.1.${index >> 8}.${index & 255}`,
      ports: [],
      members: [],
      synced: true,
      remoteMembers: [{ peer: '192.168.60.11', lastRefresh: null, expiresInMs: 1000 }],
    })).reverse();
    const text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_peer_up\{peer="192.168.60.11"\} 1$/m);
    assert.match(text, /^mcastctl_peer_up\{peer="192.168.60.12"\} 0$/m);
    assert.match(text, /^mcastctl_peer_up\{peer="192.168.60.14"\} 0$/m);
    const series = text.match(/^mcastctl_peer_group_member\{.*$/gm) ?? [];
    assert.equal(series.length, CLUSTER_MEMBER_SERIES);
    assert.equal(series[0], 'mcastctl_peer_group_member{group="239.1.0.0",peer="192.168.60.11"} 1');
    assert.ok(!text.includes('group="239.1.4.1"'), 'the last group in address order is left out');
    assert.match(text, /^mcastctl_peer_group_member_uncounted 2$/m);
  });

  it('observes sync durations in fine buckets, by result', async () => {
    const metrics = new DaemonMetrics(new FakeDaemonView());
    metrics.syncDone(0.0003, true);
    metrics.syncDone(0.003, true);
    metrics.syncDone(7, false);
    const text = await metrics.registry.metrics();
    assert.match(text, /^# TYPE mcastctl_sync_duration_seconds histogram$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_bucket\{le="0.0005",result="ok"\} 1$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_bucket\{le="0.005",result="ok"\} 2$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_bucket\{le="5",result="error"\} 0$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_bucket\{le="\+Inf",result="error"\} 1$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_count\{result="ok"\} 2$/m);
    assert.match(text, /^mcastctl_sync_duration_seconds_sum\{result="error"\} 7$/m);
  });

  it("has the process's own metrics, and nothing in prom-client's global registry", async () => {
    const metrics = new DaemonMetrics(new FakeDaemonView());
    const text = await metrics.registry.metrics();
    assert.match(text, /^process_resident_memory_bytes \d+/m);
    assert.match(text, /^process_cpu_seconds_total /m);
    const { register } = await import('prom-client');
    assert.doesNotMatch(await register.metrics(), /mcastctl_/);
  });

  it('two instances (a test, a restart) do not collide', async () => {
    const one = new DaemonMetrics(new FakeDaemonView());
    const two = new DaemonMetrics(new FakeDaemonView());
    one.packetIn();
    assert.match(await two.registry.metrics(), /^mcastctl_packet_ins_total 0$/m);
  });
});

describe('MetricsServer', () => {
  it('serves GET /metrics on the port it was given (0: any), 404 elsewhere, 405 for other methods', async () => {
    const metrics = new DaemonMetrics(new FakeDaemonView());
    metrics.packetIn();
    const server = await MetricsServer.listen({ address: '127.0.0.1:0', registry: metrics.registry });
    try {
      assert.match(server.address, /^127\.0\.0\.1:\d+$/);
      assert.notEqual(server.address, '127.0.0.1:0');
      const response = await fetch(`http://${server.address}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.match(await response.text(), /^mcastctl_packet_ins_total 1$/m);
      assert.equal((await fetch(`http://${server.address}/metrics?x=1`)).status, 200);
      const missing = await fetch(`http://${server.address}/`);
      assert.equal(missing.status, 404);
      await missing.text();
      const post = await fetch(`http://${server.address}/metrics`, { method: 'POST' });
      assert.equal(post.status, 405);
      await post.text();
    } finally {
      await server.close();
    }
  });

  it("an address in use is 'busy' (exit 1), naming the address and --metrics-address", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      await assert.rejects(
        MetricsServer.listen({
          address: `127.0.0.1:${port}`,
          registry: new DaemonMetrics(new FakeDaemonView()).registry,
        }),
        (error: unknown) => {
          assert.ok(error instanceof McastError);
          assert.equal(error.code, 'busy');
          assert.equal(error.exitCode, 1);
          assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}: EADDRINUSE`));
          assert.match(error.hint ?? '', /--metrics-address/);
          return true;
        },
      );
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('parses HOST:PORT, [IPv6]:PORT and :PORT; anything else is a usage error naming the flag', () => {
    assert.deepEqual(parseMetricsAddress('127.0.0.1:9100'), { host: '127.0.0.1', port: 9100 });
    assert.deepEqual(parseMetricsAddress('[::1]:9100'), { host: '::1', port: 9100 });
    assert.deepEqual(parseMetricsAddress(':9100'), { host: undefined, port: 9100 });
    for (const bad of ['9100', '127.0.0.1', '127.0.0.1:', '127.0.0.1:70000', '::1:9100', 'host:port']) {
      assert.throws(
        () => parseMetricsAddress(bad),
        (error: unknown) =>
          error instanceof McastError && error.exitCode === 64 && /--metrics-address/.test(error.message),
        bad,
      );
    }
  });

  it('accepts port 0 (any free port), a host name and an IPv6 address with a zone', () => {
    assert.deepEqual(parseMetricsAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseMetricsAddress('localhost:9100'), { host: 'localhost', port: 9100 });
    assert.deepEqual(parseMetricsAddress('[fe80::1%eth0]:9100'), { host: 'fe80::1%eth0', port: 9100 });
  });

  const refusals: Array<{ address: string; why: RegExp }> = [
    { address: '127.0.0.1', why: /expected HOST:PORT/ },
    { address: '[::1]', why: /expected HOST:PORT/ },
    { address: '127.0.0.1:65536', why: /port "65536" is not 0 to 65535/ },
    { address: ':99999999', why: /port "99999999" is not 0 to 65535/ },
    { address: '[::1:9100', why: /expected HOST:PORT/ },
    { address: '[::1]9100', why: /expected HOST:PORT/ },
    { address: '[]:9100', why: /expected HOST:PORT/ },
    { address: '[127.0.0.1]:9100', why: /is not an IPv6 address/ },
    { address: '[fe80::1%bad zone]:9100', why: /is not an IPv6 address/ },
    { address: 'my host:9100', why: /neither an IPv4 address nor a host name/ },
    { address: `${'a'.repeat(64)}:9100`, why: /neither an IPv4 address nor a host name/ },
    { address: `${Array(64).fill('abcd').join('.')}:9100`, why: /neither an IPv4 address nor a host name/ },
    { address: '999.1.1.1:9100', why: /not an IPv4 address/ },
    { address: '1.2.3:9100', why: /not an IPv4 address/ },
  ];
  for (const { address, why } of refusals) {
    it(`refuses ${JSON.stringify(address)} as a bad address naming the flag`, () => {
      assert.throws(
        () => parseMetricsAddress(address),
        (error: unknown) =>
          error instanceof McastError &&
          error.code === 'bad-address' &&
          error.exitCode === 64 &&
          /^--metrics-address takes HOST:PORT/.test(error.message) &&
          why.test(error.message),
      );
    });
  }
});
