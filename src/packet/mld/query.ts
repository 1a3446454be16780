/**
 * Multicast Listener Query codec, both versions (ICMPv6 type 130).
 *
 *  v1 (24 octets):    type | code | checksum(2) | max resp delay(2) | reserved(2) | address(16)
 *  v2 (28 + 16N):     type | code | checksum(2) | max resp code(2) | reserved(2) | address(16)
 *                     resv(4) S(1) QRV(3) | QQIC | N(2) | N × source(16)
 *
 * The version of a query is a matter of its length alone (RFC 3810 §8.1): 24 octets is
 * v1, 28 or more is v2, anything between is no query at all. `decode` expects the message
 * to be exactly [start, end) (the ICMPv6 payload) with its checksum already verified (see
 * index.ts).
 */
import { DecodeError } from '../../errors.js';
import { need, outputBuffer, truncationMessage } from '../../wire/bytes.js';
import { IPV6_ADDRESS_LENGTH, readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { MLD_ADDRESS_AT, MLD_V1_LENGTH, readGroup, sealChecksum, truncated } from './common.js';
import type { MldAddresses, MldQuery, MldV2Query } from './message.js';
import { MldType } from './message.js';

const V2_FIXED_LENGTH = 28;

export function encodingLength(query: MldQuery): number {
  return query.version === 2 ? V2_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * query.sources.length : MLD_V1_LENGTH;
}

export function encode(query: MldQuery, addresses: MldAddresses, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(query);
  const out = outputBuffer(length, buf, offset, 'MLD query');
  let maxResp: number;
  if (query.version === 1) {
    maxResp = checkField('Maximum Response Delay', query.maxRespDelayMs, 0xffff);
  } else {
    maxResp = checkField('Maximum Response Code', query.maxRespCode, 0xffff);
    checkField('QRV', query.qrv, 7);
    checkField('QQIC', query.qqic, 0xff);
    if (query.sources.length > 0xffff)
      throw new RangeError(`a query holds at most 65535 sources, not ${query.sources.length}`);
    out[offset + 24] = (query.sFlag ? 0x08 : 0) | query.qrv;
    out[offset + 25] = query.qqic;
    out[offset + 26] = query.sources.length >> 8;
    out[offset + 27] = query.sources.length & 0xff;
    for (let i = 0; i < query.sources.length; i++)
      writeIPv6(out, offset + V2_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * i, query.sources[i]!);
  }
  out[offset] = MldType.Query;
  out[offset + 1] = 0;
  out[offset + 4] = maxResp >> 8;
  out[offset + 5] = maxResp & 0xff;
  out[offset + 6] = 0;
  out[offset + 7] = 0;
  writeIPv6(out, offset + MLD_ADDRESS_AT, query.group);
  sealChecksum(out, offset, offset + length, addresses);
  return out;
}

export function decode(bytes: Uint8Array, start: number, end: number): MldQuery {
  const length = end - start;
  need({ at: start, end }, MLD_V1_LENGTH, 'an MLD query', truncated);
  const group = readGroup(bytes, start + MLD_ADDRESS_AT, 'query for', true);
  const maxResp = (bytes[start + 4]! << 8) | bytes[start + 5]!;
  if (length === MLD_V1_LENGTH) return { kind: 'query', version: 1, group, maxRespDelayMs: maxResp };
  if (length < V2_FIXED_LENGTH) {
    throw new DecodeError(
      'bad-length',
      `a ${length}-octet query is neither MLDv1 (24) nor MLDv2 (28 or more) (RFC 3810 §8.1)`,
    );
  }
  const sourceCount = (bytes[start + 26]! << 8) | bytes[start + 27]!;
  if (start + V2_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * sourceCount > end) {
    const span = { at: start + V2_FIXED_LENGTH, end };
    throw truncated(
      truncationMessage(span, IPV6_ADDRESS_LENGTH * sourceCount, `an MLDv2 query with ${sourceCount} sources`),
    );
  }
  const sources: string[] = new Array<string>(sourceCount);
  for (let i = 0; i < sourceCount; i++) sources[i] = readIPv6(bytes, start + V2_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * i);
  const flags = bytes[start + 24]!;
  const query: MldV2Query = {
    kind: 'query',
    version: 2,
    group,
    maxRespCode: maxResp,
    sFlag: (flags & 0x08) !== 0,
    qrv: flags & 0x07,
    qqic: bytes[start + 25]!,
    sources,
  };
  return query;
}

function checkField(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new RangeError(`${name} must be a whole number from 0 to ${max}, not ${value}`);
  }
  return value;
}
