/**
 * The METER and METER_CONFIG multipart bodies (OpenFlow 1.3.5 §7.3.5.12, §7.3.5.13).
 *
 * Request of both (`ofp_meter_multipart_request`): meter_id(4) | pad(4); OfpMeter.ALL
 * asks for every meter.
 *
 * METER reply: a list of `ofp_meter_stats`, each
 *   meter_id(4) | len(2) | pad(6) | flow_count(4) | packet_in_count(8) | byte_in_count(8)
 *   | duration_sec(4) | duration_nsec(4) | band_stats
 * with one `ofp_meter_band_stats` per band, in the meter's band order:
 *   packet_band_count(8) | byte_band_count(8)
 *
 * METER_CONFIG reply: a list of `ofp_meter_config`, each
 *   length(2) | flags(2) | meter_id(4) | bands (meter-band.ts)
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import * as bandList from './meter-band.js';
import type { MeterBand } from './meter-band.js';
import {
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU16Field,
  writeU32Field,
  writeU64Field,
} from '../../wire/bytes.js';

export interface MeterStatsRequest {
  kind: 'METER';
  /** One meter, or OfpMeter.ALL. */
  meterId: number;
}

export interface MeterConfigRequest {
  kind: 'METER_CONFIG';
  /** One meter, or OfpMeter.ALL. */
  meterId: number;
}

export interface MeterBandStats {
  /** Packets that took this band (for DROP: were dropped). */
  packetCount: bigint;
  byteCount: bigint;
}

export interface MeterStats {
  meterId: number;
  /** Flows whose instructions use this meter. */
  flowCount: number;
  /** Packets that entered the meter, band or not. */
  packetInCount: bigint;
  byteInCount: bigint;
  durationSec: number;
  durationNsec: number;
  bandStats: MeterBandStats[];
}

export interface MeterConfig {
  /** MeterFlag bits. */
  flags: number;
  meterId: number;
  bands: MeterBand[];
}

const REQUEST_LENGTH = 8;
const STATS_FIXED_LENGTH = 40;
const BAND_STATS_LENGTH = 16;
const CONFIG_FIXED_LENGTH = 8;

/** The request body of METER and METER_CONFIG alike. */
export const request = {
  encodingLength(_body: MeterStatsRequest | MeterConfigRequest): number {
    return REQUEST_LENGTH;
  },
  encode(body: MeterStatsRequest | MeterConfigRequest, buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(REQUEST_LENGTH, buf, offset, 'meter request');
    writeU32Field(out, offset, body.meterId, 'meter_id');
    out.fill(0, offset + 4, offset + REQUEST_LENGTH);
    return out;
  },
  /** The meter id of the request body in [start, end), which must be exactly 8 octets. */
  decodeMeterId(bytes: Uint8Array, start = 0, end = bytes.length): number {
    need({ at: start, end }, REQUEST_LENGTH, 'a meter request', truncated);
    if (end - start !== REQUEST_LENGTH)
      throw new OpenFlowDecodeError('bad-length', `meter request body of ${end - start} octets is not 8`);
    return readU32BE(bytes, start);
  },
};

function statsLength(entry: MeterStats): number {
  return STATS_FIXED_LENGTH + BAND_STATS_LENGTH * entry.bandStats.length;
}

