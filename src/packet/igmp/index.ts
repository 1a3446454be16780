/**
 * IGMP, every version: `decode`, `encode` and `encodingLength` over the whole
 * `IgmpMessage` union, plus the derived times that people and JSON want.
 *
 * `decode` takes exactly one IGMP message, the IP payload [start, end), verifies its
 * checksum over all of it (RFC 2236 §2.3: the whole payload, not just 8 octets), then
 * hands it to the codec of its type. Failures are `DecodeError`s with a stable code.
 */
import { DecodeError } from '../../errors.js';
import { need } from '../../wire/bytes.js';
import { internetChecksum } from '../../wire/checksum.js';
import { truncated } from './common.js';
import { decodeFloatCode } from './float-code.js';
import * as groupMessage from './group-message.js';
import type { IgmpMessage, IgmpQuery } from './message.js';
import { IgmpType } from './message-type.js';
import * as other from './other.js';
import * as query from './query.js';
import * as reportV3 from './report-v3.js';

export * from './message.js';
export { IgmpType, otherIgmpTypeName } from './message-type.js';
export { RecordType, recordTypeName, type RecordTypeName } from './record-type.js';
export { decodeFloatCode, encodeFloatCode, MAX_FLOAT_CODE_VALUE } from './float-code.js';

export function encodingLength(message: IgmpMessage): number {
  switch (message.kind) {
    case 'query':
      return query.encodingLength(message);
    case 'report':
      return message.version === 3 ? reportV3.encodingLength(message) : groupMessage.encodingLength(message);
    case 'leave':
      return groupMessage.encodingLength(message);
    case 'other':
      return other.encodingLength(message);
  }
}

/** Encodes into `buf` at `offset` (or a new Buffer), checksum included. */
export function encode(message: IgmpMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  switch (message.kind) {
    case 'query':
      return query.encode(message, buf, offset);
    case 'report':
      return message.version === 3 ? reportV3.encode(message, buf, offset) : groupMessage.encode(message, buf, offset);
    case 'leave':
      return groupMessage.encode(message, buf, offset);
    case 'other':
      return other.encode(message, buf, offset);
  }
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): IgmpMessage {
  if (end <= start) throw new DecodeError('truncated', 'empty IGMP message');
  need({ at: start, end }, 4, 'the IGMP header', truncated);
  if (internetChecksum(bytes, start, end) !== 0) {
    const stored = (bytes[start + 2]! << 8) | bytes[start + 3]!;
    throw new DecodeError(
      'bad-checksum',
      `IGMP checksum 0x${hex4(stored)} does not match the ${end - start}-octet message`,
    );
  }
  switch (bytes[start]) {
    case IgmpType.MembershipQuery:
      return query.decode(bytes, start, end);
    case IgmpType.V1MembershipReport:
    case IgmpType.V2MembershipReport:
    case IgmpType.V2LeaveGroup:
      return groupMessage.decode(bytes, start, end);
    case IgmpType.V3MembershipReport:
      return reportV3.decode(bytes, start, end);
    default:
      return other.decode(bytes, start, end);
  }
}

/**
 * A query's Max Response Time in milliseconds. A v1 query carries none (the field is
 * zero), and RFC 2236 §4 says hosts MUST take it as 10 s: that is what it means.
 */
export function maxRespTimeMs(message: IgmpQuery): number {
  switch (message.version) {
    case 1:
      return V1_MAX_RESP_TIME_MS;
    case 2:
      return message.maxRespTimeDs * 100;
    case 3:
      return decodeFloatCode(message.maxRespCode) * 100;
  }
}

/** A v3 query's Querier's Query Interval in seconds. */
export function qqicSeconds(message: { qqic: number }): number {
  return decodeFloatCode(message.qqic);
}

const V1_MAX_RESP_TIME_MS = 10_000;

function hex4(value: number): string {
  return value.toString(16).padStart(4, '0');
}
