/**
 * Writes classic pcap files (what `tcpdump -w` writes): a file header, then records,
 * gathered into large blocks before they reach the sink, so a million small records
 * cost about eighty writes rather than two million.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { writeU32 } from '../../wire/bytes.js';
import { pcapFileHeader } from './file-header.js';
import {
  DEFAULT_SNAPLEN,
  fractionsPerSecond,
  PCAP_FILE_HEADER_LENGTH,
  PCAP_RECORD_HEADER_LENGTH,
  PCAP_VERSION_MAJOR,
  PCAP_VERSION_MINOR,
  type ByteOrder,
  type PcapFileHeader,
  type TimestampPrecision,
} from './format.js';

export interface PcapWriterOptions {
  /** LINKTYPE_ value of every record (see LinkType). */
  linkType: number;
  /** Units of `tsFraction` (default 'micro', what tcpdump writes by default). */
  precision?: TimestampPrecision;
  /** Longer packets are cut to this many octets, as a capture would (default 262144). */
  snaplen?: number;
  /** Default 'little'. Big-endian exists for tests and for bug-for-bug reproduction of other hosts' files. */
  byteOrder?: ByteOrder;
  /** Octets of FCS at the end of every packet, recorded in the header; usually left unset. */
  fcsLength?: number;
  /** Octets gathered before a write to the sink (default 1 MiB). */
  bufferSize?: number;
  /** Whether close() ends the sink. Default false (so process.stdout can be a sink); create() sets it. */
  endSinkOnClose?: boolean;
}

export interface PcapWriteRecord {
  tsSec: number;
  /** Microseconds or nanoseconds past tsSec, by the writer's precision. */
  tsFraction: number;
  /** Copied: the caller may reuse it as soon as write() returns. */
  data: Uint8Array;
  /** Octets the packet had on the wire; default data.length. */
  originalLength?: number;
}

const DEFAULT_BUFFER_SIZE = 1024 * 1024;

export class PcapWriter {
  /** The file header written first. */
  readonly header: PcapFileHeader;
  private readonly sink: Writable;
  private readonly endSinkOnClose: boolean;
  private readonly little: boolean;
  private readonly fractionLimit: number;
  private readonly bufferSize: number;
  private buffer: Buffer;
  private used = 0;
  private count = 0;
  private closed = false;
  private flushScheduled = false;
  private sinkError: Error | undefined;

  /** Writes to a new file at `path` (truncating any), which close() closes. */
  static create(path: string, options: PcapWriterOptions): PcapWriter {
    return new PcapWriter(createWriteStream(path), { ...options, endSinkOnClose: true });
  }

  /** Writes to `sink`; the file header goes into the buffer at once. */
  constructor(sink: Writable, options: PcapWriterOptions) {
    this.sink = sink;
    this.endSinkOnClose = options.endSinkOnClose ?? false;
    this.header = {
      byteOrder: options.byteOrder ?? 'little',
      precision: options.precision ?? 'micro',
      versionMajor: PCAP_VERSION_MAJOR,
      versionMinor: PCAP_VERSION_MINOR,
      thiszone: 0,
      sigfigs: 0,
      snaplen: options.snaplen ?? DEFAULT_SNAPLEN,
      linkType: options.linkType,
    };
    if (options.fcsLength !== undefined) this.header.fcsLength = options.fcsLength;
    if (!(this.header.snaplen > 0)) throw new RangeError(`snaplen ${this.header.snaplen} must be positive`);
    this.little = this.header.byteOrder === 'little';
    this.fractionLimit = fractionsPerSecond(this.header.precision);
    this.bufferSize = Math.max(options.bufferSize ?? DEFAULT_BUFFER_SIZE, PCAP_FILE_HEADER_LENGTH);
    this.buffer = Buffer.allocUnsafe(this.bufferSize);
    // Validates the options (link type range, FCS length) before anything is written.
    pcapFileHeader.encode(this.header, this.buffer, 0);
    this.used = PCAP_FILE_HEADER_LENGTH;
    // Remember the first error; write() and close() report it.
    sink.on('error', (error: Error) => {
      this.sinkError ??= error;
    });
  }

  /** Records written so far. */
  get recordCount(): number {
    return this.count;
  }

  /**
   * Appends a record. Returns false when the sink is backed up: await drained() before
   * writing much more (a file sink keeps up; a slow pipe may not). Throws RangeError for
   * a time stamp or length the format cannot hold, and the sink's error if it failed.
   */
  write(record: PcapWriteRecord): boolean {
    if (this.closed) throw new Error('PcapWriter: write() after close()');
    if (this.sinkError) throw this.sinkError;
    const { tsSec, tsFraction, data } = record;
    if (!Number.isInteger(tsSec) || tsSec < 0 || tsSec > 0xffffffff)
      throw new RangeError(`tsSec ${tsSec} is not a 32-bit unsigned integer`);
    if (!Number.isInteger(tsFraction) || tsFraction < 0 || tsFraction >= this.fractionLimit) {
      throw new RangeError(
        `tsFraction ${tsFraction} is not 0..${this.fractionLimit - 1} (${this.header.precision}seconds)`,
      );
    }
    const originalLength = record.originalLength ?? data.length;
    if (!Number.isInteger(originalLength) || originalLength < data.length || originalLength > 0xffffffff) {
      throw new RangeError(
        `originalLength ${originalLength} is not an integer from the ${data.length} octets of data to 2^32 - 1`,
      );
    }
    const capturedLength = Math.min(data.length, this.header.snaplen);
    const size = PCAP_RECORD_HEADER_LENGTH + capturedLength;
    if (this.used + size > this.buffer.length) {
      this.flush();
      // A record bigger than the buffer gets a block of its own.
      if (size > this.buffer.length) this.buffer = Buffer.allocUnsafe(size);
    }
    const out = this.buffer;
    const at = this.used;
    const little = this.little;
    writeU32(out, at, tsSec, little);
    writeU32(out, at + 4, tsFraction, little);
    writeU32(out, at + 8, capturedLength, little);
    writeU32(out, at + 12, originalLength, little);
    out.set(capturedLength === data.length ? data : data.subarray(0, capturedLength), at + PCAP_RECORD_HEADER_LENGTH);
    this.used = at + size;
    this.count++;
    return !this.sink.writableNeedDrain;
  }

  /** Resolves when the sink has room again (at once if it has). */
  async drained(): Promise<void> {
    if (this.sinkError) throw this.sinkError;
    if (this.sink.writableNeedDrain) await once(this.sink, 'drain');
  }

  /**
   * Writes out what is buffered and waits until the sink has it; ends the sink if
   * `endSinkOnClose` is set (create() sets it). Rejects with the sink's error, e.g. ENOENT or ENOSPC.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flush();
    if (this.endSinkOnClose) {
      this.sink.end();
      await finished(this.sink);
    } else if (this.sink.writableNeedDrain) {
      await once(this.sink, 'drain');
    }
    if (this.sinkError) throw this.sinkError;
  }

  /**
   * Flushes once the current batch of synchronous work is done: a live capture calls it
   * per frame and gets one write per batch of frames (what `tcpdump -U` does per packet).
   */
  flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (!this.closed) this.flush();
    });
  }

  /** Hands the filled part of the buffer to the sink and starts a new one (the sink keeps a reference to the old). */
  private flush(): void {
    if (this.used === 0) return;
    this.sink.write(this.buffer.subarray(0, this.used));
    this.buffer = Buffer.allocUnsafe(this.bufferSize);
    this.used = 0;
  }
}
