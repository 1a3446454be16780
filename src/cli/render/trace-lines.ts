/**
 * `mcastctl trace`'s human output: a heading, one line a stage (✓ passed, ✗ failed, -
 * skipped, · not applicable), a hint under a failure, and the verdict. A trace that followed
 * every sender the node carries shows the shared stages, then each sender under a heading
 * of its own.
 */
import type { ChalkInstance } from 'chalk';
import type {
  TracePath,
  TraceReport,
  TraceSender,
  TraceSenderKind,
  TraceStage,
} from '../../controllers/trace/trace-report.js';

const TITLES: Record<TraceStage['name'], string> = {
  'pod-port': 'pod port',
  igmp: 'IGMP/MLD',
  membership: 'membership',
  ovs: 'OVS',
  outside: 'from outside',
  sender: 'sender',
};

/** A kind of sender the node does not carry, as its heading names it. */
const KINDS: Record<TraceSenderKind, string> = {
  pod: 'a pod on this node',
  tunnel: 'other nodes, through the tunnel',
  outside: 'outside the node, through the gateway',
};

export function traceLines(report: TraceReport, style: ChalkInstance): string[] {
  const heading = report.senderNamed
    ? `${senderText(report.sender)}, ${report.source === null ? 'any source' : `source ${report.source}`}`
    : 'from every sender the node carries';
  const lines = [style.bold(`trace ${report.group} to ${report.pod} (${heading})`)];
  const width = Math.max(...Object.values(TITLES).map((title) => title.length));
  const stageLines = (stages: readonly TraceStage[]): void => {
    for (const stage of stages) {
      const mark =
        stage.status === 'pass'
          ? style.green('✓')
          : stage.status === 'fail'
            ? style.red('✗')
            : stage.status === 'skipped'
              ? style.dim('-')
              : style.dim('·');
      const text = stage.status === 'pass' || stage.status === 'fail' ? stage.summary : style.dim(stage.summary);
      lines.push(`${mark} ${stage.stage} ${TITLES[stage.name].padEnd(width)}  ${text}`);
      if (stage.hint !== undefined) lines.push(`      ${style.yellow('hint:')} ${stage.hint}`);
    }
  };
  if (report.senderNamed || report.paths.length === 0) {
    stageLines(report.stages);
  } else {
    const shared = report.stages.filter((stage) => stage.stage <= 3);
    stageLines(shared);
    for (const path of report.paths) {
      lines.push(style.bold(`  ${pathHeading(path)}:`));
      stageLines(path.stages);
    }
    // No sender the node carries: the stage that says so.
    stageLines(report.stages.filter((stage) => stage.code === 'no-sender'));
  }
  const skipped = report.stages.filter((stage) => stage.status === 'skipped').map((stage) => stage.stage);
  const last = report.stages.at(-1);
  if (report.verdict === 'blocked') {
    const every = !report.senderNamed && report.paths.filter((path) => path.verdict === 'blocked').length > 1;
    lines.push(
      style.red(
        `blocked at stage ${last?.stage} (${report.blockedAt}): ${last?.code}${every ? ', and every other sender the node carries is blocked too' : ''}`,
      ),
    );
  } else if (report.verdict === 'incomplete') {
    lines.push(
      style.yellow(`no stage that ran blocks delivery; the daemon's stages (${skipped.join(', ')}) were skipped`),
    );
  } else {
    const from = report.senderNamed ? '' : ` (${senderText(report.sender)})`;
    lines.push(style.green(`delivered: ${report.group} reaches ${report.pod}${from}`));
  }
  return lines;
}

function pathHeading(path: TracePath): string {
  if (path.sender === null) return `from ${KINDS[path.from]}`;
  const address = path.sender.address === null ? '' : `, ${path.sender.address}`;
  if (path.sender.kind === 'pod')
    return `from pod ${path.sender.pod}${address} (another pod on this node; --from names one)`;
  return `${senderText(path.sender)}${path.sender.port === null ? '' : ` ${path.sender.port.name}`}`;
}

function senderText(sender: TraceSender | null): string {
  if (sender === null) return 'no sender';
  if (sender.kind === 'pod') return `from pod ${sender.pod}`;
  const via = sender.via === null ? '' : ` through the ${sender.via}`;
  return `from ${sender.address ?? (sender.via === 'tunnel' ? 'other nodes' : 'outside')}${via}`;
}
