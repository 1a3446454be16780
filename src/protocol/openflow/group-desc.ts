/**
 * The GROUP_DESC multipart reply body (OpenFlow 1.3.5 §7.3.5.10): a list of
 *
 *   length(2) | type | pad | group_id(4) | buckets
 *
 * (The request has no body.)
 */
import * as bucketList from './bucket.js';
import type { Bucket } from './bucket.js';
import { OpenFlowDecodeError, truncated } from './errors.js';
import {
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  writeU16Field,
  writeU32Field,
  writeU8Field,
} from '../../wire/bytes.js';

export interface GroupDesc {
  /** GroupType */
  groupType: number;
  groupId: number;
  buckets: Bucket[];
}

const ENTRY_FIXED_LENGTH = 8;

function entryLength(entry: GroupDesc): number {
  return ENTRY_FIXED_LENGTH + bucketList.encodingLength(entry.buckets);
}

export function encodingLength(entries: readonly GroupDesc[]): number {
  let length = 0;
  for (const entry of entries) length += entryLength(entry);
  return length;
}

export function encode(entries: readonly GroupDesc[], buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(encodingLength(entries), buf, offset, 'group desc');
  let at = offset;
  for (const entry of entries) {
    const length = entryLength(entry);
    writeU16Field(out, at, length, 'group desc length');
    writeU8Field(out, at + 2, entry.groupType, 'group type');
    out[at + 3] = 0;
    writeU32Field(out, at + 4, entry.groupId, 'group_id');
    bucketList.encode(entry.buckets, out, at + ENTRY_FIXED_LENGTH);
    at += length;
  }
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupDesc[] {
  const entries: GroupDesc[] = [];
  for (let at = start; at < end; ) {
    need({ at, end }, ENTRY_FIXED_LENGTH, 'a group desc entry', truncated);
    const length = readU16BE(bytes, at);
    if (length < ENTRY_FIXED_LENGTH || length % 8 !== 0) {
      throw new OpenFlowDecodeError('bad-length', `group desc length ${length} is not a multiple of 8 of at least 8`);
    }
    need({ at, end }, length, `a group desc entry of ${length} octets`, truncated);
    entries.push({
      groupType: bytes[at + 2]!,
      groupId: readU32BE(bytes, at + 4),
      buckets: bucketList.decode(bytes, at + ENTRY_FIXED_LENGTH, at + length),
    });
    at += length;
  }
  return entries;
}
