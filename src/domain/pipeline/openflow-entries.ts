/**
 * The pipeline's entries on the wire: FlowEntry and GroupEntry to FLOW_MOD and GROUP_MOD
 * messages, and back from the flow stats and group descriptions the switch dumps.
 */
import { group as groupAction, output, setTunnelDestination, toController } from '../../protocol/openflow/action.js';
import type { Action } from '../../protocol/openflow/action.js';
import { bucket } from '../../protocol/openflow/bucket.js';
import { flowMod } from '../../protocol/openflow/flow-mod.js';
import type { FlowStats } from '../../protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../protocol/openflow/group-desc.js';
import { groupMod } from '../../protocol/openflow/group-mod.js';
import { applyActions, meter, type Instruction } from '../../protocol/openflow/instruction.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { dropBand } from '../../protocol/openflow/meter-band.js';
import { MeterModCommand, meterMod } from '../../protocol/openflow/meter-mod.js';
import { FlowModCommand, GroupModCommand, GroupType } from '../../protocol/openflow/mod-command.js';
import type { OxmField } from '../../protocol/openflow/oxm.js';
import { OfpPort } from '../../protocol/openflow/reserved.js';
import { parseHostAddress } from '../../wire/ip-address.js';
import type { Bucket, FlowAction, FlowEntry, FlowMatch, GroupEntry } from './multicast-pipeline.js';
import type { PipelineChange } from './plan.js';
import { FLOW_COOKIE_FULL_MASK } from './flow-cookie.js';

const EXACT_IPV4_MASK = '255.255.255.255';
const EXACT_IPV6_MASK = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff';
const ETH_TYPE_IPV6 = 0x86dd;

/**
 * OXM fields in prerequisite order: IN_PORT, TUN_IPV4_SRC, ETH_TYPE, IP_PROTO, the source
 * and the destination (IPV4_* or, for ETH_TYPE 0x86dd, IPV6_*), ICMPV6_TYPE.
 */
export function matchFields(match: FlowMatch): OxmField[] {
  const fields: OxmField[] = [];
  if (match.inPort !== undefined) fields.push({ field: 'IN_PORT', value: match.inPort });
  if (match.tunSrc !== undefined) fields.push({ field: 'TUN_IPV4_SRC', value: match.tunSrc });
  if (match.ethType !== undefined) fields.push({ field: 'ETH_TYPE', value: match.ethType });
  if (match.ipProto !== undefined) fields.push({ field: 'IP_PROTO', value: match.ipProto });
  const ipv6 = match.ethType === ETH_TYPE_IPV6;
  if (match.ipSrc !== undefined) fields.push({ field: ipv6 ? 'IPV6_SRC' : 'IPV4_SRC', value: match.ipSrc });
  if (match.ipDst !== undefined) {
    const field = ipv6 ? 'IPV6_DST' : 'IPV4_DST';
    fields.push(
      match.ipDstMask === undefined
        ? { field, value: match.ipDst }
        : { field, value: match.ipDst, mask: match.ipDstMask },
    );
  }
  if (match.icmpv6Type !== undefined) fields.push({ field: 'ICMPV6_TYPE', value: match.icmpv6Type });
  return fields;
}

function flowActions(actions: readonly FlowAction[]): Action[] {
  return actions.map((action) => {
    switch (action.type) {
      case 'output':
        return output(action.port);
      case 'controller':
        return toController();
      case 'flood':
        return output(OfpPort.FLOOD);
      case 'group':
        return groupAction(action.groupId);
    }
  });
}

/** The meter first (OpenFlow 1.3.5 §5.9: a METER instruction precedes APPLY_ACTIONS), then the actions. */
function flowInstructions(entry: FlowEntry): Instruction[] {
  const actions = applyActions(flowActions(entry.actions));
  return entry.meterId === undefined ? [actions] : [meter(entry.meterId), actions];
}

function bucketActions(entry: Bucket): Action[] {
  if (entry.type === 'group') return [groupAction(entry.groupId)];
  return entry.tunnelDestination === undefined
    ? [output(entry.port)]
    : [setTunnelDestination(entry.tunnelDestination), output(entry.port)];
}

