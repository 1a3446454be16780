/**
 * Action lists (OpenFlow 1.3.5 §7.2.5): what APPLY_ACTIONS and WRITE_ACTIONS instructions,
 * group buckets and PACKET_OUT carry. Every action is a TLV whose length is a multiple
 * of 8:
 *
 *   OUTPUT     type(2)=0  len(2)=16 | port(4) | max_len(2) | pad(6)
 *   GROUP      type(2)=22 len(2)=8  | group_id(4)
 *   SET_FIELD  type(2)=25 len(2)    | OXM TLV | zero padding to a multiple of 8
 *              (the TLV may be of class NXM_1, e.g. tun_dst, which has no basic-class OXM)
 *
 * Any other action (POP_VLAN, DEC_NW_TTL, OVS's Nicira actions such as resubmit or ct,
 * ...) is kept as `RAW`: its type and the octets after its 4-octet header, re-encoded as
 * they were.
 */
import { OfpActionType } from './action-type.js';
import { OpenFlowDecodeError, truncated } from './errors.js';
import * as oxm from './oxm.js';
import type { OxmField } from './oxm.js';
import { OfpControllerMaxLen, OfpPort } from './reserved.js';
import {
  copyBytes,
  need,
  outputBuffer,
  pad8,
  readU16BE,
  readU32BE,
  writeU16Field,
  writeU32Field,
} from '../../wire/bytes.js';

export interface OutputAction {
  type: 'OUTPUT';
  port: number;
  /** Octets of the packet to send when `port` is CONTROLLER (OfpControllerMaxLen.NO_BUFFER: all); 0 otherwise. */
  maxLen: number;
}

export interface GroupAction {
  type: 'GROUP';
  groupId: number;
}

export interface SetFieldAction {
  type: 'SET_FIELD';
  field: OxmField;
}

export interface RawAction {
  type: 'RAW';
  actionType: number;
  /** The octets after type and length; 4 + body.length must be a multiple of 8. */
  body: Uint8Array;
}

export type Action = OutputAction | GroupAction | SetFieldAction | RawAction;

const ACTION_HEADER_LENGTH = 4;
const OUTPUT_LENGTH = 16;
const GROUP_LENGTH = 8;

// --- builders ------------------------------------------------------------------------------

export function output(port: number, maxLen = 0): OutputAction {
  return { type: 'OUTPUT', port, maxLen };
}

/** OUTPUT to CONTROLLER; by default the whole packet (nothing is buffered: OVS buffers nothing anyway). */
export function toController(maxLen: number = OfpControllerMaxLen.NO_BUFFER): OutputAction {
  return { type: 'OUTPUT', port: OfpPort.CONTROLLER, maxLen };
}

export function group(groupId: number): GroupAction {
  return { type: 'GROUP', groupId };
}

export function setField(field: OxmField): SetFieldAction {
  return { type: 'SET_FIELD', field };
}

/**
 * `set_field:ADDRESS->tun_dst`: the outer IPv4 destination for a flow-based tunnel port
 * (remote_ip=flow), to be followed by an OUTPUT to that port. Encodes as OVS writes it
 * in OpenFlow 1.3: a SET_FIELD of 16 octets holding the NXM_1 header 0x00014004.
 */
export function setTunnelDestination(address: string): SetFieldAction {
  return setField({ field: 'TUN_IPV4_DST', value: address });
}

// --- one action ------------------------------------------------------------------------------

export function actionLength(action: Action): number {
  switch (action.type) {
    case 'OUTPUT':
      return OUTPUT_LENGTH;
    case 'GROUP':
      return GROUP_LENGTH;
    case 'SET_FIELD':
      return pad8(ACTION_HEADER_LENGTH + oxm.encodingLength(action.field));
    case 'RAW':
      return ACTION_HEADER_LENGTH + action.body.length;
  }
}

function encodeAction(action: Action, out: Uint8Array, at: number): void {
  const length = actionLength(action);
  if (length % 8 !== 0) throw new RangeError(`${action.type} action of ${length} octets is not a multiple of 8`);
  writeU16Field(out, at + 2, length, 'action length');
  switch (action.type) {
    case 'OUTPUT':
      writeU16Field(out, at, OfpActionType.OUTPUT, 'action type');
      writeU32Field(out, at + 4, action.port, 'output port');
      writeU16Field(out, at + 8, action.maxLen, 'output max_len');
      out.fill(0, at + 10, at + OUTPUT_LENGTH);
      return;
    case 'GROUP':
      writeU16Field(out, at, OfpActionType.GROUP, 'action type');
      writeU32Field(out, at + 4, action.groupId, 'group id');
      return;
    case 'SET_FIELD': {
      writeU16Field(out, at, OfpActionType.SET_FIELD, 'action type');
      oxm.encode(action.field, out, at + ACTION_HEADER_LENGTH);
      out.fill(0, at + ACTION_HEADER_LENGTH + oxm.encodingLength(action.field), at + length);
      return;
    }
    case 'RAW':
      writeU16Field(out, at, action.actionType, 'action type');
      out.set(action.body, at + ACTION_HEADER_LENGTH);
      return;
  }
}

function decodeAction(bytes: Uint8Array, at: number, length: number): Action {
  const type = readU16BE(bytes, at);
  const end = at + length;
  switch (type) {
    case OfpActionType.OUTPUT:
      expectLength('OUTPUT', length, OUTPUT_LENGTH);
      return { type: 'OUTPUT', port: readU32BE(bytes, at + 4), maxLen: readU16BE(bytes, at + 8) };
    case OfpActionType.GROUP:
      expectLength('GROUP', length, GROUP_LENGTH);
      return { type: 'GROUP', groupId: readU32BE(bytes, at + 4) };
    case OfpActionType.SET_FIELD: {
      const fieldStart = at + ACTION_HEADER_LENGTH;
      const fieldLength = oxm.lengthAt(bytes, fieldStart, end);
      if (pad8(ACTION_HEADER_LENGTH + fieldLength) !== length) {
        throw new OpenFlowDecodeError(
          'bad-length',
          `SET_FIELD action of ${length} octets holds a ${fieldLength}-octet field`,
        );
      }
      return { type: 'SET_FIELD', field: oxm.decode(bytes, fieldStart, fieldStart + fieldLength) };
    }
    default:
      return { type: 'RAW', actionType: type, body: copyBytes(bytes, at + ACTION_HEADER_LENGTH, end) };
  }
}

function expectLength(name: string, length: number, expected: number): void {
  if (length !== expected)
    throw new OpenFlowDecodeError('bad-length', `${name} action length ${length} is not ${expected}`);
}

// --- lists (the codec) ---------------------------------------------------------------------

export function encodingLength(actions: readonly Action[]): number {
  let length = 0;
  for (const action of actions) length += actionLength(action);
  return length;
}

export function encode(actions: readonly Action[], buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(encodingLength(actions), buf, offset, 'action list');
  let at = offset;
  for (const action of actions) {
    encodeAction(action, out, at);
    at += actionLength(action);
  }
  return out;
}

/** Decodes every action in [start, end). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Action[] {
  const actions: Action[] = [];
  for (let at = start; at < end; ) {
    need({ at, end }, ACTION_HEADER_LENGTH, 'an action header', truncated);
    const length = readU16BE(bytes, at + 2);
    if (length < 8 || length % 8 !== 0)
      throw new OpenFlowDecodeError('bad-length', `action length ${length} is not a positive multiple of 8`);
    need({ at, end }, length, `an action of ${length} octets`, truncated);
    actions.push(decodeAction(bytes, at, length));
    at += length;
  }
  return actions;
}
