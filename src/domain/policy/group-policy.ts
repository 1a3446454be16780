/**
 * The daemon's multicast group policy: which pods may join which groups (their IGMP or
 * MLD reports), which may send to which groups (the rest is dropped by the switch), and
 * which extra source addresses a pod's reports may come from besides its own.
 *
 * Rules are read in order, and the first that matches the pod, the group and the
 * direction decides; when none matches, allowed. A rule's groups may be of either family
 * (a rule without groups covers all multicast of both); a group is decided by the rules
 * that name its family, as one of the other never matches it. A port that is no pod
 * (undefined) is never governed, nor are the link-scope groups (224.0.0.0/24, ff02::/16
 * and the like: routing protocols, mDNS, Neighbor Discovery, the reports' own groups),
 * which the pipeline floods and never snoops.
 *
 * `decide` runs for every membership record, under a flood tens of thousands a second:
 * the rules that match a pod are compiled once per pod into a map from group ranges to
 * the deciding rule (first-match-map.ts), so that a decision is one binary search on
 * numbers. The compiled pods are memoized, up to MAX_COMPILED_PODS of them.
 */
import type { GroupAddress } from '../../wire/ip-address.js';
import { buildFirstMatchMap, type FirstMatchMap, firstMatchAt } from './first-match-map.js';
import {
  addressPoint,
  formatIpPrefix,
  type IpPrefix,
  type IpRange,
  ipRangesContain,
  ipRangesToPrefixes,
  LINK_SCOPE_RANGES,
  normalizeIpRanges,
  subtractIpRanges,
} from './ip-prefix.js';
import { type PodGlob, podMatches } from './pod-glob.js';

export type PolicyDirection = 'join' | 'send';
export type PolicyAction = 'allow' | 'deny';

export interface PolicyDecision {
  allowed: boolean;
  /** 1-based line of the deciding rule; absent: no rule matched. */
  line?: number;
}

/**
 * One rule, as the file gives it: every list non-empty, groups normalized (ranges of ip-prefix.ts's line, either
 * family).
 */
export interface PolicyRule {
  readonly action: PolicyAction;
  readonly pods: readonly PodGlob[];
  readonly groups: readonly IpRange[];
  readonly directions: readonly PolicyDirection[];
  readonly line: number;
}

/** Extra report source addresses for the pods of `pods`: normalized ranges of unicast addresses, either family. */
export interface SourceGrant {
  readonly pods: readonly PodGlob[];
  readonly addresses: readonly IpRange[];
}

/** The pods compiled and kept; past it the memo starts again (a node has at most a few hundred). */
const MAX_COMPILED_PODS = 4096;

const ALLOWED_BY_DEFAULT: PolicyDecision = Object.freeze({ allowed: true });

/** What a pod's rules come to. */
interface CompiledPod {
  readonly join: FirstMatchMap;
  readonly send: FirstMatchMap;
  readonly sources: readonly IpRange[];
  deniedSend?: readonly IpPrefix[];
}

export class GroupPolicy {
  private readonly compiled = new Map<string, CompiledPod>();
  /** Per rule, the one decision object it returns (frozen: shared by every call). */
  private readonly decisions: readonly PolicyDecision[];
  /** Per rule, its groups without the link-scope ones: a link-scope group is then in no rule's ranges, and allowed. */
  private readonly governed: readonly (readonly IpRange[])[];
  readonly fingerprint: string;

  constructor(
    private readonly rules: readonly PolicyRule[],
    private readonly grants: readonly SourceGrant[],
  ) {
    this.decisions = rules.map((rule) => Object.freeze({ allowed: rule.action === 'allow', line: rule.line }));
    this.governed = rules.map((rule) => subtractIpRanges(rule.groups, LINK_SCOPE_RANGES));
    this.fingerprint = fingerprintOf(rules, grants);
  }

  static allowAll(): GroupPolicy {
    return new GroupPolicy([], []);
  }

  get ruleCount(): number {
    return this.rules.length;
  }