/** The METER reply body: a list of meter stats. */
export const stats = {
  encodingLength(entries: readonly MeterStats[]): number {
    let length = 0;
    for (const entry of entries) length += statsLength(entry);
    return length;
  },
  encode(entries: readonly MeterStats[], buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(stats.encodingLength(entries), buf, offset, 'meter stats');
    let at = offset;
    for (const entry of entries) {
      const length = statsLength(entry);
      writeU32Field(out, at, entry.meterId, 'meter_id');
      writeU16Field(out, at + 4, length, 'meter stats length');
      out.fill(0, at + 6, at + 12);
      writeU32Field(out, at + 12, entry.flowCount, 'flow_count');
      writeU64Field(out, at + 16, entry.packetInCount, 'packet_in_count');
      writeU64Field(out, at + 24, entry.byteInCount, 'byte_in_count');
      writeU32Field(out, at + 32, entry.durationSec, 'duration_sec');
      writeU32Field(out, at + 36, entry.durationNsec, 'duration_nsec');
      let bandAt = at + STATS_FIXED_LENGTH;
      for (const band of entry.bandStats) {
        writeU64Field(out, bandAt, band.packetCount, 'packet_band_count');
        writeU64Field(out, bandAt + 8, band.byteCount, 'byte_band_count');
        bandAt += BAND_STATS_LENGTH;
      }
      at += length;
    }
    return out;
  },
  decode(bytes: Uint8Array, start = 0, end = bytes.length): MeterStats[] {
    const entries: MeterStats[] = [];
    for (let at = start; at < end; ) {
      need({ at, end }, STATS_FIXED_LENGTH, 'a meter stats entry', truncated);
      const length = readU16BE(bytes, at + 4);
      if (length < STATS_FIXED_LENGTH || (length - STATS_FIXED_LENGTH) % BAND_STATS_LENGTH !== 0) {
        throw new OpenFlowDecodeError('bad-length', `meter stats length ${length} is not 40 plus a multiple of 16`);
      }
      need({ at, end }, length, `a meter stats entry of ${length} octets`, truncated);
      const bandStats: MeterBandStats[] = [];
      for (let bandAt = at + STATS_FIXED_LENGTH; bandAt < at + length; bandAt += BAND_STATS_LENGTH) {
        bandStats.push({ packetCount: readU64BE(bytes, bandAt), byteCount: readU64BE(bytes, bandAt + 8) });
      }
      entries.push({
        meterId: readU32BE(bytes, at),
        flowCount: readU32BE(bytes, at + 12),
        packetInCount: readU64BE(bytes, at + 16),
        byteInCount: readU64BE(bytes, at + 24),
        durationSec: readU32BE(bytes, at + 32),
        durationNsec: readU32BE(bytes, at + 36),
        bandStats,
      });
      at += length;
    }
    return entries;
  },
};

function configLength(entry: MeterConfig): number {
  return CONFIG_FIXED_LENGTH + bandList.encodingLength(entry.bands);
}

/** The METER_CONFIG reply body: a list of meter configurations. */
export const config = {
  encodingLength(entries: readonly MeterConfig[]): number {
    let length = 0;
    for (const entry of entries) length += configLength(entry);
    return length;
  },
  encode(entries: readonly MeterConfig[], buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(config.encodingLength(entries), buf, offset, 'meter config');
    let at = offset;
    for (const entry of entries) {
      const length = configLength(entry);
      writeU16Field(out, at, length, 'meter config length');
      writeU16Field(out, at + 2, entry.flags, 'meter flags');
      writeU32Field(out, at + 4, entry.meterId, 'meter_id');
      bandList.encode(entry.bands, out, at + CONFIG_FIXED_LENGTH);
      at += length;
    }
    return out;
  },
  decode(bytes: Uint8Array, start = 0, end = bytes.length): MeterConfig[] {
    const entries: MeterConfig[] = [];
    for (let at = start; at < end; ) {
      need({ at, end }, CONFIG_FIXED_LENGTH, 'a meter config entry', truncated);
      const length = readU16BE(bytes, at);
      if (length < CONFIG_FIXED_LENGTH || length % 8 !== 0) {
        throw new OpenFlowDecodeError(
          'bad-length',
          `meter config length ${length} is not a multiple of 8 of at least 8`,
        );
      }
      need({ at, end }, length, `a meter config entry of ${length} octets`, truncated);
      entries.push({
        flags: readU16BE(bytes, at + 2),
        meterId: readU32BE(bytes, at + 4),
        bands: bandList.decode(bytes, at + CONFIG_FIXED_LENGTH, at + length),
      });
      at += length;
    }
    return entries;
  },
};
