/**
 * struct mif6ctl (linux/mroute6.h), the argument of MRT6_ADD_MIF. 12 octets on x86_64
 * (checked with sizeof/offsetof against the installed header):
 *
 *   0 mif6c_mifi u16 | 2 mif6c_flags u8 | 3 vifc_threshold u8 | 4 mif6c_pifi u16
 *   6 two octets of padding (the next field is a u32) | 8 vifc_rate_limit u32
 *
 * Integers in host order (little-endian on x86_64). Unlike IPv4's vifctl there is no
 * address: a MIF is the interface of ifindex mif6c_pifi (flags 0) or the PIM register
 * device (MIFF_REGISTER, pifi ignored). pifi is 16 bits wide, so an interface whose
 * ifindex is above 65535 cannot be a MIF. The kernel accepts any optlen ≥ 12 and reads 12.
 */
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { truncated, view } from './common.js';

export const MIF6CTL_LENGTH = 12;

export interface Mif6Ctl {
  mif: number;
  /** 0 or MIFF_REGISTER. */
  flags: number;
  /** Minimum hop limit a packet needs to leave through this MIF. */
  threshold: number;
  /** mif6c_pifi: the physical interface's ifindex (0 for a register MIF). */
  ifindex: number;
  /** Unused by Linux; 0. */
  rateLimit: number;
}

export function encodingLength(_value: Mif6Ctl): number {
  return MIF6CTL_LENGTH;
}

export function encode(value: Mif6Ctl, buf?: Uint8Array, offset = 0): Uint8Array {
  checkUint(value.mif, 0xffff, 'MIF index');
  checkUint(value.flags, 0xff, 'MIF flags');
  checkUint(value.threshold, 0xff, 'MIF threshold');
  checkUint(value.ifindex, 0xffff, 'MIF ifindex (mif6c_pifi is 16 bits)');
  checkUint(value.rateLimit, 0xffffffff, 'MIF rate limit');
  const out = outputBuffer(MIF6CTL_LENGTH, buf, offset, 'mif6ctl');
  const dv = view(out);
  dv.setUint16(offset, value.mif, true);
  dv.setUint8(offset + 2, value.flags);
  dv.setUint8(offset + 3, value.threshold);
  dv.setUint16(offset + 4, value.ifindex, true);
  dv.setUint16(offset + 6, 0, true);
  dv.setUint32(offset + 8, value.rateLimit, true);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Mif6Ctl {
  need({ at: start, end }, MIF6CTL_LENGTH, 'a mif6ctl', truncated);
  const dv = view(bytes);
  return {
    mif: dv.getUint16(start, true),
    flags: dv.getUint8(start + 2),
    threshold: dv.getUint8(start + 3),
    ifindex: dv.getUint16(start + 4, true),
    rateLimit: dv.getUint32(start + 8, true),
  };
}
