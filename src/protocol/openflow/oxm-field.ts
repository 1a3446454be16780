/**
 * OXM fields this client decodes into named values, with their payload lengths, value
 * formats and whether they may carry a mask: those of the OpenFlow basic class (OpenFlow
 * 1.3.5 §7.2.3.7, `oxm_ofb_match_fields`), and Open vSwitch's two IPv4 tunnel endpoints
 * of class NXM_1. Fields not listed here (e.g. OVS's NXM registers in a packet-in's match)
 * pass through as raw bytes.
 */

/** OXM classes (`ofp_oxm_class`). */
export const OxmClass = {
  NXM_0: 0x0000,
  NXM_1: 0x0001,
  OPENFLOW_BASIC: 0x8000,
  EXPERIMENTER: 0xffff,
} as const;

/** How a field's payload reads: an unsigned integer, a MAC, an IPv4 or IPv6 address, or 64 bits (bigint). */
export type OxmFormat = 'uint' | 'mac' | 'ipv4' | 'ipv6' | 'u64';

export interface OxmFieldSpec {
  readonly number: number;
  /** Payload octets without the mask (with a mask the payload is twice as long). */
  readonly length: number;
  readonly format: OxmFormat;
  readonly maskable: boolean;
}

export const OXM_FIELDS = {
  IN_PORT: { number: 0, length: 4, format: 'uint', maskable: false },
  IN_PHY_PORT: { number: 1, length: 4, format: 'uint', maskable: false },
  METADATA: { number: 2, length: 8, format: 'u64', maskable: true },
  ETH_DST: { number: 3, length: 6, format: 'mac', maskable: true },
  ETH_SRC: { number: 4, length: 6, format: 'mac', maskable: true },
  ETH_TYPE: { number: 5, length: 2, format: 'uint', maskable: false },
  VLAN_VID: { number: 6, length: 2, format: 'uint', maskable: true },
  VLAN_PCP: { number: 7, length: 1, format: 'uint', maskable: false },
  IP_DSCP: { number: 8, length: 1, format: 'uint', maskable: false },
  IP_ECN: { number: 9, length: 1, format: 'uint', maskable: false },
  IP_PROTO: { number: 10, length: 1, format: 'uint', maskable: false },
  IPV4_SRC: { number: 11, length: 4, format: 'ipv4', maskable: true },
  IPV4_DST: { number: 12, length: 4, format: 'ipv4', maskable: true },
  TCP_SRC: { number: 13, length: 2, format: 'uint', maskable: false },
  TCP_DST: { number: 14, length: 2, format: 'uint', maskable: false },
  UDP_SRC: { number: 15, length: 2, format: 'uint', maskable: false },
  UDP_DST: { number: 16, length: 2, format: 'uint', maskable: false },
  ICMPV4_TYPE: { number: 19, length: 1, format: 'uint', maskable: false },
  ICMPV4_CODE: { number: 20, length: 1, format: 'uint', maskable: false },
  ARP_OP: { number: 21, length: 2, format: 'uint', maskable: false },
  ARP_SPA: { number: 22, length: 4, format: 'ipv4', maskable: true },
  ARP_TPA: { number: 23, length: 4, format: 'ipv4', maskable: true },
  ARP_SHA: { number: 24, length: 6, format: 'mac', maskable: true },
  ARP_THA: { number: 25, length: 6, format: 'mac', maskable: true },
  IPV6_SRC: { number: 26, length: 16, format: 'ipv6', maskable: true },
  IPV6_DST: { number: 27, length: 16, format: 'ipv6', maskable: true },
  ICMPV6_TYPE: { number: 29, length: 1, format: 'uint', maskable: false },
  ICMPV6_CODE: { number: 30, length: 1, format: 'uint', maskable: false },
} as const satisfies Record<string, OxmFieldSpec>;

/**
 * The tunnel's outer IPv4 source and destination (Open vSwitch's NXM_NX_TUN_IPV4_SRC and
 * NXM_NX_TUN_IPV4_DST). They have no basic-class OXM, so OVS uses these NXM_1
 * headers even in OpenFlow 1.3: in a packet-in's match from a tunnel port, and in
 * SET_FIELD for `set_field:PEER->tun_dst` on a flow-based (remote_ip=flow) tunnel.
 */
export const NXM_1_FIELDS = {
  TUN_IPV4_SRC: { number: 31, length: 4, format: 'ipv4', maskable: true },
  TUN_IPV4_DST: { number: 32, length: 4, format: 'ipv4', maskable: true },
} as const satisfies Record<string, OxmFieldSpec>;

/** Every named field with its OXM class: what oxm.ts encodes and decodes. */
export const NAMED_OXM_FIELDS = {
  ...inClass(OxmClass.OPENFLOW_BASIC, OXM_FIELDS),
  ...inClass(OxmClass.NXM_1, NXM_1_FIELDS),
};

function inClass<T extends Record<string, OxmFieldSpec>>(
  oxmClass: number,
  fields: T,
): { [K in keyof T]: T[K] & { readonly oxmClass: number } } {
  return Object.fromEntries(Object.entries(fields).map(([name, spec]) => [name, { ...spec, oxmClass }])) as {
    [K in keyof T]: T[K] & { readonly oxmClass: number };
  };
}

export type OxmFieldName = keyof typeof NAMED_OXM_FIELDS;
type FieldsOfFormat<F extends OxmFormat> = {
  [K in OxmFieldName]: (typeof NAMED_OXM_FIELDS)[K]['format'] extends F ? K : never;
}[OxmFieldName];
export type UintOxmFieldName = FieldsOfFormat<'uint'>;
export type MacOxmFieldName = FieldsOfFormat<'mac'>;
export type Ipv4OxmFieldName = FieldsOfFormat<'ipv4'>;
export type Ipv6OxmFieldName = FieldsOfFormat<'ipv6'>;

/** Field names by class, then by field number. */
const BY_CLASS_AND_NUMBER: ReadonlyMap<number, readonly (OxmFieldName | undefined)[]> = (() => {
  const byClass = new Map<number, (OxmFieldName | undefined)[]>();
  for (const [name, spec] of Object.entries(NAMED_OXM_FIELDS)) {
    const names = byClass.get(spec.oxmClass) ?? [];
    names[spec.number] = name as OxmFieldName;
    byClass.set(spec.oxmClass, names);
  }
  return byClass;
})();

/** The named field with number `field` in `oxmClass` (by default the basic class), if this client decodes it. */
export function oxmFieldName(field: number, oxmClass: number = OxmClass.OPENFLOW_BASIC): OxmFieldName | undefined {
  return BY_CLASS_AND_NUMBER.get(oxmClass)?.[field];
}
