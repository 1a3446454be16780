/**
 * The daemon's metrics endpoint under a local user who scrapes it in a loop or holds
 * connections open to it, on one real OVS node (user-space datapath) with ten pods that
 * each hold 200 groups by real kernel joins, so 2,000 (pod, group) traffic counters:
 *
 * - eight scrapers in a loop for 30 s cost the daemon at most 30 % of a core (scrapes are
 *   served from a copy rendered at most once a second), and its resident set is back
 *   within 10 % of where it started 20 s after they stop;
 * - the daemon, started with a soft open-file limit of 1,024, runs with its hard limit;
 *   2,000 idle connections to the endpoint leave its open files under half that limit (at
 *   most 64 connections are held), and a scrape still answers.
 *
 * Needs root, iproute2, ethtool, curl, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { daemonCpuSeconds, daemonRssKiB } from '../lab/churn.js';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { holdGroups, stopChild, waitForLine } from '../lab/group-holders.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import { scrapeMetrics } from '../lab/switch-checks.js';
import { after, before, describe, it } from '../helpers/node-test.js';
import type { TrafficStatsView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const PODS = 10;
const GROUPS = Array.from({ length: 200 }, (_, i) => `239.66.${i >> 8}.${(i & 255) + 1}`);
const SCRAPERS = 8;
const SCRAPE_SECONDS = 30;
const IDLE_CONNECTIONS = 2000;

/**
 * argv: URL, scrapers, seconds. Each scraper asks for the metrics in a loop on a connection
 * of its own (kept alive, as Prometheus does; a new one if the daemon closes it), without
 * gzip (the most bytes). Prints the scrapes, failures and the median scrape in ms.
 */
const SCRAPERS_PY = `
import http.client, sys, threading, time, urllib.parse
url, count, seconds = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + seconds
times, failures = [], [0]
def scrape():
    conn = None
    while time.monotonic() < end:
        started = time.monotonic()
        try:
            conn = conn or http.client.HTTPConnection(url.hostname, url.port, timeout=5)
            conn.request("GET", url.path)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or not body:
                raise RuntimeError(response.status)
            times.append(time.monotonic() - started)
        except Exception:
            failures[0] += 1
            conn = None
threads = [threading.Thread(target=scrape) for _ in range(count)]
for t in threads: t.start()
for t in threads: t.join()
times.sort()
print(len(times), failures[0], round(1000 * times[len(times) // 2], 2) if times else -1, flush=True)
`;

/** argv: host, port, count. Opens that many connections and sends nothing on them; "ready" once opened. */
const IDLE_PY = `
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = []
for i in range(count):
    held.append(socket.create_connection((host, port), timeout=5))
print("ready", flush=True)
sys.stdin.read()
`;

