/**
 * Framing of an RFC 7047 connection: the messages are JSON texts written one after
 * another with no delimiter, so the end of a message is where its outermost `{...}`
 * closes. `JsonStreamSplitter` is push-style, like PcapReader: hand it chunks split
 * anywhere and it returns the values they complete.
 *
 * It does not parse JSON itself. It scans bytes for the end of the top-level value,
 * tracking only nesting depth and whether it is inside a string (and just after a
 * backslash there), then gives that slice to JSON.parse. Scanning bytes rather than
 * characters is safe for UTF-8: every byte of a multi-byte sequence is 0x80 or above,
 * so none can be mistaken for `"`, `\`, a bracket or a brace, and a sequence split
 * between chunks is decoded whole once the value is complete. `\uXXXX` needs no special
 * case: after the backslash only the `u` is skipped, and hex digits are not structural.
 *
 * Only objects and arrays may stand at the top level: a JSON-RPC message is an object,
 * and a bare number could not be delimited at all (`12` `3` is one number or two).
 */
import { messageOf } from '../../errors.js';
import { OvsdbDecodeError } from './errors.js';

/** The default limit on one value: ovsdb-server's initial monitor reply for a big database fits easily. */
export const DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024;

export interface JsonStreamSplitterOptions {
  /** Refuse a value longer than this many bytes (`too-large`). Default 64 MiB. */
  maxValueBytes?: number;
}

const enum Byte {
  Tab = 0x09,
  LineFeed = 0x0a,
  CarriageReturn = 0x0d,
  Space = 0x20,
  Quote = 0x22,
  OpenBracket = 0x5b,
  Backslash = 0x5c,
  CloseBracket = 0x5d,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class JsonStreamSplitter {
  private readonly maxValueBytes: number;

  /** Nesting depth of the value in progress; 0 between values. */
  private depth = 0;
  private inString = false;
  /** Inside a string, just after a backslash: the next byte is escaped. */
  private escaped = false;

  /** The value in progress: its bytes from earlier chunks. */
  private pieces: Uint8Array[] = [];
  private piecesLength = 0;
  /** Stream offset of the value in progress, for messages. */
  private valueOffset = 0;
  /** Bytes pushed so far. */
  private pushed = 0;

  private failure: OvsdbDecodeError | undefined;

  constructor(options: JsonStreamSplitterOptions = {}) {
    this.maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
  }

  /** Bytes of an incomplete value held from earlier chunks. */
  get bufferedBytes(): number {
    return this.piecesLength;
  }

  /** Bytes pushed so far. */
  get bytesPushed(): number {
    return this.pushed;
  }

  /**
   * Returns the values that `chunk` completes, in order (none if it completes none).
   * Throws OvsdbDecodeError (`bad-json`, `too-large`); after that, every call throws the
   * same error again: the stream cannot be resynchronised.
   */
  push(chunk: Uint8Array): unknown[] {
    if (this.failure !== undefined) throw this.failure;
    try {
      return this.scan(chunk);
    } catch (error) {
      if (error instanceof OvsdbDecodeError) this.failure = error;
      throw error;
    }
  }

  /** Declares the end of the stream: throws `truncated` if it ends inside a value. */
  end(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.depth > 0) {
      this.failure = new OvsdbDecodeError(
        'truncated',
        `the stream ends inside a JSON value that began at byte offset ${this.valueOffset} (${this.piecesLength} bytes of it received)`,
      );
      throw this.failure;
    }
  }

  private scan(chunk: Uint8Array): unknown[] {
    const values: unknown[] = [];
    const base = this.pushed;
    this.pushed += chunk.length;
    const length = chunk.length;
    // Where the value in progress begins in this chunk (0 if it began in an earlier one).
    let start = 0;
    let depth = this.depth;
    let inString = this.inString;
    let escaped = this.escaped;
    for (let i = 0; i < length; i++) {
      const byte = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === Byte.Backslash) escaped = true;
        else if (byte === Byte.Quote) inString = false;
        continue;
      }
      switch (byte) {
        case Byte.Quote:
          if (depth === 0) throw this.unexpected(byte, base + i);
          inString = true;
          break;
        case Byte.OpenBrace:
        case Byte.OpenBracket:
          if (depth === 0) {
            start = i;
            this.valueOffset = base + i;
          }
          depth++;
          break;
        case Byte.CloseBrace:
        case Byte.CloseBracket:
          if (depth === 0) throw this.unexpected(byte, base + i);
          depth--;
          if (depth === 0) values.push(this.complete(chunk, start, i + 1));
          break;
        case Byte.Space:
        case Byte.Tab:
        case Byte.LineFeed:
        case Byte.CarriageReturn:
          break;
        default:
          // Inside a value: numbers, literals, commas, colons; JSON.parse judges them.
          if (depth === 0) throw this.unexpected(byte, base + i);
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    if (depth > 0) this.carry(chunk, start);
    return values;
  }

  /** The value ends at `end` in `chunk`: joins it with its earlier pieces and parses it. */
  private complete(chunk: Uint8Array, start: number, end: number): unknown {
    const total = this.piecesLength + (end - start);
    if (total > this.maxValueBytes) throw this.tooLarge(total);
    let bytes = chunk.subarray(start, end);
    if (this.pieces.length > 0) {
      const joined = new Uint8Array(total);
      let at = 0;
      for (const piece of this.pieces) {
        joined.set(piece, at);
        at += piece.length;
      }
      joined.set(bytes, at);
      bytes = joined;
      this.pieces = [];
      this.piecesLength = 0;
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new OvsdbDecodeError('bad-json', `the JSON value at byte offset ${this.valueOffset} is not valid UTF-8`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      const reason = messageOf(error);
      throw new OvsdbDecodeError(
        'bad-json',
        `the JSON value at byte offset ${this.valueOffset} does not parse: ${reason}`,
      );
    }
  }

  /** Keeps the unfinished value's bytes of `chunk`: copied, since the caller may reuse its buffer. */
  private carry(chunk: Uint8Array, start: number): void {
    const total = this.piecesLength + (chunk.length - start);
    if (total > this.maxValueBytes) throw this.tooLarge(total);
    if (start < chunk.length) {
      this.pieces.push(new Uint8Array(chunk.subarray(start))); // Buffer#slice would be a view
      this.piecesLength = total;
    }
  }

  private tooLarge(seen: number): OvsdbDecodeError {
    return new OvsdbDecodeError(
      'too-large',
      `the JSON value at byte offset ${this.valueOffset} exceeds the limit of ${this.maxValueBytes} bytes (${seen} bytes so far)`,
    );
  }

  private unexpected(byte: number, offset: number): OvsdbDecodeError {
    const shown =
      byte >= 0x20 && byte < 0x7f ? `'${String.fromCharCode(byte)}'` : `0x${byte.toString(16).padStart(2, '0')}`;
    return new OvsdbDecodeError(
      'bad-json',
      `unexpected ${shown} at byte offset ${offset}: a JSON-RPC stream holds only objects and arrays`,
    );
  }
}
