/**
 * Independent byte builders for MLD tests. An MLD checksum covers the IPv6 pseudo-header
 * (RFC 8200 §8.1: source, destination, the 32-bit upper-layer length, three zero octets,
 * next header 58); here it is laid out octet by octet and summed 32 bits at a time
 * through a DataView (like bytes.ts's routine, without its BigInts, which fuzzing cannot
 * afford), never by the code under test. Addresses are given as 32 hex digits, so that no
 * IPv6 text parser is involved either.
 */
import { hex } from './bytes.js';

/** The two addresses of a packet: as hex for the expected bytes, as text for `encode`. */
export interface AddressPair {
  srcHex: string;
  dstHex: string;
  src: string;
  dst: string;
}

/** A host's report: fe80::1 to ff02::16 (all MLDv2-capable routers). */
export const HOST_TO_ROUTERS: AddressPair = {
  srcHex: 'fe80 0000 0000 0000 0000 0000 0000 0001',
  dstHex: 'ff02 0000 0000 0000 0000 0000 0000 0016',
  src: 'fe80::1',
  dst: 'ff02::16',
};

/** A querier's general query: fe80::2 to ff02::1 (all nodes). */
export const QUERIER_TO_ALL: AddressPair = {
  srcHex: 'fe80 0000 0000 0000 0000 0000 0000 0002',
  dstHex: 'ff02 0000 0000 0000 0000 0000 0000 0001',
  src: 'fe80::2',
  dst: 'ff02::1',
};

/** The 40-octet pseudo-header of an ICMPv6 message of `length` octets between `pair`'s addresses. */
export function pseudoHeader(pair: AddressPair, length: number): Buffer {
  const lengthAndNextHeader = Buffer.from([
    length >>> 24,
    (length >>> 16) & 0xff,
    (length >>> 8) & 0xff,
    length & 0xff,
    0,
    0,
    0,
    58,
  ]);
  return Buffer.concat([hex(pair.srcHex), hex(pair.dstHex), lengthAndNextHeader]);
}

/** The checksum to store in `message` (whose octets 2..3 must be zero) sent between `pair`'s addresses. */
export function mldChecksum(message: Uint8Array, pair: AddressPair): number {
  return pseudoHeaderSum(Buffer.concat([pseudoHeader(pair, message.length), message]));
}

/** RFC 1071 over `bytes` (a pseudo-header then the message) in 32-bit words, zero-padded, folded at the end. */
function pseudoHeaderSum(bytes: Uint8Array): number {
  const padded = new Uint8Array(bytes.length + ((4 - (bytes.length % 4)) % 4));
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  // The pseudo-header is 40 octets, a whole number of 32-bit words: the message's words line up after it.
  // Fewer than 2^21 words of under 2^32 each: the sum stays an exact double.
  let sum = 0;
  for (let i = 0; i < padded.length; i += 4) sum += view.getUint32(i, false);
  while (sum > 0xffff) sum = (sum % 0x10000) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}

/** An MLD message from hex with its checksum octets (2..3) filled in for `pair`. */
export function mldBytes(text: string, pair: AddressPair = HOST_TO_ROUTERS): Buffer {
  const out = hex(text);
  if (out.length >= 4) {
    out.writeUInt16BE(0, 2);
    out.writeUInt16BE(mldChecksum(out, pair), 2);
  }
  return out;
}

/** The source, the destination, then `message`: what `decode` takes with `{ srcAt: 0, dstAt: 16 }` and start 32. */
export function withAddresses(message: Uint8Array, pair: AddressPair = HOST_TO_ROUTERS): Buffer {
  return Buffer.concat([hex(pair.srcHex), hex(pair.dstHex), message]);
}

/** Where `withAddresses` puts things. */
export const ADDRESSES_FIRST = { srcAt: 0, dstAt: 16 } as const;
export const MESSAGE_AT = 32;

/**
 * Makes the checksum of the message at MESSAGE_AT of a `withAddresses` packet right for
 * its length and the addresses in front of it, in place (for fuzzing past the checksum).
 */
export function resealPacket(packet: Buffer): void {
  const message = packet.subarray(MESSAGE_AT);
  if (message.length < 4) return;
  message.writeUInt16BE(0, 2);
  const lengthAndNextHeader = Buffer.from([
    message.length >>> 24,
    (message.length >>> 16) & 0xff,
    (message.length >>> 8) & 0xff,
    message.length & 0xff,
    0,
    0,
    0,
    58,
  ]);
  message.writeUInt16BE(
    pseudoHeaderSum(Buffer.concat([packet.subarray(0, MESSAGE_AT), lengthAndNextHeader, message])),
    2,
  );
}
