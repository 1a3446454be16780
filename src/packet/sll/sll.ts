/**
 * LINKTYPE_LINUX_SLL (113), the 16-octet Linux cooked-capture header that libpcap puts
 * in front of packets captured on "any" (or with `tcpdump -y LINUX_SLL`). Every field is
 * big-endian (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html):
 *
 *   packetType(2) | arphrdType(2) | addressLength(2) | address(8) | protocol(2) | payload
 */
import { DecodeError } from '../../errors.js';
import { checkUint, readU16, writeU16 } from '../../wire/bytes.js';
import { readAddress, SLL_ADDRESS_FIELD_LENGTH, writeAddress } from './address.js';

const SLL_HEADER_LENGTH = 16;
/** The same, under the name both cooked-header modules share, for code generic over them. */
export const HEADER_LENGTH = SLL_HEADER_LENGTH;

export interface SllHeader {
  /** Who sent it to whom: see SllPacketType. */
  packetType: number;
  /** The ARPHRD_ type of the capturing interface (1 Ethernet, 772 loopback...). */
  arphrdType: number;
  /** The length of the sender's link-layer address; may exceed the 8 octets present. */
  addressLength: number;
  /** The sender's address: the first min(addressLength, 8) octets of the field (a view on decode). */
  address: Uint8Array;
  /** The ethertype of the payload (0x0800 IPv4), or 1 / 4 for 802.3 / 802.2 frames. */
  protocol: number;
}

export function encodingLength(_header?: SllHeader): number {
  return SLL_HEADER_LENGTH;
}

export function encode(header: SllHeader, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = buf ?? Buffer.alloc(offset + SLL_HEADER_LENGTH);
  if (out.length - offset < SLL_HEADER_LENGTH) throw new RangeError('buffer too small for a LINUX_SLL header');
  writeU16(out, offset, checkUint(header.packetType, 0xffff, 'packetType'), false);
  writeU16(out, offset + 2, checkUint(header.arphrdType, 0xffff, 'arphrdType'), false);
  writeU16(out, offset + 4, checkUint(header.addressLength, 0xffff, 'addressLength'), false);
  writeAddress(out, offset + 6, header.address);
  writeU16(out, offset + 6 + SLL_ADDRESS_FIELD_LENGTH, checkUint(header.protocol, 0xffff, 'protocol'), false);
  return out;
}

/** Decodes the header at `offset`; the payload starts at offset + 16. */
export function decode(bytes: Uint8Array, offset = 0, end = bytes.length): SllHeader {
  if (end - offset < SLL_HEADER_LENGTH) {
    throw new DecodeError(
      'truncated',
      `LINUX_SLL header needs ${SLL_HEADER_LENGTH} octets; only ${Math.max(0, end - offset)} captured`,
    );
  }
  const addressLength = readU16(bytes, offset + 4, false);
  return {
    packetType: readU16(bytes, offset, false),
    arphrdType: readU16(bytes, offset + 2, false),
    addressLength,
    address: readAddress(bytes, offset + 6, addressLength),
    protocol: readU16(bytes, offset + 14, false),
  };
}
