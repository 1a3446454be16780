/**
 * LINKTYPE_LINUX_SLL2 (276), the 20-octet Linux cooked-capture header that tcpdump 4.99
 * with libpcap 1.10 writes for `-i any`. It adds the interface index, which is how a
 * capture on "any" tells which bridge port or veth an IGMP report arrived on. All fields
 * are big-endian (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html):
 *
 *   protocol(2) | reserved(2) | interfaceIndex(4) | arphrdType(2) | packetType(1) |
 *   addressLength(1) | address(8) | payload
 */
import { DecodeError } from '../../errors.js';
import { checkUint, readU16, readU32, writeU16, writeU32 } from '../../wire/bytes.js';
import { readAddress, writeAddress } from './address.js';

const SLL2_HEADER_LENGTH = 20;
/** The same, under the name both cooked-header modules share, for code generic over them. */
export const HEADER_LENGTH = SLL2_HEADER_LENGTH;

export interface Sll2Header {
  /** The ethertype of the payload (0x0800 IPv4), or 1 / 4 for 802.3 / 802.2 frames. */
  protocol: number;
  /** Must be zero; kept so headers round-trip. */
  reserved: number;
  /** The capturing interface's ifindex (as `ip link` shows it, in the capture's netns). */
  interfaceIndex: number;
  arphrdType: number;
  /** Who sent it to whom: see SllPacketType. */
  packetType: number;
  addressLength: number;
  /** The sender's address: the first min(addressLength, 8) octets of the field (a view on decode). */
  address: Uint8Array;
}

export function encodingLength(_header?: Sll2Header): number {
  return SLL2_HEADER_LENGTH;
}

export function encode(header: Sll2Header, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = buf ?? Buffer.alloc(offset + SLL2_HEADER_LENGTH);
  if (out.length - offset < SLL2_HEADER_LENGTH) throw new RangeError('buffer too small for a LINUX_SLL2 header');
  const protocol = checkUint(header.protocol, 0xffff, 'protocol');
  const reserved = checkUint(header.reserved, 0xffff, 'reserved');
  const ifindex = checkUint(header.interfaceIndex, 0xffffffff, 'interfaceIndex');
  const arphrd = checkUint(header.arphrdType, 0xffff, 'arphrdType');
  writeU16(out, offset, protocol, false);
  writeU16(out, offset + 2, reserved, false);
  writeU32(out, offset + 4, ifindex, false);
  writeU16(out, offset + 8, arphrd, false);
  out[offset + 10] = checkUint(header.packetType, 0xff, 'packetType');
  out[offset + 11] = checkUint(header.addressLength, 0xff, 'addressLength');
  writeAddress(out, offset + 12, header.address);
  return out;
}

/** Decodes the header at `offset`; the payload starts at offset + 20. */
export function decode(bytes: Uint8Array, offset = 0, end = bytes.length): Sll2Header {
  if (end - offset < SLL2_HEADER_LENGTH) {
    throw new DecodeError(
      'truncated',
      `LINUX_SLL2 header needs ${SLL2_HEADER_LENGTH} octets; only ${Math.max(0, end - offset)} captured`,
    );
  }
  const addressLength = bytes[offset + 11]!;
  return {
    protocol: readU16(bytes, offset, false),
    reserved: readU16(bytes, offset + 2, false),
    interfaceIndex: readU32(bytes, offset + 4, false),
    arphrdType: readU16(bytes, offset + 8, false),
    packetType: bytes[offset + 10]!,
    addressLength,
    address: readAddress(bytes, offset + 12, addressLength),
  };
}
