/** IGMP message type numbers (RFC 1112, 2236, 3376; IANA "IGMP Type Numbers"). */
export const IgmpType = {
  MembershipQuery: 0x11,
  V1MembershipReport: 0x12,
  V2MembershipReport: 0x16,
  V2LeaveGroup: 0x17,
  V3MembershipReport: 0x22,
} as const;
export type IgmpType = (typeof IgmpType)[keyof typeof IgmpType];

/** Names of other IGMP types a capture may hold, for display only (IANA registry). */
const OTHER_TYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [0x13, 'DVMRP'],
  [0x14, 'PIMv1'],
  [0x15, 'Cisco trace'],
  [0x1e, 'mtrace response'],
  [0x1f, 'mtrace'],
  [0x30, 'MRD advertisement'],
  [0x31, 'MRD solicitation'],
  [0x32, 'MRD termination'],
]);

export function otherIgmpTypeName(type: number): string {
  return OTHER_TYPE_NAMES.get(type) ?? `type 0x${type.toString(16).padStart(2, '0')}`;
}
