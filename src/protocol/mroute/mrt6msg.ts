/**
 * struct mrt6msg (linux/mroute6.h): the kernel's upcall to the IPv6 multicast router.
 * 40 octets on x86_64 (checked with sizeof/offsetof against the installed header):
 *
 *   0 im6_mbz u8 (always 0) | 1 im6_msgtype u8 | 2 im6_mif u16 (host order)
 *   4 im6_pad u32 (0) | 8 im6_src in6_addr | 24 im6_dst in6_addr
 *
 * How it arrives (net/ipv6/ip6mr.c, ip6mr_cache_report): the struct is laid where an
 * ICMPv6 header would be, and a raw ICMPv6 socket's recv returns no IPv6 header, so each
 * upcall starts with these 40 octets. Octet 0 tells them apart from the ICMPv6 messages
 * (MLD) the socket also receives: an upcall's im6_mbz is 0, and no ICMPv6 message has
 * type 0 (RFC 4443 §2.1 leaves it unassigned). For NOCACHE and WRONGMIF the kernel queues
 * 80 octets, of which only these 40 are defined; for WHOLEPKT and WRMIFWHOLE the whole
 * IPv6 packet follows. im6_mif is 16 bits on every kernel (IPv4 widened its VIF octet).
 */
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { checkIPv6, truncated, view } from './common.js';

export const MRT6MSG_LENGTH = 40;
/** Offset of im6_mbz, the ICMPv6 type's place. */
export const MRT6MSG_MBZ_OFFSET = 0;

export interface Mrt6Msg {
  /** MRT6MSG_* */
  type: number;
  mif: number;
  source: string;
  group: string;
}

export function encodingLength(_value: Mrt6Msg): number {
  return MRT6MSG_LENGTH;
}

/** Writes the struct with im6_mbz and im6_pad 0 (as a test or fake kernel would). */
export function encode(value: Mrt6Msg, buf?: Uint8Array, offset = 0): Uint8Array {
  checkUint(value.type, 0xff, 'mrt6msg type');
  checkUint(value.mif, 0xffff, 'MIF index');
  checkIPv6(value.source, 'mrt6msg source');
  checkIPv6(value.group, 'mrt6msg group');
  const out = outputBuffer(MRT6MSG_LENGTH, buf, offset, 'mrt6msg');
  const dv = view(out);
  out[offset] = 0;
  out[offset + 1] = value.type;
  dv.setUint16(offset + 2, value.mif, true);
  dv.setUint32(offset + 4, 0, true);
  writeIPv6(out, offset + 8, value.source);
  writeIPv6(out, offset + 24, value.group);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Mrt6Msg {
  need({ at: start, end }, MRT6MSG_LENGTH, 'an mrt6msg', truncated);
  return {
    type: bytes[start + 1]!,
    mif: view(bytes).getUint16(start + 2, true),
    source: readIPv6(bytes, start + 8),
    group: readIPv6(bytes, start + 24),
  };
}
