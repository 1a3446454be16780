/**
 * The multicast pipeline: which OpenFlow flows and OVS groups express "group G goes to
 * member ports {p1..pn}" on a bridge that may carry other traffic too. Pure: it builds
 * and reads entries; the OpenFlow adapter (openflow-entries.ts) puts them on the wire.
 *
 * All flows live in one table (config.table, default 0), above the bridge's own flows:
 *
 *   priority       match                              actions                 kind
 *   igmp+2 (302)   ip, nw_proto=2, in_port=<queried>  CONTROLLER              `query` listening (expires)
 *   igmp+1 (301)   ip, nw_proto=2, in_port=<pod>      meter:<m(pod)>,         IGMP snooping (daemon): a pod's
 *                                                     CONTROLLER              IGMP, through its meter
 *   igmp (300)     ip, nw_proto=2                     CONTROLLER              IGMP snooping (daemon): any port
 *   sendPolicy     ip, in_port=<pod>, nw_dst=<range>  (drop)                  what the pod may not send
 *     (280)
 *   ingress (270)  ip, in_port=<tunnel|gw>, nw_dst=<G> group:<link 1 of G>    tunnel mode: to the pods only
 *   tunnelDrop     ip, in_port=<tunnel>, 224.0.0.0/4   (drop)                  tunnel mode: anything else
 *     (260)                                                                   from other nodes
 *   linkLocal(250) ip, nw_dst=224.0.0.0/24            FLOOD                   link-local control traffic
 *   gatewayDrop    ip, in_port=<gw>, 224.0.0.0/4      (drop)                  tunnel mode: anything else
 *     (245)                                                                   from the gateway
 *   group (200)    ip, nw_dst=<G>                     group:<id(G)>           a group with members here
 *   unknown (190)  ip, nw_dst=224.0.0.0/4             output:<gateway>        receivers outside (daemon;
 *                                                     or drop, without one)
 *   (below)        the bridge's own flows (NORMAL, other controllers): everything else
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
 */
