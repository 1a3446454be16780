/**
 * The FLOW multipart bodies (OpenFlow 1.3.5 §7.3.5.2).
 *
 * Request (`ofp_flow_stats_request`):
 *   table_id | pad(3) | out_port(4) | out_group(4) | pad(4) | cookie(8) | cookie_mask(8) | match
 *
 * Reply: a list of `ofp_flow_stats`, each
 *   length(2) | table_id | pad | duration_sec(4) | duration_nsec(4) | priority(2)
 *   | idle_timeout(2) | hard_timeout(2) | flags(2) | pad(4) | cookie(8)
 *   | packet_count(8) | byte_count(8) | match (padded) | instructions
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import * as instructionList from './instruction.js';
import type { Instruction } from './instruction.js';
import * as match from './match.js';
import type { OxmField } from './oxm.js';
import { OFPTT_ALL, OfpGroup, OfpPort } from './reserved.js';
import {
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU16Field,
  writeU32Field,
  writeU64Field,
  writeU8Field,
} from '../../wire/bytes.js';

export interface FlowStatsRequest {
  kind: 'FLOW';
  /** OFPTT_ALL (0xff): every table. */
  tableId: number;
  /** Only flows that output to this port (OfpPort.ANY: no filter). */
  outPort: number;
  /** Only flows that output to this group (OfpGroup.ANY: no filter). */
  outGroup: number;
  cookie: bigint;
  /** Bits of `cookie` that must match (0: every flow). */
  cookieMask: bigint;
  /** Non-strict: flows at least as specific as this match. */
  match: OxmField[];
}

export interface FlowStats {
  tableId: number;
  durationSec: number;
  durationNsec: number;
  priority: number;
  idleTimeout: number;
  hardTimeout: number;
  flags: number;
  cookie: bigint;
  packetCount: bigint;
  byteCount: bigint;
  match: OxmField[];
  instructions: Instruction[];
}

const REQUEST_FIXED_LENGTH = 32;
const ENTRY_FIXED_LENGTH = 48;

/** A request for every flow; narrow it with the fields given. */
export function flowStatsRequest(fields: Partial<Omit<FlowStatsRequest, 'kind'>> = {}): FlowStatsRequest {
  return {
    kind: 'FLOW',
    tableId: OFPTT_ALL,
    outPort: OfpPort.ANY,
    outGroup: OfpGroup.ANY,
    cookie: 0n,
    cookieMask: 0n,
    match: [],
    ...fields,
  };
}

export const request = {
  encodingLength(body: FlowStatsRequest): number {
    return REQUEST_FIXED_LENGTH + match.encodingLength(body.match);
  },
  encode(body: FlowStatsRequest, buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(request.encodingLength(body), buf, offset, 'flow stats request');
    writeU8Field(out, offset, body.tableId, 'table_id');
    out.fill(0, offset + 1, offset + 4);
    writeU32Field(out, offset + 4, body.outPort, 'out_port');
    writeU32Field(out, offset + 8, body.outGroup, 'out_group');
    out.fill(0, offset + 12, offset + 16);
    writeU64Field(out, offset + 16, body.cookie, 'cookie');
    writeU64Field(out, offset + 24, body.cookieMask, 'cookie_mask');
    match.encode(body.match, out, offset + REQUEST_FIXED_LENGTH);
    return out;
  },
  decode(bytes: Uint8Array, start = 0, end = bytes.length): FlowStatsRequest {
    need({ at: start, end }, REQUEST_FIXED_LENGTH, 'a flow stats request', truncated);
    return {
      kind: 'FLOW',
      tableId: bytes[start]!,
      outPort: readU32BE(bytes, start + 4),
      outGroup: readU32BE(bytes, start + 8),
      cookie: readU64BE(bytes, start + 16),
      cookieMask: readU64BE(bytes, start + 24),
      match: match.decode(bytes, start + REQUEST_FIXED_LENGTH, end),
    };
  },
};

function entryLength(entry: FlowStats): number {
  return ENTRY_FIXED_LENGTH + match.encodingLength(entry.match) + instructionList.encodingLength(entry.instructions);
}

/** The reply body: a list of flow stats entries. */
export const reply = {
  encodingLength(entries: readonly FlowStats[]): number {
    let length = 0;
    for (const entry of entries) length += entryLength(entry);
    return length;
  },
  encode(entries: readonly FlowStats[], buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(reply.encodingLength(entries), buf, offset, 'flow stats');
    let at = offset;
    for (const entry of entries) {
      const length = entryLength(entry);
      writeU16Field(out, at, length, 'flow stats length');
      writeU8Field(out, at + 2, entry.tableId, 'table_id');
      out[at + 3] = 0;
      writeU32Field(out, at + 4, entry.durationSec, 'duration_sec');
      writeU32Field(out, at + 8, entry.durationNsec, 'duration_nsec');
      writeU16Field(out, at + 12, entry.priority, 'priority');
      writeU16Field(out, at + 14, entry.idleTimeout, 'idle_timeout');
      writeU16Field(out, at + 16, entry.hardTimeout, 'hard_timeout');
      writeU16Field(out, at + 18, entry.flags, 'flags');
      out.fill(0, at + 20, at + 24);
      writeU64Field(out, at + 24, entry.cookie, 'cookie');
      writeU64Field(out, at + 32, entry.packetCount, 'packet_count');
      writeU64Field(out, at + 40, entry.byteCount, 'byte_count');
      match.encode(entry.match, out, at + ENTRY_FIXED_LENGTH);
      instructionList.encode(entry.instructions, out, at + ENTRY_FIXED_LENGTH + match.encodingLength(entry.match));
      at += length;
    }
    return out;
  },
  decode(bytes: Uint8Array, start = 0, end = bytes.length): FlowStats[] {
    const entries: FlowStats[] = [];
    for (let at = start; at < end; ) {
      need({ at, end }, ENTRY_FIXED_LENGTH, 'a flow stats entry', truncated);
      const length = readU16BE(bytes, at);
      if (length < ENTRY_FIXED_LENGTH + 8 || length % 8 !== 0) {
        throw new OpenFlowDecodeError(
          'bad-length',
          `flow stats length ${length} is not a multiple of 8 of at least 56`,
        );
      }
      need({ at, end }, length, `a flow stats entry of ${length} octets`, truncated);
      const matchStart = at + ENTRY_FIXED_LENGTH;
      const matchEnd = matchStart + match.lengthAt(bytes, matchStart, at + length);
      entries.push({
        tableId: bytes[at + 2]!,
        durationSec: readU32BE(bytes, at + 4),
        durationNsec: readU32BE(bytes, at + 8),
        priority: readU16BE(bytes, at + 12),
        idleTimeout: readU16BE(bytes, at + 14),
        hardTimeout: readU16BE(bytes, at + 16),
        flags: readU16BE(bytes, at + 18),
        cookie: readU64BE(bytes, at + 24),
        packetCount: readU64BE(bytes, at + 32),
        byteCount: readU64BE(bytes, at + 40),
        match: match.decode(bytes, matchStart, matchEnd),
        instructions: instructionList.decode(bytes, matchEnd, at + length),
      });
      at += length;
    }
    return entries;
  },
};
