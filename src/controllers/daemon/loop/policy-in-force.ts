/**
 * The group policy the daemon enforces now, where it came from and when: replaced as a
 * whole by a reload, so a decision never sees half of an old policy and half of a new
 * one. It also gives each pod the ranges the switch must drop from it, as flow matches.
 */
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import { GroupPolicy } from '../../../domain/policy/group-policy.js';
import type { GroupAddress } from '../../../wire/ip-address.js';
import {
  type IpPrefix,
  ipPrefixMask,
  ipRangesToPrefixes,
  LINK_SCOPE_RANGES,
  MULTICAST_RANGES,
  subtractIpRanges,
} from '../../../domain/policy/ip-prefix.js';
import type { GroupRange } from '../../../domain/pipeline/port-entries.js';
import type { GroupPolicyView } from '../../../transport/control/daemon-view.js';
import type { DaemonClock, LoadedPolicy } from './ports.js';

export class PolicyInForce {
  private policy: GroupPolicy;
  private file: string | undefined;
  private loadedAtMs: number;

  constructor(
    loaded: LoadedPolicy | undefined,
    private readonly clock: DaemonClock,
  ) {
    this.policy = loaded?.policy ?? GroupPolicy.allowAll();
    this.file = loaded?.file;
    this.loadedAtMs = clock.wallMs();
  }

  get current(): GroupPolicy {
    return this.policy;
  }

  /**
   * Takes `policy` (its rule lines may have moved, so it is kept even when it decides alike); whether it decides
   * otherwise.
   */
  replace(policy: GroupPolicy, file: string | undefined): boolean {
    const changed = policy.fingerprint !== this.policy.fingerprint;
    this.policy = policy;
    this.file = file;
    this.loadedAtMs = this.clock.wallMs();
    return changed;
  }

  /** Whether the policy denies pod port `port` its membership of `group` (the ports as `pods` knows them). */
  deniesMember(pods: PodPorts): (group: GroupAddress, port: number) => boolean {
    const policy = this.policy;
    return (group, port) => !policy.decide(pods.pod(port)?.pod, group, 'join').allowed;
  }

  /**
   * What pod `pod` may not send to, as the ranges of the switch's drop flows, one flow each. More than `maxRanges`
   * (scattered groups, on every pod port: the switch's table would grow as pods × ranges) and the pod may send to
   * link-local groups only (`capped`): the policy is kept, more strictly, in a fixed few flows.
   */
  deniedSend(pod: string | undefined, maxRanges: number): { ranges: GroupRange[]; denied: number; capped: boolean } {
    const prefixes = this.policy.deniedSendPrefixes(pod);
    const capped = prefixes.length > maxRanges;
    return { ranges: (capped ? allButLinkScope() : prefixes).map(rangeOf), denied: prefixes.length, capped };
  }

  view(ports: { denyingSend: number; sendCapped: number }): GroupPolicyView {
    return {
      ...(this.file === undefined ? {} : { file: this.file }),
      rules: this.policy.ruleCount,
      loadedAt: new Date(this.loadedAtMs).toISOString(),
      portsDeniedSending: ports.denyingSend,
      portsSendCapped: ports.sendCapped,
    };
  }
}

const rangeOf = (prefix: IpPrefix): GroupRange => ({ address: prefix.address, mask: ipPrefixMask(prefix) });

/**
 * Every multicast group but the link-scope ones (224.0.0.0/24, ffx0::/16 to ffx2::/16: IGMP, MLD, mDNS and their kin,
 * which the switch floods or takes up and no rule governs): what a pod past the bound may not send to.
 */
let ALL_BUT_LINK_SCOPE: readonly IpPrefix[] | undefined;

function allButLinkScope(): readonly IpPrefix[] {
  ALL_BUT_LINK_SCOPE ??= ipRangesToPrefixes(
    subtractIpRanges([MULTICAST_RANGES.ipv4, MULTICAST_RANGES.ipv6], LINK_SCOPE_RANGES),
  );
  return ALL_BUT_LINK_SCOPE;
}
