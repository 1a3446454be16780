/**
 * A push-style pcap parser: stream framing only (pg-protocol style). It finds records in
 * whatever chunks it is given, split at any octet, and hands each one to a callback; what
 * is inside a record (Ethernet, SLL, IPv4, IGMP) is the link-layer decoders' business.
 *
 * Fast path: a record that lies wholly inside the chunk being pushed is delivered as a
 * view of that chunk (no copy). Only the one record per chunk boundary that straddles two
 * chunks is assembled in a carry buffer of its own.
 *
 * Lifetime: a record's `data` is a view. It is valid until the next `push()` (after that
 * the caller may reuse or refill its chunk); copy it (`data.slice()`) to keep it longer.
 * In practice views of fs.ReadStream chunks stay valid, since Node never reuses them.
 */
import { DecodeError } from '../../errors.js';
import { readU32 } from '../../wire/bytes.js';
import { decodeMagic, pcapFileHeader } from './file-header.js';
import {
  DEFAULT_SNAPLEN,
  fractionsPerSecond,
  MAX_RECORD_LENGTH,
  PCAP_FILE_HEADER_LENGTH,
  PCAP_RECORD_HEADER_LENGTH,
  type PcapFileHeader,
} from './format.js';

export interface PcapRecord {
  /** 1-based position in the file, as tshark's frame.number. */
  readonly index: number;
  /** Byte offset of the record header in the file, for error messages. */
  readonly offset: number;
  readonly tsSec: number;
  /** Microseconds or nanoseconds past `tsSec`: see the file header's `precision`. */
  readonly tsFraction: number;
  /** The time stamp in seconds since the epoch (a double: sub-microsecond digits of a nanosecond file are rounded). */
  readonly ts: number;
  readonly capturedLength: number;
  readonly originalLength: number;
  /** The captured octets: a view, valid until the next push() (see the module comment). */
  readonly data: Uint8Array;
}

export type PcapRecordHandler = (record: PcapRecord) => void;

export interface PcapReaderOptions {
  /** Called once, as soon as the file header is parsed and before any record: pick the link-layer decoder here. */
  onHeader?: (header: PcapFileHeader) => void;
  /**
   * Refuse records whose captured length exceeds this (`bad-pcap`). Default: 16 × the
   * larger of the file's snaplen and 262144, and never more than 256 MiB.
   */
  maxRecordLength?: number;
}

/** Where incl_len and orig_len sit: pcap before 2.3 had them the other way round (see libpcap sf-pcap.c). */
const enum LengthOrder {
  Normal,
  Swapped,
  /** 2.3: some writers swapped, some did not; the smaller one is the captured length. */
  Either,
}

const NO_CARRY = new Uint8Array(0);

export class PcapReader {
  private readonly onRecord: PcapRecordHandler;
  private readonly onHeader: ((header: PcapFileHeader) => void) | undefined;
  private readonly maxRecordLengthOption: number | undefined;

  private fileHeader: PcapFileHeader | undefined;
  private little = true;
  private fractionScale = 1_000_000;
  private lengthOrder = LengthOrder.Normal;
  private recordLimit = MAX_RECORD_LENGTH;
  private count = 0;
  /** Octets pushed so far. */
  private pushed = 0;

  // The unit (file header or record) that began in an earlier chunk and is not complete yet.
  private carry: Uint8Array = NO_CARRY;
  private carryLength = 0;
  /** Octets the carried unit needs: 24 (file header), 16 (record header, length unknown) or 16 + data. */
  private carryNeed = 0;
  /** File offset of the carried unit's first octet. */
  private carryOffset = 0;

  private failure: unknown;
  private failed = false;
  private ended = false;

  constructor(onRecord: PcapRecordHandler, options: PcapReaderOptions = {}) {
    this.onRecord = onRecord;
    this.onHeader = options.onHeader;
    this.maxRecordLengthOption = options.maxRecordLength;
  }

  /** The file header, once its 24 octets have been pushed. */
  get header(): PcapFileHeader | undefined {
    return this.fileHeader;
  }

  /** Records delivered so far. */
  get recordCount(): number {
    return this.count;
  }

  /** Octets pushed so far. */
  get bytesPushed(): number {
    return this.pushed;
  }

