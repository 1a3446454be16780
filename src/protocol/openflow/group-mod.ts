/**
 * OFPT_GROUP_MOD (OpenFlow 1.3.5 §7.3.4.3):
 *
 *   header | command(2) | type | pad | group_id(4) | buckets
 *
 * OpenFlow 1.3 has no command to insert or remove single buckets: MODIFY replaces the
 * whole bucket list, and one message holds at most 65535 octets (see limits.ts for how
 * many buckets that is).
 */
import * as bucketList from './bucket.js';
import type { Bucket } from './bucket.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { GroupModCommand, GroupType } from './mod-command.js';
import { outputBuffer, readU16BE, readU32BE, writeU16Field, writeU32Field, writeU8Field } from '../../wire/bytes.js';

export interface GroupMod {
  type: 'GROUP_MOD';
  xid: number;
  /** GroupModCommand.ADD, MODIFY or DELETE. */
  command: number;
  /** GroupType.ALL, SELECT, INDIRECT or FF. */
  groupType: number;
  groupId: number;
  buckets: Bucket[];
}

export const GROUP_MOD_FIXED_LENGTH = HEADER_LENGTH + 8;

/** A GROUP_MOD; defaults: ADD, type ALL, no buckets. */
export function groupMod(fields: Partial<Omit<GroupMod, 'type'>> & Pick<GroupMod, 'groupId'>): GroupMod {
  return { type: 'GROUP_MOD', xid: 0, command: GroupModCommand.ADD, groupType: GroupType.ALL, buckets: [], ...fields };
}

export function encodingLength(message: GroupMod): number {
  return GROUP_MOD_FIXED_LENGTH + bucketList.encodingLength(message.buckets);
}

export function encode(message: GroupMod, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'GROUP_MOD');
  writeHeader(out, offset, 'GROUP_MOD', length, message.xid);
  writeU16Field(out, offset + 8, message.command, 'group command');
  writeU8Field(out, offset + 10, message.groupType, 'group type');
  out[offset + 11] = 0;
  writeU32Field(out, offset + 12, message.groupId, 'group_id');
  bucketList.encode(message.buckets, out, offset + GROUP_MOD_FIXED_LENGTH);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupMod {
  const header = readMessageHeader(bytes, start, end, 'GROUP_MOD', GROUP_MOD_FIXED_LENGTH);
  return {
    type: 'GROUP_MOD',
    xid: header.xid,
    command: readU16BE(bytes, start + 8),
    groupType: bytes[start + 10]!,
    groupId: readU32BE(bytes, start + 12),
    buckets: bucketList.decode(bytes, start + GROUP_MOD_FIXED_LENGTH, end),
  };
}
