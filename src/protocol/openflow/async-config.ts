/**
 * OFPT_SET_ASYNC and OFPT_GET_ASYNC_REPLY (OpenFlow 1.3.5 §7.3.10), 32 octets:
 *
 *   header | packet_in_mask[2](4 each) | port_status_mask[2] | flow_removed_mask[2]
 *
 * Element 0 applies while the connection's role is MASTER or EQUAL, element 1 while it is
 * SLAVE. Bit n of a mask set = send messages of reason n (see async-reason.ts). Open
 * vSwitch refuses bits beyond the reasons 1.3 defines with ONF(2370)/OFPACFC_INVALID.
 */
import { readMessageHeader, writeHeader } from './header.js';
import { OFP_TYPE_NUMBERS } from './message-type.js';
import { outputBuffer, readU32BE, writeU32Field } from '../../wire/bytes.js';

/** [master or equal, slave] */
export type RoleMasks = [number, number];

export interface AsyncConfig {
  type: 'SET_ASYNC' | 'GET_ASYNC_REPLY';
  xid: number;
  packetIn: RoleMasks;
  portStatus: RoleMasks;
  flowRemoved: RoleMasks;
}

const LENGTH = 32;

export function encodingLength(_message: AsyncConfig): number {
  return LENGTH;
}

export function encode(message: AsyncConfig, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(LENGTH, buf, offset, message.type);
  writeHeader(out, offset, message.type, LENGTH, message.xid);
  const masks = [...message.packetIn, ...message.portStatus, ...message.flowRemoved];
  masks.forEach((mask, i) => writeU32Field(out, offset + 8 + 4 * i, mask, 'async mask'));
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): AsyncConfig {
  const type = bytes[start + 1] === OFP_TYPE_NUMBERS.SET_ASYNC ? 'SET_ASYNC' : 'GET_ASYNC_REPLY';
  const header = readMessageHeader(bytes, start, end, type, LENGTH);
  const mask = (i: number) => readU32BE(bytes, start + 8 + 4 * i);
  return {
    type,
    xid: header.xid,
    packetIn: [mask(0), mask(1)],
    portStatus: [mask(2), mask(3)],
    flowRemoved: [mask(4), mask(5)],
  };
}