  /**
   * Parses `chunk` and calls onRecord for every record completed by it, in order.
   * Throws `DecodeError` (`bad-pcap`) for a file that is not pcap or a record length
   * that cannot be right. After push() or end() has thrown anything (including an
   * exception from onRecord, which propagates), every later call throws it again.
   */
  push(chunk: Uint8Array): void {
    this.assertUsable();
    if (this.ended) throw new Error('PcapReader: push() after end()');
    try {
      this.parse(chunk);
    } catch (error) {
      this.failed = true;
      this.failure = error;
      throw error;
    }
  }

  /**
   * Declares the end of the file. Throws `DecodeError('truncated')` if it ends inside the
   * file header or inside a record, naming the record and its byte offset.
   */
  end(): void {
    this.assertUsable();
    if (this.ended) return;
    this.ended = true;
    const error = this.truncation();
    if (error !== undefined) {
      this.failed = true;
      this.failure = error;
      throw error;
    }
  }

  private assertUsable(): void {
    if (this.failed) throw this.failure;
  }

  private parse(chunk: Uint8Array): void {
    const base = this.pushed;
    this.pushed += chunk.length;
    let pos = 0;
    if (this.carryLength > 0) {
      pos = this.completeCarried(chunk);
      if (this.carryLength > 0) return; // still incomplete: the chunk went into the carry
    }
    if (this.fileHeader === undefined) {
      if (chunk.length - pos < PCAP_FILE_HEADER_LENGTH) {
        this.startCarry(chunk, pos, base + pos);
        return;
      }
      this.acceptFileHeader(chunk, pos);
      pos += PCAP_FILE_HEADER_LENGTH;
    }
    pos = this.parseRecords(chunk, pos, base);
    if (pos < chunk.length) this.startCarry(chunk, pos, base + pos);
  }

  /** The hot loop: every record wholly inside `chunk`, delivered as views. Returns where it stopped. */
  private parseRecords(chunk: Uint8Array, start: number, base: number): number {
    const end = chunk.length;
    let pos = start;
    while (end - pos >= PCAP_RECORD_HEADER_LENGTH) {
      const capturedLength = this.capturedLengthAt(chunk, pos, base + pos);
      const next = pos + PCAP_RECORD_HEADER_LENGTH + capturedLength;
      if (next > end) break;
      const record = this.makeRecord(chunk, pos, base + pos, capturedLength);
      this.onRecord(record);
      pos = next;
    }
    return pos;
  }

  /** Copies the tail of `chunk` from `pos` into the carry. */
  private startCarry(chunk: Uint8Array, pos: number, fileOffset: number): void {
    const remaining = chunk.length - pos;
    if (remaining === 0) return;
    this.carryOffset = fileOffset;
    if (this.fileHeader === undefined) {
      this.carryNeed = PCAP_FILE_HEADER_LENGTH;
      // Refuse a non-pcap file as soon as its magic is in, not at end().
      if (remaining >= 4) decodeMagic(chunk, pos);
    } else if (remaining < PCAP_RECORD_HEADER_LENGTH) {
      this.carryNeed = PCAP_RECORD_HEADER_LENGTH;
    } else {
      this.carryNeed = PCAP_RECORD_HEADER_LENGTH + this.capturedLengthAt(chunk, pos, fileOffset);
    }
    this.carryLength = 0;
    this.appendToCarry(chunk, pos, remaining);
  }

  /** Feeds the carried unit from the start of `chunk`; returns how many octets of it were used. */
  private completeCarried(chunk: Uint8Array): number {
    let pos = 0;
    for (;;) {
      const take = Math.min(this.carryNeed - this.carryLength, chunk.length - pos);
      this.appendToCarry(chunk, pos, take);
      pos += take;
      if (this.carryLength < this.carryNeed) {
        if (this.fileHeader === undefined && this.carryLength >= 4) decodeMagic(this.carry, 0);
        return pos;
      }
      if (this.fileHeader === undefined) {
        this.acceptFileHeader(this.carry, 0);
        this.carryLength = 0;
        return pos;
      }
      // A record header is complete; now its data length is known.
      const capturedLength = this.capturedLengthAt(this.carry, 0, this.carryOffset);
      const total = PCAP_RECORD_HEADER_LENGTH + capturedLength;
      if (this.carryLength < total) {
        this.carryNeed = total;
        continue;
      }
      const record = this.makeRecord(this.carry, 0, this.carryOffset, capturedLength);
      // The record's data is a view of the carry: never write into this buffer again.
      this.carry = NO_CARRY;
      this.carryLength = 0;
      this.onRecord(record);
      return pos;
    }
  }

