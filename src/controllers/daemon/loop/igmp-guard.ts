/**
 * The daemon's defence against a hostile pod: it counts and logs what the membership
 * limits refused (src/domain/membership/membership-limits.ts), and refuses IGMP whose
 * IPv4 source is not the pod's own address, and MLD whose source is not link-local. A flood is one warning line per
 * reason and port every REFUSAL_WARNING_INTERVAL_MS (./../../runtime/warning-limiter.ts), with the count held back;
 * `status` and the metrics have every count.
 */
import type { MembershipRefusal } from '../../../domain/membership/membership-limits.js';
import { type PacketBudgetSettings, PortPacketBudget } from '../../../domain/membership/packet-budget.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import { WarningLimiter } from '../../../runtime/warning-limiter.js';
import { parseIPv6 } from '../../../wire/ipv6-address.js';
import type { IgmpRefusals } from '../../../transport/control/daemon-view.js';
import type { ControllerLogger } from './ports.js';
import type { PortActivity } from './port-activity.js';
import { portViewOf } from '../observe/port-views.js';

/**
 * Why IGMP or MLD was refused: a membership limit, a join of any source to a group of the
 * SSM range (ssm), the group policy, an IP header no host on the pod's own link sends
 * (off-link: for MLD also a source that is not link-local), a source address the pod does
 * not have, or its port's budget.
 */
export const IGMP_REFUSAL_REASONS = [
  'port-groups',
  'group-sources',
  'node-groups',
  'ssm',
  'policy',
  'off-link',
  'spoofed',
  'port-rate',
] as const;
export type IgmpRefusalReason = (typeof IGMP_REFUSAL_REASONS)[number];

/** Each reason is logged at most once in this long for each port. */
const REFUSAL_WARNING_INTERVAL_MS = 10_000;

const WARNINGS: Readonly<Record<IgmpRefusalReason, string>> = {
  'port-groups': 'IGMP join refused: the port is in as many groups as it may be (maxGroupsPerPort)',
  'group-sources':
    "IGMP join refused: the port's filter of the group has as many sources as it may (maxSourcesPerGroup)",
  'node-groups': 'IGMP join refused: the node has as many groups as it may (maxGroups)',
  ssm: 'IGMP or MLD join refused: a group of the SSM range (ssmRange; for IPv6, ff3x::/96) is joined only for named sources (INCLUDE mode), not for any source',
  policy: 'IGMP join refused: the group policy denies this pod the group',
  'off-link':
    'IGMP or MLD ignored: a TTL or hop limit other than 1, an IGMPv3 report without Router Alert, or MLD from a source that is not link-local (fe80::/10), is not from a host on the link',
  spoofed:
    "IGMP ignored: its source address is not the pod's (external_ids ip-address) nor one the group policy allows it",
  'port-rate': 'IGMP dropped unread: the port sends more than it may (igmpRatePerPort, igmpBurstPerPort)',
};

/**
 * Whether a pod's IGMP comes from an address that is not its own: neither one of
 * `addresses` nor 0.0.0.0 (a host without an address yet may report so, RFC 3376 §4.2.13).
 * A port that does not say its addresses (undefined) accepts any source.
 */
function isSpoofedSource(source: string, addresses: readonly string[] | undefined): boolean {
  return addresses !== undefined && source !== '0.0.0.0' && !addresses.includes(source);
}

/** fe80::/10 (RFC 4291 §2.5.6). */
function isLinkLocalIPv6(text: string): boolean {
  const bytes = parseIPv6(text);
  return bytes !== undefined && bytes[0] === 0xfe && (bytes[1]! & 0xc0) === 0x80;
}

function zeroCounts(): Record<IgmpRefusalReason, number> {
  return Object.fromEntries(IGMP_REFUSAL_REASONS.map((reason) => [reason, 0])) as Record<IgmpRefusalReason, number>;
}

export interface IgmpGuardOptions {
  logger: ControllerLogger;
  pods: PodPorts;
  /** Milliseconds, monotonic: the warnings' and the budget's clock. */
  now: () => number;
  /** How much IGMP each pod port may have handled. */
  budget: PacketBudgetSettings;
  /** The group policy in force (its sourceAddresses widen what a pod may report from). */
  policy: () => GroupPolicy;
  /** Told each refusal of a group, for the port's record (trace). */
  activity?: PortActivity;
}

export class IgmpGuard {
  private readonly total = zeroCounts();
  /** Ports with refusals, until they go away. */
  private readonly byPort = new Map<number, Record<IgmpRefusalReason, number>>();
  private readonly warnings: WarningLimiter;
  private readonly budget: PortPacketBudget;

  constructor(private readonly options: IgmpGuardOptions) {
    this.warnings = new WarningLimiter({ now: options.now, intervalMs: REFUSAL_WARNING_INTERVAL_MS });
    this.budget = new PortPacketBudget(options.budget, options.now);
  }

