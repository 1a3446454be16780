/**
 * OFPT_FLOW_MOD (OpenFlow 1.3.5 §7.3.4.2):
 *
 *   header | cookie(8) | cookie_mask(8) | table_id | command | idle_timeout(2) | hard_timeout(2)
 *   | priority(2) | buffer_id(4) | out_port(4) | out_group(4) | flags(2) | pad(2)
 *   | match (padded to 8) | instructions
 *
 * `cookie_mask` applies to MODIFY and DELETE: only flows whose cookie matches `cookie`
 * in the masked bits are affected. `out_port`/`out_group` filter DELETE (ANY: no filter).
 */
import type { Instruction } from './instruction.js';
import * as instructionList from './instruction.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import * as match from './match.js';
import { FlowModCommand } from './mod-command.js';
import type { OxmField } from './oxm.js';
import { OFP_NO_BUFFER, OfpGroup, OfpPort } from './reserved.js';
import {
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU16Field,
  writeU32Field,
  writeU64Field,
  writeU8Field,
} from '../../wire/bytes.js';

export interface FlowMod {
  type: 'FLOW_MOD';
  xid: number;
  cookie: bigint;
  cookieMask: bigint;
  tableId: number;
  /** FlowModCommand.ADD, MODIFY, MODIFY_STRICT, DELETE or DELETE_STRICT. */
  command: number;
  idleTimeout: number;
  hardTimeout: number;
  priority: number;
  bufferId: number;
  outPort: number;
  outGroup: number;
  /** FlowModFlag bits. */
  flags: number;
  match: OxmField[];
  instructions: Instruction[];
}

/** OFP_DEFAULT_PRIORITY */
export const DEFAULT_PRIORITY = 0x8000;
const FIXED_LENGTH = HEADER_LENGTH + 40;

/**
 * A FLOW_MOD with the spec's defaults for everything not given: ADD, table 0, priority 0x8000, no timeouts, no buffer,
 * no filters.
 */
export function flowMod(fields: Partial<Omit<FlowMod, 'type'>> = {}): FlowMod {
  return {
    type: 'FLOW_MOD',
    xid: 0,
    cookie: 0n,
    cookieMask: 0n,
    tableId: 0,
    command: FlowModCommand.ADD,
    idleTimeout: 0,
    hardTimeout: 0,
    priority: DEFAULT_PRIORITY,
    bufferId: OFP_NO_BUFFER,
    outPort: OfpPort.ANY,
    outGroup: OfpGroup.ANY,
    flags: 0,
    match: [],
    instructions: [],
    ...fields,
  };
}

export function encodingLength(message: FlowMod): number {
  return FIXED_LENGTH + match.encodingLength(message.match) + instructionList.encodingLength(message.instructions);
}

export function encode(message: FlowMod, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'FLOW_MOD');
  writeHeader(out, offset, 'FLOW_MOD', length, message.xid);
  writeU64Field(out, offset + 8, message.cookie, 'cookie');
  writeU64Field(out, offset + 16, message.cookieMask, 'cookie_mask');
  writeU8Field(out, offset + 24, message.tableId, 'table_id');
  writeU8Field(out, offset + 25, message.command, 'command');
  writeU16Field(out, offset + 26, message.idleTimeout, 'idle_timeout');
  writeU16Field(out, offset + 28, message.hardTimeout, 'hard_timeout');
  writeU16Field(out, offset + 30, message.priority, 'priority');
  writeU32Field(out, offset + 32, message.bufferId, 'buffer_id');
  writeU32Field(out, offset + 36, message.outPort, 'out_port');
  writeU32Field(out, offset + 40, message.outGroup, 'out_group');
  writeU16Field(out, offset + 44, message.flags, 'flags');
  out.fill(0, offset + 46, offset + 48);
  match.encode(message.match, out, offset + FIXED_LENGTH);
  instructionList.encode(message.instructions, out, offset + FIXED_LENGTH + match.encodingLength(message.match));
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): FlowMod {
  const header = readMessageHeader(bytes, start, end, 'FLOW_MOD', FIXED_LENGTH + 8);
  const matchStart = start + FIXED_LENGTH;
  const matchEnd = matchStart + match.lengthAt(bytes, matchStart, end);
  return {
    type: 'FLOW_MOD',
    xid: header.xid,
    cookie: readU64BE(bytes, start + 8),
    cookieMask: readU64BE(bytes, start + 16),
    tableId: bytes[start + 24]!,
    command: bytes[start + 25]!,
    idleTimeout: readU16BE(bytes, start + 26),
    hardTimeout: readU16BE(bytes, start + 28),
    priority: readU16BE(bytes, start + 30),
    bufferId: readU32BE(bytes, start + 32),
    outPort: readU32BE(bytes, start + 36),
    outGroup: readU32BE(bytes, start + 40),
    flags: readU16BE(bytes, start + 44),
    match: match.decode(bytes, matchStart, matchEnd),
    instructions: instructionList.decode(bytes, matchEnd, end),
  };
}
