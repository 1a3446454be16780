/** Checks of the values the mroute6 socket's callers give, before any struct is encoded: each failure is a UsageError naming the value (the IPv6 twin of ../mroute/arguments.ts). */
import { UsageError, quoteInput } from '../../errors.js';
import { isMulticast } from '../../wire/ip-address.js';
import { parseIPv6 } from '../../wire/ipv6-address.js';
import { MAXMIFS } from './constants.js';

export function checkMif(mif: number, what = 'MIF'): void {
  if (!Number.isInteger(mif) || mif < 0 || mif >= MAXMIFS) throw new UsageError(`invalid ${what} ${mif}: an integer from 0 to ${MAXMIFS - 1}`);
}

/** A MIF's minimum hop limit: the kernel forwards a packet out of it only when its hop limit is above this. */
export function checkHopLimit(hopLimit: number, what: string): void {
  if (!Number.isInteger(hopLimit) || hopLimit < 1 || hopLimit > 254) throw new UsageError(`invalid ${what} ${hopLimit}: an integer from 1 to 254`);
}

export function checkAddress6(address: string, what: string, multicast: boolean): void {
  if (parseIPv6(address) === undefined) throw new UsageError(`invalid ${what} ${quoteInput(address)}: not an IPv6 address`, { code: 'bad-address' });
  if (multicast && !isMulticast(address)) throw new UsageError(`invalid ${what} ${address}: not a multicast address (ff00::/8)`, { code: 'bad-address' });
}

/** An ifindex the 16-bit mif6c_pifi can hold. */
export function checkMifIfindex(ifindex: number): void {
  if (!Number.isInteger(ifindex) || ifindex < 1 || ifindex > 0xffff)
    throw new UsageError(`invalid ifindex ${ifindex}: a MIF takes an ifindex from 1 to 65535 (mif6c_pifi is 16 bits)`);
}
