/** The address families the domain knows, and which one a group is of. */
import { type GroupAddress, textFamily } from '../../wire/ip-address.js';
import { IPV4_FAMILY } from './ipv4.js';
import { IPV6_FAMILY } from './ipv6.js';
import type { MulticastFamily } from './multicast-family.js';

/** Every family, IPv4 first: the flows every group relies on are built once for each. */
export const FAMILIES: readonly MulticastFamily[] = [IPV4_FAMILY, IPV6_FAMILY];

/** The family `group` belongs to: IPv6 text always holds a colon, IPv4 text never. */
export function familyOf(group: GroupAddress): MulticastFamily {
  return textFamily(group) === 'ipv6' ? IPV6_FAMILY : IPV4_FAMILY;
}
