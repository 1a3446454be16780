/**
 * The node's memberships upstream, for one address family: for each (group, uplink), the
 * source filter the node's pods want, held on raw IGMP (or ICMPv6) sockets so that the
 * kernel reports it (IGMPv3, MLDv2) on the uplink and the network upstream sends the
 * group, or only the sources asked for.
 *
 * One socket holds only so many groups (net.ipv4.igmp_max_memberships, 20 by default;
 * IPv6: see protocol/mroute/family-kits.ts), so the memberships are spread over as many sockets as
 * needed; one filter holds only so many sources (net.ipv4.igmp_max_msf, 10 by default;
 * net.ipv6.mld_max_msf, 64), so a longer one is widened.
 *
 * The calls per (group, uplink), chosen so that the network never hears more than asked:
 * - first join, INCLUDE(A): MCAST_JOIN_SOURCE_GROUP with one source of A, then one
 *   MCAST_MSFILTER(INCLUDE, A) when A has more; no (*,G) report ever goes out for it;
 * - first join, EXCLUDE(X): IP_ADD_MEMBERSHIP, then MCAST_MSFILTER(EXCLUDE, X) when X is not empty;
 * - any change: one MCAST_MSFILTER with the whole new filter (the kernel sends the
 *   TO_IN/TO_EX/ALLOW/BLOCK records itself); an unchanged filter sends nothing;
 * - leave: IP_DROP_MEMBERSHIP, which drops a source-specific membership too.
 */
import { McastError } from '../errors.js';
import { ANY_SOURCE, type SourceFilter } from '../domain/membership/source-filter.js';
import { MrouteError } from '../protocol/mroute/mroute-error.js';
import type { MembershipBounds, MembershipSocket } from '../transport/multicast-routing.js';
import type { Membership } from '../transport/router-socket.js';
import { compareAddresses, type SourceAddress } from '../wire/ip-address.js';

export type { MembershipSocket };

export interface UpstreamMembershipsOptions extends Partial<Pick<MembershipBounds, 'maxSourcesSetting'>> {
  /** Memberships one socket may hold. */
  perSocket: number;
  /** Sources one filter may hold. */
  maxSources: number;
  /** A socket failed and was closed: its memberships are gone. */
  onFailure: (error: McastError) => void;
  /** A notice that does not stop the memberships (a filter widened past maxSources). */
  onError?: (error: McastError) => void;
  /** Opens one more socket. */
  openSocket: () => MembershipSocket;
}

/**
 * A group's filter had more sources than net.ipv4.igmp_max_msf, so the node asks upstream
 * for more than its pods want (never less): the pods' own filters still apply on the bridge.
 */
export class UpstreamFilterWidened extends McastError {
  override readonly name = 'UpstreamFilterWidened';
  /** Stable: what log readers and tests match on. */
  readonly reason = 'upstream-filter-widened';
  constructor(
    readonly group: string,
    readonly wanted: SourceFilter,
    readonly asked: SourceFilter,
    maxSources: number,
    maxSourcesSetting = 'net.ipv4.igmp_max_msf',
  ) {
    super(
      'io',
      `upstream-filter-widened: ${group} wants ${wanted.mode} of ${wanted.sources.size} sources, past ${maxSourcesSetting} (${maxSources}); ` +
        `asking upstream for ${describe(asked)} instead`,
      { hint: `raise ${maxSourcesSetting} to ask upstream for exactly the sources wanted` },
    );
  }
}

interface Slot {
  socket: MembershipSocket;
  count: number;
  full: boolean;
}

interface Held {
  slot: Slot;
  /** The filter the kernel has for it now (after widening). */
  filter: SourceFilter;
}

export class UpstreamMemberships {
  private readonly slots: Slot[] = [];
  private readonly held = new Map<string, Held>();
  /** Groups whose widening was told (told again only after it fits or is left). */
  private readonly widenedGroups = new Set<string>();

  constructor(private readonly options: UpstreamMembershipsOptions) {}

