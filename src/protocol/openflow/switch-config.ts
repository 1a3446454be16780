/**
 * OFPT_GET_CONFIG_REPLY and OFPT_SET_CONFIG (OpenFlow 1.3.5 §7.3.2), 12 octets:
 *
 *   header | flags(2) | miss_send_len(2)
 *
 * Open vSwitch reads `miss_send_len` as a switch: a *service* connection (to
 * `<rundir>/<bridge>.mgmt`) starts with 0 and gets no asynchronous message at all, no
 * packet-in, until it sets a nonzero value (ofproto/connmgr.c, ofconn_receives_async_msg).
 */
import { readMessageHeader, writeHeader } from './header.js';
import { OFP_TYPE_NUMBERS } from './message-type.js';
import { outputBuffer, readU16BE, writeU16Field } from '../../wire/bytes.js';

export interface SwitchConfig {
  type: 'GET_CONFIG_REPLY' | 'SET_CONFIG';
  xid: number;
  /** `ofp_config_flags`: IP fragment handling (FRAG_NORMAL 0, FRAG_DROP 1, FRAG_REASM 2). */
  flags: number;
  /** Octets of a table-miss packet to send to the controller (0xffff: all, unbuffered). */
  missSendLen: number;
}

const LENGTH = 12;

export function encodingLength(_message: SwitchConfig): number {
  return LENGTH;
}

export function encode(message: SwitchConfig, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(LENGTH, buf, offset, message.type);
  writeHeader(out, offset, message.type, LENGTH, message.xid);
  writeU16Field(out, offset + 8, message.flags, 'config flags');
  writeU16Field(out, offset + 10, message.missSendLen, 'miss_send_len');
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): SwitchConfig {
  const type = bytes[start + 1] === OFP_TYPE_NUMBERS.SET_CONFIG ? 'SET_CONFIG' : 'GET_CONFIG_REPLY';
  const header = readMessageHeader(bytes, start, end, type, LENGTH);
  return { type, xid: header.xid, flags: readU16BE(bytes, start + 8), missSendLen: readU16BE(bytes, start + 10) };
}
