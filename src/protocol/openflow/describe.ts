/**
 * One-line summaries of requests, for error messages: what was refused, in the terms of
 * `ovs-ofctl` (`GROUP_MOD ADD group 7 (ALL, 2 buckets)`).
 */
import type { OpenFlowMessage } from './message.js';
import { describeOfpType } from './message-type.js';
import { meterModCommandName } from './meter-mod.js';
import { flowModCommandName, groupModCommandName, groupTypeName } from './mod-command.js';
import { hex } from '../../wire/bytes.js';

export function summarize(message: OpenFlowMessage, xid: number): string {
  switch (message.type) {
    case 'FLOW_MOD': {
      const command = flowModCommandName(message.command) ?? `command ${message.command}`;
      return `FLOW_MOD ${command} (xid ${xid}, table ${message.tableId}, priority ${message.priority}, cookie ${hex(message.cookie, 1)})`;
    }
    case 'GROUP_MOD': {
      const command = groupModCommandName(message.command) ?? `command ${message.command}`;
      const type = groupTypeName(message.groupType) ?? `type ${message.groupType}`;
      const buckets = `${message.buckets.length} bucket${message.buckets.length === 1 ? '' : 's'}`;
      return `GROUP_MOD ${command} group ${message.groupId} (xid ${xid}, ${type}, ${buckets})`;
    }
    case 'METER_MOD': {
      const command = meterModCommandName(message.command) ?? `command ${message.command}`;
      const bands = `${message.bands.length} band${message.bands.length === 1 ? '' : 's'}`;
      return `METER_MOD ${command} meter ${message.meterId} (xid ${xid}, flags ${hex(message.flags, 1)}, ${bands})`;
    }
    case 'MULTIPART_REQUEST':
      return `MULTIPART_REQUEST ${message.body.kind === 'OTHER' ? `type ${message.body.multipartType}` : message.body.kind} (xid ${xid})`;
    case 'OTHER':
      return `${describeOfpType(message.messageType)} (xid ${xid})`;
    default:
      return `${message.type} (xid ${xid})`;
  }
}
