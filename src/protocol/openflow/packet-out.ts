/**
 * OFPT_PACKET_OUT (OpenFlow 1.3.5 §7.3.7):
 *
 *   header | buffer_id(4) | in_port(4) | actions_len(2) | pad(6) | actions | data
 *
 * With buffer_id OFP_NO_BUFFER the packet is `data` (an Ethernet frame). `in_port` is
 * the port the packet is treated as having come from (CONTROLLER: none; it matters for
 * OUTPUT to IN_PORT and for FLOOD/ALL, which skip it).
 */
import type { Action } from './action.js';
import * as actionList from './action.js';
import { OpenFlowDecodeError } from './errors.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { OFP_NO_BUFFER, OfpPort } from './reserved.js';
import { copyBytes, outputBuffer, readU16BE, readU32BE, writeU16Field, writeU32Field } from '../../wire/bytes.js';

export interface PacketOut {
  type: 'PACKET_OUT';
  xid: number;
  bufferId: number;
  inPort: number;
  actions: Action[];
  data: Uint8Array;
}

const FIXED_LENGTH = HEADER_LENGTH + 16;

/** An unbuffered PACKET_OUT of `data`; in_port defaults to CONTROLLER. */
export function packetOut(fields: Partial<Omit<PacketOut, 'type'>> & Pick<PacketOut, 'actions' | 'data'>): PacketOut {
  return { type: 'PACKET_OUT', xid: 0, bufferId: OFP_NO_BUFFER, inPort: OfpPort.CONTROLLER, ...fields };
}

export function encodingLength(message: PacketOut): number {
  return FIXED_LENGTH + actionList.encodingLength(message.actions) + message.data.length;
}

export function encode(message: PacketOut, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const actionsLength = actionList.encodingLength(message.actions);
  const out = outputBuffer(length, buf, offset, 'PACKET_OUT');
  writeHeader(out, offset, 'PACKET_OUT', length, message.xid);
  writeU32Field(out, offset + 8, message.bufferId, 'buffer_id');
  writeU32Field(out, offset + 12, message.inPort, 'in_port');
  writeU16Field(out, offset + 16, actionsLength, 'actions_len');
  out.fill(0, offset + 18, offset + FIXED_LENGTH);
  actionList.encode(message.actions, out, offset + FIXED_LENGTH);
  out.set(message.data, offset + FIXED_LENGTH + actionsLength);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): PacketOut {
  const header = readMessageHeader(bytes, start, end, 'PACKET_OUT', FIXED_LENGTH);
  const actionsLength = readU16BE(bytes, start + 16);
  const actionsEnd = start + FIXED_LENGTH + actionsLength;
  if (actionsEnd > end)
    throw new OpenFlowDecodeError('bad-length', `PACKET_OUT actions_len ${actionsLength} runs past the message`);
  return {
    type: 'PACKET_OUT',
    xid: header.xid,
    bufferId: readU32BE(bytes, start + 8),
    inPort: readU32BE(bytes, start + 12),
    actions: actionList.decode(bytes, start + FIXED_LENGTH, actionsEnd),
    data: copyBytes(bytes, actionsEnd, end),
  };
}
