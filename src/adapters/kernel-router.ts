/**
 * The kernel side of the daemon (Antrea's route client), for one address family: this
 * network namespace's multicast router. It holds MRT_INIT (MRT6_INIT), gives the gateway
 * and each multicast interface a VIF (MIF), turns the kernel's NOCACHE upcalls into (S,G)
 * entries (RoutePolicy decides), keeps the inbound entries' outgoing interfaces in step
 * with the group's local members and the sources they want, removes entries whose packet
 * counters stopped moving, and joins each group with local members on every multicast
 * interface with their source filter (upstream-memberships.ts), so that the network
 * upstream sends it those sources. The daemon runs one for each family (DualStackRouter).
 *
 * Static VIFs and routes that `mcastctl install --source` left (docs/architecture.md: they stay, and
 * forward only while a router runs) are kept: the daemon takes free VIF numbers, reuses
 * a static VIF on the same interface, and never touches an entry it did not add.
 */
import { McastError } from '../errors.js';
import { ifindexOf } from '../transport/interface-index.js';
import {
  MULTICAST_ROUTING,
  type MulticastRoutingKernel,
  type MulticastRoutingSocket,
  type NoCacheMiss,
} from '../transport/multicast-routing.js';
import { admits, type SourceFilter } from '../domain/membership/source-filter.js';
import { UpstreamMemberships } from './upstream-memberships.js';
import type { IpPrefix } from '../domain/policy/ip-prefix.js';
import { RoutePolicy, type SourceGroupKey } from '../domain/route-policy.js';
import {
  addressFamily,
  type GroupAddress,
  parseGroupAddress,
  parseSourceAddress,
  type SourceAddress,
} from '../wire/ip-address.js';
import type { RouteView } from '../transport/control/daemon-view.js';

export interface RouterInterface {
  name: string;
  ifindex: number;
  vif: number;
}

export interface KernelRouterOptions {
  /** The family's kernel calls (default: IPv4's). */
  kernel?: MulticastRoutingKernel;
  gateway: string;
  multicastInterfaces: readonly string[];
  idleTimeoutMs: number;
  /** Sources whose multicast arrives through the tunnel (the cluster's pods): routed out, never in (RoutePolicy). */
  tunnelledSources?: readonly IpPrefix[];
  /** Milliseconds, monotonic. */
  clock: () => number;
  /** Whether `group` has members on this node now. */
  hasLocalMembers: (group: GroupAddress) => boolean;
  onRoute?: (change: {
    action: 'add' | 'update' | 'remove';
    source: SourceAddress;
    group: GroupAddress;
    iif: string;
    oifs: string[];
  }) => void;
  /** A kernel call refused (an entry not added, a join refused): the router goes on. */
  onError?: (error: McastError) => void;
  /**
   * A socket failed and was closed: the kernel dropped our VIFs and routes (the routing
   * socket) or memberships (a join socket). The router cannot go on; restart it.
   */
  onFailure?: (error: McastError) => void;
}

interface Route {
  source: SourceAddress;
  group: GroupAddress;
  iif: number;
  oifs: number[];
}

export class KernelRouter {
  private readonly routes = new Map<string, Route>();
  /** The sources each group's local members want, as setLocalMembers last told (none: any source). */
  private readonly filters = new Map<string, SourceFilter>();
  private readonly policy: RoutePolicy;
  private readonly memberships: UpstreamMemberships;
  private readonly vifNames = new Map<number, string>();
  private broken = false;

