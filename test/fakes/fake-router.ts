/**
 * The kernel's multicast router (RouterPort), in memory: it records what the loop tells
 * it and lets the test play the kernel's side (a NOCACHE upcall turned into a route, an
 * idle route removed by a sweep, a failed routing socket).
 */
import type { McastError } from '../../src/errors.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import type { RouteView } from '../../src/transport/control/daemon-view.js';
import type { RouteChange, RouterEvents, RouterPort } from '../../src/controllers/daemon/loop/ports.js';
import { type GroupAddress, groupAddress, sourceAddress } from '../../src/wire/ip-address.js';

export class FakeRouter implements RouterPort {
  /** Every setLocalMembers call, in order. */
  readonly localMembers: Array<{ group: GroupAddress; present: boolean }> = [];
  /** The filter of each group with local members as the last setLocalMembers told it (none: any source). */
  readonly localFilters = new Map<GroupAddress, SourceFilter>();
  readonly routes = new Map<string, RouteView>();
  /** Routes the next sweep finds idle and removes. */
  readonly idle = new Set<string>();
  sweeps = 0;
  idleTimeoutMs = 0;
  closed = false;
  private events: RouterEvents | undefined;

  get active(): boolean {
    return !this.closed;
  }

  get routeCount(): number {
    return this.routes.size;
  }

  bind(events: RouterEvents): void {
    this.events = events;
  }

  setLocalMembers(group: GroupAddress, present: boolean, filter?: SourceFilter): void {
    this.localMembers.push({ group, present });
    if (present && filter !== undefined) this.localFilters.set(group, filter);
    else this.localFilters.delete(group);
  }

  /** Whether the loop says `group` has members on this node now. */
  hasLocalMembers(group: GroupAddress): boolean {
    return this.bound.hasLocalMembers(group);
  }

  async sweepIdle(): Promise<void> {
    this.sweeps++;
    for (const key of this.idle) {
      const route = this.routes.get(key);
      if (route === undefined) continue;
      this.routes.delete(key);
      this.bound.onRoute({
        action: 'remove',
        source: sourceAddress(route.source),
        group: groupAddress(route.group),
        iif: route.iif,
        oifs: route.oifs,
      });
    }
    this.idle.clear();
  }

  async routeViews(): Promise<RouteView[]> {
    return [...this.routes.values()];
  }

  close(): void {
    this.closed = true;
  }

  /** The kernel's NOCACHE upcall for (source, group), turned into an entry as RoutePolicy would. */
  upcall(change: Omit<RouteChange, 'action'>): void {
    const key = `${change.source},${change.group}`;
    const action = this.routes.has(key) ? 'update' : 'add';
    this.routes.set(key, { ...change, packets: 0, bytes: 0 });
    this.bound.onRoute({ action, ...change });
  }

  /** The routing socket failed. */
  fail(error: McastError): void {
    this.bound.onFailure(error);
  }

  private get bound(): RouterEvents {
    if (this.events === undefined) throw new Error('the loop did not bind the router');
    return this.events;
  }
}
