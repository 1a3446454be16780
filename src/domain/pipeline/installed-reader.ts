/**
 * The pipeline's forwarding entries read back from what a switch dumps: every flow of
 * ours of kind GroupForward ((*,G)) or SourceForward ((S,G)), followed through its OVS
 * group chain, with the tunnel-mode ingress flows and the sender counting rows attached to
 * the entry they forward.
 * The ids found are adopted into the pipeline's group id allocation, so that a fresh
 * pipeline keeps using them.
 */
import {
  addressOrderKey,
  compareOrderKeys,
  compareAddresses,
  type GroupAddress,
  type HostAddress,
  parseGroupAddress,
  parseSourceAddress,
} from '../../wire/ip-address.js';
import { familyOf } from '../family/families.js';
import type { PipelineConfig } from './config.js';
import { decodeFlowCookie, FlowCookieFlag, type FlowCookieFields, FlowKind } from './flow-cookie.js';
import { forwardingKey, type ForwardingTarget } from './forwarding-key.js';
import type { GroupIdAllocation } from './group-ids.js';
import type { FlowEntry, FlowMatch, GroupEntry, InstalledGroup, InstalledPipeline } from './pipeline-entries.js';
import { attachIngress } from './tunnel-layout.js';

export interface InstalledReading {
  config: PipelineConfig;
  /** Takes the ids found (adopt): the allocation of the pipeline that reads. */
  groupIds: GroupIdAllocation;
  flows: readonly FlowEntry[];
  groups: readonly GroupEntry[];
}

/**
 * Flows or groups that do not fit together (a flow whose group is gone, a broken chain)
 * are reported so that reconcile can repair them; flows of ours that forward no entry
 * are returned as other flows, still ours to remove.
 */
export function readInstalledEntries(reading: InstalledReading): InstalledPipeline {
  const { config, groupIds } = reading;
  const groupById = new Map(
    reading.groups.filter((entry) => groupIds.owns(entry.groupId)).map((entry) => [entry.groupId, entry]),
  );
  const installed: InstalledGroup[] = [];
  const reached = new Set<number>();
  const otherFlows: FlowEntry[] = [];
  const ingressFlows: FlowEntry[] = [];
  const counterFlows: FlowEntry[] = [];
  for (const flow of reading.flows) {
    const fields = decodeFlowCookie(flow.cookie, config.cookiePrefix);
    if (fields === undefined) continue; // not ours
    if (fields.kind === FlowKind.IngressForward || fields.kind === FlowKind.SourceIngressForward) {
      ingressFlows.push(flow); // attached to its entry below
      continue;
    }
    if (fields.kind === FlowKind.SendCounter) {
      counterFlows.push(flow); // attached to its entry below
      continue;
    }
    // Ours by cookie but not a forwarding flow, or one that matches no multicast group, or
    // whose cookie does not carry its group (a hand-made flow, or a prefix someone else
    // uses too): not an entry to show, but still ours to remove.
    const target = forwardedTarget(flow, fields);
    if (target === undefined) {
      otherFlows.push(flow);
      continue;
    }
    installed.push(followChain({ target, flow, fields, groupIds, groupById, reached }));
  }
  otherFlows.push(...attachIngress(installed, ingressFlows, (flow) => ingressTargetOf(flow, config)));
  otherFlows.push(...attachCounters(installed, counterFlows, config));
  const strayGroups = [...groupById.values()].filter((entry) => !reached.has(entry.groupId));
  // By address, each parsed once (10,000 groups are 130,000 comparisons); a group's (*,G) first, then its sources.
  const order = new Map(installed.map((entry) => [entry, addressOrderKey(entry.group)]));
  installed.sort((a, b) => compareOrderKeys(order.get(a)!, order.get(b)!) || compareSources(a, b));
  return { groups: installed, otherFlows, strayGroups };
}

interface ChainWalk {
  target: ForwardingTarget;
  flow: FlowEntry;
  fields: FlowCookieFields;
  groupIds: GroupIdAllocation;
  groupById: ReadonlyMap<number, GroupEntry>;
  /** Ids already part of an entry's chain: shared by every walk of one reading. */
  reached: Set<number>;
}

