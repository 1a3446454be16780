/**
 * How `mcastctl reconcile` reports: each drift as a row (a table for people, every row in
 * JSON), the conflicts, what was left alone, and the warning when no router forwards routes.
 */
import type { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import type { Drift, RepairResult } from '../../controllers/static/reconcile-repair.js';
import { NO_ROUTER_WARNING } from '../../controllers/static/static-routes.js';
import type { Output } from './output.js';

interface DriftRow {
  object: 'group' | 'stray-group' | 'route';
  key: string;
  action: string;
  detail: string;
  before?: unknown;
  after?: unknown;
}

export function describeDrift(entry: Drift, bridge: BridgeClient): DriftRow {
  const port = (ofport: number) => bridge.portByNumber(ofport)?.name ?? String(ofport);
  switch (entry.object) {
    case 'group':
      return {
        object: 'group',
        key: forwardingLabel(entry.group, entry.source),
        action: entry.action,
        detail: entry.detail,
        before: { ports: entry.before.map(port) },
        after: { ports: entry.after.map(port) },
      };
    case 'stray-group':
      return {
        object: 'stray-group',
        key: `0x${entry.groupId.toString(16)}`,
        action: entry.action,
        detail: entry.detail,
      };
    case 'route':
      return {
        object: 'route',
        key: `(${entry.source}, ${entry.group})`,
        action: entry.action,
        detail: entry.detail,
        ...(entry.before === undefined ? {} : { before: { iif: entry.before.iif, oifs: entry.before.oifs } }),
        ...(entry.after === undefined ? {} : { after: { iif: entry.after.iif, oifs: entry.after.oifs } }),
      };
  }
}

/** Most drift rows a human table shows. */
const TABLE_ROWS = 50;

/** What one reconcile found and did: the `--json` document, and what the human lines are made of. */
interface ReconcileReport {
  bridge: string;
  dryRun: boolean;
  inSync: boolean;
  drift: Array<DriftRow & { result: RepairResult; error?: string }>;
  conflicts: Array<{ object: string; key: string; problem: string }>;
  routerActive: boolean;
  inSyncGroups: number;
  inSyncRoutes: number;
  leftAlone: { learnedGroups: number; daemonRoutes: number; foreignFlows: number };
  daemon: string;
}

export function printReconcileReport(output: Output, report: ReconcileReport, flags: { quiet?: boolean }): void {
  if (output.json) {
    output.document(report);
    return;
  }
  if (report.inSync && flags.quiet === true) return;
  const style = output.style;
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const { learnedGroups, daemonRoutes, foreignFlows } = report.leftAlone;
  const summary = `${count(report.inSyncGroups, 'group')} and ${count(report.inSyncRoutes, 'route')} as declared; left alone: ${count(learnedGroups, 'group')} the daemon learned, ${count(daemonRoutes, 'route')} of its own, ${count(foreignFlows, 'flow')} of other controllers`;
  const routes =
    report.drift.some((row) => row.object === 'route' && row.action !== 'remove') || report.inSyncRoutes > 0;
  if (report.inSync) {
    output.line(`in sync: ${summary}`);
    output.flush();
    if (routes && !report.routerActive) output.warn(NO_ROUTER_WARNING);
    return;
  }
  if (report.drift.length > 0) {
    const action = (row: DriftRow & { result: RepairResult; error?: string }) =>
      row.action === 'add'
        ? style.green(row.action)
        : row.action === 'remove'
          ? style.red(row.action)
          : style.yellow(row.action);
    const result = (row: DriftRow & { result: RepairResult; error?: string }) =>
      row.result === 'failed'
        ? style.red(`failed: ${row.error ?? ''}`)
        : row.result === 'applied'
          ? 'repaired'
          : style.dim('not applied (--dry-run)');
    output.table({
      head: ['Object', 'Key', 'Drift', 'Detail', 'RepairResult'],
      rows: report.drift.slice(0, TABLE_ROWS).map((row) => [row.object, row.key, action(row), row.detail, result(row)]),
    });
    if (report.drift.length > TABLE_ROWS)
      output.line(style.dim(`... and ${report.drift.length - TABLE_ROWS} more (--json lists every one)`));
  }
  for (const conflict of report.conflicts)
    output.warn(`${conflict.object} ${conflict.key} not reconciled: ${conflict.problem}`);
  if (routes && !report.routerActive) output.warn(NO_ROUTER_WARNING);
  const applied = report.drift.filter((row) => row.result === 'applied').length;
  const failed = report.drift.filter((row) => row.result === 'failed').length;
  output.line(
    report.dryRun
      ? `drift: ${report.drift.length} difference${report.drift.length === 1 ? '' : 's'} (dry run: nothing changed); ${summary}`
      : `drift: ${report.drift.length} difference${report.drift.length === 1 ? '' : 's'}, ${applied} repaired${failed > 0 ? `, ${failed} failed` : ''}; ${summary}`,
  );
  output.flush();
}

/** A group entry as reconcile's report names it: the group, or `(S, G)` for a per-source entry. */
export function forwardingLabel(group: string, source: string | undefined): string {
  return source === undefined ? group : `(${source}, ${group})`;
}
