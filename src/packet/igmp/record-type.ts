/** IGMPv3 group record types (RFC 3376 §4.2.12), numbers ↔ names. */
export const RecordType = {
  MODE_IS_INCLUDE: 1,
  MODE_IS_EXCLUDE: 2,
  CHANGE_TO_INCLUDE_MODE: 3,
  CHANGE_TO_EXCLUDE_MODE: 4,
  ALLOW_NEW_SOURCES: 5,
  BLOCK_OLD_SOURCES: 6,
} as const;

export type RecordTypeName = keyof typeof RecordType;

const NAMES: readonly (RecordTypeName | undefined)[] = [
  undefined,
  'MODE_IS_INCLUDE',
  'MODE_IS_EXCLUDE',
  'CHANGE_TO_INCLUDE_MODE',
  'CHANGE_TO_EXCLUDE_MODE',
  'ALLOW_NEW_SOURCES',
  'BLOCK_OLD_SOURCES',
];

/** The name of a known record type, or undefined for one RFC 3376 says to ignore. */
export function recordTypeName(type: number): RecordTypeName | undefined {
  return NAMES[type];
}
