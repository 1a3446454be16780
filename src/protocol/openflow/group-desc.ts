/**
 * The GROUP_DESC multipart reply body (OpenFlow 1.3.5 §7.3.5.10): a list of
 *
 *   length(2) | type | pad | group_id(4) | buckets
 *
 * (The request has no body.)
 */
import * as bucketList from './bucket.js';
import type { Bucket } from './bucket.js';
import { OpenFlowDecodeError, ensureAvailable } from './errors.js';
import { outputBuffer, readU16, readU32, writeU16, writeU32, writeU8 } from './wire.js';

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
    writeU16(out, at, length, 'group desc length');
    writeU8(out, at + 2, entry.groupType, 'group type');
    out[at + 3] = 0;
    writeU32(out, at + 4, entry.groupId, 'group_id');
    bucketList.encode(entry.buckets, out, at + ENTRY_FIXED_LENGTH);
    at += length;
  }
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupDesc[] {
  const entries: GroupDesc[] = [];
  for (let at = start; at < end; ) {
    ensureAvailable(end, at, ENTRY_FIXED_LENGTH, 'a group desc entry');
    const length = readU16(bytes, at);
    if (length < ENTRY_FIXED_LENGTH || length % 8 !== 0) {
      throw new OpenFlowDecodeError('bad-length', `group desc length ${length} is not a multiple of 8 of at least 8`);
    }
    ensureAvailable(end, at, length, `a group desc entry of ${length} octets`);
    entries.push({
      groupType: bytes[at + 2]!,
      groupId: readU32(bytes, at + 4),
      buckets: bucketList.decode(bytes, at + ENTRY_FIXED_LENGTH, at + length),
    });
    at += length;
  }
  return entries;
}
