/**
 * Reading a whole capture from a file or a stream with PcapReader. The only I/O in
 * src/packet/pcap besides writer.ts.
 */
import { close, constants, createReadStream, fstat, open } from 'node:fs';
import { promisify } from 'node:util';
import { Socket } from 'node:net';
import { addAbortSignal, Readable } from 'node:stream';
import type { PcapFileHeader } from './format.js';
import { PcapReader, type PcapReaderOptions, type PcapRecordHandler } from './reader.js';

/**
 * Large reads: per-chunk overhead (a stream event, a carry copy of one straddling
 * record) is then negligible next to the per-record work.
 */
export const PCAP_READ_CHUNK_SIZE = 1024 * 1024;

export interface ReadPcapOptions extends PcapReaderOptions {
  /** Read size for files (default 1 MiB). */
  highWaterMark?: number;
  /** Stops reading; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface PcapReadSummary {
  header: PcapFileHeader;
  recordCount: number;
  /** Octets read, file header included. */
  byteLength: number;
}

/**
 * Reads the pcap file at `path`, calling `onRecord` for every record in order (with the
 * same `data` lifetime as PcapReader). Rejects with `DecodeError` for a damaged or
 * non-pcap file (after delivering every record before the damage), or with the file
 * system's error (ENOENT, EACCES, EISDIR...).
 *
 * A FIFO (`mkfifo p; tcpdump -w p`) is legitimate, and must stay interruptible while it
 * waits for a writer: a blocking open(2) would hold a thread-pool thread, and the
 * process with it, until a writer came. So the path is opened non-blocking, and a FIFO
 * is read as a pipe (by the event loop, which an abort stops at once); Linux reports
 * no end of file on it until a writer has come and gone.
 */
export async function readPcapFile(
  path: string,
  onRecord: PcapRecordHandler,
  options: ReadPcapOptions = {},
): Promise<PcapReadSummary> {
  options.signal?.throwIfAborted();
  // A plain descriptor, not a FileHandle: the stream or the socket below takes it over.
  const fd = await promisify(open)(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let stream: Readable;
  try {
    const stats = await promisify(fstat)(fd);
    if (stats.isDirectory())
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${path}'`), { code: 'EISDIR' });
    stream = stats.isFIFO()
      ? new Socket({ fd, readable: true, writable: false })
      : createReadStream(path, { fd, highWaterMark: options.highWaterMark ?? PCAP_READ_CHUNK_SIZE });
  } catch (error) {
    close(fd, () => undefined);
    throw error;
  }
  return readPcapStream(stream, onRecord, options);
}

/**
 * Reads a pcap file from any source of chunks: a Readable (stdin, a pipe from tcpdump
 * -w -), or an async iterable. The source is destroyed if reading stops early.
 */
export async function readPcapStream(
  source: AsyncIterable<Uint8Array>,
  onRecord: PcapRecordHandler,
  options: PcapReaderOptions & { signal?: AbortSignal } = {},
): Promise<PcapReadSummary> {
  // Aborting destroys a Readable at once, even one waiting on a pipe that stays quiet
  // (tcpdump -w - with no traffic): the loop below then rejects with the AbortError.
  if (options.signal !== undefined && source instanceof Readable) addAbortSignal(options.signal, source);
  const reader = new PcapReader(onRecord, options);
  // `for await` over a Readable destroys it when the loop exits by throw.
  for await (const chunk of source) reader.push(chunk);
  reader.end();
  // end() throws unless the header was complete.
  return { header: reader.header!, recordCount: reader.recordCount, byteLength: reader.bytesPushed };
}
