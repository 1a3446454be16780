/**
 * The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of
 * 16-bit big-endian words, an odd trailing octet padded with zero. IGMP and the IPv4
 * header both use it.
 */
export function internetChecksum(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let sum = 0;
  let i = start;
  // Sums of up to 2^16 words fit a double exactly; fold once at the end.
  for (; i + 1 < end; i += 2) sum += (bytes[i]! << 8) | bytes[i + 1]!;
  if (i < end) sum += bytes[i]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}
