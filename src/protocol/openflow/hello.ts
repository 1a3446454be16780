/**
 * OFPT_HELLO (OpenFlow 1.3.5 §7.5.1): the first message each side sends. Its header's
 * version is the highest version the sender speaks; a version-bitmap element (type 1)
 * may list every version it speaks:
 *
 *   header | elements: type(2)=1 | length(2) = 4 + 4 × n | bitmaps(4 × n) | zero padding to 8
 *
 * Bit v of the bitmaps (bit v % 32 of word v / 32) set means "speaks wire version v".
 * `length` of an element excludes its padding. Unknown element types are skipped (§7.5.1
 * says to ignore them).
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { need, outputBuffer, pad8, readU16BE, readU32BE, writeU16Field, writeU32Field } from '../../wire/bytes.js';

export interface Hello {
  type: 'HELLO';
  xid: number;
  /** The header's version: the highest the sender speaks. */
  version: number;
  /** Every wire version the sender speaks (from its bitmap element), ascending; absent when it sent none. */
  versions?: number[];
}

const ELEMENT_VERSION_BITMAP = 1;
const ELEMENT_HEADER_LENGTH = 4;

function bitmapWords(versions: readonly number[]): number {
  return Math.floor(Math.max(...versions) / 32) + 1;
}

export function encodingLength(message: Hello): number {
  if (message.versions === undefined) return HEADER_LENGTH;
  if (message.versions.length === 0) throw new RangeError('a HELLO version bitmap needs at least one version');
  return HEADER_LENGTH + pad8(ELEMENT_HEADER_LENGTH + 4 * bitmapWords(message.versions));
}

export function encode(message: Hello, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'HELLO');
  writeHeader(out, offset, 'HELLO', length, message.xid, message.version);
  if (message.versions === undefined) return out;
  const words = bitmapWords(message.versions);
  const at = offset + HEADER_LENGTH;
  writeU16Field(out, at, ELEMENT_VERSION_BITMAP, 'element type');
  writeU16Field(out, at + 2, ELEMENT_HEADER_LENGTH + 4 * words, 'element length');
  const bitmap = new Array<number>(words).fill(0);
  for (const version of message.versions) {
    if (!Number.isInteger(version) || version < 0 || version > 0xff)
      throw new RangeError(`version ${version} is not 0..255`);
    bitmap[version >> 5] = (bitmap[version >> 5]! | (1 << (version & 31))) >>> 0;
  }
  bitmap.forEach((word, i) => writeU32Field(out, at + ELEMENT_HEADER_LENGTH + 4 * i, word, 'version bitmap'));
  out.fill(0, at + ELEMENT_HEADER_LENGTH + 4 * words, offset + length);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Hello {
  const header = readMessageHeader(bytes, start, end, 'HELLO', HEADER_LENGTH);
  const hello: Hello = { type: 'HELLO', xid: header.xid, version: header.version };
  for (let at = start + HEADER_LENGTH; at < end; ) {
    need({ at, end }, ELEMENT_HEADER_LENGTH, 'a HELLO element header', truncated);
    const type = readU16BE(bytes, at);
    const length = readU16BE(bytes, at + 2);
    if (length < ELEMENT_HEADER_LENGTH)
      throw new OpenFlowDecodeError('bad-length', `HELLO element length ${length} is below 4`);
    need({ at, end }, length, `a HELLO element of ${length} octets`, truncated);
    if (type === ELEMENT_VERSION_BITMAP) {
      const versions: number[] = [];
      for (let word = 0; ELEMENT_HEADER_LENGTH + 4 * word + 4 <= length; word++) {
        const bits = readU32BE(bytes, at + ELEMENT_HEADER_LENGTH + 4 * word);
        for (let bit = 0; bit < 32; bit++) if ((bits >>> bit) & 1) versions.push(32 * word + bit);
      }
      hello.versions = versions;
    }
    // The padding after the last element may be cut short by a sloppy peer; tolerate it.
    at = Math.min(end, at + pad8(length));
  }
  return hello;
}
