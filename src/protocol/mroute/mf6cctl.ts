/**
 * struct mf6cctl (linux/mroute6.h), the argument of MRT6_ADD_MFC, MRT6_DEL_MFC and their
 * _PROXY twins. 92 octets on x86_64 (checked with sizeof/offsetof against the installed
 * header):
 *
 *   0 mf6cc_origin sockaddr_in6 (28) | 28 mf6cc_mcastgrp sockaddr_in6 (28)
 *   56 mf6cc_parent u16 | 58 two octets of padding (if_set is an array of u32)
 *   60 mf6cc_ifset: IF_SETSIZE = 256 bits as 8 host-order u32s, MIF n at bit n % 32 of word n / 32
 *
 * Unlike IPv4's mfcctl there are no TTLs: a set bit makes the MIF an outgoing one with
 * threshold 1, and the kernel reads only the first MAXMIFS (32) bits, so this encoder
 * refuses higher MIFs rather than let the kernel drop them silently. The kernel accepts
 * any optlen ≥ 92 and refuses a parent ≥ MAXMIFS (ENFILE) and a group that is neither ::
 * nor multicast (EINVAL).
 */
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv6, readSockaddr, SOCKADDR_IN6_LENGTH, truncated, view, writeSockaddr } from './common.js';
import { IF_SETSIZE, MAXMIFS } from './constants.js';

export const MF6CCTL_LENGTH = 92;
const GROUP_AT = SOCKADDR_IN6_LENGTH;
const PARENT_AT = 56;
const IFSET_AT = 60;
const IFSET_WORDS = IF_SETSIZE / 32;

export interface Mf6cCtl {
  origin: string;
  group: string;
  /** The incoming MIF. */
  parent: number;
  /** The outgoing MIFs, each below MAXMIFS. Decoded: every set bit of the if_set, in ascending order. */
  oifs: number[];
}

export function encodingLength(_value: Mf6cCtl): number {
  return MF6CCTL_LENGTH;
}

export function encode(value: Mf6cCtl, buf?: Uint8Array, offset = 0): Uint8Array {
  checkIPv6(value.origin, 'MFC origin');
  checkIPv6(value.group, 'MFC group');
  checkUint(value.parent, 0xffff, 'MFC parent MIF');
  for (const mif of value.oifs)
    checkUint(mif, MAXMIFS - 1, 'outgoing MIF (the kernel reads only the first MAXMIFS bits of the if_set)');
  const out = outputBuffer(MF6CCTL_LENGTH, buf, offset, 'mf6cctl');
  out.fill(0, offset, offset + MF6CCTL_LENGTH);
  writeSockaddr('ipv6', out, offset, value.origin, SOCKADDR_IN6_LENGTH);
  writeSockaddr('ipv6', out, offset + GROUP_AT, value.group, SOCKADDR_IN6_LENGTH);
  const dv = view(out);
  dv.setUint16(offset + PARENT_AT, value.parent, true);
  for (const mif of value.oifs) {
    const at = offset + IFSET_AT + 4 * (mif >> 5);
    dv.setUint32(at, (dv.getUint32(at, true) | (1 << (mif & 31))) >>> 0, true);
  }
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Mf6cCtl {
  need({ at: start, end }, MF6CCTL_LENGTH, 'an mf6cctl', truncated);
  const dv = view(bytes);
  const oifs: number[] = [];
  for (let word = 0; word < IFSET_WORDS; word++) {
    const bits = dv.getUint32(start + IFSET_AT + 4 * word, true);
    for (let bit = 0; bit < 32; bit++) if ((bits >>> bit) & 1) oifs.push(32 * word + bit);
  }
  return {
    origin: readSockaddr('ipv6', bytes, start, 'mf6cc_origin'),
    group: readSockaddr('ipv6', bytes, start + GROUP_AT, 'mf6cc_mcastgrp'),
    parent: dv.getUint16(start + PARENT_AT, true),
    oifs,
  };
}
