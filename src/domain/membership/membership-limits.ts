/**
 * How much group state one port, and the node, may hold: the admission decision the
 * MembershipTable asks before a report adds anything. A pod that floods reports for
 * ever new groups or sources would otherwise grow the daemon's memory and the node's
 * OVS groups without bound. At a limit only the NEW join is refused (a new group for the
 * port, a new source in the port's filter of a group, a new group for the node):
 * what is already there stays, and a report that refreshes it is no new join. Nothing
 * is evicted, also when a reload lowers a limit.
 *
 * The SSM range is decided here too: a group in it is joined only for named sources
 * (RFC 4607), so a record that asks for any source (EXCLUDE mode) is refused, as RFC 4604
 * §2.2.1 asks of routers, also from a port that is already an INCLUDE member of the group.
 * IPv4's range is a setting (232.0.0.0/8 by default); IPv6's is fixed, ff3x::/96 of every
 * scope (RFC 4607 §1, RFC 3306 §6), and holds whenever an IPv4 range is set: a setting of
 * no range turns the check off for both families.
 */
import { addressFamily, type GroupAddress, type HostAddress, type SourceAddress } from '../../wire/ip-address.js';
import { parseIPv6 } from '../../wire/ipv6-address.js';
import { addressPoint, type IpPrefix, type IpRange, ipPrefixRange } from '../policy/ip-prefix.js';
import type { SourceFilter } from './source-filter.js';

export interface MembershipLimitSettings {
  /** Groups one port may be a member of. */
  maxGroupsPerPort: number;
  /** Sources in one port's filter of one group (include or exclude). */
  maxSourcesPerGroup: number;
  /** Groups with members on the node: each is one OVS group. */
  maxGroups: number;
  /**
   * The source-specific multicast range of IPv4: its groups take INCLUDE-mode records only.
   * Absent or empty: none, and no SSM check of IPv6 groups either (their range, ff3x::/96, is not set here).
   */
  ssmRange?: readonly IpPrefix[];
}

/** No limits: what a table built without settings runs with. */
export const UNLIMITED: Readonly<MembershipLimitSettings> = Object.freeze({
  maxGroupsPerPort: Number.POSITIVE_INFINITY,
  maxSourcesPerGroup: Number.POSITIVE_INFINITY,
  maxGroups: Number.POSITIVE_INFINITY,
});

export type RefusalReason = 'port-groups' | 'group-sources' | 'node-groups' | 'ssm';

/** A join the limits refused. */
export interface MembershipRefusal {
  reason: RefusalReason;
  group: GroupAddress;
  port: number;
  host: HostAddress;
  /** The limit that was reached; absent for `ssm`, which is no count. */
  limit?: number;
}

/** A member of the group as the table holds it (only what admission reads). */
interface AdmittedMember {
  port: number;
  host: HostAddress;
  filter: SourceFilter;
}

export interface AdmissionRequest {
  limits: Readonly<MembershipLimitSettings>;
  group: GroupAddress;
  port: number;
  host: HostAddress;
  /** The host's filter after the report. */
  filter: SourceFilter;
  /** The group's members now; undefined or empty when the node has none. */
  members: Iterable<AdmittedMember> | undefined;
  /** Groups the node holds now: those with members here, and those it holds for others (the peers) only. */
  groupCount: number;
  /** Whether the node holds `group` for others already (a local join of it adds no group); absent: none held. */
  heldForOthers?: ((group: GroupAddress) => boolean) | undefined;
  /** Groups the port is a member of now. */
  portGroupCount: number;
}

/**
 * Why the report may not add what it asks for, or undefined when it may. Pure. A flood's
 * record (a new group for a port at its limit) is decided without building anything.
 */
