/**
 * MLD, both versions: `decode`, `encode` and `encodingLength` over the whole `MldMessage`
 * union, plus the derived times that people and JSON want.
 *
 * MLD messages are ICMPv6 messages, whose checksum covers an IPv6 pseudo-header (RFC 8200
 * §8.1): `encode` takes the packet's addresses as text, `decode` reads them in place, at
 * the offsets of the IPv6 header in the same bytes. `decode` takes exactly one message,
 * the ICMPv6 payload [start, end), of an MLD type (`isMldType`: other ICMPv6 types are
 * not MLD, and handing one over is a caller's mistake, a RangeError); it verifies the
 * checksum over all of it, then hands it to the codec of its type. Failures are
 * `DecodeError`s with a stable code.
 */
import { DecodeError } from '../../errors.js';
import { need } from '../../wire/bytes.js';
import { checksumOfSum, ipv6PseudoHeaderChecksum, ipv6PseudoHeaderSum } from '../../wire/checksum.js';
import { IPV6_ADDRESS_LENGTH } from '../../wire/ipv6-address.js';
import { decodeFloatCode } from '../igmp/float-code.js';
import { truncated } from './common.js';
import { decodeMaxRespCode } from './float-code.js';
import * as listenerMessage from './listener-message.js';
import {
  IP_PROTOCOL_ICMPV6,
  type MldAddresses,
  type MldAddressOffsets,
  type MldMessage,
  type MldQuery,
  MldType,
  type MldV2Report,
} from './message.js';
import * as query from './query.js';
import * as reportV2 from './report-v2.js';

export * from './message.js';
export { decodeMaxRespCode, encodeMaxRespCode, MAX_MAX_RESP_CODE_VALUE } from './float-code.js';

export function encodingLength(message: MldMessage): number {
  switch (message.kind) {
    case 'query':
      return query.encodingLength(message);
    case 'report':
      return message.version === 2 ? reportV2.encodingLength(message) : listenerMessage.encodingLength(message);
    case 'leave':
      return listenerMessage.encodingLength(message);
  }
}

/** Encodes into `buf` at `offset` (or a new Buffer), with the checksum over the pseudo-header of `addresses`. */
export function encode(message: MldMessage, addresses: MldAddresses, buf?: Uint8Array, offset = 0): Uint8Array {
  switch (message.kind) {
    case 'query':
      return query.encode(message, addresses, buf, offset);
    case 'report':
      return message.version === 2
        ? reportV2.encode(message, addresses, buf, offset)
        : listenerMessage.encode(message, addresses, buf, offset);
    case 'leave':
      return listenerMessage.encode(message, addresses, buf, offset);
  }
}

/** True for the ICMPv6 types `decode` takes: query, v1 report, done, v2 report. */
export function isMldType(icmpType: number): icmpType is MldType {
  return (
    icmpType === MldType.Query ||
    icmpType === MldType.V1Report ||
    icmpType === MldType.V1Done ||
    icmpType === MldType.V2Report
  );
}

/**
 * Decodes the MLD message in [start, end) of `bytes`, whose checksum is verified over the
 * pseudo-header of the 16-octet source and destination at `offsets` of the same `bytes`.
 */
export function decode(bytes: Uint8Array, start: number, end: number, offsets: MldAddressOffsets): MldMessage {
  if (end <= start) throw new DecodeError('truncated', 'empty MLD message');
  const type = bytes[start]!;
  if (!isMldType(type)) throw new RangeError(`ICMPv6 type ${type} is not MLD (check isMldType first)`);
  need({ at: start, end }, 4, 'the MLD header', truncated);
  const { srcAt, dstAt } = offsets;
  if (
    srcAt < 0 ||
    srcAt + IPV6_ADDRESS_LENGTH > bytes.length ||
    dstAt < 0 ||
    dstAt + IPV6_ADDRESS_LENGTH > bytes.length
  ) {
    throw new RangeError(`the addresses at ${srcAt} and ${dstAt} do not fit the ${bytes.length} octets`);
  }
  const pseudo = { addresses: bytes, srcAt, dstAt, nextHeader: IP_PROTOCOL_ICMPV6 };
  // A v2 report, the message that comes by the thousand, is summed as it is decoded, so
  // its addresses are read once (see report-v2.ts); a bad checksum still wins over any
  // other fault, as it does for the types verified first.
  if (type === MldType.V2Report) {
    const sum = { value: ipv6PseudoHeaderSum(pseudo, end - start) };
    let report: MldV2Report;
    try {
      report = reportV2.decode(bytes, start, end, sum);
    } catch (error) {
      if (ipv6PseudoHeaderChecksum(bytes, start, end, pseudo) !== 0) throw badChecksum(bytes, start, end);
      throw error;
    }
    if (checksumOfSum(sum.value) !== 0) throw badChecksum(bytes, start, end);
    return report;
  }
  if (ipv6PseudoHeaderChecksum(bytes, start, end, pseudo) !== 0) throw badChecksum(bytes, start, end);
  switch (type) {
    case MldType.Query:
      return query.decode(bytes, start, end);
    case MldType.V1Report:
    case MldType.V1Done:
      return listenerMessage.decode(bytes, start, end);
  }
}

function badChecksum(bytes: Uint8Array, start: number, end: number): DecodeError {
  const stored = (bytes[start + 2]! << 8) | bytes[start + 3]!;
  return new DecodeError(
    'bad-checksum',
    `MLD checksum 0x${hex4(stored)} does not match the ${end - start}-octet message and its addresses`,
  );
}

/** A query's Maximum Response Delay in milliseconds: v1 carries it as is, v2 as a code (RFC 3810 §5.1.3). */
export function maxRespTimeMs(message: MldQuery): number {
  return message.version === 1 ? message.maxRespDelayMs : decodeMaxRespCode(message.maxRespCode);
}

/** A v2 query's Querier's Query Interval in seconds (IGMPv3's 8-bit code). */
export function qqicSeconds(message: { qqic: number }): number {
  return decodeFloatCode(message.qqic);
}

function hex4(value: number): string {
  return value.toString(16).padStart(4, '0');
}
