/**
 * The classic libpcap savefile format: constants and value types.
 *
 * Sources: pcap-savefile(5) and the IETF draft "PCAP Capture File Format"
 * (draft-ietf-opsawg-pcap). A file is a 24-octet file header followed by records, each a
 * 16-octet record header and `capturedLength` octets of packet data:
 *
 *   magic(4) | major(2) | minor(2) | thiszone(4) | sigfigs(4) | snaplen(4) | network(4)
 *   ts_sec(4) | ts_frac(4) | incl_len(4) | orig_len(4) | data(incl_len) ...
 *
 * Every field is in the byte order of the host that wrote the file; the magic number is
 * how a reader finds out which.
 */

/** Magic number of a file with microsecond time stamps. */
export const PCAP_MAGIC_MICRO = 0xa1b2c3d4;
/** Magic number of a file with nanosecond time stamps. */
export const PCAP_MAGIC_NANO = 0xa1b23c4d;
/** The pcapng Section Header Block type; a palindrome, so it reads the same in both orders. */
export const PCAPNG_MAGIC = 0x0a0d0d0a;
/** Kuznetzov's patched libpcap: same layout but 24-octet record headers. Not supported. */
export const PCAP_MAGIC_KUZNETZOV = 0xa1b2cd34;

export const PCAP_VERSION_MAJOR = 2;
export const PCAP_VERSION_MINOR = 4;

export const PCAP_FILE_HEADER_LENGTH = 24;
export const PCAP_RECORD_HEADER_LENGTH = 16;

/** tcpdump's default snapshot length (libpcap's MAXIMUM_SNAPLEN). */
export const DEFAULT_SNAPLEN = 262144;

/**
 * Records longer than this are refused outright, whatever the header says: no link type
 * libpcap knows allows more than 128 MiB (D-Bus), and trusting a damaged length would make
 * the reader buffer gigabytes before noticing the file is short.
 */
export const MAX_RECORD_LENGTH = 256 * 1024 * 1024;

// The 32-bit "network" field (pcap-savefile(5)), bit 0 being the most significant:
//   |FCS len(4)|R(1)|P(1)|Reserved3(10)|Link-layer type(16)|
export const LINK_TYPE_MASK = 0x0000ffff;
export const LINK_TYPE_RESERVED3_MASK = 0x03ff0000;
export const LINK_TYPE_FCS_PRESENT = 0x04000000;
export const LINK_TYPE_R_BIT = 0x08000000;
export const LINK_TYPE_FCS_SHIFT = 28;

export type ByteOrder = 'little' | 'big';
export type TimestampPrecision = 'micro' | 'nano';

/** Units of `tsFraction` per second. */
export function fractionsPerSecond(precision: TimestampPrecision): number {
  return precision === 'nano' ? 1_000_000_000 : 1_000_000;
}

export interface PcapFileHeader {
  /** The byte order of every header field in the file (what the magic number revealed). */
  byteOrder: ByteOrder;
  /** Units of the record headers' `tsFraction`: microseconds or nanoseconds. */
  precision: TimestampPrecision;
  versionMajor: number;
  versionMinor: number;
  /** "GMT to local correction": always 0 in practice; kept so files round-trip. Signed. */
  thiszone: number;
  /** "Accuracy of time stamps": always 0 in practice; kept so files round-trip. */
  sigfigs: number;
  /** The capture's snapshot length: no record's data should be longer. */
  snaplen: number;
  /** The LINKTYPE_ value: the low 16 bits of the network field (see link-type.ts). */
  linkType: number;
  /**
   * Octets of frame check sequence at the end of every packet, when the file says so
   * (the P bit). The file stores 16-bit words; this is octets (words × 2), so 0..30.
   * Undefined when the file does not say.
   */
  fcsLength?: number;
}

export interface PcapRecordHeader {
  /** Seconds since 1970-01-01 UTC (unsigned 32-bit). */
  tsSec: number;
  /** Microseconds or nanoseconds past `tsSec`, by the file's precision. */
  tsFraction: number;
  /** incl_len: octets of packet data that follow in the file. */
  capturedLength: number;
  /** orig_len: octets the packet had on the wire. */
  originalLength: number;
}
