/**
 * OpenFlow 1.3 message types (`ofp_type`, OpenFlow 1.3.5 §7.1), number ↔ name. Names are
 * the spec's without the `OFPT_` prefix: they are what decoded messages carry in `type`
 * and what error messages print.
 */

export const OFP_TYPE_NUMBERS = {
  HELLO: 0,
  ERROR: 1,
  ECHO_REQUEST: 2,
  ECHO_REPLY: 3,
  EXPERIMENTER: 4,
  FEATURES_REQUEST: 5,
  FEATURES_REPLY: 6,
  GET_CONFIG_REQUEST: 7,
  GET_CONFIG_REPLY: 8,
  SET_CONFIG: 9,
  PACKET_IN: 10,
  FLOW_REMOVED: 11,
  PORT_STATUS: 12,
  PACKET_OUT: 13,
  FLOW_MOD: 14,
  GROUP_MOD: 15,
  PORT_MOD: 16,
  TABLE_MOD: 17,
  MULTIPART_REQUEST: 18,
  MULTIPART_REPLY: 19,
  BARRIER_REQUEST: 20,
  BARRIER_REPLY: 21,
  QUEUE_GET_CONFIG_REQUEST: 22,
  QUEUE_GET_CONFIG_REPLY: 23,
  ROLE_REQUEST: 24,
  ROLE_REPLY: 25,
  GET_ASYNC_REQUEST: 26,
  GET_ASYNC_REPLY: 27,
  SET_ASYNC: 28,
  METER_MOD: 29,
} as const;

export type OfpTypeName = keyof typeof OFP_TYPE_NUMBERS;

const NAMES: readonly (OfpTypeName | undefined)[] = (() => {
  const names: (OfpTypeName | undefined)[] = [];
  for (const [name, number] of Object.entries(OFP_TYPE_NUMBERS)) names[number] = name as OfpTypeName;
  return names;
})();

/** The name of message type `type`, or undefined for a number OpenFlow 1.3 does not define. */
export function ofpTypeName(type: number): OfpTypeName | undefined {
  return NAMES[type];
}

/** For display: the name, or `type <n>`. */
export function describeOfpType(type: number): string {
  return ofpTypeName(type) ?? `type ${type}`;
}

/** Wire versions (`ofp_header.version`). */
export const OFP_VERSION = {
  '1.0': 0x01,
  '1.1': 0x02,
  '1.2': 0x03,
  '1.3': 0x04,
  '1.4': 0x05,
  '1.5': 0x06,
} as const;

/** The version this client speaks. */
export const OFP13_VERSION = OFP_VERSION['1.3'];

/** "1.3" for 0x04; `0x..` for a number no OpenFlow release uses. */
export function describeOfpVersion(version: number): string {
  for (const [name, number] of Object.entries(OFP_VERSION)) if (number === version) return name;
  return `0x${version.toString(16).padStart(2, '0')}`;
}
