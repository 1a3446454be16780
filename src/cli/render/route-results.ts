/** How install and uninstall report a static kernel route, in both output modes. */
import { NO_ROUTER_WARNING, type RouteOutcome, type StaticRoute } from '../../controllers/static/static-routes.js';
import type { Output } from './output.js';

export function printRouteResult(
  output: Output,
  route: Pick<StaticRoute, 'group' | 'source'> & Partial<StaticRoute>,
  result: { outcome: RouteOutcome; routerActive: boolean },
): void {
  if (output.json) {
    output.document({ route, outcome: result.outcome, routerActive: result.routerActive });
    return;
  }
  const path = route.iif === undefined ? '' : `: ${route.iif} → ${route.oifs?.join(', ')}`;
  output.line(`route (${route.source}, ${route.group}) ${result.outcome}${path}`);
  output.flush();
  // The route stays, but forwards nothing without a router: say so wherever one now exists.
  const routeExists = result.outcome !== 'removed' && result.outcome !== 'absent';
  if (routeExists && !result.routerActive) output.warn(NO_ROUTER_WARNING);
}
