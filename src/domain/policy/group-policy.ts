/**
 * The daemon's multicast group policy: which pods may join which groups (their IGMP
 * reports), which may send to which groups (the rest is dropped by the switch), and which
 * extra source addresses a pod's IGMP may come from besides its own.
 *
 * Rules are read in order, and the first that matches the pod, the group and the
 * direction decides; when none matches, allowed. A port that is no pod (undefined) is
 * never governed, nor are the link-local groups (224.0.0.0/24: routing protocols, mDNS,
 * IGMPv3's own reports), which the pipeline floods and never snoops.
 *
 * `decide` runs for every IGMP record, under a flood tens of thousands a second: the
 * rules that match a pod are compiled once per pod into a map from group ranges to the
 * deciding rule (first-match-map.ts), so that a decision is one binary search on numbers.
 * The compiled pods are memoized, up to MAX_COMPILED_PODS of them.
 */
import type { GroupAddress } from '../../wire/ip-address.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';
import { buildFirstMatchMap, type FirstMatchMap, firstMatchAt } from './first-match-map.js';
import { type AddressRange, formatPrefix, type Ipv4Prefix, normalizeRanges, rangesContain, rangesToPrefixes } from './ipv4-prefix.js';
import { type PodGlob, podMatches } from './pod-glob.js';

export type PolicyDirection = 'join' | 'send';
export type PolicyAction = 'allow' | 'deny';

export interface PolicyDecision {
  allowed: boolean;
  /** 1-based line of the deciding rule; absent: no rule matched. */
  line?: number;
}

/** One rule, as the file gives it: every list non-empty, groups normalized. */
export interface PolicyRule {
  readonly action: PolicyAction;
  readonly pods: readonly PodGlob[];
  readonly groups: readonly AddressRange[];
  readonly directions: readonly PolicyDirection[];
  readonly line: number;
}

/** Extra IGMP source addresses for the pods of `pods`: normalized ranges of unicast addresses. */
export interface SourceGrant {
  readonly pods: readonly PodGlob[];
  readonly addresses: readonly AddressRange[];
}

/** The pods compiled and kept; past it the memo starts again (a node has at most a few hundred). */
const MAX_COMPILED_PODS = 4096;

const ALLOWED_BY_DEFAULT: PolicyDecision = Object.freeze({ allowed: true });

/** The last address of 224.0.0.0/24, which no rule governs. */
const LAST_LINK_LOCAL = 0xe00000ff;

/** What a pod's rules come to. */
interface CompiledPod {
  readonly join: FirstMatchMap;
  readonly send: FirstMatchMap;
  readonly sources: readonly AddressRange[];
  deniedSend?: readonly Ipv4Prefix[];
}

export class GroupPolicy {
  private readonly compiled = new Map<string, CompiledPod>();
  /** Per rule, the one decision object it returns (frozen: shared by every call). */
  private readonly decisions: readonly PolicyDecision[];
  readonly fingerprint: string;

  constructor(
    private readonly rules: readonly PolicyRule[],
    private readonly grants: readonly SourceGrant[],
  ) {
    this.decisions = rules.map((rule) => Object.freeze({ allowed: rule.action === 'allow', line: rule.line }));
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
    const value = parseIPv4(group);
    if (value === undefined || value <= LAST_LINK_LOCAL) return ALLOWED_BY_DEFAULT;
    const compiled = this.compile(pod);
    const order = firstMatchAt(direction === 'join' ? compiled.join : compiled.send, value);
    return order < 0 ? ALLOWED_BY_DEFAULT : this.decisions[order]!;
  }

  /**
   * Where this pod may not send: the groups whose first matching 'send' rule denies, as
   * the fewest disjoint prefixes, sorted by address (for the switch's drop flows).
   */
  deniedSendPrefixes(pod: string | undefined): readonly Ipv4Prefix[] {
    if (pod === undefined || this.rules.length === 0) return [];
    const compiled = this.compile(pod);
    if (compiled.deniedSend === undefined) {
      const { starts, ends, orders } = compiled.send;
      const denied: AddressRange[] = [];
      for (let index = 0; index < starts.length; index++) {
        // Every range lies in 224.0.0.0/4: cutting its start clears it of link-local groups.
        const start = Math.max(starts[index]!, LAST_LINK_LOCAL + 1);
        if (this.rules[orders[index]!]!.action === 'deny' && start <= ends[index]!) denied.push({ start, end: ends[index]! });
      }
      compiled.deniedSend = Object.freeze(rangesToPrefixes(normalizeRanges(denied)));
    }
    return compiled.deniedSend;
  }

  /**
   * Whether IGMP from `source` is allowed for this pod by the policy's sourceAddresses
   * (the pod's own address is the daemon's to check). A port that is no pod is not
   * governed: true.
   */
  admitsExtraSource(pod: string | undefined, source: string): boolean {
    if (pod === undefined) return true;
    if (this.grants.length === 0) return false;
    const value = parseIPv4(source);
    return value !== undefined && rangesContain(this.compile(pod).sources, value);
  }

  private compile(pod: string): CompiledPod {
    const known = this.compiled.get(pod);
    if (known !== undefined) return known;
    const join: { order: number; ranges: readonly AddressRange[] }[] = [];
    const send: { order: number; ranges: readonly AddressRange[] }[] = [];
    this.rules.forEach((rule, order) => {
      if (!rule.pods.some((glob) => podMatches(glob, pod))) return;
      if (rule.directions.includes('join')) join.push({ order, ranges: rule.groups });
      if (rule.directions.includes('send')) send.push({ order, ranges: rule.groups });
    });
    const sources = normalizeRanges(this.grants.filter((grant) => grant.pods.some((glob) => podMatches(glob, pod))).flatMap((grant) => grant.addresses));
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
  const prefixes = (ranges: readonly AddressRange[]) => rangesToPrefixes(normalizeRanges(ranges)).map(formatPrefix);
  return JSON.stringify({
    rules: rules.map((rule) => [rule.action, globs(rule.pods), prefixes(rule.groups), [...new Set(rule.directions)].sort()]),
    sourceAddresses: grants.map((grant) => JSON.stringify([globs(grant.pods), prefixes(grant.addresses)])).sort(),
  });
}
