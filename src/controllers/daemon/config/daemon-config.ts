/**
 * The daemon's configuration, as the running daemon takes it: every setting checked and
 * in its unit (milliseconds, numbers, absolute paths). settings.ts says which setting
 * fills which field.
 */
import type { QuerierElectionMode } from '../../../domain/membership/querier-election.js';
import type { MembershipTiming } from '../../../domain/membership/membership-table.js';
import type { MembershipLimitSettings } from '../../../domain/membership/membership-limits.js';
import type { PacketBudgetSettings } from '../../../domain/membership/packet-budget.js';
import type { OvsTarget } from '../../../adapters/ovs/locations.js';
import type { PipelineConfig } from '../../../domain/pipeline/config.js';
import type { LogFormat, LogLevel } from '../../../runtime/logger.js';
import type { PeerKeyRing } from '../../../domain/peers/peer-keys.js';
import type { HostAddress } from '../../../wire/ip-address.js';
import type { IpPrefix } from '../../../domain/policy/ip-prefix.js';
import type { MldVersion } from '../../../packet/mld/message.js';
import type { QueryVersion } from './setting-values.js';

/** Tunnel mode's settings (tunnel-settings.ts), checked and with their defaults worked out (tunnel-config.ts). */
export interface TunnelConfig {
  /** The flow-based tunnel port on the bridge (type geneve or vxlan, options:remote_ip=flow). */
  port: string;
  /** The other nodes' underlay addresses, deduplicated, this node's own address left out (peer-set.ts). */
  peers: readonly HostAddress[];
  /** Where the peers were read from, re-read on SIGHUP and when it changes; undefined: --peers only. */
  peersFile?: string;
  /**
   * The cluster keys of --peer-key-file (read again on SIGHUP): every message to the peers is sealed with the first,
   * and a peer's message is believed only under a seal of one of them. Undefined: peers are believed by address alone.
   */
  peerKeys?: PeerKeyRing;
  /**
   * This node's underlay address: the source of its IGMPv3 reports to the peers, and what they see as the tunnel's
   * outer source.
   */
  nodeAddress: HostAddress;
  /**
   * The pods' address ranges of the whole cluster. With underlay routing on too, multicast
   * from these sources that arrives on a multicast interface is not routed to the gateway:
   * the tunnel brought it already, and a second copy would reach the members. Undefined or
   * empty: none given (tunnel mode alone needs none).
   */
  clusterCidrs?: readonly IpPrefix[];
  /** How often every peer gets this node's full state (default 30 s). */
  refreshIntervalMs: number;
  /**
   * A peer's membership of a group lasts this long after its last report of it (default robustness × refresh + 10 s =
   * 70 s).
   */
  peerTimeoutMs: number;
  /** Groups one peer may be a member of on this node (default: the node's maxGroups). */
  maxGroupsPerPeer: number;
}

