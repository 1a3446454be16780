/**
 * OFPT_PACKET_IN (OpenFlow 1.3.5 §7.4.1):
 *
 *   header | buffer_id(4) | total_len(2) | reason | table_id | cookie(8)
 *   | match (padded to 8) | pad(2) | data
 *
 * The match carries the packet's pipeline fields: IN_PORT always; Open vSwitch adds
 * others (metadata, registers, tunnel fields) when they are nonzero. The tunnel's outer
 * IPv4 source and destination decode as TUN_IPV4_SRC and TUN_IPV4_DST, most of the rest
 * as RAW OXM fields. The two octets of padding put the Ethernet payload's IP header on a
 * 4-octet boundary.
 */
import { OpenFlowDecodeError } from './errors.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import * as match from './match.js';
import type { OxmField } from './oxm.js';
import {
  copyBytes,
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU16Field,
  writeU32Field,
  writeU64Field,
  writeU8Field,
} from '../../wire/bytes.js';

export interface PacketIn {
  type: 'PACKET_IN';
  xid: number;
  /** OFP_NO_BUFFER when the whole packet is in `data` (always, with OVS). */
  bufferId: number;
  /** The packet's full length; `data` may be shorter (max_len / miss_send_len). */
  totalLen: number;
  /** PacketInReason: NO_MATCH, ACTION or INVALID_TTL. */
  reason: number;
  tableId: number;
  /** The cookie of the flow that sent the packet (all ones for a table-miss without a flow). */
  cookie: bigint;
  match: OxmField[];
  /** The Ethernet frame. */
  data: Uint8Array;
}

const FIXED_LENGTH = HEADER_LENGTH + 16;
const PAD_AFTER_MATCH = 2;

export function encodingLength(message: PacketIn): number {
  return FIXED_LENGTH + match.encodingLength(message.match) + PAD_AFTER_MATCH + message.data.length;
}

export function encode(message: PacketIn, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'PACKET_IN');
  writeHeader(out, offset, 'PACKET_IN', length, message.xid);
  writeU32Field(out, offset + 8, message.bufferId, 'buffer_id');
  writeU16Field(out, offset + 12, message.totalLen, 'total_len');
  writeU8Field(out, offset + 14, message.reason, 'reason');
  writeU8Field(out, offset + 15, message.tableId, 'table_id');
  writeU64Field(out, offset + 16, message.cookie, 'cookie');
  match.encode(message.match, out, offset + FIXED_LENGTH);
  const padAt = offset + FIXED_LENGTH + match.encodingLength(message.match);
  out.fill(0, padAt, padAt + PAD_AFTER_MATCH);
  out.set(message.data, padAt + PAD_AFTER_MATCH);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): PacketIn {
  const header = readMessageHeader(bytes, start, end, 'PACKET_IN', FIXED_LENGTH + 8 + PAD_AFTER_MATCH);
  const matchStart = start + FIXED_LENGTH;
  const matchEnd = matchStart + match.lengthAt(bytes, matchStart, end);
  if (end - matchEnd < PAD_AFTER_MATCH)
    throw new OpenFlowDecodeError('truncated', 'PACKET_IN ends inside the padding after its match');
  return {
    type: 'PACKET_IN',
    xid: header.xid,
    bufferId: readU32BE(bytes, start + 8),
    totalLen: readU16BE(bytes, start + 12),
    reason: bytes[start + 14]!,
    tableId: bytes[start + 15]!,
    cookie: readU64BE(bytes, start + 16),
    match: match.decode(bytes, matchStart, matchEnd),
    data: copyBytes(bytes, matchEnd + PAD_AFTER_MATCH, end),
  };
}

/** The packet's ingress port (its IN_PORT match field), or undefined if the switch sent none. */
export function inPortOf(message: Pick<PacketIn, 'match'>): number | undefined {
  for (const field of message.match) if (field.field === 'IN_PORT') return field.value;
  return undefined;
}

/**
 * The outer IPv4 source of a packet that came in on a tunnel port (its TUN_IPV4_SRC match
 * field), or undefined for one that did not. It is what the underlay delivered: the one
 * word on who sent it that a sender cannot write inside the packet it tunnels.
 */
export function tunnelSourceOf(message: Pick<PacketIn, 'match'>): string | undefined {
  for (const field of message.match) if (field.field === 'TUN_IPV4_SRC') return field.value;
  return undefined;
}
