/**
 * Instruction lists of FLOW_MOD and flow stats (OpenFlow 1.3.5 §7.2.4):
 *
 *   GOTO_TABLE      type(2)=1 len(2)=8  | table_id | pad(3)
 *   WRITE_METADATA  type(2)=2 len(2)=24 | pad(4) | metadata(8) | mask(8)
 *   WRITE_ACTIONS   type(2)=3 len(2)    | pad(4) | actions
 *   APPLY_ACTIONS   type(2)=4 len(2)    | pad(4) | actions
 *   CLEAR_ACTIONS   type(2)=5 len(2)=8  | pad(4)
 *   METER           type(2)=6 len(2)=8  | meter_id(4)
 *
 * Others (experimenter instructions) are kept as `RAW`.
 */
import * as actionList from './action.js';
import type { Action } from './action.js';
import { OfpInstructionType } from './action-type.js';
import { OpenFlowDecodeError, truncated } from './errors.js';
import {
  copyBytes,
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

export interface GotoTableInstruction {
  type: 'GOTO_TABLE';
  tableId: number;
}

export interface WriteMetadataInstruction {
  type: 'WRITE_METADATA';
  metadata: bigint;
  mask: bigint;
}

export interface ActionsInstruction {
  type: 'WRITE_ACTIONS' | 'APPLY_ACTIONS';
  actions: Action[];
}

export interface ClearActionsInstruction {
  type: 'CLEAR_ACTIONS';
}

export interface MeterInstruction {
  type: 'METER';
  meterId: number;
}

export interface RawInstruction {
  type: 'RAW';
  instructionType: number;
  /** The octets after type and length. */
  body: Uint8Array;
}

export type Instruction =
  | GotoTableInstruction
  | WriteMetadataInstruction
  | ActionsInstruction
  | ClearActionsInstruction
  | MeterInstruction
  | RawInstruction;

const HEADER_LENGTH = 4;
/** Type, length and 4 octets of padding before the actions. */
const ACTIONS_HEADER_LENGTH = 8;

// --- builders ------------------------------------------------------------------------------

export function applyActions(actions: Action[]): ActionsInstruction {
  return { type: 'APPLY_ACTIONS', actions };
}

export function writeActions(actions: Action[]): ActionsInstruction {
  return { type: 'WRITE_ACTIONS', actions };
}

export function gotoTable(tableId: number): GotoTableInstruction {
  return { type: 'GOTO_TABLE', tableId };
}

export function clearActions(): ClearActionsInstruction {
  return { type: 'CLEAR_ACTIONS' };
}

/** Sends the flow's packets through meter `meterId` (meter-mod.ts) before its other instructions. */
export function meter(meterId: number): MeterInstruction {
  return { type: 'METER', meterId };
}

// --- one instruction -----------------------------------------------------------------------

export function instructionLength(instruction: Instruction): number {
  switch (instruction.type) {
    case 'GOTO_TABLE':
    case 'CLEAR_ACTIONS':
    case 'METER':
      return 8;
    case 'WRITE_METADATA':
      return 24;
    case 'WRITE_ACTIONS':
    case 'APPLY_ACTIONS':
      return ACTIONS_HEADER_LENGTH + actionList.encodingLength(instruction.actions);
    case 'RAW':
      return HEADER_LENGTH + instruction.body.length;
  }
}

function encodeInstruction(instruction: Instruction, out: Uint8Array, at: number): void {
  const length = instructionLength(instruction);
  if (length % 8 !== 0)
    throw new RangeError(`${instruction.type} instruction of ${length} octets is not a multiple of 8`);
  const type = instruction.type === 'RAW' ? instruction.instructionType : OfpInstructionType[instruction.type];
  writeU16Field(out, at, type, 'instruction type');
  writeU16Field(out, at + 2, length, 'instruction length');
  switch (instruction.type) {
    case 'GOTO_TABLE':
      writeU8Field(out, at + 4, instruction.tableId, 'goto table id');
      out.fill(0, at + 5, at + 8);
      return;
    case 'WRITE_METADATA':
      out.fill(0, at + 4, at + 8);
      writeU64Field(out, at + 8, instruction.metadata, 'metadata');
      writeU64Field(out, at + 16, instruction.mask, 'metadata mask');
      return;
    case 'WRITE_ACTIONS':
    case 'APPLY_ACTIONS':
      out.fill(0, at + 4, at + 8);
      actionList.encode(instruction.actions, out, at + ACTIONS_HEADER_LENGTH);
      return;
    case 'CLEAR_ACTIONS':
      out.fill(0, at + 4, at + 8);
      return;
    case 'METER':
      writeU32Field(out, at + 4, instruction.meterId, 'meter id');
      return;
    case 'RAW':
      out.set(instruction.body, at + HEADER_LENGTH);
      return;
  }
}

function decodeInstruction(bytes: Uint8Array, at: number, length: number): Instruction {
  const type = readU16BE(bytes, at);
  switch (type) {
    case OfpInstructionType.GOTO_TABLE:
      expectLength('GOTO_TABLE', length, 8);
      return { type: 'GOTO_TABLE', tableId: bytes[at + 4]! };
    case OfpInstructionType.WRITE_METADATA:
      expectLength('WRITE_METADATA', length, 24);
      return { type: 'WRITE_METADATA', metadata: readU64BE(bytes, at + 8), mask: readU64BE(bytes, at + 16) };
    case OfpInstructionType.WRITE_ACTIONS:
    case OfpInstructionType.APPLY_ACTIONS:
      if (length < ACTIONS_HEADER_LENGTH)
        throw new OpenFlowDecodeError('bad-length', `actions instruction length ${length} is below 8`);
      return {
        type: type === OfpInstructionType.WRITE_ACTIONS ? 'WRITE_ACTIONS' : 'APPLY_ACTIONS',
        actions: actionList.decode(bytes, at + ACTIONS_HEADER_LENGTH, at + length),
      };
    case OfpInstructionType.CLEAR_ACTIONS:
      expectLength('CLEAR_ACTIONS', length, 8);
      return { type: 'CLEAR_ACTIONS' };
    case OfpInstructionType.METER:
      expectLength('METER', length, 8);
      return { type: 'METER', meterId: readU32BE(bytes, at + 4) };
    default:
      return { type: 'RAW', instructionType: type, body: copyBytes(bytes, at + HEADER_LENGTH, at + length) };
  }
}

function expectLength(name: string, length: number, expected: number): void {
  if (length !== expected)
    throw new OpenFlowDecodeError('bad-length', `${name} instruction length ${length} is not ${expected}`);
}

// --- lists (the codec) ---------------------------------------------------------------------

export function encodingLength(instructions: readonly Instruction[]): number {
  let length = 0;
  for (const instruction of instructions) length += instructionLength(instruction);
  return length;
}

export function encode(instructions: readonly Instruction[], buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(encodingLength(instructions), buf, offset, 'instruction list');
  let at = offset;
  for (const instruction of instructions) {
    encodeInstruction(instruction, out, at);
    at += instructionLength(instruction);
  }
  return out;
}

/** Decodes every instruction in [start, end). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Instruction[] {
  const instructions: Instruction[] = [];
  for (let at = start; at < end; ) {
    need({ at, end }, HEADER_LENGTH, 'an instruction header', truncated);
    const length = readU16BE(bytes, at + 2);
    if (length < 8 || length % 8 !== 0)
      throw new OpenFlowDecodeError('bad-length', `instruction length ${length} is not a positive multiple of 8`);
    need({ at, end }, length, `an instruction of ${length} octets`, truncated);
    instructions.push(decodeInstruction(bytes, at, length));
    at += length;
  }
  return instructions;
}