  private constructor(
    private readonly options: KernelRouterOptions,
    private readonly kernel: MulticastRoutingKernel,
    private readonly socket: MulticastRoutingSocket,
    readonly gateway: RouterInterface,
    readonly uplinks: readonly RouterInterface[],
    /** VIFs this router added (and the kernel removes when its socket closes). */
    private readonly ownVifs: readonly number[],
  ) {
    this.policy = new RoutePolicy({
      gatewayVif: gateway.vif,
      uplinkVifs: uplinks.map((uplink) => uplink.vif),
      idleTimeoutMs: options.idleTimeoutMs,
      ...(options.tunnelledSources === undefined ? {} : { tunnelledSources: options.tunnelledSources }),
      clock: options.clock,
    });
    this.memberships = new UpstreamMemberships({
      ...kernel.membershipBounds(),
      openSocket: () => kernel.openMembershipSocket(),
      onFailure: (error) => this.failed(error),
      onError: (error) => this.options.onError?.(error),
    });
    for (const entry of [gateway, ...uplinks]) this.vifNames.set(entry.vif, entry.name);
    socket.onNoCache((miss) => this.onNoCache(miss));
    socket.onError((error) => this.failed(error));
  }

  /** Idle routes are judged with this timeout from now on (a reload). */
  set idleTimeoutMs(ms: number) {
    this.policy.idleTimeoutMs = ms;
  }

  private failed(error: McastError): void {
    this.broken = true;
    this.options.onFailure?.(error);
  }

  /** False once a socket failed (see KernelRouterOptions.onFailure) or after close(). */
  get active(): boolean {
    return !this.broken && !this.socket.closed;
  }

  /**
   * Becomes the namespace's router and adds the VIFs. Throws UsageError for an unknown
   * interface, UnavailableError when another router holds MRT_INIT, PermissionError
   * without CAP_NET_ADMIN; nothing is left behind then.
   */
  static async open(options: KernelRouterOptions): Promise<KernelRouter> {
    const kernel = options.kernel ?? MULTICAST_ROUTING.ipv4;
    const names = [options.gateway, ...options.multicastInterfaces];
    const ifindexes = names.map((name) => ifindexOf(name));
    const existing = await kernel.readInterfaces();
    const socket = kernel.openRouter();
    try {
      const used = new Set(existing.map((row) => row.index));
      const own: number[] = [];
      const word = kernel.interfaceWord.toUpperCase();
      const assigned = names.map((name, index): RouterInterface => {
        const ifindex = ifindexes[index]!;
        // A static interface on the same device (IPv4's table tells the ifindex, IPv6's only the name).
        const current = existing.find((row) =>
          row.ifindex === undefined ? row.name === name : row.ifindex === ifindex,
        );
        if (current !== undefined) return { name, ifindex, vif: current.index };
        let vif = 0;
        while (used.has(vif)) vif++;
        if (vif >= kernel.maxInterfaces) {
          throw new McastError(
            'io',
            `no free ${word} for ${name}: the kernel has ${kernel.maxInterfaces}, all in use (${kernel.interfaceTable})`,
          );
        }
        socket.addInterface({ index: vif, ifindex });
        used.add(vif);
        own.push(vif);
        return { name, ifindex, vif };
      });
      return new KernelRouter(options, kernel, socket, assigned[0]!, assigned.slice(1), own);
    } catch (error) {
      socket.close();
      throw error;
    }
  }

  /**
   * The group's local members, or the sources they want (`filter`: the merge of their
   * filters; absent: any source), changed: re-point its inbound entries, so that only the
   * sources wanted reach the gateway, then join, refilter or leave it upstream. Throws if
   * the kernel refuses a join (the caller's sync is retried; what was set is kept and not repeated).
   */
  setLocalMembers(group: string, present: boolean, filter?: SourceFilter): void {
    if (addressFamily(group) !== this.kernel.family) {
      throw new McastError('internal', `the ${this.kernel.family} multicast router was given the group ${group}`);
    }
    if (present && filter !== undefined) this.filters.set(group, filter);
    else this.filters.delete(group);
    for (const route of this.routes.values()) {
      if (route.group !== group || !this.policy.isInbound(route.iif)) continue;
      const oifs = this.policy.inboundOifs(route.source, present && this.wanted(group, route.source));
      if (!sameVifs(route.oifs, oifs)) this.addRoute({ ...route, oifs });
    }
    for (const uplink of this.uplinks) {
      if (present) this.memberships.join(group, uplink.ifindex, filter);
      else this.memberships.leave(group, uplink.ifindex);
    }
  }

