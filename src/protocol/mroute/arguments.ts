/**
 * Checks of the values the router socket's callers give, before any struct is encoded: each
 * failure is a UsageError naming the value, so that a value the kernel would refuse (or,
 * worse, take for another) never reaches it. The limits that differ by family come from
 * its kit (family-kit.ts), which binds these checks to them.
 */
import { UsageError, quoteInput } from '../../errors.js';
import { type AddressFamily, addressFamily, isMulticast } from '../../wire/ip-address.js';

/** The kernel's table of routing interfaces: its word (VIF, MIF) and its size (MAXVIFS, MAXMIFS). */
export interface InterfaceTableLimits {
  word: string;
  size: number;
}

/** An ifindex a family's interface struct can hold: `max` (absent: any positive one), and why, for the message. */
export interface IfindexLimit {
  max: number;
  reason: string;
}

const FAMILY_NAMES: Readonly<Record<AddressFamily, { name: string; multicast: string }>> = {
  ipv4: { name: 'IPv4', multicast: '224.0.0.0/4' },
  ipv6: { name: 'IPv6', multicast: 'ff00::/8' },
};

/** An index into the kernel's table of routing interfaces. */
export function checkInterfaceIndex(index: number, table: InterfaceTableLimits, what = table.word): void {
  if (!Number.isInteger(index) || index < 0 || index >= table.size)
    throw new UsageError(`invalid ${what} ${index}: an integer from 0 to ${table.size - 1}`);
}

/**
 * A TTL (IPv4) or hop-limit (IPv6) threshold: the kernel forwards a packet out of an interface only when its TTL is
 * above it.
 */
export function checkThreshold(value: number, what: string): void {
  if (!Number.isInteger(value) || value < 1 || value > 254)
    throw new UsageError(`invalid ${what} ${value}: an integer from 1 to 254`);
}

/** An address of `family`; with `multicast`, a multicast one. */
export function checkAddress(family: AddressFamily, address: string, what: string, multicast: boolean): void {
  const { name, multicast: range } = FAMILY_NAMES[family];
  if (addressFamily(address) !== family)
    throw new UsageError(`invalid ${what} ${quoteInput(address)}: not an ${name} address`, { code: 'bad-address' });
  if (multicast && !isMulticast(address))
    throw new UsageError(`invalid ${what} ${address}: not a multicast address (${range})`, { code: 'bad-address' });
}

/** The ifindex of a routing interface's device. */
export function checkIfindex(ifindex: number, limit?: IfindexLimit): void {
  if (!Number.isInteger(ifindex) || ifindex < 1 || (limit !== undefined && ifindex > limit.max)) {
    throw new UsageError(`invalid ifindex ${ifindex}${limit === undefined ? '' : `: ${limit.reason}`}`);
  }
}
