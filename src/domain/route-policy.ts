/**
 * Which (S,G) routes a node's kernel should hold, decided from the kernel's NOCACHE
 * upcalls (a packet for an (S,G) the kernel has no entry for) and from the entries'
 * packet counters. Pure: the daemon feeds it upcalls, memberships and counters and
 * applies its decisions through the router socket; tests drive it with an injected clock.
 *
 * The policy (Antrea's, for a node whose pods sit behind a gateway VIF):
 * - outbound: traffic from a pod (arriving on the gateway VIF) goes out of every
 *   multicast interface (the uplinks), so receivers elsewhere get it;
 * - inbound: traffic from outside (arriving on a multicast interface) goes to the
 *   gateway only while the group has members on this node that want its source (the
 *   caller's `groupHasLocalMembers` is "members whose merged IGMPv3 filter admits this
 *   source": a source no local member asks for is not routed in). Without them the entry
 *   is still added, with no outgoing VIF: the kernel then drops the traffic without
 *   queueing it or asking again, and the entry gets the gateway the moment a member
 *   joins (inboundOifs), instead of after the kernel's 10 s unresolved-entry timeout;
 * - inbound from a tunnelled source (a pod of another node, in tunnel mode): the entry
 *   never gets the gateway, whatever the members. Such traffic reached this node's pods
 *   through the tunnel already; routed in from the uplink as well, it would be a second
 *   copy. The entry without outgoing VIF still stops the kernel's upcalls;
 * - an entry whose packet count has not moved for `idleTimeoutMs` is removed, so that
 *   a source that stopped does not keep a route for ever.
 */
import type { GroupAddress, SourceAddress } from '../wire/ip-address.js';
import { ipPrefixContains, type IpPrefix } from './policy/ip-prefix.js';

export interface RoutePolicyOptions {
  /** The VIF of the gateway port (the node's pods are behind it). */
  gatewayVif: number;
  /** The VIFs of the multicast interfaces (uplinks). */
  uplinkVifs: readonly number[];
  /** Remove an entry whose packet count has not moved for this long. */
  idleTimeoutMs: number;
  /** Sources whose multicast comes through the tunnel (the cluster's pod ranges): never routed in from an uplink. */
  tunnelledSources?: readonly IpPrefix[];
  /** Milliseconds; injected so that tests need not wait. */
  clock: () => number;
}

export interface SourceGroupKey {
  source: SourceAddress;
  group: GroupAddress;
}

export type RouteDecision =
  | { action: 'add'; source: SourceAddress; group: GroupAddress; iif: number; oifs: number[] }
  | { action: 'ignore'; reason: string };

export interface RouteCounters extends SourceGroupKey {
  packets: number;
}

interface Tracked {
  packets: number;
  /** When the count last moved (or the entry was added). */
  since: number;
}

export class RoutePolicy {
  private readonly tracked = new Map<string, Tracked>();
  private idleTimeout: number;

  constructor(private readonly options: RoutePolicyOptions) {
    this.idleTimeout = options.idleTimeoutMs;
    if (options.uplinkVifs.includes(options.gatewayVif))
      throw new RangeError(`VIF ${options.gatewayVif} cannot be both the gateway and an uplink`);
  }

  /** A new idle timeout (a reload) counts for every entry, from its last counter move. */
  set idleTimeoutMs(ms: number) {
    this.idleTimeout = ms;
  }

  /**
   * What to do with a NOCACHE upcall for (source, group) that arrived on `vif`; `groupHasLocalMembers`: local members
   * want this source.
   */
  onNoCache(upcall: SourceGroupKey & { vif: number }, groupHasLocalMembers: boolean): RouteDecision {
    const { gatewayVif, uplinkVifs } = this.options;
    if (upcall.vif === gatewayVif) {
      if (uplinkVifs.length === 0) return { action: 'ignore', reason: 'no multicast interface to send it out of' };
      return this.add(upcall, gatewayVif, [...uplinkVifs]);
    }
    if (uplinkVifs.includes(upcall.vif)) {
      return this.add(upcall, upcall.vif, this.inboundOifs(upcall.source, groupHasLocalMembers));
    }
    return { action: 'ignore', reason: `VIF ${upcall.vif} is neither the gateway nor a multicast interface` };
  }

  /**
   * Takes the current counters of the entries (from /proc/net/ip_mr_cache) and returns
   * those idle for longer than idleTimeoutMs: to be deleted (and forgotten here).
   */
  expireIdle(counters: readonly RouteCounters[]): SourceGroupKey[] {
    const now = this.options.clock();
    const idle: SourceGroupKey[] = [];
    const seen = new Set<string>();
    for (const entry of counters) {
      const key = keyOf(entry);
      seen.add(key);
      const tracked = this.tracked.get(key);
      if (tracked === undefined || entry.packets !== tracked.packets) {
        this.tracked.set(key, { packets: entry.packets, since: now });
      } else if (now - tracked.since >= this.idleTimeout) {
        idle.push({ source: entry.source, group: entry.group });
        this.tracked.delete(key);
      }
    }
    // Entries gone from the kernel (deleted elsewhere) are forgotten too.
    for (const key of this.tracked.keys()) if (!seen.has(key)) this.tracked.delete(key);
    return idle;
  }

  /**
   * The outgoing VIFs of an inbound entry (one whose iif is a multicast interface) from `source`;
   * `groupHasLocalMembers` as for onNoCache.
   */
  inboundOifs(source: SourceAddress, groupHasLocalMembers: boolean): number[] {
    return groupHasLocalMembers && !this.isTunnelled(source) ? [this.options.gatewayVif] : [];
  }

  /** Whether `source`'s multicast reaches this node through the tunnel (it is in tunnelledSources). */
  isTunnelled(source: SourceAddress): boolean {
    return this.options.tunnelledSources?.some((prefix) => ipPrefixContains(prefix, source)) ?? false;
  }

  /** Whether an entry with incoming VIF `iif` is inbound (its oifs follow the group's local members). */
  isInbound(iif: number): boolean {
    return this.options.uplinkVifs.includes(iif);
  }

  private add(key: SourceGroupKey, iif: number, oifs: number[]): RouteDecision {
    this.tracked.set(keyOf(key), { packets: 0, since: this.options.clock() });
    return { action: 'add', source: key.source, group: key.group, iif, oifs };
  }
}

function keyOf(key: SourceGroupKey): string {
  return `${key.source}>${key.group}`;
}
