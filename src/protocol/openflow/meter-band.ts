/**
 * Meter bands (OpenFlow 1.3.5 §7.3.4.4), the lists of METER_MOD and of the METER_CONFIG
 * reply. Every band starts with
 *
 *   type(2) | len(2) | rate(4) | burst_size(4)
 *
 *   DROP         type=1 len=16 | pad(4)
 *   DSCP_REMARK  type=2 len=16 | prec_level | pad(3)
 *
 * Others (EXPERIMENTER, 0xffff) are kept as `OTHER` with the octets after the common part.
 * `rate` is in kb/s or packets/s and `burst_size` in kb or packets, as the meter's flags say.
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import {
  copyBytes,
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  writeU16Field,
  writeU32Field,
  writeU8Field,
} from '../../wire/bytes.js';

/** `ofp_meter_band_type` */
export const MeterBandType = {
  DROP: 1,
  DSCP_REMARK: 2,
  EXPERIMENTER: 0xffff,
} as const;

export interface DropBand {
  type: 'DROP';
  rate: number;
  burstSize: number;
}

export interface DscpRemarkBand {
  type: 'DSCP_REMARK';
  rate: number;
  burstSize: number;
  /** How many drop-precedence levels to add to the DSCP of packets over the rate. */
  precLevel: number;
}

export interface OtherBand {
  type: 'OTHER';
  bandType: number;
  rate: number;
  burstSize: number;
  /** The octets after type, len, rate and burst_size (a multiple of 8, less 4). */
  body: Uint8Array;
}

export type MeterBand = DropBand | DscpRemarkBand | OtherBand;

const COMMON_LENGTH = 12;
const STANDARD_BAND_LENGTH = 16;

export function dropBand(rate: number, burstSize = 0): DropBand {
  return { type: 'DROP', rate, burstSize };
}

export function dscpRemarkBand(rate: number, precLevel: number, burstSize = 0): DscpRemarkBand {
  return { type: 'DSCP_REMARK', rate, burstSize, precLevel };
}

function bandLength(band: MeterBand): number {
  return band.type === 'OTHER' ? COMMON_LENGTH + band.body.length : STANDARD_BAND_LENGTH;
}

export function encodingLength(bands: readonly MeterBand[]): number {
  let length = 0;
  for (const band of bands) length += bandLength(band);
  return length;
}

export function encode(bands: readonly MeterBand[], buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(encodingLength(bands), buf, offset, 'meter band list');
  let at = offset;
  for (const band of bands) {
    const length = bandLength(band);
    if (length % 8 !== 0) throw new RangeError(`meter band of ${length} octets is not a multiple of 8`);
    writeU16Field(out, at, band.type === 'OTHER' ? band.bandType : MeterBandType[band.type], 'meter band type');
    writeU16Field(out, at + 2, length, 'meter band length');
    writeU32Field(out, at + 4, band.rate, 'meter band rate');
    writeU32Field(out, at + 8, band.burstSize, 'meter band burst_size');
    if (band.type === 'OTHER') out.set(band.body, at + COMMON_LENGTH);
    else if (band.type === 'DSCP_REMARK') {
      writeU8Field(out, at + 12, band.precLevel, 'prec_level');
      out.fill(0, at + 13, at + 16);
    } else out.fill(0, at + 12, at + 16);
    at += length;
  }
  return out;
}

/** Decodes every band in [start, end). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): MeterBand[] {
  const bands: MeterBand[] = [];
  for (let at = start; at < end; ) {
    need({ at, end }, COMMON_LENGTH, 'a meter band', truncated);
    const bandType = readU16BE(bytes, at);
    const length = readU16BE(bytes, at + 2);
    if (length < STANDARD_BAND_LENGTH || length % 8 !== 0) {
      throw new OpenFlowDecodeError('bad-length', `meter band length ${length} is not a multiple of 8 of at least 16`);
    }
    need({ at, end }, length, `a meter band of ${length} octets`, truncated);
    const rate = readU32BE(bytes, at + 4);
    const burstSize = readU32BE(bytes, at + 8);
    if (
      (bandType === MeterBandType.DROP || bandType === MeterBandType.DSCP_REMARK) &&
      length !== STANDARD_BAND_LENGTH
    ) {
      throw new OpenFlowDecodeError('bad-length', `meter band of type ${bandType} has length ${length}, not 16`);
    }
    if (bandType === MeterBandType.DROP) bands.push({ type: 'DROP', rate, burstSize });
    else if (bandType === MeterBandType.DSCP_REMARK)
      bands.push({ type: 'DSCP_REMARK', rate, burstSize, precLevel: bytes[at + 12]! });
    else
      bands.push({ type: 'OTHER', bandType, rate, burstSize, body: copyBytes(bytes, at + COMMON_LENGTH, at + length) });
    at += length;
  }
  return bands;
}
