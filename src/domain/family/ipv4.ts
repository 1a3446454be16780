/** IPv4 multicast with IGMP (RFC 1112, RFC 2236, RFC 3376). */
import { groupAddress, type GroupAddress } from '../../wire/ip-address.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';
import type { MulticastFamily } from './multicast-family.js';

const ETH_TYPE_IPV4 = 0x0800;
const IP_PROTO_IGMP = 2;

export const IPV4_FAMILY: MulticastFamily = {
  name: 'ipv4',
  protocol: 'igmp',
  etherType: ETH_TYPE_IPV4,
  membershipMatches: [{ ethType: ETH_TYPE_IPV4, ipProto: IP_PROTO_IGMP }],
  allSystemsGroup: groupAddress('224.0.0.1'),
  groupMatch: (group) => ({ ethType: ETH_TYPE_IPV4, ipDst: group }),
  multicastMatch: { ethType: ETH_TYPE_IPV4, ipDst: '224.0.0.0', ipDstMask: '240.0.0.0' },
  linkScopeMatch: { ethType: ETH_TYPE_IPV4, ipDst: '224.0.0.0', ipDstMask: '255.255.255.0' },
  // 224.0.0.0/4 has exactly 2^28 addresses: the low 28 bits give every group its own slot,
  // so IPv4 groups never collide, and their ids are the ones earlier versions wrote.
  preferredSlot: (group) => addressValue(group) & 0x0fffffff,
  cookieValue: addressValue,
};

function addressValue(group: GroupAddress): number {
  return parseIPv4(group)!;
}
