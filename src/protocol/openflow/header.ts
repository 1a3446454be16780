/**
 * The OpenFlow header (OpenFlow 1.3.5 §7.1), 8 octets at the start of every message:
 *
 *   version | type | length(2) | xid(4)
 *
 * `length` counts the whole message, header included, so a stream of messages frames
 * itself (see framer.ts).
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import { OFP_TYPE_NUMBERS, OFP13_VERSION, type OfpTypeName } from './message-type.js';
import {
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  writeU16Field,
  writeU32Field,
  writeU8Field,
} from '../../wire/bytes.js';

export const HEADER_LENGTH = 8;
/** `length` is 16 bits: no message is longer. */
export const MAX_MESSAGE_LENGTH = 0xffff;

export interface OfpHeader {
  version: number;
  type: number;
  /** Octets of the whole message, header included. */
  length: number;
  xid: number;
}

export function encodingLength(_header?: OfpHeader): number {
  return HEADER_LENGTH;
}

export function encode(header: OfpHeader, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(HEADER_LENGTH, buf, offset, 'OpenFlow header');
  writeU8Field(out, offset, header.version, 'version');
  writeU8Field(out, offset + 1, header.type, 'type');
  writeU16Field(out, offset + 2, header.length, 'length');
  writeU32Field(out, offset + 4, header.xid, 'xid');
  return out;
}

/** Reads the header at `start`. Throws if fewer than 8 octets remain or `length` is below 8. */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OfpHeader {
  need({ at: start, end }, HEADER_LENGTH, 'the OpenFlow header', truncated);
  const length = readU16BE(bytes, start + 2);
  if (length < HEADER_LENGTH)
    throw new OpenFlowDecodeError('bad-length', `OpenFlow message length ${length} is below the 8-octet header`);
  return { version: bytes[start]!, type: bytes[start + 1]!, length, xid: readU32BE(bytes, start + 4) };
}

/** Writes an OpenFlow 1.3 header for a message of `length` octets, after checking it fits the 16-bit length. */
export function writeHeader(
  out: Uint8Array,
  offset: number,
  type: OfpTypeName,
  length: number,
  xid: number,
  version: number = OFP13_VERSION,
): void {
  if (length > MAX_MESSAGE_LENGTH) {
    throw new RangeError(`${type} of ${length} octets exceeds the OpenFlow maximum of ${MAX_MESSAGE_LENGTH}`);
  }
  encode({ version, type: OFP_TYPE_NUMBERS[type], length, xid }, out, offset);
}

/**
 * For a message codec's decode(): checks that [start, end) is one whole message of at
 * least `minLength` octets whose header says so, and returns its header.
 */
export function readMessageHeader(
  bytes: Uint8Array,
  start: number,
  end: number,
  type: OfpTypeName,
  minLength: number,
): OfpHeader {
  const header = decode(bytes, start, end);
  if (header.length !== end - start) {
    throw new OpenFlowDecodeError(
      'bad-length',
      `${type} header says ${header.length} octets; the message has ${end - start}`,
    );
  }
  if (header.length < minLength) {
    throw new OpenFlowDecodeError(
      'bad-length',
      `${type} of ${header.length} octets is shorter than its ${minLength}-octet minimum`,
    );
  }
  return header;
}
