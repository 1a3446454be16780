/**
 * The flows of tunnel mode that sit in front of a group's own: traffic that comes in from
 * the tunnel or the gateway goes to link 1 of a chain, the local pods only (a group's, or one
 * source's, or nowhere when no local pod wants that source), and any other multicast from
 * those ports is dropped. See ./tunnel-layout.ts for how a chain is laid out in tunnel mode.
 */
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';
import { FAMILIES, familyOf } from '../family/families.js';
import { type PipelineConfig, sourcePriorities, tunnelPriorities } from './config.js';
import { FlowCookieFlag, FlowKind } from './flow-cookie.js';
import type { FlowEntry } from './pipeline-entries.js';
import { pipelineCookie } from './pipeline-cookie.js';

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
