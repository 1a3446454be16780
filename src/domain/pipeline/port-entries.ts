/**
 * What one pod port has of ours besides the groups it is a member of: the meter its IGMP
 * goes through on the way to the controller, the flow that sends it there, and the drops
 * of multicast the group policy does not let it send. Pure: the wanted entries of a port,
 * what of them is installed (read back from the switch), and the changes between the two.
 *
 * A port's entries change one at a time: a new rate modifies its meter and nothing else,
 * a new policy adds and deletes only the drops that differ, so a reload leaves every
 * other entry of the bridge, and its counters, as it was.
 */
import { decodeFlowCookie, FlowKind } from './flow-cookie.js';
import type { FlowEntry, MulticastPipeline, PortMeter } from './multicast-pipeline.js';
import { flowMatchKey } from './pipeline-entries.js';
import type { PipelineChange } from './plan.js';

/** A range of groups as a flow matches it: the network address and its dotted mask. */
export interface GroupRange {
  address: string;
  mask: string;
}

/** What a pod port should have (or has) of ours. */
export interface PortEntries {
  /** The IGMP meter; absent: none (meters off, or none the switch can hold for this port). */
  meter?: PortMeter;
  /** The metered IGMP flow (with a meter) and the send-policy drops. */
  flows: FlowEntry[];
}

export interface WantedPortEntries {
  meter?: PortMeter;
  /** Group ranges the pod may not send to. */
  deniedSend: readonly GroupRange[];
}

/** The entries of pod port `ofport` for what it should have. */
export function portEntries(pipeline: MulticastPipeline, ofport: number, wanted: WantedPortEntries): PortEntries {
  const flows = wanted.deniedSend.map((range) => pipeline.sendPolicyDrop(ofport, range));
  if (wanted.meter === undefined) return { flows };
  return { meter: { ...wanted.meter }, flows: [...pipeline.membershipToControllerMetered(ofport), ...flows] };
}

/**
 * Whether a flow of ours (by its cookie) is one of a port's: its metered IGMP flow or a send-policy drop, and which
 * port.
 */
export function portOfFlow(pipeline: MulticastPipeline, flow: FlowEntry): number | undefined {
  const fields = decodeFlowCookie(flow.cookie, pipeline.config.cookiePrefix);
  if (fields === undefined || fields.value === 0) return undefined;
  return fields.kind === FlowKind.MembershipToController || fields.kind === FlowKind.SendPolicyDrop
    ? fields.value
    : undefined;
}

/**
 * The ports' entries as read back: flows of ours grouped by the port their cookie names,
 * and the meters of our id range by port.
 */
export function installedPortEntries(
  pipeline: MulticastPipeline,
  flows: readonly FlowEntry[],
  meters: ReadonlyMap<number, PortMeter>,
): Map<number, PortEntries> {
  const byPort = new Map<number, PortEntries>();
  const entriesOf = (ofport: number): PortEntries => {
    let entries = byPort.get(ofport);
    if (entries === undefined) {
      entries = { flows: [] };
      byPort.set(ofport, entries);
    }
    return entries;
  };
  for (const flow of flows) {
    const ofport = portOfFlow(pipeline, flow);
    if (ofport !== undefined) entriesOf(ofport).flows.push(flow);
  }
  for (const [meterId, meter] of meters) {
    const ofport = pipeline.meterPort(meterId);
    if (ofport !== undefined) entriesOf(ofport).meter = meter;
  }
  return byPort;
}

/**
 * The changes from `installed` to `wanted` for pod port `ofport` (wanted undefined: none
 * of its entries). On the wire, in order: its meter is added or changed before a flow
 * uses it, flows that go are deleted before a flow takes another's place, and the meter
 * is deleted last (OVS deletes the flows that use a deleted meter).
 */
export function planPortSync(
  pipeline: MulticastPipeline,
  ofport: number,
  installed: PortEntries | undefined,
  wanted: PortEntries | undefined,
): PipelineChange[] {
  const meterId = pipeline.meterIdOf(ofport);
  const changes: PipelineChange[] = [];
  const before = installed?.meter;
  const after = wanted?.meter;
  if (after !== undefined && before === undefined) changes.push({ op: 'add-meter', meterId, meter: after });
  else if (after !== undefined && before !== undefined && !sameMeter(before, after))
    changes.push({ op: 'modify-meter', meterId, meter: after });
  const wantedByKey = new Map((wanted?.flows ?? []).map((flow) => [flowIdentity(flow), flow]));
  const installedByKey = new Map((installed?.flows ?? []).map((flow) => [flowIdentity(flow), flow]));
  for (const [key, flow] of installedByKey) if (!wantedByKey.has(key)) changes.push({ op: 'delete-flow', entry: flow });
  for (const [key, flow] of wantedByKey) if (!installedByKey.has(key)) changes.push({ op: 'add-flow', entry: flow });
  if (after === undefined && before !== undefined) changes.push({ op: 'delete-meter', meterId });
  return changes;
}

/** Whether two meters meter alike (the same rate and burst). */
export function sameMeter(a: PortMeter, b: PortMeter): boolean {
  return a.rate === b.rate && a.burst === b.burst;
}

/**
 * A flow as a whole: where it sits, its cookie, its meter and its actions. Two flows with the same identity need no
 * change.
 */
function flowIdentity(flow: FlowEntry): string {
  return JSON.stringify([
    flow.table,
    flow.priority,
    flowMatchKey(flow.match),
    flow.cookie.toString(16),
    flow.meterId,
    flow.actions,
  ]);
}