export interface DaemonConfig {
  target: OvsTarget;
  pipeline: PipelineConfig;
  /** OVS port name of the node's gateway, also the kernel interface of that name in the daemon's netns. */
  gateway?: string;
  /** Uplinks: kernel interfaces that join groups upstream and route (S,G) traffic. */
  multicastInterfaces: string[];
  /** Query Interval (RFC 3376 §8.2). */
  queryIntervalMs: number;
  /** Max Response Time of general queries (§8.3); below queryIntervalMs. */
  queryResponseIntervalMs: number;
  /** Versions of the general queries sent: distinct, ascending. */
  queryVersions: QueryVersion[];
  /** MLD versions of the general queries sent, beside the IGMP ones: distinct, ascending; empty: no MLD queries. */
  mldQueryVersions: MldVersion[];
  /** auto: stop general queries on a port while a querier with a lower address queries there; always; never. */
  querierElection: QuerierElectionMode;
  /** Robustness Variable (QRV, §8.1), 1 to 7. */
  robustness: number;
  /** Last Member Query Interval (§8.8); the Last Member Query Count is the robustness. */
  lastMemberQueryIntervalMs: number;
  fastLeave: boolean;
  /** Sync workers (OVS and kernel programming in parallel, one group each). */
  workers: number;
  syncBackoffMinMs: number;
  syncBackoffMaxMs: number;
  /** An (S,G) route whose packet counter has not moved for this long is removed. */
  routeIdleTimeoutMs: number;
  /** Groups one pod port may be a member of (a new group past it is refused). */
  maxGroupsPerPort: number;
  /** Sources in one port's filter of one group (a new source past it is refused). */
  maxSourcesPerGroup: number;
  /** Groups with members on the node, each an OVS group (a new group past it is refused). */
  maxGroups: number;
  /** The source-specific multicast range (RFC 4607): its groups are joined for named sources only; empty: none. */
  ssmRange: readonly IpPrefix[];
  /** Whether each pod port's IGMP goes through its own OpenFlow meter (at igmpRatePerPort and igmpBurstPerPort). */
  igmpMeter: boolean;
  /**
   * IGMP messages a second one pod port may send, on average: its meter drops the excess in OVS, the daemon's budget
   * what still comes.
   */
  igmpRatePerPort: number;
  /** IGMP messages one pod port may send at once. */
  igmpBurstPerPort: number;
  /**
   * Whether each member pod port gets a sender counting flow per entry of each of its groups (what it sent; what it
   * received needs none).
   */
  trafficCounters: boolean;
  /** (pod port, group) pairs with sender counting flows, and with per-pod series in the metrics. */
  maxTrafficCounters: number;
  /**
   * The most send-policy drop flows one pod port gets, one a range of groups the policy denies it: a pod whose denied
   * ranges are more may send to link-local groups only (the policy kept, more strictly, in as few flows).
   */
  maxSendDenyRanges: number;
  /** The group policy file; undefined: none (every pod may join and send to every group). */
  groupPolicy?: string;
  stateDir: string;
  controlSocket: string;
  /** HOST:PORT of the Prometheus endpoint; undefined when disabled. */
  metricsAddress?: string;
  logFormat: LogFormat;
  logLevel: LogLevel;
  /** Tunnel mode: membership and traffic shared with the peers through a flow-based tunnel port; undefined: off. */
  tunnel?: TunnelConfig;
}

/** The fields of DaemonConfig that one setting fills alone (target, pipeline and tunnel are assembled from several). */
export type SettingField = Exclude<keyof DaemonConfig, 'target' | 'pipeline' | 'tunnel'>;

/** The membership limits of the configuration (see domain/membership/membership-limits.ts). */
export function membershipLimits(config: DaemonConfig): MembershipLimitSettings {
  return {
    maxGroupsPerPort: config.maxGroupsPerPort,
    maxSourcesPerGroup: config.maxSourcesPerGroup,
    maxGroups: config.maxGroups,
    ssmRange: config.ssmRange,
  };
}

/** The settings a pod port's own entries (its meter, its send-policy drops) are made of: a change redoes them all. */
export const PORT_ENTRY_SETTINGS = [
  'igmpMeter',
  'igmpRatePerPort',
  'igmpBurstPerPort',
  'maxSendDenyRanges',
] as const satisfies readonly (keyof DaemonConfig)[];

/** The per-port IGMP budget of the configuration (see domain/membership/packet-budget.ts). */
export function packetBudget(config: DaemonConfig): PacketBudgetSettings {
  return { ratePerSecond: config.igmpRatePerPort, burst: config.igmpBurstPerPort };
}

export function membershipTiming(config: DaemonConfig): MembershipTiming {
  return {
    groupMembershipIntervalMs: config.robustness * config.queryIntervalMs + config.queryResponseIntervalMs,
    // The Last Member Query Count defaults to the Robustness Variable (RFC 3376 §8.9).
    lastMemberQueryTimeMs: config.robustness * config.lastMemberQueryIntervalMs,
  };
}
