/**
 * The IGMP message model: one discriminated union for every message of RFC 1112 (v1),
 * RFC 2236 (v2) and RFC 3376 (v3). `kind` says what the message does; `version` says which
 * protocol version's format it has (for queries, per the length rule of RFC 3376 §7.1).
 * Addresses are dotted quads.
 */
import type { RecordTypeName } from './record-type.js';

/** RFC 1112 query: 8 octets, Max Resp field zero. Always a general query. */
export interface IgmpV1Query {
  kind: 'query';
  version: 1;
  /** Zero on the wire for a v1 query; kept so that what was received is what is shown. */
  group: string;
}

/** RFC 2236 query: 8 octets, non-zero Max Resp Time. */
export interface IgmpV2Query {
  kind: 'query';
  version: 2;
  /** `0.0.0.0` for a general query, the group for a group-specific one. */
  group: string;
  /** Max Response Time in tenths of a second, 1..255. */
  maxRespTimeDs: number;
}

/** RFC 3376 query: 12 octets or more. */
export interface IgmpV3Query {
  kind: 'query';
  version: 3;
  group: string;
  /** Max Resp Code as on the wire (floating-point form above 127; see float-code.ts). */
  maxRespCode: number;
  /** Suppress Router-Side Processing. */
  sFlag: boolean;
  /** Querier's Robustness Variable, 0..7 (0: the value exceeded 7). */
  qrv: number;
  /** Querier's Query Interval Code as on the wire (floating-point form above 127). */
  qqic: number;
  sources: string[];
}

export interface IgmpV1Report {
  kind: 'report';
  version: 1;
  group: string;
}

export interface IgmpV2Report {
  kind: 'report';
  version: 2;
  group: string;
}

export interface IgmpV2Leave {
  kind: 'leave';
  version: 2;
  group: string;
}

/** One group record of an IGMPv3 report (RFC 3376 §4.2.4). */
export interface GroupRecord {
  type: RecordTypeName;
  group: string;
  sources: string[];
  /** Auxiliary data (a whole number of 32-bit words); RFC 3376 defines none, receivers ignore it. */
  auxData?: Uint8Array;
}

export interface IgmpV3Report {
  kind: 'report';
  version: 3;
  records: GroupRecord[];
  /**
   * Records of unknown type that decoding skipped (RFC 3376 §4.2.12: ignore them).
   * Set only by `decode`; `encode` never writes them.
   */
  ignoredRecords?: number;
}

/** Any other IGMP type (DVMRP, mtrace, ...): carried, not interpreted. */
export interface IgmpOther {
  kind: 'other';
  igmpType: number;
  /** The second octet (code / Max Resp field). */
  code: number;
  /** Everything after the checksum. */
  body: Uint8Array;
}

/** The versions of IGMP (RFC 1112, 2236, 3376): the one declaration of the type. */
export type IgmpVersion = 1 | 2 | 3;

export type IgmpQuery = IgmpV1Query | IgmpV2Query | IgmpV3Query;
export type IgmpReport = IgmpV1Report | IgmpV2Report | IgmpV3Report;
export type IgmpMessage = IgmpQuery | IgmpReport | IgmpV2Leave | IgmpOther;
