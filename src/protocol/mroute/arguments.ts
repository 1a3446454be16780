/** Checks of the values the mroute socket's callers give, before any struct is encoded: each failure is a UsageError naming the value. */
import { UsageError, quoteInput } from '../../errors.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';
import { isMulticast } from '../../wire/ip-address.js';
import { MAXVIFS } from './constants.js';

export function checkVif(vif: number, what = 'VIF'): void {
  if (!Number.isInteger(vif) || vif < 0 || vif >= MAXVIFS) throw new UsageError(`invalid ${what} ${vif}: an integer from 0 to ${MAXVIFS - 1}`);
}

export function checkTtl(ttl: number, what: string): void {
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 254) throw new UsageError(`invalid ${what} ${ttl}: an integer from 1 to 254`);
}

export function checkAddress(address: string, what: string, multicast: boolean): void {
  if (parseIPv4(address) === undefined) throw new UsageError(`invalid ${what} ${quoteInput(address)}: not an IPv4 address`, { code: 'bad-address' });
  if (multicast && !isMulticast(address)) throw new UsageError(`invalid ${what} ${address}: not a multicast address (224.0.0.0/4)`, { code: 'bad-address' });
}