export function refusalOf(request: AdmissionRequest): Pick<MembershipRefusal, 'reason' | 'limit'> | undefined {
  const { limits, port } = request;
  // Before the counts: the record is refused for what it asks, whatever the port holds.
  if (request.filter.mode === 'exclude' && limits.ssmRange !== undefined && isSsmGroup(request.group, limits.ssmRange))
    return { reason: 'ssm' };
  let groupHasMembers = false;
  let portIsMember = false;
  for (const member of request.members ?? []) {
    groupHasMembers = true;
    if (member.port === port) {
      portIsMember = true;
      break;
    }
  }
  if (!groupHasMembers && request.groupCount >= limits.maxGroups && request.heldForOthers?.(request.group) !== true)
    return { reason: 'node-groups', limit: limits.maxGroups };
  if (!portIsMember && request.portGroupCount >= limits.maxGroupsPerPort)
    return { reason: 'port-groups', limit: limits.maxGroupsPerPort };
  if (request.filter.sources.size === 0 && !portIsMember) return undefined;
  return sourcesRefusal(request);
}

/** Each range list's address ranges, worked out once: a flood of v2 reports asks for every one of them. */
const SSM_RANGES = new WeakMap<readonly IpPrefix[], readonly IpRange[]>();

/**
 * Whether `group` is a source-specific multicast group while `prefixes` is the SSM range in
 * force: an IPv4 group inside one of the prefixes, an IPv6 one in ff3x::/96 (its family's
 * fixed range). An empty range turns SSM off for both families.
 */
export function isSsmGroup(group: GroupAddress, prefixes: readonly IpPrefix[]): boolean {
  if (prefixes.length === 0) return false;
  if (addressFamily(group) === 'ipv6') return isIPv6SsmGroup(group);
  let ranges = SSM_RANGES.get(prefixes);
  if (ranges === undefined) {
    ranges = prefixes.map(ipPrefixRange);
    SSM_RANGES.set(prefixes, ranges);
  }
  const point = addressPoint(group);
  return point !== undefined && ranges.some((range) => point >= range.start && point <= range.end);
}

/**
 * ff3x::/96 (RFC 4607 §1: FF3x::/32 with a zero prefix length and network prefix, of which
 * the /96 is what IANA assigns for SSM): flags nibble 3 (P and T set), any scope, then
 * octets 2 to 11 all zero.
 */
export function isIPv6SsmGroup(group: GroupAddress): boolean {
  const bytes = parseIPv6(group);
  if (bytes === undefined || bytes[0] !== 0xff || bytes[1]! >> 4 !== 3) return false;
  for (let at = 2; at < 12; at++) if (bytes[at] !== 0) return false;
  return true;
}

/** The sources limit: the port's sources of the group after the report (its other hosts' too), when some are new. */
function sourcesRefusal(request: AdmissionRequest): Pick<MembershipRefusal, 'reason' | 'limit'> | undefined {
  const { limits, port, host } = request;
  const before = new Set<SourceAddress>();
  const after = new Set<SourceAddress>(request.filter.sources);
  for (const member of request.members ?? []) {
    if (member.port !== port) continue;
    for (const source of member.filter.sources) {
      before.add(source);
      if (member.host !== host) after.add(source);
    }
  }
  if (after.size > limits.maxSourcesPerGroup && [...after].some((source) => !before.has(source)))
    return { reason: 'group-sources', limit: limits.maxSourcesPerGroup };
  return undefined;
}

/** How many groups each port is a member of (members by port and group), kept as the table adds and removes members. */
export class PortGroupCounts {
  /** port → group → members of the group on the port */
  private readonly ports = new Map<number, Map<GroupAddress, number>>();

  added(port: number, group: GroupAddress): void {
    let groups = this.ports.get(port);
    if (groups === undefined) {
      groups = new Map();
      this.ports.set(port, groups);
    }
    groups.set(group, (groups.get(group) ?? 0) + 1);
  }

  removed(port: number, group: GroupAddress): void {
    const groups = this.ports.get(port);
    const count = groups?.get(group);
    if (groups === undefined || count === undefined) return;
    if (count > 1) groups.set(group, count - 1);
    else groups.delete(group);
    if (groups.size === 0) this.ports.delete(port);
  }

  groupsOf(port: number): number {
    return this.ports.get(port)?.size ?? 0;
  }
}
