/**
 * Independent byte builders for codec tests: expected bytes are written out by hand from
 * the RFC layouts, and the checksums are computed here by a deliberately different
 * routine (32-bit words through a DataView), never by the code under test.
 */

/** "11 64 ee9b 00000000" → bytes. Whitespace is ignored. */
export function hex(text: string): Buffer {
  const clean = text.replace(/\s+/g, '');
  if (!/^([0-9a-fA-F]{2})*$/.test(clean)) throw new Error(`bad hex: ${text}`);
  return Buffer.from(clean, 'hex');
}

/** RFC 1071 sum computed 32 bits at a time, then folded (a different path from the codec's). */
export function referenceChecksum(bytes: Uint8Array): number {
  const padded = new Uint8Array(bytes.length + ((4 - (bytes.length % 4)) % 4));
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let sum = 0n;
  for (let i = 0; i < padded.length; i += 4) sum += BigInt(view.getUint32(i, false));
  while (sum >> 16n) sum = (sum & 0xffffn) + (sum >> 16n);
  return Number(~sum & 0xffffn);
}

/** Fills the two checksum octets at `at` of the message `bytes` (which must hold zeros there). */
export function withChecksum(bytes: Buffer, at = 2): Buffer {
  const out = Buffer.from(bytes);
  out.writeUInt16BE(0, at);
  out.writeUInt16BE(referenceChecksum(out), at);
  return out;
}

/** An IGMP message from hex with its checksum octets (2..3) filled in. */
export function igmpBytes(text: string): Buffer {
  return withChecksum(hex(text), 2);
}

export interface Ipv4Spec {
  src: string;
  dst: string;
  protocol?: number;
  ttl?: number;
  routerAlert?: boolean;
  id?: number;
  flagsAndOffset?: number;
  /** Override the total length field (for hostile input). */
  totalLength?: number;
}

function ip(address: string): number[] {
  return address.split('.').map(Number);
}

/** An IPv4 packet (header written out field by field, RFC 791) around `payload`. */
export function ipv4Packet(spec: Ipv4Spec, payload: Uint8Array): Buffer {
  const options = spec.routerAlert === false ? [] : [0x94, 0x04, 0x00, 0x00];
  const headerLength = 20 + options.length;
  const totalLength = spec.totalLength ?? headerLength + payload.length;
  const id = spec.id ?? 0;
  const flagsAndOffset = spec.flagsAndOffset ?? 0;
  const header = Buffer.from([
    0x40 | (headerLength / 4),
    0xc0,
    totalLength >> 8,
    totalLength & 0xff,
    id >> 8,
    id & 0xff,
    flagsAndOffset >> 8,
    flagsAndOffset & 0xff,
    spec.ttl ?? 1,
    spec.protocol ?? 2,
    0,
    0,
    ...ip(spec.src),
    ...ip(spec.dst),
    ...options,
  ]);
  return Buffer.concat([withChecksum(header, 10), payload]);
}

/** An Ethernet II frame: dst MAC derived from an IPv4 multicast dst, fixed src MAC. */
export function ethernetFrame(packet: Uint8Array, etherType = 0x0800, dstMac = '01005e000001'): Buffer {
  return Buffer.concat([
    hex(dstMac),
    hex('02 00 00 00 00 01'),
    Buffer.from([etherType >> 8, etherType & 0xff]),
    packet,
  ]);
}
