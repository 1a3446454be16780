/**
 * The group policy the daemon enforces now, where it came from and when: replaced as a
 * whole by a reload, so a decision never sees half of an old policy and half of a new
 * one. It also gives each pod the ranges the switch must drop from it, as flow matches.
 */
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import { GroupPolicy } from '../../../domain/policy/group-policy.js';
import type { GroupAddress } from '../../../wire/ip-address.js';
import { ipPrefixMask } from '../../../domain/policy/ip-prefix.js';
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

  /** What pod `pod` may not send to, as the ranges of the switch's drop flows. */
  deniedSend(pod: string | undefined): GroupRange[] {
    return this.policy
      .deniedSendPrefixes(pod)
      .map((prefix) => ({ address: prefix.address, mask: ipPrefixMask(prefix) }));
  }

  view(portsDenyingSend: number): GroupPolicyView {
    return {
      ...(this.file === undefined ? {} : { file: this.file }),
      rules: this.policy.ruleCount,
      loadedAt: new Date(this.loadedAtMs).toISOString(),
      portsDeniedSending: portsDenyingSend,
    };
  }
}
