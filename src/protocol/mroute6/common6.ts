/**
 * struct sockaddr_in6 (linux/in6.h) as the mroute6 structs embed it, 28 octets:
 *
 *   0 sin6_family u16 (host order) | 2 sin6_port be16 | 4 sin6_flowinfo be32
 *   8 sin6_addr (16 octets, network order) | 24 sin6_scope_id u32 (host order)
 *
 * The codecs here write family AF_INET6 and zero port, flowinfo and scope id (the kernel
 * reads only sin6_addr from mf6cctl, and gr_interface / gsr_interface name the interface
 * of a join), and read the address back after checking the family.
 */
import { DecodeError, quoteInput } from '../../errors.js';
import { parseIPv6, readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { view } from '../mroute/common.js';
import { AF_INET6 } from './constants.js';

export const SOCKADDR_IN6_LENGTH = 28;
const ADDRESS_AT = 8;

/** Why a codec here refuses a sockaddr: its family is not AF_INET6. */
export type SockaddrIn6DecodeCode = 'not-inet6';

export function checkIPv6(address: string, what: string): void {
  if (parseIPv6(address) === undefined) throw new RangeError(`${what} ${quoteInput(address)} is not an IPv6 address`);
}

/** Writes a sockaddr_in6 of `address` at `at`, then zeros up to `length` (28, or 128 inside a sockaddr_storage). */
export function writeSockaddrIn6(out: Uint8Array, at: number, address: string, length = SOCKADDR_IN6_LENGTH): void {
  out.fill(0, at, at + length);
  view(out).setUint16(at, AF_INET6, true);
  writeIPv6(out, at + ADDRESS_AT, address);
}

/** The canonical text of the sockaddr_in6 at `at`; `what` names the field in the error. */
export function readSockaddrIn6(bytes: Uint8Array, at: number, what: string): string {
  const family = view(bytes).getUint16(at, true);
  if (family !== AF_INET6) throw new DecodeError<SockaddrIn6DecodeCode>('not-inet6', `${what} has address family ${family}, not AF_INET6 (${AF_INET6})`);
  return readIPv6(bytes, at + ADDRESS_AT);
}
