/**
 * Ethernet II frame header codec, with 802.1Q / 802.1ad VLAN tags, and the IPv4
 * multicast MAC mapping of RFC 1112 §6.4.
 *
 *   dst(6) | src(6) | [TPID(2) TCI(2)]* | ethertype(2) | payload
 */
import { DecodeError } from '../errors.js';
import { parseIPv4 } from '../wire/ipv4-address.js';
import { formatMac, MAC_ADDRESS_LENGTH, parseMac } from '../wire/mac-address.js';

export const EtherType = {
  IPv4: 0x0800,
  ARP: 0x0806,
  VLAN: 0x8100,
  QinQ: 0x88a8,
  IPv6: 0x86dd,
} as const;

export const ETHERNET_HEADER_LENGTH = 14;
const VLAN_TAG_LENGTH = 4;
/** Deeper stacks than this are not Ethernet anyone sends; stop rather than loop. */
const MAX_VLAN_TAGS = 2;

export interface EthernetHeader {
  dst: string;
  src: string;
  /** VLAN ids, outermost first; empty for an untagged frame. */
  vlanIds: number[];
  /** The ethertype of the payload, after any VLAN tags. */
  etherType: number;
}

export interface DecodedEthernet {
  header: EthernetHeader;
  payloadStart: number;
}

export function encodingLength(header: Pick<EthernetHeader, 'vlanIds'>): number {
  return ETHERNET_HEADER_LENGTH + VLAN_TAG_LENGTH * header.vlanIds.length;
}

export function encode(header: EthernetHeader, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = buf ?? Buffer.alloc(offset + encodingLength(header));
  writeMac(out, offset, header.dst);
  writeMac(out, offset + 6, header.src);
  let at = offset + 12;
  for (const vlanId of header.vlanIds) {
    if (!Number.isInteger(vlanId) || vlanId < 0 || vlanId > 0xfff)
      throw new RangeError(`VLAN id ${vlanId} is not 0..4095`);
    out[at] = EtherType.VLAN >> 8;
    out[at + 1] = EtherType.VLAN & 0xff;
    out[at + 2] = vlanId >> 8;
    out[at + 3] = vlanId & 0xff;
    at += VLAN_TAG_LENGTH;
  }
  out[at] = header.etherType >> 8;
  out[at + 1] = header.etherType & 0xff;
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): DecodedEthernet {
  if (end - start < ETHERNET_HEADER_LENGTH) {
    throw new DecodeError('truncated', `Ethernet header needs 14 octets; only ${Math.max(0, end - start)} captured`);
  }
  const vlanIds: number[] = [];
  let at = start + 12;
  let etherType = (bytes[at]! << 8) | bytes[at + 1]!;
  while ((etherType === EtherType.VLAN || etherType === EtherType.QinQ) && vlanIds.length < MAX_VLAN_TAGS) {
    if (at + VLAN_TAG_LENGTH + 2 > end) throw new DecodeError('truncated', 'VLAN tag runs past the frame');
    vlanIds.push(((bytes[at + 2]! << 8) | bytes[at + 3]!) & 0x0fff);
    at += VLAN_TAG_LENGTH;
    etherType = (bytes[at]! << 8) | bytes[at + 1]!;
  }
  return {
    header: { dst: readMac(bytes, start), src: readMac(bytes, start + 6), vlanIds, etherType },
    payloadStart: at + 2,
  };
}

/**
 * Where the payload of `etherType` starts, skipping VLAN tags, or -1 when the frame
 * carries another ethertype or is too short. The per-frame fast path of capture
 * decoding: no header object, no MAC strings.
 */
export function payloadOffsetOf(bytes: Uint8Array, etherType: number): number {
  let at = 12;
  for (let tags = 0; at + 2 <= bytes.length; tags++) {
    const type = (bytes[at]! << 8) | bytes[at + 1]!;
    if (type === etherType) return at + 2;
    if ((type !== EtherType.VLAN && type !== EtherType.QinQ) || tags === MAX_VLAN_TAGS) return -1;
    at += VLAN_TAG_LENGTH;
  }
  return -1;
}

/** The MAC an IPv4 multicast group maps to: 01:00:5e and the group's low 23 bits. */
export function multicastMacForGroup(group: string): string {
  const value = parseIPv4(group);
  if (value === undefined || value >>> 28 !== 0xe) throw new RangeError(`${group} is not an IPv4 multicast address`);
  const low23 = value & 0x7fffff;
  return formatMac([0x01, 0x00, 0x5e, low23 >> 16, (low23 >> 8) & 0xff, low23 & 0xff]);
}

export function readMac(bytes: Uint8Array, offset: number): string {
  return formatMac(bytes.subarray(offset, offset + MAC_ADDRESS_LENGTH));
}

export function writeMac(bytes: Uint8Array, offset: number, mac: string): void {
  const octets = parseMac(mac);
  if (octets === undefined) throw new RangeError(`not a MAC address: ${JSON.stringify(mac)}`);
  bytes.set(octets, offset);
}

/** Source MAC for a frame of ours on a link that reports none: locally administered, "mc". */
export const FALLBACK_SOURCE_MAC = '02:00:00:00:6d:63';