/** One entry from its flow: the chain its group action heads, its ports and peers. */
function followChain(walk: ChainWalk): InstalledGroup {
  const { target, flow } = walk;
  const ports: number[] = [];
  const peers: HostAddress[] = [];
  const chain: GroupEntry[] = [];
  let problem: string | undefined;
  // The switch says which id the entry has: the group action of its flow.
  let groupId = headGroupId(flow);
  if (groupId === undefined) problem = 'its flow outputs to no OVS group';
  else if (!walk.groupIds.adoptTarget(target, groupId))
    problem = `its flow points at OVS group ${groupId}, which is not the head of one of ours`;
  if (problem !== undefined) groupId = undefined;
  while (groupId !== undefined) {
    const entry = walk.groupById.get(groupId);
    if (entry === undefined) {
      problem = `OVS group ${groupId} is missing`;
      break;
    }
    if (walk.reached.has(groupId)) {
      problem = `OVS group ${groupId} is reached twice`;
      break;
    }
    walk.reached.add(groupId);
    chain.push(entry);
    groupId = undefined;
    for (const bucket of entry.buckets) {
      if (bucket.type === 'group') groupId = bucket.groupId;
      else if (bucket.tunnelDestination !== undefined) peers.push(bucket.tunnelDestination);
      else ports.push(bucket.port);
    }
  }
  const learned = ((walk.fields.flags ?? 0) & FlowCookieFlag.Learned) !== 0;
  return {
    group: target.group,
    ...(target.source === undefined ? {} : { source: target.source }),
    ports: ports.sort((a, b) => a - b),
    flow,
    groups: chain,
    learned,
    ...(problem === undefined ? {} : { problem }),
    ...(peers.length === 0 ? {} : { peers: peers.sort(compareAddresses) }),
  };
}

/**
 * The entry a forwarding flow is for, when its match and cookie agree on it: (S,G) when `sourced`, the source read from
 * the match.
 */
function matchedTarget(flow: FlowEntry, fields: FlowCookieFields, sourced: boolean): ForwardingTarget | undefined {
  const group = groupMatched(flow.match);
  if (group === undefined || fields.value !== familyOf(group).cookieValue(group) >>> 0) return undefined;
  if (!sourced) return flow.match.ipSrc === undefined ? { group } : undefined;
  const source = flow.match.ipSrc === undefined ? undefined : parseSourceAddress(flow.match.ipSrc);
  return source === undefined ? undefined : { group, source };
}

/** The entry a group flow forwards: (*,G) for kind GroupForward, (S,G) for SourceForward. */
function forwardedTarget(flow: FlowEntry, fields: FlowCookieFields): ForwardingTarget | undefined {
  if (fields.kind === FlowKind.GroupForward) return matchedTarget(flow, fields, false);
  if (fields.kind === FlowKind.SourceForward) return matchedTarget(flow, fields, true);
  return undefined;
}

/** The entry an ingress flow forwards: (*,G) for kind IngressForward, (S,G) for SourceIngressForward. */
function ingressTargetOf(flow: FlowEntry, config: PipelineConfig): ForwardingTarget | undefined {
  const fields = decodeFlowCookie(flow.cookie, config.cookiePrefix);
  if (fields === undefined) return undefined;
  return matchedTarget(flow, fields, fields.kind === FlowKind.SourceIngressForward);
}

/**
 * Each sender counting row to the entry it counts for: the one its match names ((S,G)
 * with a source, else (*,G)) that forwards as it does. Returns the rows of no entry (still
 * ours to remove).
 */
function attachCounters(installed: InstalledGroup[], flows: readonly FlowEntry[], config: PipelineConfig): FlowEntry[] {
  const byKey = new Map(installed.map((entry) => [forwardingKey(entry), entry]));
  const strays: FlowEntry[] = [];
  for (const flow of flows) {
    const fields = decodeFlowCookie(flow.cookie, config.cookiePrefix);
    const target =
      fields === undefined || flow.match.inPort === undefined
        ? undefined
        : matchedTarget(flow, fields, flow.match.ipSrc !== undefined);
    const owner = target === undefined ? undefined : byKey.get(forwardingKey(target));
    if (owner === undefined || headGroupId(flow) !== headGroupId(owner.flow)) strays.push(flow);
    else (owner.counters ??= []).push(flow);
  }
  for (const entry of installed) entry.counters?.sort((a, b) => (a.match.inPort ?? -1) - (b.match.inPort ?? -1));
  return strays;
}

/** (*,G) before (S,G), then the sources by address. */
function compareSources(a: InstalledGroup, b: InstalledGroup): number {
  if (a.source === undefined || b.source === undefined)
    return (a.source === undefined ? 0 : 1) - (b.source === undefined ? 0 : 1);
  return compareAddresses(a.source, b.source);
}

/** The group a flow forwards: an exact match on one multicast destination. */
function groupMatched(match: FlowMatch): GroupAddress | undefined {
  if (match.ipDst === undefined || match.ipDstMask !== undefined) return undefined;
  return parseGroupAddress(match.ipDst);
}

/** The OVS group a group flow sends to: its only action, as the pipeline writes it. */
function headGroupId(flow: FlowEntry): number | undefined {
  const action = flow.actions.length === 1 ? flow.actions[0] : undefined;
  return action?.type === 'group' ? action.groupId : undefined;
}
