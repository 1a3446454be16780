/**
 * Codec of the 24-octet pcap file header. `decode` reads the magic number first and
 * takes the byte order and time stamp precision from it; `encode` writes whatever
 * byte order and precision the value says, so a decoded header re-encodes to the
 * same octets.
 */
import { DecodeError } from '../../errors.js';
import { checkUint, hex32, readU16, readU32, readU32BE, readU32LE, writeU16, writeU32 } from '../../wire/bytes.js';
import {
  LINK_TYPE_FCS_PRESENT,
  LINK_TYPE_FCS_SHIFT,
  LINK_TYPE_MASK,
  LINK_TYPE_R_BIT,
  LINK_TYPE_RESERVED3_MASK,
  PCAP_FILE_HEADER_LENGTH,
  PCAP_MAGIC_KUZNETZOV,
  PCAP_MAGIC_MICRO,
  PCAP_MAGIC_NANO,
  PCAP_VERSION_MAJOR,
  PCAP_VERSION_MINOR,
  PCAPNG_MAGIC,
  type ByteOrder,
  type PcapFileHeader,
  type TimestampPrecision,
} from './format.js';

export interface PcapMagic {
  byteOrder: ByteOrder;
  precision: TimestampPrecision;
}

/**
 * Identifies a pcap file by its first four octets. Throws `bad-pcap` for anything else,
 * naming pcapng specially because that is what most people have by mistake.
 */
export function decodeMagic(bytes: Uint8Array, offset = 0, end = bytes.length): PcapMagic {
  if (end - offset < 4) {
    throw new DecodeError(
      'truncated',
      `the pcap magic number needs 4 octets; only ${Math.max(0, end - offset)} present`,
    );
  }
  const little = readU32LE(bytes, offset);
  if (little === PCAP_MAGIC_MICRO) return { byteOrder: 'little', precision: 'micro' };
  if (little === PCAP_MAGIC_NANO) return { byteOrder: 'little', precision: 'nano' };
  const big = readU32BE(bytes, offset);
  if (big === PCAP_MAGIC_MICRO) return { byteOrder: 'big', precision: 'micro' };
  if (big === PCAP_MAGIC_NANO) return { byteOrder: 'big', precision: 'nano' };
  // Show the octets as they appear in the file, which is how `xxd` and the specs show them.
  const shown = hex32(big);
  if (big === PCAPNG_MAGIC) {
    throw new DecodeError(
      'bad-pcap',
      `not a pcap file: magic ${shown} is pcapng; pcapng is not supported; convert with \`editcap -F pcap in.pcapng out.pcap\``,
    );
  }
  if (little === PCAP_MAGIC_KUZNETZOV || big === PCAP_MAGIC_KUZNETZOV) {
    throw new DecodeError(
      'bad-pcap',
      `not a pcap file: magic ${shown} is Kuznetzov's modified pcap, which is not supported; convert with \`editcap -F pcap in out.pcap\``,
    );
  }
  throw new DecodeError('bad-pcap', `not a pcap file: magic ${shown}`);
}

function encodingLength(_header?: PcapFileHeader): number {
  return PCAP_FILE_HEADER_LENGTH;
}

function encode(header: PcapFileHeader, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = buf ?? new Uint8Array(offset + PCAP_FILE_HEADER_LENGTH);
  if (out.length - offset < PCAP_FILE_HEADER_LENGTH) throw new RangeError('buffer too small for a pcap file header');
  const little = header.byteOrder === 'little';
  writeU32(out, offset, header.precision === 'nano' ? PCAP_MAGIC_NANO : PCAP_MAGIC_MICRO, little);
  writeU16(out, offset + 4, checkUint(header.versionMajor, 0xffff, 'versionMajor'), little);
  writeU16(out, offset + 6, checkUint(header.versionMinor, 0xffff, 'versionMinor'), little);
  if (!Number.isInteger(header.thiszone) || header.thiszone < -0x80000000 || header.thiszone > 0x7fffffff) {
    throw new RangeError(`thiszone ${header.thiszone} is not a 32-bit signed integer`);
  }
  writeU32(out, offset + 8, header.thiszone, little);
  writeU32(out, offset + 12, checkUint(header.sigfigs, 0xffffffff, 'sigfigs'), little);
  writeU32(out, offset + 16, checkUint(header.snaplen, 0xffffffff, 'snaplen'), little);
  writeU32(out, offset + 20, encodeNetworkField(header), little);
  return out;
}

function decode(bytes: Uint8Array, offset = 0, end = bytes.length): PcapFileHeader {
  const { byteOrder, precision } = decodeMagic(bytes, offset, end);
  const available = end - offset;
  if (available < PCAP_FILE_HEADER_LENGTH) {
    throw new DecodeError(
      'truncated',
      `the pcap file header needs ${PCAP_FILE_HEADER_LENGTH} octets; only ${available} present`,
    );
  }
  const little = byteOrder === 'little';
  const versionMajor = readU16(bytes, offset + 4, little);
  const versionMinor = readU16(bytes, offset + 6, little);
  // libpcap reads 2.0 to 2.4 (older minors differ only in record length order, see reader.ts).
  if (versionMajor !== PCAP_VERSION_MAJOR || versionMinor > PCAP_VERSION_MINOR) {
    throw new DecodeError('bad-pcap', `unsupported pcap version ${versionMajor}.${versionMinor} (expected 2.4)`);
  }
  const network = readU32(bytes, offset + 20, little);
  // The spec says readers SHOULD treat these as errors; libpcap refuses Reserved3.
  if ((network & (LINK_TYPE_RESERVED3_MASK | LINK_TYPE_R_BIT)) !== 0) {
    throw new DecodeError('bad-pcap', `pcap link type field ${hex32(network)} has reserved bits set`);
  }
  const header: PcapFileHeader = {
    byteOrder,
    precision,
    versionMajor,
    versionMinor,
    thiszone: readU32(bytes, offset + 8, little) | 0,
    sigfigs: readU32(bytes, offset + 12, little),
    snaplen: readU32(bytes, offset + 16, little),
    linkType: network & LINK_TYPE_MASK,
  };
  // Without the P bit the FCS length is unknown and the FCS len bits mean nothing.
  if ((network & LINK_TYPE_FCS_PRESENT) !== 0) header.fcsLength = (network >>> LINK_TYPE_FCS_SHIFT) * 2;
  return header;
}

function encodeNetworkField(header: PcapFileHeader): number {
  const linkType = checkUint(header.linkType, LINK_TYPE_MASK, 'linkType');
  if (header.fcsLength === undefined) return linkType;
  const fcs = header.fcsLength;
  if (!Number.isInteger(fcs) || fcs < 0 || fcs > 30 || fcs % 2 !== 0) {
    throw new RangeError(`fcsLength ${fcs} is not an even number of octets 0..30`);
  }
  return ((fcs / 2) << LINK_TYPE_FCS_SHIFT) | LINK_TYPE_FCS_PRESENT | linkType;
}

/** The pcap file header codec: `encode`, `decode`, `encodingLength` (always 24). */
export const pcapFileHeader = { encode, decode, encodingLength } as const;