/** The message that makes one change; the plan's order is the wire order. */
export function changeMessage(change: PipelineChange): OpenFlowMessage {
  switch (change.op) {
    case 'add-group':
    case 'modify-group':
      return groupMod({
        command: change.op === 'add-group' ? GroupModCommand.ADD : GroupModCommand.MODIFY,
        groupType: GroupType.ALL,
        groupId: change.entry.groupId,
        buckets: change.entry.buckets.map((entry) => bucket(bucketActions(entry))),
      });
    case 'delete-group':
      return groupMod({
        command: GroupModCommand.DELETE,
        groupType: GroupType.ALL,
        groupId: change.groupId,
        buckets: [],
      });
    case 'add-flow':
      // An ADD replaces any flow with the same match and priority, whoever's (OpenFlow
      // 1.3.5 §6.4): the planner never sends one where another controller's flow is
      // (planInstall's foreignFlows). Not OFPFF_CHECK_OVERLAP: OVS checks it against
      // every flow of the priority, which makes 10,000 adds take seconds, not a second.
      return flowMod({
        command: FlowModCommand.ADD,
        tableId: change.entry.table,
        priority: change.entry.priority,
        cookie: change.entry.cookie,
        hardTimeout: change.entry.hardTimeout ?? 0,
        match: matchFields(change.entry.match),
        instructions: flowInstructions(change.entry),
      });
    case 'modify-flow':
      return flowMod({
        command: FlowModCommand.MODIFY_STRICT,
        tableId: change.entry.table,
        priority: change.entry.priority,
        cookie: change.entry.cookie,
        cookieMask: FLOW_COOKIE_FULL_MASK,
        match: matchFields(change.entry.match),
        instructions: flowInstructions(change.entry),
      });
    case 'add-meter':
    case 'modify-meter':
      // Packets a second, with the burst given (meterMod's default flags) and counted.
      return meterMod({
        command: change.op === 'add-meter' ? MeterModCommand.ADD : MeterModCommand.MODIFY,
        meterId: change.meterId,
        bands: [dropBand(change.meter.rate, change.meter.burst)],
      });
    case 'delete-meter':
      return meterMod({ command: MeterModCommand.DELETE, meterId: change.meterId });
    case 'delete-flow':
      // Strict, and only if the cookie is still ours: never another controller's flow.
      return flowMod({
        command: FlowModCommand.DELETE_STRICT,
        tableId: change.entry.table,
        priority: change.entry.priority,
        cookie: change.entry.cookie,
        cookieMask: FLOW_COOKIE_FULL_MASK,
        match: matchFields(change.entry.match),
      });
  }
}

/**
 * A dumped flow as a FlowEntry, or undefined when it holds something the pipeline never
 * writes (another match field, another instruction): such a flow is not one of ours to
 * read, whatever its cookie says.
 */
export function flowEntryOf(stats: FlowStats): FlowEntry | undefined {
  const match = flowMatchOf(stats);
  if (match === undefined) return undefined;
  const actions: FlowAction[] = [];
  let meterId: number | undefined;
  for (const instruction of stats.instructions) {
    if (instruction.type === 'METER') {
      meterId = instruction.meterId;
      continue;
    }
    if (instruction.type !== 'APPLY_ACTIONS') return undefined;
    for (const action of instruction.actions) {
      if (action.type === 'GROUP') actions.push({ type: 'group', groupId: action.groupId });
      else if (action.type !== 'OUTPUT') return undefined;
      else if (action.port === OfpPort.CONTROLLER) actions.push({ type: 'controller' });
      else if (action.port === OfpPort.FLOOD) actions.push({ type: 'flood' });
      else actions.push({ type: 'output', port: action.port });
    }
  }
  return {
    table: stats.tableId,
    priority: stats.priority,
    cookie: stats.cookie,
    match,
    actions,
    ...(meterId === undefined ? {} : { meterId }),
  };
}

