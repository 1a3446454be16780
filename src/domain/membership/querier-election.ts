/**
 * Querier election on the pod ports (RFC 3376 §6.6.2, RFC 3810 §7.6.2): one querier a
 * link, the one with the lowest address. A general query heard on a port from a lower
 * address than ours makes us a non-querier there, for that protocol, for the Other
 * Querier Present Interval (RFC 3376 §8.5: Robustness × Query Interval + half the Query
 * Response Interval); every such query starts it again, and when it runs out without one
 * we query there again. We keep snooping all the while: only our general queries stop.
 *
 * Our own IPv4 source may be 0.0.0.0 (no gateway address: a snooping switch's proxy
 * querier, RFC 4541 §2.1.1), which takes part in no election: any querier with an address
 * wins over it. A query from 0.0.0.0 or :: elects nobody.
 *
 * Modes: `auto` (the election), `always` (query whatever is heard: the behaviour of a
 * switch that must be the querier), `never` (no general queries at all: another querier
 * on the segment is relied on).
 */
import { addressPoint } from '../policy/ip-prefix.js';

export const QUERIER_ELECTION_MODES = ['auto', 'always', 'never'] as const;
export type QuerierElectionMode = (typeof QUERIER_ELECTION_MODES)[number];

export type QueryProtocol = 'igmp' | 'mld';

/** Another querier that won a port, and until when (monotonic ms) unless it queries again. */
export interface OtherQuerier {
  port: number;
  protocol: QueryProtocol;
  address: string;
  untilMs: number;
}

export interface HeardQuery {
  port: number;
  protocol: QueryProtocol;
  /** The query's source address. */
  address: string;
  /** Our own query source for that protocol now. */
  ours: string;
  /** The Other Querier Present Interval now. */
  presentMs: number;
}

/** fe80::/10 in canonical text. */
const LINK_LOCAL_UNICAST = /^fe[89ab][0-9a-f]:/;

/** 0.0.0.0 and :: on addressPoint's line: no address, no election. */
const UNSPECIFIED = new Set([addressPoint('0.0.0.0')!, addressPoint('::')!]);

export class QuerierElection {
  private readonly others = new Map<string, OtherQuerier>();

  constructor(
    public mode: QuerierElectionMode,
    /** Milliseconds, monotonic. */
    private readonly clock: () => number,
  ) {}

  /** A general query heard on a pod port; true when its sender is (still) the querier there. */
  heard(query: HeardQuery): boolean {
    const theirs = addressPoint(query.address);
    if (theirs === undefined || UNSPECIFIED.has(theirs)) return false;
    // An MLD query from anything but a link-local address is one no listener heeds (RFC 3810 §5.1.14).
    if (query.protocol === 'mld' && !LINK_LOCAL_UNICAST.test(query.address)) return false;
    const ours = addressPoint(query.ours);
    // Ours unset or 0.0.0.0 / :: (a proxy querier): any querier with an address wins.
    if (ours !== undefined && !UNSPECIFIED.has(ours) && theirs >= ours) return false;
    this.others.set(keyOf(query.port, query.protocol), {
      port: query.port,
      protocol: query.protocol,
      address: query.address,
      untilMs: this.clock() + query.presentMs,
    });
    return true;
  }

  /** Whether we send general queries of `protocol` out of `port` now. */
  queries(port: number, protocol: QueryProtocol): boolean {
    if (this.mode === 'never') return false;
    if (this.mode === 'always') return true;
    const other = this.others.get(keyOf(port, protocol));
    if (other === undefined) return true;
    if (other.untilMs > this.clock()) return false;
    this.others.delete(keyOf(port, protocol));
    return true;
  }

  /** The other queriers present now (those whose interval ran out are forgotten). */
  present(): OtherQuerier[] {
    const now = this.clock();
    for (const [key, other] of this.others) if (other.untilMs <= now) this.others.delete(key);
    return [...this.others.values()].sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
  }

  /** The port is gone. */
  forgetPort(port: number): void {
    for (const protocol of ['igmp', 'mld'] as const) this.others.delete(keyOf(port, protocol));
  }
}

function keyOf(port: number, protocol: QueryProtocol): string {
  return `${port}/${protocol}`;
}

/** RFC 3376 §8.5 (and RFC 3810 §9.5): Robustness × Query Interval + Query Response Interval / 2. */
export function otherQuerierPresentMs(timing: {
  robustness: number;
  queryIntervalMs: number;
  queryResponseIntervalMs: number;
}): number {
  return timing.robustness * timing.queryIntervalMs + timing.queryResponseIntervalMs / 2;
}
