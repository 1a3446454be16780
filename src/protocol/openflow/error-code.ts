/**
 * OFPT_ERROR types and codes (OpenFlow 1.3.5 §7.4.4), number ↔ name, and the
 * experimenter errors Open vSwitch sends in OpenFlow 1.3.
 *
 * Names are the spec's without their prefixes (`OFPET_`, `OFPGMFC_`, ...), so an error
 * reads `GROUP_MOD_FAILED/GROUP_EXISTS`. Experimenter errors (type 0xffff) carry an
 * experimenter id and an `exp_code`: OVS sends its own (Nicira, "NX") and some borrowed
 * from later OpenFlow versions under the ONF id, numbered as in OVS's
 * include/openvswitch/ofp-errors.h ("NX1.2+(12)", "ONF1.3(2360)"). They print as
 * `NX(12)/NXFMFC_HARDWARE`, or `NX(99)` for a number this table does not know.
 */

export const OFP_ERROR_TYPES = {
  HELLO_FAILED: 0,
  BAD_REQUEST: 1,
  BAD_ACTION: 2,
  BAD_INSTRUCTION: 3,
  BAD_MATCH: 4,
  FLOW_MOD_FAILED: 5,
  GROUP_MOD_FAILED: 6,
  PORT_MOD_FAILED: 7,
  TABLE_MOD_FAILED: 8,
  QUEUE_OP_FAILED: 9,
  SWITCH_CONFIG_FAILED: 10,
  ROLE_REQUEST_FAILED: 11,
  METER_MOD_FAILED: 12,
  TABLE_FEATURES_FAILED: 13,
  EXPERIMENTER: 0xffff,
} as const;

export type OfpErrorTypeName = keyof typeof OFP_ERROR_TYPES;

/** Codes of each type, by number (the index). */
const CODES: Readonly<Record<Exclude<OfpErrorTypeName, 'EXPERIMENTER'>, readonly string[]>> = {
  HELLO_FAILED: ['INCOMPATIBLE', 'EPERM'],
  BAD_REQUEST: [
    'BAD_VERSION',
    'BAD_TYPE',
    'BAD_MULTIPART',
    'BAD_EXPERIMENTER',
    'BAD_EXP_TYPE',
    'EPERM',
    'BAD_LEN',
    'BUFFER_EMPTY',
    'BUFFER_UNKNOWN',
    'BAD_TABLE_ID',
    'IS_SLAVE',
    'BAD_PORT',
    'BAD_PACKET',
    'MULTIPART_BUFFER_OVERFLOW',
  ],
  BAD_ACTION: [
    'BAD_TYPE',
    'BAD_LEN',
    'BAD_EXPERIMENTER',
    'BAD_EXP_TYPE',
    'BAD_OUT_PORT',
    'BAD_ARGUMENT',
    'EPERM',
    'TOO_MANY',
    'BAD_QUEUE',
    'BAD_OUT_GROUP',
    'MATCH_INCONSISTENT',
    'UNSUPPORTED_ORDER',
    'BAD_TAG',
    'BAD_SET_TYPE',
    'BAD_SET_LEN',
    'BAD_SET_ARGUMENT',
  ],
  BAD_INSTRUCTION: [
    'UNKNOWN_INST',
    'UNSUP_INST',
    'BAD_TABLE_ID',
    'UNSUP_METADATA',
    'UNSUP_METADATA_MASK',
    'BAD_EXPERIMENTER',
    'BAD_EXP_TYPE',
    'BAD_LEN',
    'EPERM',
  ],
  BAD_MATCH: [
    'BAD_TYPE',
    'BAD_LEN',
    'BAD_TAG',
    'BAD_DL_ADDR_MASK',
    'BAD_NW_ADDR_MASK',
    'BAD_WILDCARDS',
    'BAD_FIELD',
    'BAD_VALUE',
    'BAD_MASK',
    'BAD_PREREQ',
    'DUP_FIELD',
    'EPERM',
  ],
  FLOW_MOD_FAILED: [
    'UNKNOWN',
    'TABLE_FULL',
    'BAD_TABLE_ID',
    'OVERLAP',
    'EPERM',
    'BAD_TIMEOUT',
    'BAD_COMMAND',
    'BAD_FLAGS',
  ],
  GROUP_MOD_FAILED: [
    'GROUP_EXISTS',
    'INVALID_GROUP',
    'WEIGHT_UNSUPPORTED',
    'OUT_OF_GROUPS',
    'OUT_OF_BUCKETS',
    'CHAINING_UNSUPPORTED',
    'WATCH_UNSUPPORTED',
    'LOOP',
    'UNKNOWN_GROUP',
    'CHAINED_GROUP',
    'BAD_TYPE',
    'BAD_COMMAND',
    'BAD_BUCKET',
    'BAD_WATCH',
    'EPERM',
  ],
  PORT_MOD_FAILED: ['BAD_PORT', 'BAD_HW_ADDR', 'BAD_CONFIG', 'BAD_ADVERTISE', 'EPERM'],
  TABLE_MOD_FAILED: ['BAD_TABLE', 'BAD_CONFIG', 'EPERM'],
  QUEUE_OP_FAILED: ['BAD_PORT', 'BAD_QUEUE', 'EPERM'],
  SWITCH_CONFIG_FAILED: ['BAD_FLAGS', 'BAD_LEN', 'EPERM'],
  ROLE_REQUEST_FAILED: ['STALE', 'UNSUP', 'BAD_ROLE'],
  METER_MOD_FAILED: [
    'UNKNOWN',
    'METER_EXISTS',
    'INVALID_METER',
    'UNKNOWN_METER',
    'BAD_COMMAND',
    'BAD_FLAGS',
    'BAD_RATE',
    'BAD_BURST',
    'BAD_BAND',
    'BAD_BAND_VALUE',
    'OUT_OF_METERS',
    'OUT_OF_BANDS',
  ],
  TABLE_FEATURES_FAILED: ['BAD_TABLE', 'BAD_METADATA', 'BAD_TYPE', 'BAD_LEN', 'BAD_ARGUMENT', 'EPERM'],
};

