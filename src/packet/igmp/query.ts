/**
 * Membership Query codec, all three versions (type 0x11).
 *
 *  v1/v2 (8 octets):   type | max resp | checksum(2) | group(4)
 *  v3 (12 + 4N):       type | max resp code | checksum(2) | group(4)
 *                      resv(4) S(1) QRV(3) | QQIC | N(2) | N × source(4)
 *
 * The version of a query is a matter of its length and Max Resp field (RFC 3376 §7.1).
 * `decode` expects the message to be exactly [start, end) (the IP payload) with its
 * checksum already verified (see index.ts).
 */
import { DecodeError } from '../../errors.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { need, outputBuffer, truncationMessage } from '../../wire/bytes.js';
import { IGMP_HEADER_LENGTH, isMulticastAt, isZeroAddressAt, sealChecksum, truncated } from './common.js';
import type { IgmpQuery, IgmpV3Query } from './message.js';
import { IgmpType } from './message-type.js';

const V3_FIXED_LENGTH = 12;

export function encodingLength(query: IgmpQuery): number {
  return query.version === 3 ? V3_FIXED_LENGTH + 4 * query.sources.length : IGMP_HEADER_LENGTH;
}

export function encode(query: IgmpQuery, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(query);
  const out = outputBuffer(length, buf, offset, 'IGMP query');
  out[offset] = IgmpType.MembershipQuery;
  switch (query.version) {
    case 1:
      out[offset + 1] = 0;
      break;
    case 2:
      checkField('Max Resp Time', query.maxRespTimeDs, 1, 255);
      out[offset + 1] = query.maxRespTimeDs;
      break;
    case 3:
      checkField('Max Resp Code', query.maxRespCode, 0, 255);
      checkField('QRV', query.qrv, 0, 7);
      checkField('QQIC', query.qqic, 0, 255);
      if (query.sources.length > 0xffff)
        throw new RangeError(`a query holds at most 65535 sources, not ${query.sources.length}`);
      out[offset + 1] = query.maxRespCode;
      out[offset + 8] = (query.sFlag ? 0x08 : 0) | query.qrv;
      out[offset + 9] = query.qqic;
      out[offset + 10] = query.sources.length >> 8;
      out[offset + 11] = query.sources.length & 0xff;
      for (let i = 0; i < query.sources.length; i++) writeIPv4(out, offset + 12 + 4 * i, query.sources[i]!);
      break;
  }
  writeIPv4(out, offset + 4, query.group);
  sealChecksum(out, offset, offset + length);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): IgmpQuery {
  const length = end - start;
  need({ at: start, end }, IGMP_HEADER_LENGTH, 'an IGMP query', truncated);
  if (!isZeroAddressAt(bytes, start + 4) && !isMulticastAt(bytes, start + 4)) {
    throw new DecodeError(
      'invalid-group',
      `query for ${readIPv4(bytes, start + 4)}, which is neither 0.0.0.0 nor multicast`,
    );
  }
  const group = readIPv4(bytes, start + 4);
  const maxResp = bytes[start + 1]!;
  if (length === IGMP_HEADER_LENGTH) {
    return maxResp === 0
      ? { kind: 'query', version: 1, group }
      : { kind: 'query', version: 2, group, maxRespTimeDs: maxResp };
  }
  if (length < V3_FIXED_LENGTH) {
    throw new DecodeError(
      'bad-length',
      `a ${length}-octet query is neither v1/v2 (8) nor v3 (12 or more) (RFC 3376 §7.1)`,
    );
  }
  const sourceCount = (bytes[start + 10]! << 8) | bytes[start + 11]!;
  if (start + V3_FIXED_LENGTH + 4 * sourceCount > end) {
    throw truncated(
      truncationMessage(
        { at: start + V3_FIXED_LENGTH, end },
        4 * sourceCount,
        `a v3 query with ${sourceCount} sources`,
      ),
    );
  }
  const sources: string[] = new Array<string>(sourceCount);
  for (let i = 0; i < sourceCount; i++) sources[i] = readIPv4(bytes, start + V3_FIXED_LENGTH + 4 * i);
  const flags = bytes[start + 8]!;
  const query: IgmpV3Query = {
    kind: 'query',
    version: 3,
    group,
    maxRespCode: maxResp,
    sFlag: (flags & 0x08) !== 0,
    qrv: flags & 0x07,
    qqic: bytes[start + 9]!,
    sources,
  };
  return query;
}

function checkField(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be a whole number from ${min} to ${max}, not ${value}`);
  }
}
