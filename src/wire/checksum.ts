/**
 * The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of
 * 16-bit big-endian words, an odd trailing octet padded with zero. IGMP and the IPv4
 * header both use it.
 */
export function internetChecksum(bytes: Uint8Array, start = 0, end = bytes.length): number {
  return checksumOfSum(wordSum(bytes, start, end));
}

/**
 * The checksum of an upper-layer message over IPv6 (RFC 8200 §8.1): the Internet checksum
 * of the pseudo-header (source, destination, the message's length as 32 bits, zeros, the
 * next header value) followed by the message in [start, end). The addresses are read in
 * place, 16 octets at `srcAt` and at `dstAt` of `addresses`. 0 over a message with its
 * checksum in place: it verifies; over one with zeros there: the value to store.
 */
export function ipv6PseudoHeaderChecksum(
  bytes: Uint8Array,
  start: number,
  end: number,
  pseudo: { addresses: Uint8Array; srcAt: number; dstAt: number; nextHeader: number },
): number {
  return checksumOfSum(ipv6PseudoHeaderSum(pseudo, end - start) + wordSum(bytes, start, end));
}

/**
 * The ones' complement sum, not yet folded, of the IPv6 pseudo-header alone (RFC 8200
 * §8.1) of a message of `length` octets: for a decoder that sums the message's words itself as it reads them (see
 * `checksumOfSum`).
 */
export function ipv6PseudoHeaderSum(
  pseudo: { addresses: Uint8Array; srcAt: number; dstAt: number; nextHeader: number },
  length: number,
): number {
  const { addresses, srcAt, dstAt } = pseudo;
  let sum = 0;
  for (let i = 0; i < 16; i += 2) {
    sum += (addresses[srcAt + i]! << 8) | addresses[srcAt + i + 1]!;
    sum += (addresses[dstAt + i]! << 8) | addresses[dstAt + i + 1]!;
  }
  return sum + Math.floor(length / 0x10000) + (length & 0xffff) + pseudo.nextHeader;
}

/**
 * The checksum of a ones' complement sum of 16-bit words not yet folded (a sum of
 * `wordSum`s and words, in any order: RFC 1071 §2(A)). 0 when the words verify.
 */
export function checksumOfSum(sum: number): number {
  return ~fold(sum) & 0xffff;
}

/**
 * The ones' complement sum of [start, end) as 16-bit words, not yet folded (RFC 1071 §2:
 * the carries may be added at the end): an MLDv2 report's checksum over its 200-odd
 * octets was a third of its decode, before the report's decoder summed its addresses as
 * it read them.
 */
export function wordSum(bytes: Uint8Array, start: number, end: number): number {
  // Two small-integer sums of alternate 16-bit words, eight octets a turn: what V8 runs
  // fastest here. Each stays below 2^31 for messages up to 8 MiB, far past any IP packet.
  let even = 0;
  let odd = 0;
  let i = start;
  for (; i + 7 < end; i += 8) {
    even = (even + ((bytes[i]! << 8) | bytes[i + 1]!) + ((bytes[i + 4]! << 8) | bytes[i + 5]!)) | 0;
    odd = (odd + ((bytes[i + 2]! << 8) | bytes[i + 3]!) + ((bytes[i + 6]! << 8) | bytes[i + 7]!)) | 0;
  }
  let sum = even + odd;
  for (; i + 1 < end; i += 2) sum += (bytes[i]! << 8) | bytes[i + 1]!;
  if (i < end) sum += bytes[i]! << 8;
  return sum;
}

function fold(sum: number): number {
  let folded = sum;
  while (folded > 0xffff) folded = (folded % 0x10000) + Math.floor(folded / 0x10000);
  return folded;
}