  /**
   * Whether the pod port `ofport` has used up its budget: its message is then dropped
   * before it is decoded (counted and logged as port-rate), so a flood costs the daemon
   * little and the other ports' reports wait behind nothing.
   */
  overBudget(ofport: number): boolean {
    if (this.budget.take(ofport)) return false;
    this.count('port-rate', ofport);
    return true;
  }

  /** New budget settings (a reload). */
  reconfigure(budget: PacketBudgetSettings): void {
    this.budget.reconfigure(budget);
  }

  /** A join the membership limits refused (the table's onRefusal). */
  refused(refusal: MembershipRefusal): void {
    const { reason, group, host, limit } = refusal;
    this.options.activity?.refused(refusal.port, group, reason);
    this.count(reason, refusal.port, () => ({ group, host, ...(limit === undefined ? {} : { limit }) }));
  }

  /** A join the group policy denied (`line`: the deciding rule's line of the file). */
  denied(ofport: number, group: string, line: number | undefined): void {
    this.options.activity?.refused(ofport, group, 'policy', line);
    this.count('policy', ofport, () => ({ group, ...(line === undefined ? {} : { rule: `line ${line}` }) }));
  }

  /**
   * Whether IGMP with this IP header is what no host on the pod's link sends, and is
   * ignored (counted and logged). Every IGMP message is sent with TTL 1 (RFC 1112,
   * RFC 2236 §2, RFC 3376 §4), and IGMPv3 ones with Router Alert (RFC 3376 §4); the
   * security considerations of both RFCs (§9) are about reports that did not come from
   * the link itself, which is what such a header says. Router Alert is not asked of
   * IGMPv1 and IGMPv2 reports: IGMPv1 predates it, and old IGMPv2 stacks leave it out.
   */
  offLink(ofport: number, header: { ttl: number; routerAlert: boolean }, version: number): boolean {
    if (header.ttl === 1 && (version !== 3 || header.routerAlert)) return false;
    this.count('off-link', ofport, () => ({ ttl: header.ttl, routerAlert: header.routerAlert, version }));
    return true;
  }

  /**
   * Whether MLD with this IPv6 header is what no listener on the pod's link sends, and is
   * ignored (counted and logged as off-link). Every MLD message goes with hop limit 1 and
   * Router Alert (RFC 2710 §3, RFC 3810 §5; the decoder already refuses one without Router
   * Alert), from a link-local source, and routers ignore one from any other (RFC 3810
   * §5.1.14, §5.2.13); `::`, a listener's before it has a link-local address, passes here
   * and names no host (the snooper makes no call of it).
   */
  offLinkMld(ofport: number, header: { hopLimit: number; source: string }): boolean {
    if (header.hopLimit === 1 && (header.source === '::' || isLinkLocalIPv6(header.source))) return false;
    this.count('off-link', ofport, () => ({ hopLimit: header.hopLimit, source: header.source, protocol: 'mld' }));
    return true;
  }

  /**
   * Whether IGMP from `source` on the pod port `ofport` is spoofed; if so, counts and logs it.
   * MLD is not asked here: its source is the pod's link-local address, which external_ids
   * do not hold, and which offLinkMld has checked (link-local addresses are per link, and
   * the packet came in on the pod's own port).
   */
  spoofed(ofport: number, source: string): boolean {
    const addresses = this.options.pods.addressesOf(ofport);
    if (!isSpoofedSource(source, addresses)) return false;
    if (this.options.policy().admitsExtraSource(this.options.pods.pod(ofport)?.pod, source)) return false;
    this.count('spoofed', ofport, () => ({ source, addresses: addresses?.join(',') ?? '' }));
    return true;
  }

  /** The port went away: its counts and its warnings' state go with it. */
  forgetPort(ofport: number): void {
    this.byPort.delete(ofport);
    this.budget.forget(ofport);
    for (const reason of IGMP_REFUSAL_REASONS) this.warnings.forget(`${reason}|${ofport}`);
  }

  /** For `status`: the totals since start, and each port's since it appeared. */
  view(): IgmpRefusals {
    const { pods } = this.options;
    const byPort = [...this.byPort.entries()]
      .sort(([a], [b]) => a - b)
      .map(([ofport, counts]) => ({ port: portViewOf(pods, ofport), counts: { ...counts } }));
    return { total: { ...this.total }, byPort };
  }

  /** Counts one refusal; the warning's fields are built only when the limiter writes the line. */
  private count(reason: IgmpRefusalReason, ofport: number, fields: () => Record<string, unknown> = () => ({})): void {
    this.total[reason]++;
    let counts = this.byPort.get(ofport);
    if (counts === undefined) {
      counts = zeroCounts();
      this.byPort.set(ofport, counts);
    }
    counts[reason]++;
    const refusedOnPort = counts[reason];
    this.warnings.warn(this.options.logger, `${reason}|${ofport}`, WARNINGS[reason], () => {
      const port = portViewOf(this.options.pods, ofport);
      return { port: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }), ...fields(), refusedOnPort };
    });
  }
}