/**
 * Where a dumped flow sits (table, priority, match), whatever its actions: for flows of
 * other controllers, which ours must never take the place of, even when their actions
 * (goto_table, set_field, ...) are nothing the pipeline writes. Undefined when its
 * match has fields ours never use (then it cannot be the same entry as one of ours).
 */
export function flowSlotOf(stats: FlowStats): FlowEntry | undefined {
  const match = flowMatchOf(stats);
  return match === undefined
    ? undefined
    : { table: stats.tableId, priority: stats.priority, cookie: stats.cookie, match, actions: [] };
}

function flowMatchOf(stats: FlowStats): FlowMatch | undefined {
  const match: FlowMatch = {};
  for (const field of stats.match) {
    switch (field.field) {
      case 'IN_PORT':
        match.inPort = field.value;
        break;
      case 'TUN_IPV4_SRC':
        // The pipeline names one peer exactly: a masked tunnel source is none of ours.
        if (field.mask !== undefined && field.mask !== EXACT_IPV4_MASK) return undefined;
        match.tunSrc = field.value;
        break;
      case 'ETH_TYPE':
        match.ethType = field.value;
        break;
      case 'IP_PROTO':
        match.ipProto = field.value;
        break;
      case 'IPV4_SRC':
        // The pipeline matches one source exactly: a masked source is nobody's (S,G) entry.
        if (field.mask !== undefined && field.mask !== EXACT_IPV4_MASK) return undefined;
        match.ipSrc = field.value;
        break;
      case 'IPV4_DST':
        match.ipDst = field.value;
        if (field.mask !== undefined && field.mask !== EXACT_IPV4_MASK) match.ipDstMask = field.mask;
        break;
      case 'IPV6_SRC':
        if (field.mask !== undefined && field.mask !== EXACT_IPV6_MASK) return undefined;
        match.ipSrc = field.value;
        break;
      case 'IPV6_DST':
        match.ipDst = field.value;
        if (field.mask !== undefined && field.mask !== EXACT_IPV6_MASK) match.ipDstMask = field.mask;
        break;
      case 'ICMPV6_TYPE':
        match.icmpv6Type = field.value;
        break;
      default:
        return undefined;
    }
  }
  return match;
}

/**
 * A dumped group as a GroupEntry: buckets of one OUTPUT or GROUP action, and tunnel
 * buckets (SET_FIELD of an unmasked TUN_IPV4_DST, then OUTPUT); any other bucket is left out.
 */
export function groupEntryOf(desc: GroupDesc): GroupEntry {
  const buckets: Bucket[] = [];
  for (const entry of desc.buckets) {
    const tunnel = tunnelBucketOf(entry.actions);
    if (tunnel !== undefined) {
      buckets.push(tunnel);
      continue;
    }
    const [action] = entry.actions;
    if (entry.actions.length !== 1 || action === undefined) continue;
    if (action.type === 'OUTPUT') buckets.push({ type: 'output', port: action.port });
    else if (action.type === 'GROUP') buckets.push({ type: 'group', groupId: action.groupId });
  }
  const entry: GroupEntry = { groupId: desc.groupId, buckets };
  // Ours are all of type ALL: another type (a SELECT reaches one member) is drift.
  if (desc.groupType !== GroupType.ALL) entry.groupType = desc.groupType;
  return entry;
}

/** `set_field:PEER->tun_dst, output:PORT` as the pipeline writes it, or undefined for any other action list. */
function tunnelBucketOf(actions: readonly Action[]): Bucket | undefined {
  const [setField, outputAction] = actions;
  if (actions.length !== 2 || setField?.type !== 'SET_FIELD' || outputAction?.type !== 'OUTPUT') return undefined;
  const field = setField.field;
  if (field.field !== 'TUN_IPV4_DST' || (field.mask !== undefined && field.mask !== EXACT_IPV4_MASK)) return undefined;
  const peer = parseHostAddress(field.value);
  return peer === undefined ? undefined : { type: 'output', port: outputAction.port, tunnelDestination: peer };
}
