/** The address families the domain knows, and which one a group is of. */
import type { GroupAddress } from '../../wire/ip-address.js';
import { IPV4_FAMILY } from './ipv4.js';
import type { MulticastFamily } from './multicast-family.js';

/** The family `group` belongs to (IPv4 is the only one today). */
export function familyOf(_group: GroupAddress): MulticastFamily {
  return IPV4_FAMILY;
}
