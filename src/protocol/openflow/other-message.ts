/**
 * Any message this codec does not interpret (PORT_STATUS, FLOW_REMOVED, EXPERIMENTER,
 * ROLE_REPLY, ...): its type number and body octets, so that it can be logged, skipped or
 * sent on unchanged.
 */
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { ofpTypeName } from './message-type.js';
import { copyBytes, outputBuffer } from '../../wire/bytes.js';

export interface OtherMessage {
  type: 'OTHER';
  xid: number;
  messageType: number;
  /** The octets after the header. */
  body: Uint8Array;
}

export function encodingLength(message: OtherMessage): number {
  return HEADER_LENGTH + message.body.length;
}

export function encode(message: OtherMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'OpenFlow message');
  writeHeader(out, offset, 'HELLO', length, message.xid);
  out[offset + 1] = message.messageType; // writeHeader takes names; this one may have none
  out.set(message.body, offset + HEADER_LENGTH);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OtherMessage {
  const messageType = bytes[start + 1] ?? 0;
  const header = readMessageHeader(bytes, start, end, ofpTypeName(messageType) ?? 'EXPERIMENTER', HEADER_LENGTH);
  return {
    type: 'OTHER',
    xid: header.xid,
    messageType: header.type,
    body: copyBytes(bytes, start + HEADER_LENGTH, end),
  };
}
