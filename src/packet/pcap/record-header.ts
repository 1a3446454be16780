/**
 * Codec of the 16-octet pcap record header. The byte order is the file's, so both
 * directions take it as a trailing argument (default little-endian, what every
 * x86 and ARM tcpdump writes).
 *
 * The reader and writer do not go through these functions per record (they read and
 * write the four words in place, to avoid an object per record); the codec is for
 * everyone else and for tests.
 */
import { DecodeError } from '../../errors.js';
import { readU32, writeU32 } from '../../wire/bytes.js';
import { PCAP_RECORD_HEADER_LENGTH, type ByteOrder, type PcapRecordHeader } from './format.js';

function encodingLength(_header?: PcapRecordHeader): number {
  return PCAP_RECORD_HEADER_LENGTH;
}

function encode(header: PcapRecordHeader, buf?: Uint8Array, offset = 0, byteOrder: ByteOrder = 'little'): Uint8Array {
  const out = buf ?? new Uint8Array(offset + PCAP_RECORD_HEADER_LENGTH);
  if (out.length - offset < PCAP_RECORD_HEADER_LENGTH)
    throw new RangeError('buffer too small for a pcap record header');
  const little = byteOrder === 'little';
  writeU32(out, offset, checkU32(header.tsSec, 'tsSec'), little);
  writeU32(out, offset + 4, checkU32(header.tsFraction, 'tsFraction'), little);
  writeU32(out, offset + 8, checkU32(header.capturedLength, 'capturedLength'), little);
  writeU32(out, offset + 12, checkU32(header.originalLength, 'originalLength'), little);
  return out;
}

function decode(bytes: Uint8Array, offset = 0, end = bytes.length, byteOrder: ByteOrder = 'little'): PcapRecordHeader {
  const available = end - offset;
  if (available < PCAP_RECORD_HEADER_LENGTH) {
    throw new DecodeError(
      'truncated',
      `a pcap record header needs ${PCAP_RECORD_HEADER_LENGTH} octets; only ${Math.max(0, available)} present`,
    );
  }
  const little = byteOrder === 'little';
  return {
    tsSec: readU32(bytes, offset, little),
    tsFraction: readU32(bytes, offset + 4, little),
    capturedLength: readU32(bytes, offset + 8, little),
    originalLength: readU32(bytes, offset + 12, little),
  };
}

function checkU32(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff)
    throw new RangeError(`${name} ${value} is not a 32-bit unsigned integer`);
  return value;
}

/** The pcap record header codec: `encode`, `decode`, `encodingLength` (always 16). */
export const pcapRecordHeader = { encode, decode, encodingLength } as const;
