/**
 * The multicast pipeline: which OpenFlow flows and OVS groups express "group G goes to
 * member ports {p1..pn}" on a bridge that may carry other traffic too. Pure: it builds
 * and reads entries; the OpenFlow adapter (openflow-entries.ts) puts them on the wire.
 * This class puts a group's entries together and answers for the whole pipeline; the flows
 * that are no group's are built in base-flows.ts, tunnel mode's ingress and drop flows in
 * tunnel-flows.ts, the sender counting rows in send-counters.ts, the chains in group-chain.ts.
 *
 * All flows live in one table (config.table, default 0), above the bridge's own flows:
 *
 *   priority       match                              actions                 kind
 *   igmp+2 (302)   ip, nw_proto=2, in_port=<queried>  CONTROLLER              `query` listening (expires)
 *   igmp+2 (302)   ip, nw_proto=2, in_port=<tunnel>,  CONTROLLER              tunnel mode: a peer's reports
 *                    tun_src=<peer>
 *   igmp+1 (301)   ip, nw_proto=2, in_port=<tunnel>   (drop)                  tunnel mode: anyone else's
 *   igmp+1 (301)   ip, nw_proto=2, in_port=<pod>      meter:<m(pod)>,         IGMP snooping (daemon): a pod's
 *                                                     CONTROLLER              IGMP, through its meter
 *   igmp (300)     ip, nw_proto=2                     CONTROLLER              IGMP snooping (daemon): any port
 *   sendPolicy     ip, in_port=<pod>, nw_dst=<range>  (drop)                  what the pod may not send
 *     (280)
 *   sourceIngress  ip, in_port=<tunnel|gw>,           group:<link 1 of (S,G)> tunnel mode: one source to the
 *     (275)          nw_src=<S>, nw_dst=<G>           or (drop)               pods that want it, or none
 *   ingress (270)  ip, in_port=<tunnel|gw>, nw_dst=<G> group:<link 1 of G>    tunnel mode: to the pods only
 *   sourceSend     ip, in_port=<pod>, nw_src=<S>,      group:<id(S,G)>         sender counting (daemon): what one
 *     (215)          nw_dst=<G>                                                 pod sent to one (S,G) entry
 *   tunnelDrop     ip, in_port=<tunnel>, 224.0.0.0/4   (drop)                  tunnel mode: anything else
 *     (260)                                                                   from other nodes
 *   linkLocal(250) ip, nw_dst=224.0.0.0/24            FLOOD                   link-local control traffic
 *   gatewayDrop    ip, in_port=<gw>, 224.0.0.0/4      (drop)                  tunnel mode: anything else
 *     (245)                                                                   from the gateway
 *   sourceGroup    ip, nw_src=<S>, nw_dst=<G>         group:<id(S,G)>         one source of a group whose
 *     (210)                                                                   ports filter it (IGMPv3)
 *   send (205)     ip, in_port=<pod>, nw_dst=<G>      group:<id(G)>           sender counting (daemon): what one
 *                                                                             pod sent to G's (*,G) entry
 *   group (200)    ip, nw_dst=<G>                     group:<id(G)>           a group with members here
 *   unknown (190)  ip, nw_dst=224.0.0.0/4             output:<gateway>        receivers outside (daemon;
 *                                                     or drop, without one)
 *   (below)        the bridge's own flows (NORMAL, other controllers): everything else
 *
 * The rows that name 224.0.0.0/4 or IGMP are written once for each family (FAMILIES):
 * IPv6's match ipv6, ipv6_dst=ff00::/8, its link-scope flood ff02::/ff0f:: (link scope
 * whatever the flags: Neighbor Discovery's solicited-node groups, all nodes, all
 * routers), and its membership rows the four MLD types (ipv6, nw_proto=58,
 * icmpv6_type=130|131|132|143), so that the rest of ICMPv6, Neighbor Discovery among
 * it, never reaches the controller. A group's rows match its own family's destination.
 *
 * The meter of a pod port (m(pod) = meterIdBase + its port number) drops the pod's IGMP
 * past a rate in the switch, so that a flooding pod costs the daemon, and the switch's
 * slow path, no more than that rate.
 *
 * The OVS group of G (type ALL) has one bucket per member port: OVS copies the packet to
 * each, and skips the port it came in on, so a member that sends does not hear itself.
 * A group with more members than one GROUP_MOD can carry is chained: its last bucket
 * jumps to a second group holding the rest, and so on. In tunnel mode link 0 holds the
 * gateway and the peers, and the pods start at link 1 (tunnel-layout.ts).
 *
 * A source of G whose receivers differ from those of G's other sources (source-split.ts)
 * has an (S,G) entry of its own: its flow, above G's, and its chain, built the same way
 * with ids of its own (group-ids.ts). Both flows' cookies carry G; the source is read
 * back from the match.
 *
 * OVS counts each flow and each bucket, but one flow's counter cannot be split by the
 * port a packet came in on. So what a pod sent to an entry has a row of its own, the
 * sender counting row (kind SendCounter): the entry's match plus the pod's in_port, the
 * entry's actions, just above the entry's flow (and, for (*,G), below the (S,G) flows),
 * so that traffic goes exactly where it went without it. What a pod received is the
 * counter of its bucket in the entry's chain (the daemon reads GROUP statistics).
 */
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';
import { familyOf } from '../family/families.js';
import type { MulticastFamily } from '../family/multicast-family.js';
import { chainBlocks, type PipelineConfig, sourcePriorities } from './config.js';
import { FlowCookieFlag, FlowKind, prefixCookie, FLOW_COOKIE_PREFIX_MASK } from './flow-cookie.js';
import type { ForwardingTarget } from './forwarding-key.js';
import { GroupIdAllocation } from './group-ids.js';
import { readInstalledEntries } from './installed-reader.js';
import type {
  FlowEntry,
  GroupEntry,
  GroupForwarding,
  GroupMembership,
  InstalledPipeline,
  PipelineLimits,
} from './pipeline-entries.js';
import { tunnelLayout } from './tunnel-layout.js';
import * as baseFlows from './base-flows.js';
import { groupChain } from './group-chain.js';
import { pipelineCookie } from './pipeline-cookie.js';
import { sendCounterRows } from './send-counters.js';
import * as tunnelFlows from './tunnel-flows.js';

