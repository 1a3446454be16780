/**
 * Commands, flags and types of FLOW_MOD and GROUP_MOD (OpenFlow 1.3.5 §7.3.4.2, §7.3.4.3),
 * number ↔ name.
 */

export const FlowModCommand = {
  ADD: 0,
  MODIFY: 1,
  MODIFY_STRICT: 2,
  DELETE: 3,
  DELETE_STRICT: 4,
} as const;
export type FlowModCommandName = keyof typeof FlowModCommand;

/** `ofp_flow_mod_flags`: a bit set. */
export const FlowModFlag = {
  SEND_FLOW_REM: 1 << 0,
  CHECK_OVERLAP: 1 << 1,
  RESET_COUNTS: 1 << 2,
  NO_PKT_COUNTS: 1 << 3,
  NO_BYT_COUNTS: 1 << 4,
} as const;

export const GroupModCommand = {
  ADD: 0,
  MODIFY: 1,
  DELETE: 2,
} as const;
export type GroupModCommandName = keyof typeof GroupModCommand;

export const GroupType = {
  /** Every bucket gets a copy: multicast. */
  ALL: 0,
  SELECT: 1,
  INDIRECT: 2,
  FF: 3,
} as const;
export type GroupTypeName = keyof typeof GroupType;

function inverse<T extends Record<string, number>>(table: T): ReadonlyMap<number, keyof T & string> {
  return new Map(Object.entries(table).map(([name, number]) => [number, name as keyof T & string]));
}

const FLOW_MOD_COMMAND_NAMES = inverse(FlowModCommand);
const GROUP_MOD_COMMAND_NAMES = inverse(GroupModCommand);
const GROUP_TYPE_NAMES = inverse(GroupType);

export function flowModCommandName(command: number): FlowModCommandName | undefined {
  return FLOW_MOD_COMMAND_NAMES.get(command);
}

export function groupModCommandName(command: number): GroupModCommandName | undefined {
  return GROUP_MOD_COMMAND_NAMES.get(command);
}

export function groupTypeName(type: number): GroupTypeName | undefined {
  return GROUP_TYPE_NAMES.get(type);
}
