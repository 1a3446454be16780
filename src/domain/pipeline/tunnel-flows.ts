/**
 * The flows of tunnel mode that sit in front of a group's own: traffic that comes in from
 * the tunnel or the gateway goes to link 1 of a chain, the local pods only (a group's, or one
 * source's, or nowhere when no local pod wants that source), and any other multicast from
 * those ports is dropped; membership messages from the tunnel reach the controller only
 * from a configured peer. See ./tunnel-layout.ts for how a chain is laid out in tunnel mode.
 */
import { parseIPv4 } from '../../wire/ipv4-address.js';
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';
import { FAMILIES, familyOf } from '../family/families.js';
import { type PipelineConfig, sourcePriorities, tunnelPriorities } from './config.js';
import { FlowCookieFlag, FlowKind } from './flow-cookie.js';
import type { FlowEntry } from './pipeline-entries.js';
import { pipelineCookie } from './pipeline-cookie.js';
import { tunnelMeterId } from './base-flows.js';

/**
 * Tunnel mode: `group`'s traffic from the tunnel or the gateway (`inPort`) → link 1 of its chain, its local pods
 * only.
 */
export function ingressForward(
  config: PipelineConfig,
  options: { group: GroupAddress; inPort: number; linkOne: number; learned?: boolean },
): FlowEntry {
  const family = familyOf(options.group);
  return {
    table: config.table,
    priority: tunnelPriorities(config.priorities).ingress,
    cookie: pipelineCookie(
      config,
      FlowKind.IngressForward,
      family.cookieValue(options.group),
      options.learned === true ? FlowCookieFlag.Learned : 0,
    ),
    match: { inPort: options.inPort, ...family.groupMatch(options.group) },
    actions: [{ type: 'group', groupId: options.linkOne }],
  };
}

/**
 * Tunnel mode: `source`'s traffic of `group` from the tunnel or the gateway → link 1 of
 * its (S,G) chain, or dropped (`linkOne` undefined: no local pod wants the source), above
 * the group's own ingress flow, which would deliver it to the pods of the other sources.
 */
export function sourceIngressForward(
  config: PipelineConfig,
  options: {
    group: GroupAddress;
    source: SourceAddress;
    inPort: number;
    linkOne: number | undefined;
    learned?: boolean;
  },
): FlowEntry {
  const family = familyOf(options.group);
  return {
    table: config.table,
    priority: sourcePriorities(config.priorities).sourceIngress,
    cookie: pipelineCookie(
      config,
      FlowKind.SourceIngressForward,
      family.cookieValue(options.group),
      options.learned === true ? FlowCookieFlag.Learned : 0,
    ),
    match: { inPort: options.inPort, ...family.groupMatch(options.group), ipSrc: options.source },
    actions: options.linkOne === undefined ? [] : [{ type: 'group', groupId: options.linkOne }],
  };
}

/**
 * Tunnel mode: any other multicast from the tunnel port → dropped, one flow a family.
 * Above the link-local flood, so that link-local traffic of other nodes does not flood here.
 */
export function tunnelDrop(config: PipelineConfig, tunnelOfport: number): FlowEntry[] {
  return ingressDrop(config, tunnelOfport, tunnelPriorities(config.priorities).tunnelDrop);
}

/**
 * Tunnel mode: any other multicast from the gateway → dropped, not sent on to peers (each
 * gets outside traffic through its own gateway). Below the link-local flood, so that the
 * node's own link-local traffic (mDNS) still floods to the pods.
 */
export function gatewayDrop(config: PipelineConfig, gatewayOfport: number): FlowEntry[] {
  return ingressDrop(config, gatewayOfport, tunnelPriorities(config.priorities).gatewayDrop);
}

function ingressDrop(config: PipelineConfig, inPort: number, priority: number): FlowEntry[] {
  return FAMILIES.map((family) => ({
    table: config.table,
    priority,
    cookie: pipelineCookie(config, FlowKind.IngressDrop, inPort),
    match: { inPort, ...family.multicastMatch },
    actions: [],
  }));
}

/**
 * Tunnel mode: the membership messages (IGMP, MLD) that come in on the tunnel port. Those
 * whose outer source (tun_src) is a configured peer go to the controller, two above the
 * flows for every port, through the tunnel's meter when `metered` (one for all the peers,
 * as a pod port's is one for its pod: whoever writes a peer's address as the outer source
 * gets no further than the meter's rate); any other's are dropped one above them, in the
 * switch, so that a host that is no peer cannot reach the daemon's slow path however fast
 * it sends. A peer is an IPv4 underlay address (the peers file's and --peers' only kind).
 */
export function tunnelMembership(
  config: PipelineConfig,
  tunnel: { ofport: number; peers: readonly string[]; metered?: boolean },
): FlowEntry[] {
  const meter = tunnel.metered === true ? { meterId: tunnelMeterId(config) } : {};
  const peers = tunnel.peers.flatMap((peer) => {
    const value = parseIPv4(peer);
    return value === undefined ? [] : [{ peer, value }];
  });
  return FAMILIES.flatMap((family) =>
    family.membershipMatches.flatMap((match): FlowEntry[] => [
      {
        table: config.table,
        priority: config.priorities.igmp + 1,
        cookie: pipelineCookie(config, FlowKind.TunnelMembership, 0),
        match: { inPort: tunnel.ofport, ...match },
        actions: [],
      },
      ...peers.map(({ peer, value }) => ({
        table: config.table,
        priority: config.priorities.igmp + 2,
        cookie: pipelineCookie(config, FlowKind.TunnelMembership, value),
        match: { inPort: tunnel.ofport, tunSrc: peer, ...match },
        ...meter,
        actions: [{ type: 'controller' } as const],
      })),
    ]),
  );
}
