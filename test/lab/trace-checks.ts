/**
 * `mcastctl trace` as the end-to-end tests run and read it: the command in a lab node's
 * namespace with its OVS environment, the report parsed, and the checks every case makes
 * of its stages.
 */
import assert from 'node:assert/strict';
import type { TraceReport, TraceStage } from '../../src/controllers/trace/trace-report.js';
import { type CliResult, mcastctl } from './cli.js';
import type { RunningDaemon } from './daemon.js';
import type { OvsNode, OvsPod } from './ovs.js';

/** A pod's name as trace takes and reports it. */
export const podName = (pod: OvsPod): string => `default/${pod.name}`;

export interface TraceResult extends CliResult {
  /** The --json report (undefined for a text run). */
  report: TraceReport;
  /** The command and its output, for assertion messages. */
  context: string;
}

export type TraceRun = (
  group: string,
  pod: OvsPod,
  args?: string[],
  options?: { json?: boolean },
) => Promise<TraceResult>;

/** `mcastctl trace GROUP --pod POD ARGS` on `node`, asking `daemon`'s control socket. */
export function traceOn(node: OvsNode, daemon: RunningDaemon): TraceRun {
  return async (group, pod, args = [], options = {}) => {
    const json = options.json ?? true;
    const result = await mcastctl(
      [
        'trace',
        group,
        '--pod',
        podName(pod),
        '--bridge',
        node.bridge,
        '--control-socket',
        daemon.controlSocket,
        ...args,
        ...(json ? ['--json'] : []),
      ],
      { ns: node.ns, env: { ...process.env, ...node.env }, timeoutMs: 20_000 },
    );
    let report: TraceReport | undefined;
    if (json) {
      try {
        report = JSON.parse(result.stdout) as TraceReport;
      } catch {
        assert.fail(
          `trace ${group} --pod ${podName(pod)} ${args.join(' ')} exited ${result.code} without a JSON document:\n${result.stdout}\n${result.stderr}`,
        );
      }
    }
    return {
      ...result,
      report: report!,
      context: `trace ${group} --pod ${podName(pod)} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`,
    };
  };
}

/** The report's stage `name`; fails when it has none. */
export function stageOf(report: TraceReport, name: TraceStage['name']): TraceStage {
  const found = report.stages.find((entry) => entry.name === name);
  assert.ok(found !== undefined, `no stage ${name} in ${JSON.stringify(report.stages.map((entry) => entry.name))}`);
  return found;
}

/** Stage 1's facts for `pod`, the same in every report. */
export function assertPodPortStage(report: TraceReport, pod: OvsPod): void {
  const first = report.stages[0]!;
  assert.equal(first.name, 'pod-port');
  assert.equal(first.stage, 1);
  assert.equal(first.status, 'pass');
  assert.deepEqual(first.facts['port'], { ofport: pod.ofport, name: pod.port, pod: podName(pod) });
  assert.deepEqual(first.facts['addresses'], [pod.address]);
}
