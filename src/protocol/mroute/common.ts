/**
 * Helpers shared by the kernel routing struct codecs of both families: x86_64 host order
 * for integers, network order for addresses, and the socket addresses the structs embed.
 *
 *   sockaddr_in (linux/in.h), 16 octets:
 *     0 sin_family u16 (host order) | 2 sin_port be16 | 4 sin_addr (4 octets) | 8 zero
 *   sockaddr_in6 (linux/in6.h), 28 octets:
 *     0 sin6_family u16 (host order) | 2 sin6_port be16 | 4 sin6_flowinfo be32
 *     8 sin6_addr (16 octets) | 24 sin6_scope_id u32 (host order)
 *
 * The writers here set the family and the address and zero the rest (port, flowinfo, scope
 * id: the kernel reads only the address from mf6cctl, and the ifindex fields of the join
 * structs name the interface); the readers check the family before they read the address.
 */
import { DecodeError, quoteInput } from '../../errors.js';
import type { TruncatedError } from '../../wire/bytes.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import { parseIPv4, readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { parseIPv6, readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { AF_INET, AF_INET6 } from './constants.js';

/** The routing codecs' error for data that ends too soon (see need() in src/wire/bytes.ts). */
export const truncated: TruncatedError = (message) => new DecodeError('truncated', message);

/** One struct's codec, as each module of this folder has it. */
export interface StructCodec<T> {
  encodingLength(value: T): number;
  encode(value: T, buf?: Uint8Array, offset?: number): Uint8Array;
  decode(bytes: Uint8Array, start?: number, end?: number): T;
}

export function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function checkInt32(value: number, what: string): void {
  if (!Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1)
    throw new RangeError(`${what} ${value} is not a 32-bit integer`);
}

export function checkIPv4(address: string, what: string): void {
  if (parseIPv4(address) === undefined) throw new RangeError(`${what} ${quoteInput(address)} is not an IPv4 address`);
}

export function checkIPv6(address: string, what: string): void {
  if (parseIPv6(address) === undefined) throw new RangeError(`${what} ${quoteInput(address)} is not an IPv6 address`);
}

export const SOCKADDR_IN6_LENGTH = 28;
/** struct __kernel_sockaddr_storage, which the RFC 3678 structs hold an address of either family in. */
export const SOCKADDR_STORAGE_LENGTH = 128;

/** Why a codec refuses a socket address: its family is not the one the struct is read as. */
export type SockaddrDecodeCode = 'not-inet' | 'not-inet6';

/** What sets each family's socket address apart. */
const SOCKADDRS = {
  ipv4: {
    family: AF_INET,
    name: 'AF_INET',
    code: 'not-inet',
    addressAt: 4,
    write: writeIPv4,
    read: readIPv4,
    check: checkIPv4,
  },
  ipv6: {
    family: AF_INET6,
    name: 'AF_INET6',
    code: 'not-inet6',
    addressAt: 8,
    write: writeIPv6,
    read: readIPv6,
    check: checkIPv6,
  },
} as const;

/** Checks that `address` is an address of `family` (RangeError naming `what` if not). */
export function checkAddressOf(family: AddressFamily, address: string, what: string): void {
  SOCKADDRS[family].check(address, what);
}

/**
 * Writes a sockaddr_in or sockaddr_in6 of `address` at `at`, then zeros up to `length` (its size, or 128 inside a
 * sockaddr_storage).
 */
export function writeSockaddr(
  family: AddressFamily,
  out: Uint8Array,
  at: number,
  address: string,
  length: number,
): void {
  const kind = SOCKADDRS[family];
  out.fill(0, at, at + length);
  view(out).setUint16(at, kind.family, true);
  kind.write(out, at + kind.addressAt, address);
}

/** The address text of the sockaddr at `at`, after checking it is of `family`; `what` names the field in the error. */
export function readSockaddr(family: AddressFamily, bytes: Uint8Array, at: number, what: string): string {
  const kind = SOCKADDRS[family];
  const found = view(bytes).getUint16(at, true);
  if (found !== kind.family)
    throw new DecodeError<SockaddrDecodeCode>(
      kind.code,
      `${what} has address family ${found}, not ${kind.name} (${kind.family})`,
    );
  return kind.read(bytes, at + kind.addressAt);
}
