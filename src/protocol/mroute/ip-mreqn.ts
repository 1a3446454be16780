/**
 * struct ip_mreqn (linux/in.h), the argument of IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP. 12 octets:
 *
 *   0 imr_multiaddr in_addr | 4 imr_address in_addr | 8 imr_ifindex int (host order)
 */
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv4, checkInt32, truncated, view } from './common.js';

export const IP_MREQN_LENGTH = 12;

export interface IpMreqn {
  group: string;
  /** Local address selecting the interface; 0.0.0.0 when `ifindex` does. */
  address: string;
  ifindex: number;
}

export function encodingLength(_value: IpMreqn): number {
  return IP_MREQN_LENGTH;
}

export function encode(value: IpMreqn, buf?: Uint8Array, offset = 0): Uint8Array {
  checkIPv4(value.group, 'group');
  checkIPv4(value.address, 'interface address');
  checkInt32(value.ifindex, 'ifindex');
  const out = outputBuffer(IP_MREQN_LENGTH, buf, offset, 'ip_mreqn');
  writeIPv4(out, offset, value.group);
  writeIPv4(out, offset + 4, value.address);
  view(out).setInt32(offset + 8, value.ifindex, true);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): IpMreqn {
  need({ at: start, end }, IP_MREQN_LENGTH, 'an ip_mreqn', truncated);
  return {
    group: readIPv4(bytes, start),
    address: readIPv4(bytes, start + 4),
    ifindex: view(bytes).getInt32(start + 8, true),
  };
}
