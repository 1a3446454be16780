/**
 * struct igmpmsg (linux/mroute.h): the kernel's upcall to the multicast router. 20
 * octets, laid over an IPv4 header:
 *
 *   0 unused1 u32 | 4 unused2 u32 | 8 im_msgtype u8 (the IP TTL's place) | 9 im_mbz u8
 *   (the IP protocol's place: always 0) | 10 im_vif u8 | 11 im_vif_hi u8 | 12 im_src | 16 im_dst
 *
 * How it arrives (net/ipv4/ipmr.c, ipmr_cache_report): the kernel builds a packet whose
 * "IP header" is this struct (for NOCACHE/WRONGVIF a copy of the triggering packet's
 * header, with ihl set to 5, then an 8-octet IGMP header whose type repeats im_msgtype;
 * for WHOLEPKT/WRVIFWHOLE a new 20-octet header in front of the whole packet), and queues
 * it on the router socket. A raw IPv4 socket's recv returns the IP header too, so each
 * message on the socket starts with these 20 octets. Octet 9 tells them apart: 0 for an
 * upcall, 2 (IPPROTO_IGMP) for real IGMP the socket also receives.
 *
 * im_vif_hi exists since Linux 5.10 (16-bit VIF indexes: im_vif | im_vif_hi << 8). Before,
 * that octet was unused padding and may hold anything: decode with `vifWidth` 8 there
 * (`kernelVifWidth()` picks from the running kernel's release).
 */
import { release } from 'node:os';

import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv4, truncated } from './common.js';

export const IGMPMSG_LENGTH = 20;
/** Offset of im_mbz, the IP header's protocol field. */
export const IGMPMSG_MBZ_OFFSET = 9;

export type VifWidth = 8 | 16;

export interface IgmpMsg {
  /** IGMPMSG_* */
  type: number;
  vif: number;
  source: string;
  group: string;
}

export interface IgmpMsgOptions {
  /** 16 (default) on Linux ≥ 5.10, 8 before. */
  vifWidth?: VifWidth;
}

/** The VIF width of a kernel release string such as "6.8.0-45-generic" (default: the running kernel's). */
export function kernelVifWidth(kernelRelease: string = release()): VifWidth {
  const match = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!match) return 8;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major > 5 || (major === 5 && minor >= 10) ? 16 : 8;
}

export function encodingLength(_value: IgmpMsg): number {
  return IGMPMSG_LENGTH;
}

/** Writes the struct with zero unused fields (as a test or fake kernel would). */
export function encode(value: IgmpMsg, buf?: Uint8Array, offset = 0, options: IgmpMsgOptions = {}): Uint8Array {
  const width = options.vifWidth ?? 16;
  checkUint(value.type, 0xff, 'igmpmsg type');
  checkUint(value.vif, 2 ** width - 1, 'VIF index');
  checkIPv4(value.source, 'igmpmsg source');
  checkIPv4(value.group, 'igmpmsg group');
  const out = outputBuffer(IGMPMSG_LENGTH, buf, offset, 'igmpmsg');
  out.fill(0, offset, offset + 8);
  out[offset + 8] = value.type;
  out[offset + 9] = 0;
  out[offset + 10] = value.vif & 0xff;
  out[offset + 11] = width === 16 ? value.vif >> 8 : 0;
  writeIPv4(out, offset + 12, value.source);
  writeIPv4(out, offset + 16, value.group);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length, options: IgmpMsgOptions = {}): IgmpMsg {
  need({ at: start, end }, IGMPMSG_LENGTH, 'an igmpmsg', truncated);
  const low = bytes[start + 10]!;
  return {
    type: bytes[start + 8]!,
    vif: (options.vifWidth ?? 16) === 16 ? low | (bytes[start + 11]! << 8) : low,
    source: readIPv4(bytes, start + 12),
    group: readIPv4(bytes, start + 16),
  };
}

/** encode/decode/encodingLength bound to one VIF width. */
export function igmpMsgCodec(vifWidth: VifWidth) {
  return {
    encode: (value: IgmpMsg, buf?: Uint8Array, offset?: number) => encode(value, buf, offset, { vifWidth }),
    decode: (bytes: Uint8Array, start?: number, end?: number) => decode(bytes, start, end, { vifWidth }),
    encodingLength,
  };
}