  /** Whether the local members of `group` want `source` (no filter told: any source). */
  private wanted(group: string, source: SourceAddress): boolean {
    const filter = this.filters.get(group);
    return filter === undefined || admits(filter, source);
  }

  /** Removes entries idle for the idle timeout (their packet counts did not move). */
  async sweepIdle(): Promise<void> {
    const rows = await this.kernel.readRoutes();
    const ours = rows.filter((row) => this.routes.has(keyOf(row.source, row.group)));
    // Every row of ours has the addresses of a route we added: they parse.
    const counters = ours.map((row) => ({ ...sourceGroupOf(row.source, row.group)!, packets: row.packets }));
    for (const idle of this.policy.expireIdle(counters)) {
      const route = this.routes.get(keyOf(idle.source, idle.group));
      if (route === undefined) continue;
      try {
        this.socket.delRoute(idle);
      } catch (error) {
        this.options.onError?.(error as McastError);
      }
      this.routes.delete(keyOf(idle.source, idle.group));
      this.options.onRoute?.({ action: 'remove', ...this.describe(route) });
    }
  }

  /** The entries this router added, with their counters. */
  async routeViews(): Promise<RouteView[]> {
    const rows = new Map((await this.kernel.readRoutes()).map((row) => [keyOf(row.source, row.group), row]));
    return [...this.routes.values()].map((route) => {
      const row = rows.get(keyOf(route.source, route.group));
      return { ...this.describe(route), packets: row?.packets ?? 0, bytes: row?.bytes ?? 0 };
    });
  }

  get routeCount(): number {
    return this.routes.size;
  }

  /** Leaves every group upstream and closes the socket: the kernel removes our VIFs and entries. */
  close(): void {
    this.memberships.close();
    this.socket.close();
  }

  get vifs(): readonly number[] {
    return this.ownVifs;
  }

  private onNoCache(miss: NoCacheMiss): void {
    // A packet the kernel holds for an (S,G) whose source is no unicast address (spoofed): no route for it.
    const key = sourceGroupOf(miss.source, miss.group);
    if (key === undefined) return;
    const wanted = this.options.hasLocalMembers(key.group) && this.wanted(key.group, key.source);
    const decision = this.policy.onNoCache({ ...key, vif: miss.index }, wanted);
    if (decision.action === 'ignore') return;
    this.addRoute({ source: decision.source, group: decision.group, iif: decision.iif, oifs: decision.oifs });
  }

  private addRoute(route: Route): void {
    try {
      this.socket.addRoute(route);
    } catch (error) {
      this.options.onError?.(error as McastError);
      return;
    }
    const key = keyOf(route.source, route.group);
    const action = this.routes.has(key) ? 'update' : 'add';
    this.routes.set(key, route);
    this.options.onRoute?.({ action, ...this.describe(route) });
  }

  private describe(route: Route): { source: SourceAddress; group: GroupAddress; iif: string; oifs: string[] } {
    const name = (vif: number): string => this.vifNames.get(vif) ?? `${this.kernel.interfaceWord}${vif}`;
    return { source: route.source, group: route.group, iif: name(route.iif), oifs: route.oifs.map(name) };
  }
}

function keyOf(source: string, group: string): string {
  return `${source}>${group}`;
}

function sameVifs(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((vif, index) => vif === b[index]);
}

/** The (S,G) of addresses the kernel gave as text, or undefined when they are no source and group. */
function sourceGroupOf(source: string, group: string): SourceGroupKey | undefined {
  const checkedSource = parseSourceAddress(source);
  const checkedGroup = parseGroupAddress(group);
  return checkedSource === undefined || checkedGroup === undefined
    ? undefined
    : { source: checkedSource, group: checkedGroup };
}
