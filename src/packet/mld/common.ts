/** Helpers shared by the MLD message codecs. */
import { DecodeError } from '../../errors.js';
import type { TruncatedError } from '../../wire/bytes.js';
import { ipv6PseudoHeaderChecksum } from '../../wire/checksum.js';
import {
  IPV6_ADDRESS_LENGTH,
  isIPv6MulticastAt,
  isIPv6UnspecifiedAt,
  readIPv6,
  writeIPv6,
} from '../../wire/ipv6-address.js';
import { IP_PROTOCOL_ICMPV6, type MldAddresses } from './message.js';

/**
 * Octets of the fixed part every MLD message starts with: type, code, checksum, 4 octets
 * (Maximum Response field and reserved), then an address. MLDv1 messages are exactly this.
 */
export const MLD_V1_LENGTH = 24;
/** Where the Multicast Address of a query, report or done sits. */
export const MLD_ADDRESS_AT = 8;

/**
 * The source and destination of the pseudo-header, 16 octets each; encode is synchronous, so one scratch serves every
 * call.
 */
const pseudoAddresses = new Uint8Array(2 * IPV6_ADDRESS_LENGTH);

/**
 * Zeroes, computes and stores the ICMPv6 checksum of the message in [start, end), over the
 * IPv6 pseudo-header of `addresses` (RFC 8200 §8.1).
 * Throws RangeError when an address is not IPv6 text.
 */
export function sealChecksum(bytes: Uint8Array, start: number, end: number, addresses: MldAddresses): void {
  writeIPv6(pseudoAddresses, 0, addresses.src);
  writeIPv6(pseudoAddresses, IPV6_ADDRESS_LENGTH, addresses.dst);
  bytes[start + 2] = 0;
  bytes[start + 3] = 0;
  const sum = ipv6PseudoHeaderChecksum(bytes, start, end, {
    addresses: pseudoAddresses,
    srcAt: 0,
    dstAt: IPV6_ADDRESS_LENGTH,
    nextHeader: IP_PROTOCOL_ICMPV6,
  });
  bytes[start + 2] = sum >> 8;
  bytes[start + 3] = sum & 0xff;
}

/** The MLD codecs' error for data that ends too soon (see need() in src/wire/bytes.ts). */
export const truncated: TruncatedError = (message) => new DecodeError('truncated', message);

/**
 * The multicast address at `at` as text. Anything else is DecodeError 'invalid-group',
 * whose message says `what` (e.g. "record 2 names") it was; `::` passes when `unspecifiedToo`
 * (the group of a general query).
 */
export function readGroup(bytes: Uint8Array, at: number, what: string, unspecifiedToo = false): string {
  const group = readIPv6(bytes, at);
  if (isIPv6MulticastAt(bytes, at)) return group;
  if (!unspecifiedToo) throw new DecodeError('invalid-group', `${what} ${group}, which is not a multicast address`);
  if (isIPv6UnspecifiedAt(bytes, at)) return group;
  throw new DecodeError('invalid-group', `${what} ${group}, which is neither :: nor multicast`);
}
