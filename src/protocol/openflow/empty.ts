/**
 * The messages that are a bare header (OpenFlow 1.3.5 §7.3): BARRIER_REQUEST and
 * BARRIER_REPLY, FEATURES_REQUEST, GET_CONFIG_REQUEST, GET_ASYNC_REQUEST.
 */
import { OpenFlowDecodeError } from './errors.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { describeOfpType, OFP_TYPE_NUMBERS } from './message-type.js';
import { outputBuffer } from '../../wire/bytes.js';

export const EMPTY_MESSAGE_TYPES = [
  'BARRIER_REQUEST',
  'BARRIER_REPLY',
  'FEATURES_REQUEST',
  'GET_CONFIG_REQUEST',
  'GET_ASYNC_REQUEST',
] as const;
export type EmptyMessageType = (typeof EMPTY_MESSAGE_TYPES)[number];

export interface EmptyMessage {
  type: EmptyMessageType;
  xid: number;
}

export function encodingLength(_message: EmptyMessage): number {
  return HEADER_LENGTH;
}

export function encode(message: EmptyMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(HEADER_LENGTH, buf, offset, message.type);
  writeHeader(out, offset, message.type, HEADER_LENGTH, message.xid);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): EmptyMessage {
  const number = bytes[start + 1];
  const type = EMPTY_MESSAGE_TYPES.find((name) => OFP_TYPE_NUMBERS[name] === number);
  if (type === undefined) throw new RangeError(`${describeOfpType(number ?? -1)} is not a header-only message`);
  const header = readMessageHeader(bytes, start, end, type, HEADER_LENGTH);
  // OpenFlow 1.3 gives these messages no body; OVS refuses one with BAD_LEN, so do we.
  if (header.length !== HEADER_LENGTH)
    throw new OpenFlowDecodeError(
      'bad-length',
      `${type} has ${header.length - HEADER_LENGTH} octets of body; it has none`,
    );
  return { type, xid: header.xid };
}