  decide(pod: string | undefined, group: GroupAddress, direction: PolicyDirection): PolicyDecision {
    if (pod === undefined || this.rules.length === 0) return ALLOWED_BY_DEFAULT;
    const value = addressPoint(group);
    if (value === undefined) return ALLOWED_BY_DEFAULT;
    const compiled = this.compile(pod);
    const order = firstMatchAt(direction === 'join' ? compiled.join : compiled.send, value);
    return order < 0 ? ALLOWED_BY_DEFAULT : this.decisions[order]!;
  }

  /**
   * Where this pod may not send: the groups whose first matching 'send' rule denies, as
   * the fewest disjoint prefixes of each family, sorted by address, IPv4 first (for the
   * switch's drop flows).
   */
  deniedSendPrefixes(pod: string | undefined): readonly IpPrefix[] {
    if (pod === undefined || this.rules.length === 0) return [];
    const compiled = this.compile(pod);
    if (compiled.deniedSend === undefined) {
      const { starts, ends, orders } = compiled.send;
      const denied: IpRange[] = [];
      for (let index = 0; index < starts.length; index++) {
        if (this.rules[orders[index]!]!.action === 'deny') denied.push({ start: starts[index]!, end: ends[index]! });
      }
      compiled.deniedSend = Object.freeze(ipRangesToPrefixes(normalizeIpRanges(denied)));
    }
    return compiled.deniedSend;
  }

  /**
   * Whether reports from `source` (IGMP or MLD) are allowed for this pod by the policy's sourceAddresses
   * (the pod's own address is the daemon's to check). A port that is no pod is not
   * governed: true.
   */
  admitsExtraSource(pod: string | undefined, source: string): boolean {
    if (pod === undefined) return true;
    if (this.grants.length === 0) return false;
    const value = addressPoint(source);
    return value !== undefined && ipRangesContain(this.compile(pod).sources, value);
  }

  private compile(pod: string): CompiledPod {
    const known = this.compiled.get(pod);
    if (known !== undefined) return known;
    const join: { order: number; ranges: readonly IpRange[] }[] = [];
    const send: { order: number; ranges: readonly IpRange[] }[] = [];
    this.rules.forEach((rule, order) => {
      if (!rule.pods.some((glob) => podMatches(glob, pod))) return;
      if (rule.directions.includes('join')) join.push({ order, ranges: this.governed[order]! });
      if (rule.directions.includes('send')) send.push({ order, ranges: this.governed[order]! });
    });
    const sources = normalizeIpRanges(
      this.grants
        .filter((grant) => grant.pods.some((glob) => podMatches(glob, pod)))
        .flatMap((grant) => grant.addresses),
    );
    const compiled: CompiledPod = { join: buildFirstMatchMap(join), send: buildFirstMatchMap(send), sources };
    if (this.compiled.size >= MAX_COMPILED_PODS) this.compiled.clear();
    this.compiled.set(pod, compiled);
    return compiled;
  }
}

/**
 * The policy as canonical text: globs sorted and deduplicated (a list with every pod is
 * just every pod), groups and addresses as their fewest prefixes, directions sorted, the
 * grants sorted (their order does not matter). Lines are left out: moving a rule down by
 * a comment decides nothing differently.
 */
function fingerprintOf(rules: readonly PolicyRule[], grants: readonly SourceGrant[]): string {
  const globs = (pods: readonly PodGlob[]) => {
    const texts = [...new Set(pods.map((glob) => glob.text))].sort();
    return texts.includes('*/*') ? ['*/*'] : texts;
  };
  const prefixes = (ranges: readonly IpRange[]) => ipRangesToPrefixes(normalizeIpRanges(ranges)).map(formatIpPrefix);
  return JSON.stringify({
    rules: rules.map((rule) => [
      rule.action,
      globs(rule.pods),
      prefixes(rule.groups),
      [...new Set(rule.directions)].sort(),
    ]),
    sourceAddresses: grants.map((grant) => JSON.stringify([globs(grant.pods), prefixes(grant.addresses)])).sort(),
  });
}