/** The value of the metric line that starts with `prefix` (name and labels), or undefined. */
function metricValue(metrics: string, prefix: string): number | undefined {
  const line = metrics.split('\n').find((entry) => entry.startsWith(`${prefix} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

function openFiles(daemon: RunningDaemon): number {
  return readdirSync(`/proc/${daemon.pid}/fd`).length;
}

/** The daemon's limits of open files (soft and hard), from /proc/<pid>/limits. */
function openFileLimits(daemon: RunningDaemon): { soft: number; hard: number } {
  const line = readFileSync(`/proc/${daemon.pid}/limits`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('Max open files'));
  const [soft, hard] = (line?.split(/\s{2,}/).slice(1, 3) ?? []).map(Number);
  if (!Number.isInteger(soft) || !Number.isInteger(hard))
    throw new Error(`no open-file limits in /proc/${daemon.pid}/limits: ${line}`);
  return { soft: soft!, hard: hard! };
}

describe('daemon: the metrics endpoint under a local user', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let daemon: RunningDaemon;
  let metricsUrl: string;
  let holder: ChildProcess | undefined;
  let idle: ChildProcess | undefined;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.45.0.1/24' });
    const pods: OvsPod[] = [];
    for (let k = 0; k < PODS; k++) pods.push(await node.addPod(`p${k}`, { address: `10.45.0.${11 + k}/24` }));
    // Started with a soft open-file limit of 1,024, as a shell's or a service manager's default may be.
    daemon = startDaemon(node, {
      multicastInterfaces: [],
      args: ['--traffic-counters'],
      wrapper: ['sh', '-c', 'ulimit -Sn 1024 && exec "$@"', 'sh'],
    });
    metricsUrl = String((await daemon.ready())['metrics']);
    holder = await holdGroups(lab, { ns: node.ns, groups: GROUPS, namespaces: pods.map((pod) => pod.ns) });
    await waitUntil(
      'the daemon to count 2,000 (pod, group) pairs',
      async () => {
        const view = await control<TrafficStatsView>(daemon, ['groups', '--stats']);
        return view.entries.length === PODS * GROUPS.length ? true : undefined;
      },
      60_000,
    );
  });

  after(async () => {
    for (const child of [idle, holder]) if (child !== undefined) await stopChild(child);
    await daemon?.stop();
    await lab?.destroy();
  });

  it('eight scrapers in a loop for 30 s: at most 30 % of a core, and the memory back within 10 % 20 s later', async (context) => {
    const first = await scrapeMetrics(node, metricsUrl);
    const series = first.split('\n').filter((line) => line.startsWith('mcastctl_pod_group_')).length;
    assert.ok(series >= 4 * PODS * GROUPS.length, `${series} per-pod series`);
    const rendersBefore = metricValue(first, 'mcastctl_metrics_renders_total') ?? NaN;
    // What a scrape leaves allocated settles first.
    await sleep(3000);
    const rssStart = daemonRssKiB(daemon);
    const cpuStart = await daemonCpuSeconds(daemon);
    const started = performance.now();
    const scrapers = await lab.exec(
      node.ns,
      ['python3', '-c', SCRAPERS_PY, metricsUrl, String(SCRAPERS), String(SCRAPE_SECONDS)],
      { timeoutMs: (SCRAPE_SECONDS + 30) * 1000 },
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuPercent = (((await daemonCpuSeconds(daemon)) - cpuStart) / seconds) * 100;
    const rssPeak = daemonRssKiB(daemon);
    const [scrapes, failures, p50Ms] = scrapers.stdout.trim().split(' ').map(Number) as [number, number, number];
    const renders =
      (metricValue(await scrapeMetrics(node, metricsUrl), 'mcastctl_metrics_renders_total') ?? NaN) - rendersBefore;
    await sleep(20_000);
    const rssAfter = daemonRssKiB(daemon);
    context.diagnostic(
      `${first.length} bytes and ${series} per-pod series a scrape; ${scrapes} scrapes in ${seconds.toFixed(1)} s ` +
        `(${failures} failed, p50 ${p50Ms} ms), ${renders} renders; daemon CPU ${cpuPercent.toFixed(1)} % of a core; ` +
        `RSS ${rssStart} KiB at start, ${rssPeak} at the end of the loop, ${rssAfter} 20 s later`,
    );
    assert.ok(scrapes > SCRAPERS * SCRAPE_SECONDS, `only ${scrapes} scrapes answered`);
    assert.equal(failures, 0, 'every scrape answered');
    assert.ok(renders <= SCRAPE_SECONDS + 5, `${renders} renders in ${seconds.toFixed(1)} s: more than one a second`);
    assert.ok(cpuPercent <= 30, `daemon CPU ${cpuPercent.toFixed(1)} % of a core`);
    assert.ok(rssAfter <= rssStart * 1.1, `RSS ${rssAfter} KiB 20 s later, from ${rssStart} KiB at the start`);
  });

  it('2,000 idle connections: open files under half the limit, and a scrape still answers', async (context) => {
    const { soft: limit, hard } = openFileLimits(daemon);
    assert.equal(limit, hard, 'the soft limit of 1,024 raised to the hard limit at start');
    const filesBefore = openFiles(daemon);
    const { hostname, port } = new URL(metricsUrl);
    idle = lab.spawn(node.ns, ['python3', '-u', '-c', IDLE_PY, hostname, port, String(IDLE_CONNECTIONS)]);
    await waitForLine(idle, 'ready', 60_000, 'idle connections');
    const filesHeld = openFiles(daemon);
    const metrics = await scrapeMetrics(node, metricsUrl);
    const evicted = metricValue(metrics, 'mcastctl_metrics_connections_closed_total{reason="evicted"}') ?? 0;
    context.diagnostic(
      `open files ${filesBefore} before, ${filesHeld} with ${IDLE_CONNECTIONS} connections open (limit ${limit}); ` +
        `${evicted} connections evicted`,
    );
    assert.ok(filesHeld < limit / 2, `${filesHeld} open files of ${limit}`);
    assert.ok(
      filesHeld <= filesBefore + 65,
      `${filesHeld} open files, ${filesBefore} before: more than 64 connections held`,
    );
    assert.ok(evicted >= IDLE_CONNECTIONS - 64, `${evicted} evicted`);
    assert.match(metrics, /^mcastctl_pod_group_received_packets_total\{/m);
  });
});
