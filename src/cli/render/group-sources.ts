/**
 * `groups`' human lines of per-source forwarding: for each group whose members' IGMPv3
 * filters split its sources, which ports get each named source and which get the rest.
 * The JSON form is the group view's `sources` and `otherSources` as they are.
 */
import type { GroupView, PortView } from '../../transport/control/daemon-view.js';

/** No lines for a group every member takes from every source: its member rows say it all. */
export function sourceReceiverLines(groups: readonly GroupView[]): string[] {
  const lines: string[] = [];
  for (const view of groups) {
    if (view.sources === undefined || view.sources.length === 0) continue;
    lines.push(`${view.group}${view.ssm === true ? ' (SSM)' : ''} by source:`);
    const width = Math.max('other sources'.length, ...view.sources.map((entry) => entry.source.length));
    for (const entry of view.sources) lines.push(`  ${entry.source.padEnd(width)} → ${describePorts(entry.ports)}`);
    lines.push(`  ${'other sources'.padEnd(width)} → ${describePorts(view.otherSources ?? [])}`);
  }
  return lines;
}

function describePorts(ports: readonly PortView[]): string {
  return ports.length === 0 ? 'none' : ports.map((port) => `${port.name} (${port.ofport})`).join(', ');
}
