/**
 * struct vifctl (linux/mroute.h), the argument of MRT_ADD_VIF and MRT_DEL_VIF. 16 octets:
 *
 *   0 vifc_vifi u16 | 2 vifc_flags u8 | 3 vifc_threshold u8 | 4 vifc_rate_limit u32
 *   8 union { vifc_lcl_addr in_addr | vifc_lcl_ifindex int } | 12 vifc_rmt_addr in_addr
 *
 * Integers in host order (little-endian on x86_64), addresses in network order. The union
 * holds an ifindex exactly when VIFF_USE_IFINDEX is among the flags.
 */
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv4, checkInt32, truncated, view } from './common.js';
import { VIFF_USE_IFINDEX } from './constants.js';

export const VIFCTL_LENGTH = 16;

export type VifLocal = { kind: 'ifindex'; ifindex: number } | { kind: 'address'; address: string };

export interface VifCtl {
  vif: number;
  /** VIFF_* flags. Must include VIFF_USE_IFINDEX exactly when `local` is an ifindex. */
  flags: number;
  /** Minimum TTL a packet needs to leave through this VIF. */
  threshold: number;
  /** Unused by Linux; 0. */
  rateLimit: number;
  local: VifLocal;
  /** Tunnel peer (VIFF_TUNNEL); 0.0.0.0 otherwise. */
  remoteAddress: string;
}

export function encodingLength(_value: VifCtl): number {
  return VIFCTL_LENGTH;
}

export function encode(value: VifCtl, buf?: Uint8Array, offset = 0): Uint8Array {
  checkUint(value.vif, 0xffff, 'VIF index');
  checkUint(value.flags, 0xff, 'VIF flags');
  checkUint(value.threshold, 0xff, 'VIF threshold');
  checkUint(value.rateLimit, 0xffffffff, 'VIF rate limit');
  checkIPv4(value.remoteAddress, 'VIF remote address');
  const byIndex = (value.flags & VIFF_USE_IFINDEX) !== 0;
  if (byIndex !== (value.local.kind === 'ifindex')) {
    throw new RangeError(
      `a VIF's local end is an ifindex exactly when its flags include VIFF_USE_IFINDEX (0x8); flags 0x${value.flags.toString(16)}, local ${value.local.kind}`,
    );
  }
  if (value.local.kind === 'ifindex') checkInt32(value.local.ifindex, 'ifindex');
  else checkIPv4(value.local.address, 'VIF local address');
  const out = outputBuffer(VIFCTL_LENGTH, buf, offset, 'vifctl');
  const dv = view(out);
  dv.setUint16(offset, value.vif, true);
  dv.setUint8(offset + 2, value.flags);
  dv.setUint8(offset + 3, value.threshold);
  dv.setUint32(offset + 4, value.rateLimit, true);
  if (value.local.kind === 'ifindex') dv.setInt32(offset + 8, value.local.ifindex, true);
  else writeIPv4(out, offset + 8, value.local.address);
  writeIPv4(out, offset + 12, value.remoteAddress);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): VifCtl {
  need({ at: start, end }, VIFCTL_LENGTH, 'a vifctl', truncated);
  const dv = view(bytes);
  const flags = dv.getUint8(start + 2);
  const local: VifLocal =
    (flags & VIFF_USE_IFINDEX) !== 0
      ? { kind: 'ifindex', ifindex: dv.getInt32(start + 8, true) }
      : { kind: 'address', address: readIPv4(bytes, start + 8) };
  return {
    vif: dv.getUint16(start, true),
    flags,
    threshold: dv.getUint8(start + 3),
    rateLimit: dv.getUint32(start + 4, true),
    local,
    remoteAddress: readIPv4(bytes, start + 12),
  };
}