  /**
   * Holds `group` on `ifindex` with `filter` (absent: any source), joining it or changing its
   * filter. Throws the kernel's refusal; what was set before the refusal is remembered, so
   * a retry sends only what is still missing.
   */
  join(group: string, ifindex: number, filter: SourceFilter = ANY_SOURCE): void {
    const asked = this.fitted(group, filter);
    if (asked.mode === 'include' && asked.sources.size === 0) {
      this.leave(group, ifindex);
      return;
    }
    const key = `${group}|${ifindex}`;
    const current = this.held.get(key);
    if (current === undefined) {
      this.firstJoin(key, { group, ifindex }, asked);
      return;
    }
    if (sameFilter(current.filter, asked)) return;
    current.slot.socket.setSourceFilter({ group, ifindex, mode: asked.mode, sources: sorted(asked.sources) });
    current.filter = asked;
  }

  leave(group: string, ifindex: number): void {
    const key = `${group}|${ifindex}`;
    const current = this.held.get(key);
    if (current === undefined) return;
    try {
      current.slot.socket.leaveGroup({ group, ifindex });
    } catch (error) {
      // Not a member there any more (the interface went and came back): the goal holds.
      if (!(error instanceof MrouteError && error.errno === 'EADDRNOTAVAIL')) throw error;
    }
    this.held.delete(key);
    current.slot.count--;
    current.slot.full = false;
    if (![...this.held.keys()].some((other) => other.startsWith(`${group}|`))) this.widenedGroups.delete(group);
  }

  /** The filter held for `group` on `ifindex`, if it is held. */
  filterOf(group: string, ifindex: number): SourceFilter | undefined {
    return this.held.get(`${group}|${ifindex}`)?.filter;
  }

  close(): void {
    for (const slot of this.slots) slot.socket.close();
    this.slots.length = 0;
    this.held.clear();
    this.widenedGroups.clear();
  }

  private firstJoin(key: string, membership: Membership, asked: SourceFilter): void {
    const sources = sorted(asked.sources);
    const first = sources[0];
    for (;;) {
      const slot = this.freeSlot();
      try {
        if (asked.mode === 'include' && first !== undefined)
          slot.socket.joinSourceGroup({ ...membership, source: first });
        else slot.socket.joinGroup(membership);
      } catch (error) {
        // The kernel's per-socket limit came sooner than counted (a leave that failed
        // earlier still holds a place): use another socket.
        if (error instanceof MrouteError && error.errno === 'ENOBUFS' && slot.count > 0) {
          slot.full = true;
          continue;
        }
        throw error;
      }
      slot.count++;
      const joined: Held = {
        slot,
        filter: asked.mode === 'include' ? { mode: 'include', sources: new Set(sources.slice(0, 1)) } : ANY_SOURCE,
      };
      this.held.set(key, joined);
      if (sameFilter(joined.filter, asked)) return;
      slot.socket.setSourceFilter({ ...membership, mode: asked.mode, sources });
      joined.filter = asked;
      return;
    }
  }

  private freeSlot(): Slot {
    const free = this.slots.find((entry) => !entry.full && entry.count < this.options.perSocket);
    if (free !== undefined) return free;
    const socket = this.options.openSocket();
    socket.onError((error) => this.options.onFailure(error));
    const slot: Slot = { socket, count: 0, full: false };
    this.slots.push(slot);
    return slot;
  }

  /**
   * `filter` within maxSources: INCLUDE of too many becomes any source, EXCLUDE of too many excludes only the first
   * maxSources.
   */
  private fitted(group: string, filter: SourceFilter): SourceFilter {
    const cap = this.options.maxSources;
    if (filter.sources.size <= cap) {
      this.widenedGroups.delete(group);
      return filter;
    }
    const asked: SourceFilter =
      filter.mode === 'include'
        ? ANY_SOURCE
        : { mode: 'exclude', sources: new Set(sorted(filter.sources).slice(0, cap)) };
    if (!this.widenedGroups.has(group)) {
      this.widenedGroups.add(group);
      this.options.onError?.(new UpstreamFilterWidened(group, filter, asked, cap, this.options.maxSourcesSetting));
    }
    return asked;
  }
}

function sorted(sources: ReadonlySet<SourceAddress>): SourceAddress[] {
  return [...sources].sort(compareAddresses);
}

function sameFilter(a: SourceFilter, b: SourceFilter): boolean {
  return (
    a.mode === b.mode && a.sources.size === b.sources.size && [...a.sources].every((source) => b.sources.has(source))
  );
}

function describe(filter: SourceFilter): string {
  return filter.mode === 'exclude' && filter.sources.size === 0
    ? 'any source'
    : `${filter.mode} of ${filter.sources.size} sources`;
}
