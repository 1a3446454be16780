/**
 * Group buckets (OpenFlow 1.3.5 §7.3.4.3, `ofp_bucket`), as GROUP_MOD and the GROUP_DESC
 * reply carry them:
 *
 *   len(2) | weight(2) | watch_port(4) | watch_group(4) | pad(4) | actions
 */
import * as actionList from './action.js';
import type { Action } from './action.js';
import { OpenFlowDecodeError, truncated } from './errors.js';
import { OfpGroup, OfpPort } from './reserved.js';
import { need, outputBuffer, readU16BE, readU32BE, writeU16Field, writeU32Field } from '../../wire/bytes.js';

export interface Bucket {
  /** SELECT groups only; 0 otherwise. */
  weight: number;
  /** FF groups only; OfpPort.ANY otherwise. */
  watchPort: number;
  /** FF groups only; OfpGroup.ANY otherwise. */
  watchGroup: number;
  actions: Action[];
}

export const BUCKET_HEADER_LENGTH = 16;

/** A bucket of an ALL or INDIRECT group: no weight, nothing watched. */
export function bucket(actions: Action[], options: Partial<Omit<Bucket, 'actions'>> = {}): Bucket {
  return {
    weight: options.weight ?? 0,
    watchPort: options.watchPort ?? OfpPort.ANY,
    watchGroup: options.watchGroup ?? OfpGroup.ANY,
    actions,
  };
}

export function bucketLength(bucket: Bucket): number {
  return BUCKET_HEADER_LENGTH + actionList.encodingLength(bucket.actions);
}

export function encodingLength(buckets: readonly Bucket[]): number {
  let length = 0;
  for (const bucket of buckets) length += bucketLength(bucket);
  return length;
}

export function encode(buckets: readonly Bucket[], buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(encodingLength(buckets), buf, offset, 'bucket list');
  let at = offset;
  for (const bucket of buckets) {
    const length = bucketLength(bucket);
    writeU16Field(out, at, length, 'bucket length');
    writeU16Field(out, at + 2, bucket.weight, 'bucket weight');
    writeU32Field(out, at + 4, bucket.watchPort, 'bucket watch_port');
    writeU32Field(out, at + 8, bucket.watchGroup, 'bucket watch_group');
    out.fill(0, at + 12, at + BUCKET_HEADER_LENGTH);
    actionList.encode(bucket.actions, out, at + BUCKET_HEADER_LENGTH);
    at += length;
  }
  return out;
}

/** Decodes every bucket in [start, end). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Bucket[] {
  const buckets: Bucket[] = [];
  for (let at = start; at < end; ) {
    need({ at, end }, BUCKET_HEADER_LENGTH, 'a bucket header', truncated);
    const length = readU16BE(bytes, at);
    if (length < BUCKET_HEADER_LENGTH || length % 8 !== 0) {
      throw new OpenFlowDecodeError('bad-length', `bucket length ${length} is not a multiple of 8 of at least 16`);
    }
    need({ at, end }, length, `a bucket of ${length} octets`, truncated);
    buckets.push({
      weight: readU16BE(bytes, at + 2),
      watchPort: readU32BE(bytes, at + 4),
      watchGroup: readU32BE(bytes, at + 8),
      actions: actionList.decode(bytes, at + BUCKET_HEADER_LENGTH, at + length),
    });
    at += length;
  }
  return buckets;
}
