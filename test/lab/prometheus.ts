/**
 * Debian's Prometheus server and promtool as the tests run them: unpacked by
 * scripts/setup.sh into a cache of their own (never installed as the machine's service),
 * the server started in a lab namespace with its data in the lab's directory, and its
 * HTTP API asked from inside that namespace.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Lab, waitUntil } from './lab.js';

/** Where scripts/setup.sh unpacks Debian's prometheus package. */
export const PROMETHEUS_ROOT = process.env['MCASTCTL_PROMETHEUS_DIR'] ?? '/var/cache/mcastctl-prometheus';
export const PROMTOOL = join(PROMETHEUS_ROOT, 'usr/bin/promtool');
const PROMETHEUS = join(PROMETHEUS_ROOT, 'usr/bin/prometheus');
/** The shipped configuration and rules. */
export const CONTRIB_PROMETHEUS = join(import.meta.dirname, '../../contrib/prometheus');

const LISTEN = '127.0.0.1:9090';

/** One sample of an instant query: its labels and value. */
export interface Sample {
  metric: Record<string, string>;
  value: number;
}

export interface RunningPrometheus {
  /** An instant query's result vector. */
  query(expression: string): Promise<Sample[]>;
  /** The alerts of the shipped rules as the server has them now (name, state, labels). */
  alerts(): Promise<Array<{ name: string; state: string; labels: Record<string, string> }>>;
}

/**
 * Starts Prometheus in `ns` scraping `target` (host:port in that namespace) every second,
 * with the shipped alert rules evaluated every second; resolves once it is ready.
 */
export async function startPrometheus(lab: Lab, ns: string, target: string): Promise<RunningPrometheus> {
  const dir = lab.file('prometheus');
  const config = join(dir, 'prometheus.yml');
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${join(CONTRIB_PROMETHEUS, 'mcastctl-alerts.yml')}`,
      'scrape_configs:',
      '  - job_name: mcastctl',
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  // The lab owns the process: destroy() kills it.
  const server = lab.spawn(
    ns,
    [
      PROMETHEUS,
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=${LISTEN}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  server.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const api = async (path: string, parameters: Record<string, string> = {}): Promise<unknown> => {
    const args = Object.entries(parameters).flatMap(([key, value]) => ['--data-urlencode', `${key}=${value}`]);
    const { stdout } = await lab.exec(ns, ['curl', '-sf', '-G', `http://${LISTEN}${path}`, ...args]);
    const body = JSON.parse(stdout) as { status: string; data: unknown };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${stdout}`);
    return body.data;
  };
  try {
    await waitUntil(
      'Prometheus to be ready',
      () =>
        lab.exec(ns, ['curl', '-sf', `http://${LISTEN}/-/ready`]).then(
          () => true,
          () => false,
        ),
      30_000,
      200,
    );
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}; its log: ${log}`);
  }
  return {
    async query(expression) {
      const data = (await api('/api/v1/query', { query: expression })) as {
        result: Array<{ metric: Record<string, string>; value: [number, string] }>;
      };
      return data.result.map((entry) => ({ metric: entry.metric, value: Number(entry.value[1]) }));
    },
    async alerts() {
      const data = (await api('/api/v1/alerts')) as {
        alerts: Array<{ labels: Record<string, string>; state: string }>;
      };
      return data.alerts.map((alert) => ({
        name: alert.labels['alertname'] ?? '',
        state: alert.state,
        labels: alert.labels,
      }));
    },
  };
}
