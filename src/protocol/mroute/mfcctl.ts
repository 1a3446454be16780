/**
 * struct mfcctl (linux/mroute.h), the argument of MRT_ADD_MFC and MRT_DEL_MFC. 60 octets
 * on x86_64 (checked with sizeof/offsetof against the installed header):
 *
 *   0 mfcc_origin in_addr | 4 mfcc_mcastgrp in_addr | 8 mfcc_parent u16
 *   10 mfcc_ttls[MAXVIFS = 32] u8 | 42 two octets of padding (the next field is a u32)
 *   44 mfcc_pkt_cnt u32 | 48 mfcc_byte_cnt u32 | 52 mfcc_wrong_if u32 | 56 mfcc_expire int
 *
 * The kernel refuses any other optlen with EINVAL. It ignores the counters and expire on
 * MRT_ADD_MFC (they are there for the BSD-era SIOCGETSGCNT interface); a TTL of 0 or 255
 * means "not an outgoing VIF", anything else is the VIF's TTL threshold.
 */
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv4, checkInt32, truncated, view } from './common.js';
import { MAXVIFS } from './constants.js';

export const MFCCTL_LENGTH = 60;

export interface MfcCtl {
  origin: string;
  group: string;
  /** The incoming VIF. */
  parent: number;
  /**
   * Per VIF (index = VIF): 0 = not an oif, else the TTL threshold. Up to MAXVIFS entries; missing ones are 0. Decoded:
   * always MAXVIFS.
   */
  ttls: number[];
  packets: number;
  bytes: number;
  wrongIf: number;
  expire: number;
}

export function encodingLength(_value: MfcCtl): number {
  return MFCCTL_LENGTH;
}

export function encode(value: MfcCtl, buf?: Uint8Array, offset = 0): Uint8Array {
  checkIPv4(value.origin, 'MFC origin');
  checkIPv4(value.group, 'MFC group');
  checkUint(value.parent, 0xffff, 'MFC parent VIF');
  if (value.ttls.length > MAXVIFS)
    throw new RangeError(`an MFC entry has TTLs for at most ${MAXVIFS} VIFs; got ${value.ttls.length}`);
  value.ttls.forEach((ttl, vif) => checkUint(ttl, 0xff, `TTL of VIF ${vif}`));
  checkUint(value.packets, 0xffffffff, 'MFC packet count');
  checkUint(value.bytes, 0xffffffff, 'MFC byte count');
  checkUint(value.wrongIf, 0xffffffff, 'MFC wrong-interface count');
  checkInt32(value.expire, 'MFC expire');
  const out = outputBuffer(MFCCTL_LENGTH, buf, offset, 'mfcctl');
  out.fill(0, offset, offset + MFCCTL_LENGTH);
  const dv = view(out);
  writeIPv4(out, offset, value.origin);
  writeIPv4(out, offset + 4, value.group);
  dv.setUint16(offset + 8, value.parent, true);
  value.ttls.forEach((ttl, vif) => dv.setUint8(offset + 10 + vif, ttl));
  dv.setUint32(offset + 44, value.packets, true);
  dv.setUint32(offset + 48, value.bytes, true);
  dv.setUint32(offset + 52, value.wrongIf, true);
  dv.setInt32(offset + 56, value.expire, true);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): MfcCtl {
  need({ at: start, end }, MFCCTL_LENGTH, 'an mfcctl', truncated);
  const dv = view(bytes);
  return {
    origin: readIPv4(bytes, start),
    group: readIPv4(bytes, start + 4),
    parent: dv.getUint16(start + 8, true),
    ttls: Array.from(bytes.subarray(start + 10, start + 10 + MAXVIFS)),
    packets: dv.getUint32(start + 44, true),
    bytes: dv.getUint32(start + 48, true),
    wrongIf: dv.getUint32(start + 52, true),
    expire: dv.getInt32(start + 56, true),
  };
}