/** Experimenter ids of the errors OVS sends (`ofp_error_experimenter_msg.experimenter`). */
export const EXPERIMENTER_IDS = {
  /** Nicira: Open vSwitch's own extensions. */
  NX: 0x00002320,
  /** Open Networking Foundation: OpenFlow 1.4+ errors backported to 1.3 ("ONF1.3" in OVS). */
  ONF: 0x4f4e4600,
} as const;

/** OVS's NX1.2+ experimenter error codes that OpenFlow 1.3 connections can see. */
const NX_CODES: ReadonlyMap<number, string> = new Map([
  [2, 'NXBRC_NXM_INVALID'],
  [3, 'NXBRC_NXM_BAD_TYPE'],
  [4, 'NXBRC_MUST_BE_ZERO'],
  [5, 'NXBRC_BAD_REASON'],
  [6, 'OFPMOFC_MONITOR_EXISTS'],
  [7, 'OFPMOFC_BAD_FLAGS'],
  [8, 'OFPMOFC_UNKNOWN_MONITOR'],
  [9, 'NXBRC_FM_BAD_EVENT'],
  [10, 'NXBRC_UNENCODABLE_ERROR'],
  [11, 'NXBAC_MUST_BE_ZERO'],
  [12, 'NXFMFC_HARDWARE'],
  [13, 'NXFMFC_BAD_TABLE_ID'],
  [15, 'NXBAC_BAD_CONJUNCTION'],
  [16, 'NXTTMFC_BAD_COMMAND'],
  [17, 'NXTTMFC_BAD_OPT_LEN'],
  [18, 'NXTTMFC_BAD_FIELD_IDX'],
  [19, 'NXTTMFC_TABLE_FULL'],
  [20, 'NXTTMFC_ALREADY_MAPPED'],
  [21, 'NXTTMFC_DUP_ENTRY'],
  [34, 'NXR_NOT_SUPPORTED'],
  [35, 'NXR_STALE'],
  [36, 'NXST_NOT_CONFIGURED'],
  [37, 'NXFMFC_INVALID_TLV_FIELD'],
  [38, 'NXTTMFC_INVALID_TLV_DEL'],
  [39, 'NXBAC_BAD_HEADER_TYPE'],
  [40, 'NXBAC_UNKNOWN_ED_PROP'],
  [41, 'NXBAC_BAD_ED_PROP'],
  [42, 'NXBAC_CT_DATAPATH_SUPPORT'],
  [43, 'NXBMC_CT_DATAPATH_SUPPORT'],
  [44, 'NXTFFC_DUP_TABLE'],
]);