import { addressOrderKey, compareAddresses, type GroupAddress, type HostAddress, parseGroupAddress } from '../../wire/ip-address.js';
import { IPV4_FAMILY } from '../family/ipv4.js';
import { familyOf } from '../family/families.js';
import { chainBlocks, METER_ID_BLOCK, type PipelineConfig, tunnelPriorities } from './config.js';
import { decodeFlowCookie, encodeFlowCookie, FlowCookieFlag, FlowKind, prefixCookie, FLOW_COOKIE_PREFIX_MASK } from './flow-cookie.js';
import { GroupIdAllocation } from './group-ids.js';
import type {
  Bucket,
  FlowEntry,
  FlowMatch,
  GroupEntry,
  GroupForwarding,
  GroupMembership,
  InstalledGroup,
  InstalledPipeline,
  PipelineLimits,
} from './pipeline-entries.js';
import { attachIngress, tunnelLayout } from './tunnel-layout.js';

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

  /**
   * The groups and the flow that forward `membership` (in tunnel mode, its ingress flows
   * too: see tunnel-layout.ts). Throws RangeError if it has too many members, UsageError
   * if more peers than one GROUP_MOD carries.
   */
  forwarding(membership: GroupMembership): GroupForwarding {
    const learned = membership.learned === true;
    if (membership.tunnel !== undefined) {
      const layout = tunnelLayout(membership, this.limits);
      const capacity = (this.limits.maxBucketsPerGroup - 1) * (chainBlocks(this.config) - 1) + 1; // link 0 is the tunnel's
      if (layout.pods.length > capacity) {
        throw new RangeError(`${membership.group} has ${layout.pods.length} pod ports; at most ${capacity} fit in the group id range in tunnel mode`);
      }
      const podLinks = this.chain(membership.group, layout.pods, 1);
      const linkOne = podLinks.length === 0 ? undefined : this.groupId(membership.group, 1);
      const head: GroupEntry = { groupId: this.groupId(membership.group), buckets: layout.headBuckets(linkOne) };
      const ingress =
        linkOne === undefined ? [] : layout.ingressPorts.map((inPort) => this.ingressForward({ group: membership.group, inPort, linkOne, learned }));
      return { group: membership.group, groups: [...podLinks, head], flow: this.groupFlow(membership.group, learned), ingress };
    }
    const ports = [...new Set(membership.ports)].sort((a, b) => a - b);
    if (ports.length > this.maxMembers) {
      throw new RangeError(`${membership.group} has ${ports.length} member ports; at most ${this.maxMembers} fit in the group id range`);
    }
    return { group: membership.group, groups: this.chain(membership.group, ports, 0), flow: this.groupFlow(membership.group, learned) };
  }

  /**
   * The links that output to `ports`, tail first, from link `firstLink` on: link k holds
   * up to max-1 ports and a bucket to link k+1. None for no port (from link 1 on).
   */
  private chain(group: GroupAddress, ports: readonly number[], firstLink: number): GroupEntry[] {
    if (ports.length === 0 && firstLink > 0) return [];
    const max = this.limits.maxBucketsPerGroup;
    const groups: GroupEntry[] = [];
    const links = ports.length <= max ? 1 : Math.ceil((ports.length - 1) / (max - 1));
    let next: number | undefined;
    for (let link = links - 1; link >= 0; link--) {
      const start = link * (max - 1);
      const slice = link === links - 1 ? ports.slice(start) : ports.slice(start, start + max - 1);
      const buckets: Bucket[] = slice.map((port) => ({ type: 'output', port }));
      if (next !== undefined) buckets.push({ type: 'group', groupId: next });
      const groupId = this.groupId(group, firstLink + link);
      groups.push({ groupId, buckets });
      next = groupId;
    }
    return groups;
  }

  /** Tunnel mode: `group`'s traffic from the tunnel or the gateway (`inPort`) → link 1 of its chain, its local pods only. */
  ingressForward(options: { group: GroupAddress; inPort: number; linkOne: number; learned?: boolean }): FlowEntry {
    const family = familyOf(options.group);
    return {
      table: this.config.table,
      priority: tunnelPriorities(this.config.priorities).ingress,
      cookie: this.cookie(FlowKind.IngressForward, family.cookieValue(options.group), options.learned === true ? FlowCookieFlag.Learned : 0),
      match: { inPort: options.inPort, ...family.groupMatch(options.group) },
      actions: [{ type: 'group', groupId: options.linkOne }],
    };
  }

  /**
   * Tunnel mode: any other multicast from the tunnel port → dropped. Above the link-local
   * flood, so that link-local traffic of other nodes does not flood here.
   */
  tunnelDrop(tunnelOfport: number): FlowEntry {
    return this.ingressDrop(tunnelOfport, tunnelPriorities(this.config.priorities).tunnelDrop);
  }

  /**
   * Tunnel mode: any other multicast from the gateway → dropped, not sent on to peers (each
   * gets outside traffic through its own gateway). Below the link-local flood, so that the
   * node's own link-local traffic (mDNS) still floods to the pods.
   */
  gatewayDrop(gatewayOfport: number): FlowEntry {
    return this.ingressDrop(gatewayOfport, tunnelPriorities(this.config.priorities).gatewayDrop);
  }

  private ingressDrop(inPort: number, priority: number): FlowEntry {
    return {
      table: this.config.table,
      priority,
      cookie: this.cookie(FlowKind.IngressDrop, inPort),
      match: { inPort, ...IPV4_FAMILY.multicastMatch },
      actions: [],
    };
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
   * IGMP → the controller: from one port, or (no port: cookie value 0) from every port.
   * The daemon takes all IGMP and decides by the packet-in's port: reports from pod
   * ports count, others are counted and dropped, so nothing floods them meanwhile.
   */
  igmpToController(ofport?: number): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.igmp,
      cookie: this.cookie(FlowKind.IgmpToController, ofport ?? 0),
      match: { ...(ofport === undefined ? {} : { inPort: ofport }), ethType: IPV4_FAMILY.etherType, ipProto: IPV4_FAMILY.membershipIpProto },
      actions: [{ type: 'controller' }],
    };
  }

  /** The meter of pod port `ofport`'s IGMP. */
  meterIdOf(ofport: number): number {
    return this.config.meterIdBase + ofport;
  }

  /** The pod port whose IGMP meter `meterId` is, or undefined when the id is not in our range. */
  meterPort(meterId: number): number | undefined {
    const ofport = meterId - this.config.meterIdBase;
    return ofport >= 0 && ofport < METER_ID_BLOCK ? ofport : undefined;
  }

  /**
   * IGMP from a pod port → its meter → the controller, one above the flow for every
   * port: the meter drops what the pod sends past its rate, in the switch.
   */
  igmpToControllerMetered(ofport: number): FlowEntry {
    return { ...this.igmpToController(ofport), priority: this.config.priorities.igmp + 1, meterId: this.meterIdOf(ofport) };
  }

  /** Multicast from pod port `ofport` to `range` (an address and dotted mask) → dropped. */
  sendPolicyDrop(ofport: number, range: { address: string; mask: string }): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.sendPolicy,
      cookie: this.cookie(FlowKind.SendPolicyDrop, ofport),
      match: {
        inPort: ofport,
        ethType: IPV4_FAMILY.etherType,
        ipv4Dst: range.address,
        ...(range.mask === '255.255.255.255' ? {} : { ipv4DstMask: range.mask }),
      },
      actions: [],
    };
  }

  /**
   * IGMP from one queried port → the controller, two above the snooping flow, for as
   * long as a query listens. Nothing else hears those reports meanwhile, so hosts do not
   * suppress theirs (RFC 2236 §3) and every member answers. `runId` (the cookie value)
   * tells one run's flows from another's, so a run deletes only its own. The flow
   * removes itself after `hardTimeoutSeconds` should its writer die before deleting it.
   */
  igmpQueryProbe(ofport: number, runId: number, hardTimeoutSeconds: number): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.igmp + 2,
      cookie: this.cookie(FlowKind.IgmpQueryProbe, runId),
      match: { inPort: ofport, ethType: IPV4_FAMILY.etherType, ipProto: IPV4_FAMILY.membershipIpProto },
      actions: [{ type: 'controller' }],
      hardTimeout: Math.min(0xffff, Math.max(1, Math.ceil(hardTimeoutSeconds))),
    };
  }

  linkLocalFlood(): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.linkLocal,
      cookie: this.cookie(FlowKind.LinkLocalFlood, 0),
      match: { ...IPV4_FAMILY.linkScopeMatch },
      actions: [{ type: 'flood' }],
    };
  }

  unknownGroupToGateway(gatewayOfport: number): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.unknownGroup,
      cookie: this.cookie(FlowKind.UnknownGroupToGateway, gatewayOfport),
      match: { ...IPV4_FAMILY.multicastMatch },
      actions: [{ type: 'output', port: gatewayOfport }],
    };
  }

  /** Without a gateway: other multicast is dropped (cookie value 0), not left to the bridge's own flows to flood. */
  unknownGroupDrop(): FlowEntry {
    return {
      table: this.config.table,
      priority: this.config.priorities.unknownGroup,
      cookie: this.cookie(FlowKind.UnknownGroupToGateway, 0),
      match: { ...IPV4_FAMILY.multicastMatch },
      actions: [],
    };
  }

  /**
   * Reads the installed groups back from entries dumped from the switch: every flow of
   * ours of kind GroupForward, followed through its group chain. Flows or groups that
   * do not fit together (a flow whose group is gone, a broken chain) are reported so
   * that reconcile can repair them.
   */
  readInstalled(flows: readonly FlowEntry[], groups: readonly GroupEntry[]): InstalledPipeline {
    const groupById = new Map(groups.filter((entry) => this.ownsGroupId(entry.groupId)).map((entry) => [entry.groupId, entry]));
    const installed: InstalledGroup[] = [];
    const reached = new Set<number>();
    const otherFlows: FlowEntry[] = [];
    const ingressFlows: FlowEntry[] = [];
    for (const flow of flows) {
      const fields = decodeFlowCookie(flow.cookie, this.config.cookiePrefix);
      if (fields === undefined) continue; // not ours
      if (fields.kind === FlowKind.IngressForward) {
        ingressFlows.push(flow); // attached to its group below
        continue;
      }
      // Ours by cookie but not a group flow, or one that matches no multicast group, or
      // whose cookie does not carry its group (a hand-made flow, or a prefix someone else
      // uses too): not a group to show, but still ours to remove.
      const group = fields.kind === FlowKind.GroupForward ? groupMatched(flow.match) : undefined;
      if (group === undefined || fields.value !== familyOf(group).cookieValue(group) >>> 0) {
        otherFlows.push(flow);
        continue;
      }
      const ports: number[] = [];
      const peers: HostAddress[] = [];
      const chain: GroupEntry[] = [];
      let problem: string | undefined;
      // The switch says which id the group has: the group action of its flow.
      let groupId = headGroupId(flow);
      if (groupId === undefined) problem = 'its flow outputs to no OVS group';
      else if (!this.groupIds.adopt(group, groupId)) problem = `its flow points at OVS group ${groupId}, which is not the head of one of ours`;
      if (problem !== undefined) groupId = undefined;
      while (groupId !== undefined) {
        const entry = groupById.get(groupId);
        if (entry === undefined) {
          problem = `OVS group ${groupId} is missing`;
          break;
        }
        if (reached.has(groupId)) {
          problem = `OVS group ${groupId} is reached twice`;
          break;
        }
        reached.add(groupId);
        chain.push(entry);
        groupId = undefined;
        for (const bucket of entry.buckets) {
          if (bucket.type === 'group') groupId = bucket.groupId;
          else if (bucket.tunnelDestination !== undefined) peers.push(bucket.tunnelDestination);
          else ports.push(bucket.port);
        }
      }
      const learned = ((fields.flags ?? 0) & FlowCookieFlag.Learned) !== 0;
      installed.push({
        group,
        ports: ports.sort((a, b) => a - b),
        flow,
        groups: chain,
        learned,
        ...(problem === undefined ? {} : { problem }),
        ...(peers.length === 0 ? {} : { peers: peers.sort(compareAddresses) }),
      });
    }
    otherFlows.push(...attachIngress(installed, ingressFlows, (flow) => this.ingressGroupOf(flow)));
    const strayGroups = [...groupById.values()].filter((entry) => !reached.has(entry.groupId));
    // By address, each parsed once (10,000 groups are 130,000 comparisons).
    const order = new Map(installed.map((entry) => [entry, addressOrderKey(entry.group)]));
    return { groups: installed.sort((a, b) => order.get(a)! - order.get(b)!), otherFlows, strayGroups };
  }

  /** The group an ingress flow forwards, when its match and its cookie agree on it. */
  private ingressGroupOf(flow: FlowEntry): GroupAddress | undefined {
    const group = groupMatched(flow.match);
    const fields = decodeFlowCookie(flow.cookie, this.config.cookiePrefix);
    return group !== undefined && fields?.value === familyOf(group).cookieValue(group) >>> 0 ? group : undefined;
  }

  private cookie(kind: FlowKind, value: number, flags = 0): bigint {
    return encodeFlowCookie({ prefix: this.config.cookiePrefix, kind, value, flags });
  }
}

/** The group a flow forwards: an exact match on one multicast destination. */
function groupMatched(match: FlowMatch): GroupAddress | undefined {
  if (match.ipv4Dst === undefined || match.ipv4DstMask !== undefined) return undefined;
  return parseGroupAddress(match.ipv4Dst);
}

/** The OVS group a group flow sends to: its only action, as the pipeline writes it. */
function headGroupId(flow: FlowEntry): number | undefined {
  const action = flow.actions.length === 1 ? flow.actions[0] : undefined;
  return action?.type === 'group' ? action.groupId : undefined;
}
