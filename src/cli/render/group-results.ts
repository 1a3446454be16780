/** How install and uninstall report their group results, in both output modes. */
import { McastError } from '../../errors.js';
import type { GroupResult, StaticGroupsOutcome } from '../../controllers/static/static-groups.js';
import { NO_ROUTER_WARNING, type RouteOutcome } from '../../controllers/static/static-routes.js';
import type { BridgePort } from '../../adapters/ovs/bridge-ports.js';
import type { Output } from './output.js';

/** Most rows a human table shows. */
const TABLE_ROWS = 50;

export function describePort(port: BridgePort): string {
  return `${port.name} (${port.ofport})${port.pod === undefined ? '' : ` ${port.pod}`}`;
}

/** A group's (*,G) entry by its address; an (S,G) entry as `(S, G)`, as routes are written. */
function describeTarget(result: Pick<GroupResult, 'group' | 'source'>): string {
  return result.source === undefined ? result.group : `(${result.source}, ${result.group})`;
}

export interface RouteResult {
  route: { group: string; source: string; iif: string; oifs: string[] };
  outcome: RouteOutcome;
  routerActive: boolean;
}

export function printGroupResults(
  output: Output,
  bridge: string,
  outcome: StaticGroupsOutcome,
  routes: readonly RouteResult[] = [],
): void {
  const routeFields =
    routes.length === 0
      ? {}
      : {
          routes: routes.map(({ route, outcome: result }) => ({ ...route, outcome: result })),
          routerActive: routes[0]!.routerActive,
        };
  if (output.json) {
    output.document({
      bridge,
      groups: outcome.groups.map((result) => ({
        group: result.group,
        ...(result.source === undefined ? {} : { source: result.source }),
        groupId: result.groupId,
        outcome: result.outcome,
        ports: result.ports.map((port) => ({
          ofport: port.ofport,
          name: port.name,
          ...(port.pod === undefined ? {} : { pod: port.pod }),
        })),
        ...(result.error === undefined ? {} : { error: result.error }),
      })),
      ...(outcome.otherFailures.length === 0 ? {} : { otherFailures: outcome.otherFailures }),
      ...routeFields,
    });
  } else {
    const style = output.style;
    const colour = (result: GroupResult): string => {
      switch (result.outcome) {
        case 'added':
          return style.green(result.outcome);
        case 'updated':
        case 'removed':
          return style.yellow(result.outcome);
        case 'failed':
          return style.red(`failed: ${result.error ?? ''}`);
        default:
          return style.dim(result.outcome);
      }
    };
    // A table of thousands of rows helps nobody (and cli-table3 takes seconds to draw
    // it): past TABLE_ROWS, show what changed or failed, up to TABLE_ROWS of them.
    const rows =
      outcome.groups.length <= TABLE_ROWS
        ? outcome.groups
        : outcome.groups.filter((result) => result.outcome !== 'unchanged' && result.outcome !== 'absent');
    if (rows.length > 0) {
      output.table({
        head: ['Group', 'Result', 'Ports'],
        rows: rows
          .slice(0, TABLE_ROWS)
          .map((result) => [describeTarget(result), colour(result), result.ports.map(describePort).join('\n')]),
      });
      if (rows.length > TABLE_ROWS)
        output.line(style.dim(`... and ${rows.length - TABLE_ROWS} more (--json lists every group)`));
    }
    const counts = new Map<string, number>();
    for (const result of outcome.groups) counts.set(result.outcome, (counts.get(result.outcome) ?? 0) + 1);
    const summary = [...counts].map(([name, count]) => `${count} ${name}`).join(', ');
    if (outcome.groups.length > 0 || routes.length === 0) {
      output.line(
        `bridge ${bridge}: ${outcome.groups.length} group${outcome.groups.length === 1 ? '' : 's'}${summary ? `: ${summary}` : ''}`,
      );
    }
    for (const { route, outcome: result } of routes)
      output.line(`route (${route.source}, ${route.group}) ${result}: ${route.iif} → ${route.oifs.join(', ')}`);
  }
  if (routes.length > 0 && !routes[0]!.routerActive) {
    output.flush();
    output.warn(NO_ROUTER_WARNING);
  }
  output.flush();
  const failed = outcome.groups.filter((result) => result.outcome === 'failed').length + outcome.otherFailures.length;
  if (failed > 0) {
    throw new McastError(
      'refused',
      `OVS refused ${failed} change${failed === 1 ? '' : 's'} on bridge ${bridge}${outcome.otherFailures.length ? `: ${outcome.otherFailures.join('; ')}` : ''}`,
      {
        hint: 'the other groups were applied; see the results above',
      },
    );
  }
}
