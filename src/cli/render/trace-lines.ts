/**
 * `mcastctl trace`'s human output: a heading, one line a stage (✓, ✗ or -), a hint under a failure, and the verdict.
 */
import type { ChalkInstance } from 'chalk';
import type { TraceReport, TraceStage } from '../../controllers/trace/trace-report.js';

const TITLES: Record<TraceStage['name'], string> = {
  'pod-port': 'pod port',
  igmp: 'IGMP/MLD',
  membership: 'membership',
  ovs: 'OVS',
  outside: 'from outside',
  sender: 'sender',
};

export function traceLines(report: TraceReport, style: ChalkInstance): string[] {
  const sender =
    report.sender.kind === 'pod'
      ? `from pod ${report.sender.pod}`
      : `from ${report.sender.address ?? 'outside'}${report.sender.via === null ? '' : ` through the ${report.sender.via}`}`;
  const source = report.source === null ? 'any source' : `source ${report.source}`;
  const lines = [style.bold(`trace ${report.group} to ${report.pod} (${sender}, ${source})`)];
  const width = Math.max(...Object.values(TITLES).map((title) => title.length));
  for (const stage of report.stages) {
    const mark = stage.status === 'pass' ? style.green('✓') : stage.status === 'fail' ? style.red('✗') : style.dim('-');
    const text = stage.status === 'skipped' ? style.dim(stage.summary) : stage.summary;
    lines.push(`${mark} ${stage.stage} ${TITLES[stage.name].padEnd(width)}  ${text}`);
    if (stage.hint !== undefined) lines.push(`      ${style.yellow('hint:')} ${stage.hint}`);
  }
  const skipped = report.stages.filter((stage) => stage.status === 'skipped').map((stage) => stage.stage);
  if (report.verdict === 'blocked')
    lines.push(
      style.red(`blocked at stage ${report.stages.at(-1)?.stage} (${report.blockedAt}): ${report.stages.at(-1)?.code}`),
    );
  else if (report.verdict === 'incomplete')
    lines.push(
      style.yellow(`no stage that ran blocks delivery; the daemon's stages (${skipped.join(', ')}) were skipped`),
    );
  else lines.push(style.green(`delivered: ${report.group} reaches ${report.pod}`));
  return lines;
}
