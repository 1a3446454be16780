/**
 * struct ipv6_mreq (linux/in6.h), the argument of IPV6_ADD_MEMBERSHIP / IPV6_DROP_MEMBERSHIP,
 * IPv6's ip_mreqn. 20 octets:
 *
 *   0 ipv6mr_multiaddr in6_addr (network order) | 16 ipv6mr_interface int (host order)
 *
 * No pointer alignment in it, so unlike the RFC 3678 structs it is the same on every architecture.
 */
import { need, outputBuffer } from '../../wire/bytes.js';
import { readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { checkInt32, checkIPv6, truncated, view } from './common.js';

export const IPV6_MREQ_LENGTH = 20;

export interface Ipv6Mreq {
  group: string;
  /** 0: the interface the routing table picks for the group. */
  ifindex: number;
}

export function encodingLength(_value: Ipv6Mreq): number {
  return IPV6_MREQ_LENGTH;
}

export function encode(value: Ipv6Mreq, buf?: Uint8Array, offset = 0): Uint8Array {
  checkIPv6(value.group, 'group');
  checkInt32(value.ifindex, 'ifindex');
  const out = outputBuffer(IPV6_MREQ_LENGTH, buf, offset, 'ipv6_mreq');
  writeIPv6(out, offset, value.group);
  view(out).setInt32(offset + 16, value.ifindex, true);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Ipv6Mreq {
  need({ at: start, end }, IPV6_MREQ_LENGTH, 'an ipv6_mreq', truncated);
  return { group: readIPv6(bytes, start), ifindex: view(bytes).getInt32(start + 16, true) };
}