/** ONF experimenter error codes OVS uses in OpenFlow 1.3 (later versions' standard errors). */
const ONF_CODES: ReadonlyMap<number, string> = new Map([
  [2300, 'OFPBFC_UNKNOWN'],
  [2301, 'OFPBFC_EPERM'],
  [2302, 'OFPBFC_BAD_ID'],
  [2303, 'OFPBFC_BUNDLE_EXIST'],
  [2304, 'OFPBFC_BUNDLE_CLOSED'],
  [2305, 'OFPBFC_OUT_OF_BUNDLES'],
  [2306, 'OFPBFC_BAD_TYPE'],
  [2307, 'OFPBFC_BAD_FLAGS'],
  [2308, 'OFPBFC_MSG_BAD_LEN'],
  [2309, 'OFPBFC_MSG_BAD_XID'],
  [2310, 'OFPBFC_MSG_UNSUP'],
  [2311, 'OFPBFC_MSG_CONFLICT'],
  [2312, 'OFPBFC_MSG_TOO_MANY'],
  [2313, 'OFPBFC_MSG_FAILED'],
  [2314, 'OFPBFC_TIMEOUT'],
  [2315, 'OFPBFC_BUNDLE_IN_PROGRESS'],
  [2360, 'OFPFMFC_BAD_PRIORITY'],
  [2370, 'OFPACFC_INVALID'],
  [2371, 'OFPACFC_UNSUPPORTED'],
  [2372, 'OFPACFC_EPERM'],
  [2640, 'OFPBRC_MULTIPART_REQUEST_TIMEOUT'],
  [2641, 'OFPBRC_MULTIPART_REPLY_TIMEOUT'],
  [4250, 'OFPBAC_BAD_SET_MASK'],
  [4443, 'OFPBPC_TOO_MANY'],
  [4444, 'OFPBPC_DUP_TYPE'],
  [4445, 'OFPBPC_BAD_EXPERIMENTER'],
  [4446, 'OFPBPC_BAD_EXP_TYPE'],
  [4447, 'OFPBPC_BAD_EXP_VALUE'],
  [4448, 'OFPBPC_EPERM'],
]);

const TYPE_NAMES: ReadonlyMap<number, OfpErrorTypeName> = new Map(
  Object.entries(OFP_ERROR_TYPES).map(([name, number]) => [number, name as OfpErrorTypeName]),
);

export function errorTypeName(type: number): OfpErrorTypeName | undefined {
  return TYPE_NAMES.get(type);
}

/** The name of `code` within standard error type `type`, or undefined if unknown. */
export function errorCodeName(type: number, code: number): string | undefined {
  const typeName = TYPE_NAMES.get(type);
  if (typeName === undefined || typeName === 'EXPERIMENTER') return undefined;
  return CODES[typeName][code];
}

/** The number of code `codeName` of type `typeName` (e.g. GROUP_MOD_FAILED, GROUP_EXISTS → 0). */
export function errorCodeNumber(
  typeName: Exclude<OfpErrorTypeName, 'EXPERIMENTER'>,
  codeName: string,
): number | undefined {
  const index = CODES[typeName].indexOf(codeName);
  return index < 0 ? undefined : index;
}

/** What an OFPT_ERROR names: its type, its code and, for experimenter errors, the experimenter. */
export interface ErrorIdentity {
  errorType: number;
  code: number;
  /** Experimenter id (errorType 0xffff only). */
  experimenter?: number;
}

/**
 * `GROUP_MOD_FAILED/GROUP_EXISTS`; `GROUP_MOD_FAILED/code 99` for an unknown code;
 * `type 77/code 3` for an unknown type; `NX(12)/NXFMFC_HARDWARE`, `NX(99)`,
 * `ONF(2360)/OFPFMFC_BAD_PRIORITY` or `EXPERIMENTER 0x12345678(5)` for experimenter errors.
 * Stable: callers may compare it.
 */
export function describeError(error: ErrorIdentity): string {
  if (error.errorType === OFP_ERROR_TYPES.EXPERIMENTER) {
    const experimenter = error.experimenter ?? 0;
    if (experimenter === EXPERIMENTER_IDS.NX) return withName(`NX(${error.code})`, NX_CODES.get(error.code));
    if (experimenter === EXPERIMENTER_IDS.ONF) return withName(`ONF(${error.code})`, ONF_CODES.get(error.code));
    return `EXPERIMENTER 0x${experimenter.toString(16).padStart(8, '0')}(${error.code})`;
  }
  const typeName = errorTypeName(error.errorType) ?? `type ${error.errorType}`;
  return `${typeName}/${errorCodeName(error.errorType, error.code) ?? `code ${error.code}`}`;
}

function withName(base: string, name: string | undefined): string {
  return name === undefined ? base : `${base}/${name}`;
}
