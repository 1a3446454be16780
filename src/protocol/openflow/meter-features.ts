/**
 * The METER_FEATURES multipart reply body (OpenFlow 1.3.5 §7.3.5.14), `ofp_meter_features`:
 *
 *   max_meter(4) | band_types(4) | capabilities(4) | max_bands | max_color | pad(2)
 *
 * (The request has no body.)
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import { need, outputBuffer, readU32BE, writeU32Field, writeU8Field } from '../../wire/bytes.js';

export interface MeterFeaturesRequest {
  kind: 'METER_FEATURES';
}

export interface MeterFeatures {
  /** How many meters the switch can hold. */
  maxMeter: number;
  /** Bit set, bit n for band type n (1 << MeterBandType.DROP, ...). */
  bandTypes: number;
  /** MeterFlag bits the switch supports. */
  capabilities: number;
  /** Bands per meter. */
  maxBands: number;
  /** Color values (DSCP_REMARK precedence levels). */
  maxColor: number;
}

const LENGTH = 16;

export function encodingLength(_features: MeterFeatures): number {
  return LENGTH;
}

export function encode(features: MeterFeatures, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(LENGTH, buf, offset, 'meter features');
  writeU32Field(out, offset, features.maxMeter, 'max_meter');
  writeU32Field(out, offset + 4, features.bandTypes, 'band_types');
  writeU32Field(out, offset + 8, features.capabilities, 'capabilities');
  writeU8Field(out, offset + 12, features.maxBands, 'max_bands');
  writeU8Field(out, offset + 13, features.maxColor, 'max_color');
  out.fill(0, offset + 14, offset + LENGTH);
  return out;
}

/** Decodes the body in [start, end), which must be exactly 16 octets. */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): MeterFeatures {
  need({ at: start, end }, LENGTH, 'meter features', truncated);
  if (end - start !== LENGTH)
    throw new OpenFlowDecodeError('bad-length', `meter features body of ${end - start} octets is not 16`);
  return {
    maxMeter: readU32BE(bytes, start),
    bandTypes: readU32BE(bytes, start + 4),
    capabilities: readU32BE(bytes, start + 8),
    maxBands: bytes[start + 12]!,
    maxColor: bytes[start + 13]!,
  };
}
