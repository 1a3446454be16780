/** Multipart message types and flags (OpenFlow 1.3.5 §7.3.5, `ofp_multipart_type`). */

export const MultipartType = {
  DESC: 0,
  FLOW: 1,
  AGGREGATE: 2,
  TABLE: 3,
  PORT_STATS: 4,
  QUEUE: 5,
  GROUP: 6,
  GROUP_DESC: 7,
  GROUP_FEATURES: 8,
  METER: 9,
  METER_CONFIG: 10,
  METER_FEATURES: 11,
  TABLE_FEATURES: 12,
  PORT_DESC: 13,
  EXPERIMENTER: 0xffff,
} as const;

/** `flags` of a multipart request or reply: more parts follow in further messages with the same xid. */
export const MULTIPART_MORE = 1 << 0;
