/**
 * OFPT_ECHO_REQUEST and OFPT_ECHO_REPLY (OpenFlow 1.3.5 §7.5.2-3): header | arbitrary data.
 * A reply carries the request's xid and data.
 */
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { OFP_TYPE_NUMBERS } from './message-type.js';
import { copyBytes, outputBuffer } from '../../wire/bytes.js';

export interface Echo {
  type: 'ECHO_REQUEST' | 'ECHO_REPLY';
  xid: number;
  data: Uint8Array;
}

export function encodingLength(message: Echo): number {
  return HEADER_LENGTH + message.data.length;
}

export function encode(message: Echo, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, message.type);
  writeHeader(out, offset, message.type, length, message.xid);
  out.set(message.data, offset + HEADER_LENGTH);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Echo {
  const type = bytes[start + 1] === OFP_TYPE_NUMBERS.ECHO_REPLY ? 'ECHO_REPLY' : 'ECHO_REQUEST';
  const header = readMessageHeader(bytes, start, end, type, HEADER_LENGTH);
  return { type, xid: header.xid, data: copyBytes(bytes, start + HEADER_LENGTH, end) };
}
