/**
 * The MLD message model: one discriminated union for every message of RFC 2710 (MLDv1)
 * and RFC 3810 (MLDv2), the same shape as the IGMP model (igmp/message.ts): `kind` says
 * what the message does, `version` which format it has (for queries, by length, RFC 3810
 * §8.1). Addresses are RFC 5952 canonical text.
 */
import type { RecordTypeName } from '../igmp/record-type.js';

/** RFC 2710 query: 24 octets. */
export interface MldV1Query {
  kind: 'query';
  version: 1;
  /** `::` for a general query, the group for a multicast-address-specific one. */
  group: string;
  /** Maximum Response Delay, ms (0 to 65535). */
  maxRespDelayMs: number;
}

/** RFC 3810 query: 28 octets or more. */
export interface MldV2Query {
  kind: 'query';
  version: 2;
  group: string;
  /** Maximum Response Code as on the wire (16 bits; floating-point form from 32768 on, see float-code.ts). */
  maxRespCode: number;
  /** Suppress Router-Side Processing. */
  sFlag: boolean;
  /** Querier's Robustness Variable, 0..7 (0: the value exceeded 7). */
  qrv: number;
  /** Querier's Query Interval Code as on the wire (8 bits; the IGMPv3 floating-point form from 128 on). */
  qqic: number;
  sources: string[];
}

/** RFC 2710 Multicast Listener Report (type 131). */
export interface MldV1Report {
  kind: 'report';
  version: 1;
  group: string;
}

/** RFC 2710 Multicast Listener Done (type 132): the leave of MLD. */
export interface MldDone {
  kind: 'leave';
  version: 1;
  group: string;
}

/** One multicast address record of an MLDv2 report (RFC 3810 §5.2.4); the record types and their names are IGMPv3's. */
export interface MldRecord {
  type: RecordTypeName;
  group: string;
  sources: string[];
  /** Auxiliary data (a whole number of 32-bit words); RFC 3810 defines none, receivers ignore it. */
  auxData?: Uint8Array;
}

/** RFC 3810 Version 2 Multicast Listener Report (type 143). */
export interface MldV2Report {
  kind: 'report';
  version: 2;
  records: MldRecord[];
  /** Records of unknown type that decoding skipped (RFC 3810 §5.2.12). Set only by `decode`. */
  ignoredRecords?: number;
}

/** The versions of MLD (RFC 2710, 3810): the one declaration of the type. */
export type MldVersion = 1 | 2;

export type MldQuery = MldV1Query | MldV2Query;
export type MldReport = MldV1Report | MldV2Report;
/** Every MLD message; ICMPv6 messages of other types are not MLD and never one of these. */
export type MldMessage = MldQuery | MldReport | MldDone;

/** The ICMPv6 types of MLD. */
export const MldType = {
  Query: 130,
  V1Report: 131,
  V1Done: 132,
  V2Report: 143,
} as const;
export type MldType = (typeof MldType)[keyof typeof MldType];

/** IPv6 next header value of ICMPv6. */
export const IP_PROTOCOL_ICMPV6 = 58;

/** The addresses an MLD message's checksum covers (the IPv6 pseudo-header), as text, for encode. */
export interface MldAddresses {
  src: string;
  dst: string;
}

/** Where the 16-octet source and destination of the IPv6 packet sit in the decoded bytes, for decode. */
export interface MldAddressOffsets {
  srcAt: number;
  dstAt: number;
}
