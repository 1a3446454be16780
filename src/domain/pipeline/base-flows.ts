/**
 * The pipeline's flows that belong to no group: membership messages to the controller (a
 * pod's through its meter, a queried port's while a query listens), link-scope flooding,
 * multicast of groups with no members here, and what a pod may not send; and the meter ids
 * of pod ports. Written once for each family (FAMILIES) where they name multicast or
 * membership messages; see the table of flows in ./multicast-pipeline.ts.
 */
import { textFamily } from '../../wire/ip-address.js';
import { IPV4_FAMILY } from '../family/ipv4.js';
import { FAMILIES } from '../family/families.js';
import type { MulticastFamily } from '../family/multicast-family.js';
import { METER_ID_BLOCK, type PipelineConfig } from './config.js';
import { FlowKind } from './flow-cookie.js';
import type { FlowEntry } from './pipeline-entries.js';
import { pipelineCookie } from './pipeline-cookie.js';

/**
 * Membership messages (IGMP, and MLD's four ICMPv6 types) → the controller: from one
 * port, or (no port: cookie value 0) from every port. The daemon takes them all and
 * decides by the packet-in's port: reports from pod ports count, others are counted and
 * dropped, so nothing floods them meanwhile. Neighbor Discovery, also ICMPv6, is not
 * matched: it floods with the rest of link scope.
 */
export function membershipToController(config: PipelineConfig, ofport?: number): FlowEntry[] {
  return FAMILIES.flatMap((family) =>
    family.membershipMatches.map((match) => ({
      table: config.table,
      priority: config.priorities.igmp,
      cookie: pipelineCookie(config, FlowKind.MembershipToController, ofport ?? 0),
      match: { ...(ofport === undefined ? {} : { inPort: ofport }), ...match },
      actions: [{ type: 'controller' } as const],
    })),
  );
}

/** The meter of pod port `ofport`'s IGMP. */
export function meterIdOf(config: PipelineConfig, ofport: number): number {
  return config.meterIdBase + ofport;
}

/**
 * The slot of our meter ids that is the tunnel's: 0, since no OpenFlow port has number 0 (ports count from 1), and the
 * lowest id of the block is the one every switch that holds any of our meters holds.
 */
const TUNNEL_METER_SLOT = 0;

/** The meter of the tunnel's membership messages from the peers (tunnel-flows.ts tunnelMembership). */
export function tunnelMeterId(config: PipelineConfig): number {
  return config.meterIdBase + TUNNEL_METER_SLOT;
}

/** The pod port whose IGMP meter `meterId` is, or undefined when the id is not a port's of our range. */
export function meterPort(config: PipelineConfig, meterId: number): number | undefined {
  const ofport = meterId - config.meterIdBase;
  return ofport > TUNNEL_METER_SLOT && ofport < METER_ID_BLOCK ? ofport : undefined;
}

/**
 * Membership messages from a pod port → its meter → the controller, one above the flows
 * for every port: the meter drops what the pod sends past its rate, in the switch. One
 * meter for both families: a pod's budget is one, however it spends it.
 */
export function membershipToControllerMetered(config: PipelineConfig, ofport: number): FlowEntry[] {
  return membershipToController(config, ofport).map((flow) => ({
    ...flow,
    priority: config.priorities.igmp + 1,
    meterId: meterIdOf(config, ofport),
  }));
}

/**
 * Multicast from pod port `ofport` to `range` (a network address and its mask, text of
 * either family: IPv6 text holds a colon, and gives the IPv6 ethertype) → dropped. A
 * full mask is an exact match, written without a mask, as the switch reads it back.
 */
export function sendPolicyDrop(
  config: PipelineConfig,
  ofport: number,
  range: { address: string; mask: string },
): FlowEntry {
  const ipv6 = textFamily(range.address) === 'ipv6';
  const family = (ipv6 && FAMILIES.find((candidate) => candidate.name === 'ipv6')) || IPV4_FAMILY;
  const exact = range.mask === (ipv6 ? 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' : '255.255.255.255');
  return {
    table: config.table,
    priority: config.priorities.sendPolicy,
    cookie: pipelineCookie(config, FlowKind.SendPolicyDrop, ofport),
    match: {
      inPort: ofport,
      ethType: family.etherType,
      ipDst: range.address,
      ...(exact ? {} : { ipDstMask: range.mask }),
    },
    actions: [],
  };
}

/**
 * The membership messages of `family` from one queried port → the controller, two
 * above the snooping flows, for as long as a query listens: one flow per membership
 * match (IGMP one, MLD its four ICMPv6 types, so Neighbor Discovery keeps flowing).
 * Nothing else hears those reports meanwhile, so hosts do not suppress theirs
 * (RFC 2236 §3, RFC 2710 §4) and every member answers. Only the queried family is
 * diverted: the other's snooping goes on undisturbed. `runId` (the cookie value) tells
 * one run's flows from another's, so a run deletes only its own. The flows remove
 * themselves after `hardTimeoutSeconds` should their writer die before deleting them.
 */
export function queryProbe(
  config: PipelineConfig,
  family: MulticastFamily,
  probe: { ofport: number; runId: number; hardTimeoutSeconds: number },
): FlowEntry[] {
  const hardTimeout = Math.min(0xffff, Math.max(1, Math.ceil(probe.hardTimeoutSeconds)));
  return family.membershipMatches.map((match) => ({
    table: config.table,
    priority: config.priorities.igmp + 2,
    cookie: pipelineCookie(config, FlowKind.IgmpQueryProbe, probe.runId),
    match: { inPort: probe.ofport, ...match },
    actions: [{ type: 'controller' } as const],
    hardTimeout,
  }));
}

/**
 * Link-scope multicast → flooded, one flow a family: IPv4's control groups, and IPv6's
 * ff02::/16 with Neighbor Discovery's solicited-node groups, all nodes and all routers,
 * which address resolution, DAD and router advertisements need whether or not anyone
 * reported them.
 */
export function linkLocalFlood(config: PipelineConfig): FlowEntry[] {
  return FAMILIES.map((family) => ({
    table: config.table,
    priority: config.priorities.linkLocal,
    cookie: pipelineCookie(config, FlowKind.LinkLocalFlood, 0),
    match: { ...family.linkScopeMatch },
    actions: [{ type: 'flood' } as const],
  }));
}

/** Multicast of a group with no members here → the gateway, one flow a family. */
export function unknownGroupToGateway(config: PipelineConfig, gatewayOfport: number): FlowEntry[] {
  return FAMILIES.map((family) => ({
    table: config.table,
    priority: config.priorities.unknownGroup,
    cookie: pipelineCookie(config, FlowKind.UnknownGroupToGateway, gatewayOfport),
    match: { ...family.multicastMatch },
    actions: [{ type: 'output', port: gatewayOfport } as const],
  }));
}

/** Without a gateway: other multicast is dropped (cookie value 0), not left to the bridge's own flows to flood. */
export function unknownGroupDrop(config: PipelineConfig): FlowEntry[] {
  return FAMILIES.map((family) => ({
    table: config.table,
    priority: config.priorities.unknownGroup,
    cookie: pipelineCookie(config, FlowKind.UnknownGroupToGateway, 0),
    match: { ...family.multicastMatch },
    actions: [],
  }));
}