  private appendToCarry(chunk: Uint8Array, pos: number, count: number): void {
    const needed = this.carryLength + count;
    if (needed > this.carry.length) {
      // Grow geometrically rather than to carryNeed at once, so a damaged length in a
      // short file does not allocate up to the record limit before the end is noticed.
      const capacity = Math.min(this.carryNeed, Math.max(needed, this.carry.length * 2, 64));
      const grown = new Uint8Array(capacity);
      grown.set(this.carry.subarray(0, this.carryLength));
      this.carry = grown;
    }
    this.carry.set(chunk.subarray(pos, pos + count), this.carryLength);
    this.carryLength = needed;
  }

  private acceptFileHeader(bytes: Uint8Array, pos: number): void {
    const header = pcapFileHeader.decode(bytes, pos);
    this.fileHeader = header;
    this.little = header.byteOrder === 'little';
    this.fractionScale = fractionsPerSecond(header.precision);
    this.lengthOrder =
      header.versionMinor < 3
        ? LengthOrder.Swapped
        : header.versionMinor === 3
          ? LengthOrder.Either
          : LengthOrder.Normal;
    this.recordLimit =
      this.maxRecordLengthOption ?? Math.min(MAX_RECORD_LENGTH, Math.max(header.snaplen, DEFAULT_SNAPLEN) * 16);
    this.onHeader?.(header);
  }

  /** The captured length of the record whose header is at `pos`, refused if absurd. */
  private capturedLengthAt(bytes: Uint8Array, pos: number, fileOffset: number): number {
    const first = readU32(bytes, pos + 8, this.little);
    let capturedLength = first;
    if (this.lengthOrder !== LengthOrder.Normal) {
      const second = readU32(bytes, pos + 12, this.little);
      capturedLength = this.lengthOrder === LengthOrder.Swapped ? second : Math.min(first, second);
    }
    if (capturedLength > this.recordLimit) {
      throw new DecodeError(
        'bad-pcap',
        `record ${this.count + 1} at byte offset ${fileOffset}: captured length ${capturedLength} exceeds the limit of ${this.recordLimit} ` +
          `(snaplen ${this.fileHeader?.snaplen}); the file is damaged`,
      );
    }
    return capturedLength;
  }

  private makeRecord(bytes: Uint8Array, pos: number, fileOffset: number, capturedLength: number): PcapRecord {
    const little = this.little;
    const tsSec = readU32(bytes, pos, little);
    const tsFraction = readU32(bytes, pos + 4, little);
    let originalLength = readU32(bytes, pos + 12, little);
    if (this.lengthOrder !== LengthOrder.Normal) {
      const first = readU32(bytes, pos + 8, little);
      originalLength = this.lengthOrder === LengthOrder.Swapped ? first : Math.max(first, originalLength);
    }
    const dataStart = pos + PCAP_RECORD_HEADER_LENGTH;
    return {
      index: ++this.count,
      offset: fileOffset,
      tsSec,
      tsFraction,
      ts: tsSec + tsFraction / this.fractionScale,
      capturedLength,
      originalLength,
      data: bytes.subarray(dataStart, dataStart + capturedLength),
    };
  }

  private truncation(): DecodeError | undefined {
    if (this.fileHeader === undefined) {
      if (this.pushed === 0) return new DecodeError('truncated', 'empty file: no pcap file header');
      return new DecodeError(
        'truncated',
        `file ends inside the pcap file header: it needs ${PCAP_FILE_HEADER_LENGTH} octets; only ${this.carryLength} present`,
      );
    }
    if (this.carryLength === 0) return undefined;
    const where = `file ends inside record ${this.count + 1} at byte offset ${this.carryOffset}`;
    if (this.carryLength < PCAP_RECORD_HEADER_LENGTH) {
      return new DecodeError(
        'truncated',
        `${where}: its header needs ${PCAP_RECORD_HEADER_LENGTH} octets; only ${this.carryLength} present`,
      );
    }
    const dataPresent = this.carryLength - PCAP_RECORD_HEADER_LENGTH;
    const dataNeeded = this.carryNeed - PCAP_RECORD_HEADER_LENGTH;
    return new DecodeError('truncated', `${where}: its data needs ${dataNeeded} octets; only ${dataPresent} present`);
  }
}