export type {
  Bucket,
  FlowAction,
  FlowEntry,
  FlowMatch,
  GroupEntry,
  GroupForwarding,
  GroupMembership,
  InstalledGroup,
  InstalledPipeline,
  PipelineLimits,
  PortMeter,
  TunnelMembers,
} from './pipeline-entries.js';

export class MulticastPipeline {
  /** Which OVS group ids the groups use: held per pipeline, taken back from the switch by readInstalled. */
  readonly groupIds: GroupIdAllocation;

  constructor(
    readonly config: PipelineConfig,
    readonly limits: PipelineLimits,
  ) {
    this.groupIds = new GroupIdAllocation(config);
  }

  /** Cookie and mask that select every flow of ours, and nobody else's. */
  get cookieMatch(): { cookie: bigint; mask: bigint } {
    return { cookie: prefixCookie(this.config.cookiePrefix), mask: FLOW_COOKIE_PREFIX_MASK };
  }

  /** The OVS group id of `group`, or of the `link`-th group of its chain. */
  groupId(group: GroupAddress, link = 0): number {
    return this.groupIds.idOf(group, link);
  }

  /** Whether an OVS group id lies in our range (head or chain). */
  ownsGroupId(groupId: number): boolean {
    return this.groupIds.owns(groupId);
  }

  /** The most members one group can have, chained over every block of the range. */
  get maxMembers(): number {
    const perLink = this.limits.maxBucketsPerGroup - 1; // one bucket of each link but the last chains on
    return perLink * chainBlocks(this.config) + 1;
  }

  /** The OVS group id of the (S,G) chain of `source` and `group`, or of its `link`-th group. */
  sourceGroupId(source: SourceAddress, group: GroupAddress, link = 0): number {
    return this.groupIds.idOfSource(source, group, link);
  }

