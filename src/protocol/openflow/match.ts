/**
 * `ofp_match` (OpenFlow 1.3.5 §7.2.3.1): the OXM fields a flow matches on.
 *
 *   type(2) = 1 (OFPMT_OXM) | length(2) | OXM fields | zero padding to a multiple of 8
 *
 * `length` counts type, length and the fields, not the padding, so an empty match is
 * `0001 0004 00000000`: length 4, 8 octets on the wire. The codec works on the padded
 * region: `decode` takes exactly [start, start + lengthAt()).
 */
import { OpenFlowDecodeError, truncated } from './errors.js';
import * as oxm from './oxm.js';
import type { OxmField } from './oxm.js';
import { need, outputBuffer, pad8, readU16BE, writeU16Field } from '../../wire/bytes.js';

const OFPMT_OXM = 1;
const MATCH_HEADER_LENGTH = 4;

/** The unpadded length (the value of the `length` field). */
function declaredLength(fields: readonly OxmField[]): number {
  let length = MATCH_HEADER_LENGTH;
  for (const field of fields) length += oxm.encodingLength(field);
  return length;
}

export function encodingLength(fields: readonly OxmField[]): number {
  return pad8(declaredLength(fields));
}

export function encode(fields: readonly OxmField[], buf?: Uint8Array, offset = 0): Uint8Array {
  const declared = declaredLength(fields);
  const out = outputBuffer(pad8(declared), buf, offset, 'match');
  writeU16Field(out, offset, OFPMT_OXM, 'match type');
  writeU16Field(out, offset + 2, declared, 'match length');
  let at = offset + MATCH_HEADER_LENGTH;
  for (const field of fields) {
    oxm.encode(field, out, at);
    at += oxm.encodingLength(field);
  }
  out.fill(0, at, offset + pad8(declared));
  return out;
}

/** The octets the match at `start` occupies, padding included; checked against `end`. */
export function lengthAt(bytes: Uint8Array, start: number, end: number): number {
  need({ at: start, end }, MATCH_HEADER_LENGTH, 'a match header', truncated);
  const type = readU16BE(bytes, start);
  if (type !== OFPMT_OXM) throw new OpenFlowDecodeError('bad-match-type', `match type ${type} is not OFPMT_OXM (1)`);
  const declared = readU16BE(bytes, start + 2);
  if (declared < MATCH_HEADER_LENGTH)
    throw new OpenFlowDecodeError('bad-length', `match length ${declared} is below 4`);
  need({ at: start, end }, pad8(declared), `a match of ${declared} octets and its padding`, truncated);
  return pad8(declared);
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OxmField[] {
  const padded = lengthAt(bytes, start, end);
  if (padded !== end - start)
    throw new OpenFlowDecodeError('bad-length', `match of ${padded} octets (padded) does not fill its ${end - start}`);
  const fieldsEnd = start + readU16BE(bytes, start + 2);
  const fields: OxmField[] = [];
  for (let at = start + MATCH_HEADER_LENGTH; at < fieldsEnd; ) {
    const length = oxm.lengthAt(bytes, at, fieldsEnd);
    fields.push(oxm.decode(bytes, at, at + length));
    at += length;
  }
  return fields;
}
