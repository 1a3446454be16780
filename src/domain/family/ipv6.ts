/** IPv6 multicast with MLD (RFC 2710, RFC 3810). */
import { groupAddress, type GroupAddress } from '../../wire/ip-address.js';
import { parseIPv6 } from '../../wire/ipv6-address.js';
import { IP_PROTOCOL_ICMPV6, MldType } from '../../packet/mld/message.js';
import type { MulticastFamily } from './multicast-family.js';

const ETH_TYPE_IPV6 = 0x86dd;
const MLD_TYPES = [MldType.Query, MldType.V1Report, MldType.V1Done, MldType.V2Report];

export const IPV6_FAMILY: MulticastFamily = {
  name: 'ipv6',
  protocol: 'mld',
  etherType: ETH_TYPE_IPV6,
  membershipMatches: MLD_TYPES.map((icmpv6Type) => ({
    ethType: ETH_TYPE_IPV6,
    ipProto: IP_PROTOCOL_ICMPV6,
    icmpv6Type,
  })),
  allSystemsGroup: groupAddress('ff02::1'),
  groupMatch: (group) => ({ ethType: ETH_TYPE_IPV6, ipDst: group }),
  multicastMatch: { ethType: ETH_TYPE_IPV6, ipDst: 'ff00::', ipDstMask: 'ff00::' },
  // Link scope whatever the flags (ff02::/16, ff12::/16, ...): the scope nibble is 2.
  // Interface-local groups (scope 1) never leave a host, and RFC 4291 reserves scope 0.
  linkScopeMatch: { ethType: ETH_TYPE_IPV6, ipDst: 'ff02::', ipDstMask: 'ff0f::' },
  // The low 28 bits of the group id (RFC 3307: the last 32 bits tell groups apart, and
  // they also make the 33:33 MAC); IPv4 groups fill the same slots, so a collision moves
  // one of the two to the next free slot.
  preferredSlot: (group) => lastWord(group) & 0x0fffffff,
  cookieValue: lastWord,
};

function lastWord(group: GroupAddress): number {
  const bytes = parseIPv6(group)!;
  return ((bytes[12]! << 24) | (bytes[13]! << 16) | (bytes[14]! << 8) | bytes[15]!) >>> 0;
}