  /**
   * The groups and the flow that forward `membership`, its (S,G) entry when it has a
   * `source` (in tunnel mode, its ingress flows too: see tunnel-layout.ts). Throws
   * RangeError if it has too many members, UsageError if more peers than one GROUP_MOD carries.
   */
  forwarding(membership: GroupMembership): GroupForwarding {
    const learned = membership.learned === true;
    const { group, source } = membership;
    const target: ForwardingTarget = source === undefined ? { group } : { group, source };
    const name = source === undefined ? group : `(${source}, ${group})`;
    const flow = source === undefined ? this.groupFlow(group, learned) : this.sourceFlow({ group, source, learned });
    const sourced = source === undefined ? {} : { source };
    const counters = this.sendCounters(flow, membership.counterPorts ?? []);
    const counted = counters.length === 0 ? {} : { counters };
    if (membership.tunnel !== undefined) {
      const layout = tunnelLayout(membership, this.limits);
      // Link 0 is the tunnel's.
      const capacity = (this.limits.maxBucketsPerGroup - 1) * (chainBlocks(this.config) - 1) + 1;
      if (layout.pods.length > capacity) {
        throw new RangeError(
          `${name} has ${layout.pods.length} pod ports; at most ${capacity} fit in the group id range in tunnel mode`,
        );
      }
      const podLinks = this.chain(target, layout.pods, 1);
      const linkOne = podLinks.length === 0 ? undefined : this.groupIds.idOfTarget(target, 1);
      const head: GroupEntry = { groupId: this.groupIds.idOfTarget(target), buckets: layout.headBuckets(linkOne) };
      const ingress =
        source !== undefined
          ? layout.ingressPorts.map((inPort) => this.sourceIngressForward({ group, source, inPort, linkOne, learned }))
          : linkOne === undefined
            ? []
            : layout.ingressPorts.map((inPort) => this.ingressForward({ group, inPort, linkOne, learned }));
      return { group, ...sourced, groups: [...podLinks, head], flow, ingress, ...counted };
    }
    const ports = [...new Set(membership.ports)].sort((a, b) => a - b);
    if (ports.length > this.maxMembers) {
      throw new RangeError(
        `${name} has ${ports.length} member ports; at most ${this.maxMembers} fit in the group id range`,
      );
    }
    return { group, ...sourced, groups: this.chain(target, ports, 0), flow, ...counted };
  }

  /** The sender counting rows of an entry whose flow is `flow`, one per pod port (./send-counters.ts). */
  sendCounters(flow: FlowEntry, ports: readonly number[]): FlowEntry[] {
    return sendCounterRows(this.config, flow, ports);
  }

  /** The links of the chain that outputs to `ports`, tail first, from link `firstLink` on (./group-chain.ts). */
  private chain(target: ForwardingTarget, ports: readonly number[], firstLink: number): GroupEntry[] {
    const settings = { groupIds: this.groupIds, maxBucketsPerGroup: this.limits.maxBucketsPerGroup };
    return groupChain(settings, target, ports, firstLink);
  }

  /** Tunnel mode: `group`'s traffic from the tunnel or the gateway → its local pods (./tunnel-flows.ts). */
  ingressForward(options: { group: GroupAddress; inPort: number; linkOne: number; learned?: boolean }): FlowEntry {
    return tunnelFlows.ingressForward(this.config, options);
  }

  /** Tunnel mode: `source`'s traffic of `group` from the tunnel or the gateway → its local pods, or dropped. */
  sourceIngressForward(options: {
    group: GroupAddress;
    source: SourceAddress;
    inPort: number;
    linkOne: number | undefined;
    learned?: boolean;
  }): FlowEntry {
    return tunnelFlows.sourceIngressForward(this.config, options);
  }

  /** Tunnel mode: any other multicast from the tunnel port → dropped, one flow a family. */
  tunnelDrop(tunnelOfport: number): FlowEntry[] {
    return tunnelFlows.tunnelDrop(this.config, tunnelOfport);
  }

  /**
   * Tunnel mode: the tunnel's membership messages → the controller from a peer (through the tunnel's meter when
   * `metered`), else dropped (tunnel-flows.ts).
   */
  tunnelMembership(tunnel: { ofport: number; peers: readonly string[]; metered?: boolean }): FlowEntry[] {
    return tunnelFlows.tunnelMembership(this.config, tunnel);
  }

