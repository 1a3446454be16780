/**
 * The GROUP multipart bodies (OpenFlow 1.3.5 §7.3.5.9): the counters of OVS groups.
 *
 * Request (`ofp_group_stats_request`): group_id(4) | pad(4); OFPG_ALL asks for every group.
 *
 * Reply: a list of `ofp_group_stats`, each
 *   length(2) | pad(2) | group_id(4) | ref_count(4) | pad(4) | packet_count(8)
 *   | byte_count(8) | duration_sec(4) | duration_nsec(4) | bucket_stats
 * with one `ofp_bucket_counter` per bucket, in the group's bucket order:
 *   packet_count(8) | byte_count(8)
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
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

/** `group_id` that asks for every group (OFPG_ALL). */
export const OFPG_ALL = 0xfffffffc;

export interface GroupStatsRequest {
  kind: 'GROUP';
  /** One group, or OFPG_ALL. */
  groupId: number;
}

export interface BucketCounter {
  packetCount: bigint;
  byteCount: bigint;
}

export interface GroupStats {
  groupId: number;
  /** Flows and groups that point to this group. */
  refCount: number;
  packetCount: bigint;
  byteCount: bigint;
  durationSec: number;
  durationNsec: number;
  /** One per bucket, in the order the group's description lists its buckets. */
  bucketStats: BucketCounter[];
}

const REQUEST_LENGTH = 8;
const STATS_FIXED_LENGTH = 40;
const BUCKET_COUNTER_LENGTH = 16;

export const request = {
  encodingLength(_body: GroupStatsRequest): number {
    return REQUEST_LENGTH;
  },
  encode(body: GroupStatsRequest, buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(REQUEST_LENGTH, buf, offset, 'group stats request');
    writeU32Field(out, offset, body.groupId, 'group_id');
    out.fill(0, offset + 4, offset + REQUEST_LENGTH);
    return out;
  },
  /** The request body in [start, end), which must be exactly 8 octets. */
  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupStatsRequest {
    need({ at: start, end }, REQUEST_LENGTH, 'a group stats request', truncated);
    if (end - start !== REQUEST_LENGTH)
      throw new OpenFlowDecodeError('bad-length', `group stats request body of ${end - start} octets is not 8`);
    return { kind: 'GROUP', groupId: readU32BE(bytes, start) };
  },
};

function statsLength(entry: GroupStats): number {
  return STATS_FIXED_LENGTH + BUCKET_COUNTER_LENGTH * entry.bucketStats.length;
}

/** The GROUP reply body: a list of group stats. */
export const reply = {
  encodingLength(entries: readonly GroupStats[]): number {
    let length = 0;
    for (const entry of entries) length += statsLength(entry);
    return length;
  },
  encode(entries: readonly GroupStats[], buf?: Uint8Array, offset = 0): Uint8Array {
    const out = outputBuffer(reply.encodingLength(entries), buf, offset, 'group stats');
    let at = offset;
    for (const entry of entries) {
      const length = statsLength(entry);
      writeU16Field(out, at, length, 'group stats length');
      out.fill(0, at + 2, at + 4);
      writeU32Field(out, at + 4, entry.groupId, 'group_id');
      writeU32Field(out, at + 8, entry.refCount, 'ref_count');
      out.fill(0, at + 12, at + 16);
      writeU64Field(out, at + 16, entry.packetCount, 'packet_count');
      writeU64Field(out, at + 24, entry.byteCount, 'byte_count');
      writeU32Field(out, at + 32, entry.durationSec, 'duration_sec');
      writeU32Field(out, at + 36, entry.durationNsec, 'duration_nsec');
      let bucketAt = at + STATS_FIXED_LENGTH;
      for (const bucket of entry.bucketStats) {
        writeU64Field(out, bucketAt, bucket.packetCount, 'bucket packet_count');
        writeU64Field(out, bucketAt + 8, bucket.byteCount, 'bucket byte_count');
        bucketAt += BUCKET_COUNTER_LENGTH;
      }
      at += length;
    }
    return out;
  },
  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupStats[] {
    const entries: GroupStats[] = [];
    for (let at = start; at < end; ) {
      need({ at, end }, STATS_FIXED_LENGTH, 'a group stats entry', truncated);
      const length = readU16BE(bytes, at);
      if (length < STATS_FIXED_LENGTH || (length - STATS_FIXED_LENGTH) % BUCKET_COUNTER_LENGTH !== 0) {
        throw new OpenFlowDecodeError('bad-length', `group stats length ${length} is not 40 plus a multiple of 16`);
      }
      need({ at, end }, length, `a group stats entry of ${length} octets`, truncated);
      const bucketStats: BucketCounter[] = [];
      for (let bucketAt = at + STATS_FIXED_LENGTH; bucketAt < at + length; bucketAt += BUCKET_COUNTER_LENGTH) {
        bucketStats.push({ packetCount: readU64BE(bytes, bucketAt), byteCount: readU64BE(bytes, bucketAt + 8) });
      }
      entries.push({
        groupId: readU32BE(bytes, at + 4),
        refCount: readU32BE(bytes, at + 8),
        packetCount: readU64BE(bytes, at + 16),
        byteCount: readU64BE(bytes, at + 24),
        durationSec: readU32BE(bytes, at + 32),
        durationNsec: readU32BE(bytes, at + 36),
        bucketStats,
      });
      at += length;
    }
    return entries;
  },
};