  /** The meter of the tunnel's membership messages from the peers. */
  get tunnelMeterId(): number {
    return baseFlows.tunnelMeterId(this.config);
  }

  /** Tunnel mode: any other multicast from the gateway → dropped, one flow a family. */
  gatewayDrop(gatewayOfport: number): FlowEntry[] {
    return tunnelFlows.gatewayDrop(this.config, gatewayOfport);
  }

  groupFlow(group: GroupAddress, learned = false): FlowEntry {
    const family = familyOf(group);
    return {
      table: this.config.table,
      priority: this.config.priorities.group,
      cookie: this.cookie(FlowKind.GroupForward, family.cookieValue(group), learned ? FlowCookieFlag.Learned : 0),
      match: family.groupMatch(group),
      actions: [{ type: 'group', groupId: this.groupId(group) }],
    };
  }

  /**
   * `source`'s traffic of `group` → the head of its (S,G) chain, above the group's flow. The cookie carries the group,
   * the match the source.
   */
  sourceFlow(options: { group: GroupAddress; source: SourceAddress; learned?: boolean }): FlowEntry {
    const family = familyOf(options.group);
    return {
      table: this.config.table,
      priority: sourcePriorities(this.config.priorities).sourceGroup,
      cookie: this.cookie(
        FlowKind.SourceForward,
        family.cookieValue(options.group),
        options.learned === true ? FlowCookieFlag.Learned : 0,
      ),
      match: { ...family.groupMatch(options.group), ipSrc: options.source },
      actions: [{ type: 'group', groupId: this.sourceGroupId(options.source, options.group) }],
    };
  }

  /** Membership messages → the controller, from one port or every port (./base-flows.ts). */
  membershipToController(ofport?: number): FlowEntry[] {
    return baseFlows.membershipToController(this.config, ofport);
  }

  /** The meter of pod port `ofport`'s IGMP. */
  meterIdOf(ofport: number): number {
    return baseFlows.meterIdOf(this.config, ofport);
  }

  /** The pod port whose IGMP meter `meterId` is, or undefined when the id is not in our range. */
  meterPort(meterId: number): number | undefined {
    return baseFlows.meterPort(this.config, meterId);
  }

  /** Membership messages from a pod port → its meter → the controller. */
  membershipToControllerMetered(ofport: number): FlowEntry[] {
    return baseFlows.membershipToControllerMetered(this.config, ofport);
  }

  /** Multicast from pod port `ofport` to `range` → dropped. */
  sendPolicyDrop(ofport: number, range: { address: string; mask: string }): FlowEntry {
    return baseFlows.sendPolicyDrop(this.config, ofport, range);
  }

  /** The membership messages of `family` from one queried port → the controller, while a query listens. */
  queryProbe(
    family: MulticastFamily,
    probe: { ofport: number; runId: number; hardTimeoutSeconds: number },
  ): FlowEntry[] {
    return baseFlows.queryProbe(this.config, family, probe);
  }

  /** Link-scope multicast → flooded, one flow a family. */
  linkLocalFlood(): FlowEntry[] {
    return baseFlows.linkLocalFlood(this.config);
  }

  /** Multicast of a group with no members here → the gateway, one flow a family. */
  unknownGroupToGateway(gatewayOfport: number): FlowEntry[] {
    return baseFlows.unknownGroupToGateway(this.config, gatewayOfport);
  }

  /** Without a gateway: other multicast is dropped (cookie value 0), not left to the bridge's own flows to flood. */
  unknownGroupDrop(): FlowEntry[] {
    return baseFlows.unknownGroupDrop(this.config);
  }

  /**
   * Reads the installed entries back from entries dumped from the switch (installed-reader.ts),
   * taking the ids they use into this pipeline's allocation.
   */
  readInstalled(flows: readonly FlowEntry[], groups: readonly GroupEntry[]): InstalledPipeline {
    return readInstalledEntries({ config: this.config, groupIds: this.groupIds, flows, groups });
  }

  private cookie(kind: FlowKind, value: number, flags = 0): bigint {
    return pipelineCookie(this.config, kind, value, flags);
  }
}
