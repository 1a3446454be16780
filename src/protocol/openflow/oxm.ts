/**
 * One OXM TLV (OpenFlow 1.3.5 §7.2.3.2): a match field, or the field a SET_FIELD action
 * writes.
 *
 *   class(2) | field(7) hasmask(1) | length(1) | value(length) [or value + mask, length = 2 × size]
 *
 * Fields listed in oxm-field.ts (basic-class ones and OVS's NXM_1 tunnel endpoints)
 * decode to named, typed values; everything else (e.g. OVS's NXM registers in a
 * packet-in, and unlisted basic fields) is kept as `RAW` and re-encoded octet for octet.
 */
import { readMac, writeMac } from '../../packet/ethernet.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { OpenFlowDecodeError, truncated } from './errors.js';
import {
  NAMED_OXM_FIELDS,
  oxmFieldName,
  type Ipv4OxmFieldName,
  type Ipv6OxmFieldName,
  type MacOxmFieldName,
  type OxmFieldName,
  type UintOxmFieldName,
} from './oxm-field.js';
import {
  copyBytes,
  need,
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU16Field,
  writeU64Field,
} from '../../wire/bytes.js';

export const OXM_HEADER_LENGTH = 4;

export interface UintOxm {
  field: UintOxmFieldName;
  value: number;
  mask?: number;
}

export interface MacOxm {
  field: MacOxmFieldName;
  /** `aa:bb:cc:dd:ee:ff`, lower case. */
  value: string;
  mask?: string;
}

export interface Ipv4Oxm {
  field: Ipv4OxmFieldName;
  value: string;
  /** A dotted-quad mask (`255.255.255.0`); OpenFlow allows arbitrary bit masks. */
  mask?: string;
}

export interface Ipv6Oxm {
  field: Ipv6OxmFieldName;
  /** RFC 5952 text. */
  value: string;
  /** A mask in IPv6 text (`ffff:ffff::`, `ff0f::`); OpenFlow allows arbitrary bit masks. */
  mask?: string;
}

export interface MetadataOxm {
  field: 'METADATA';
  value: bigint;
  mask?: bigint;
}

/** A field this codec does not interpret, kept as it came. */
export interface RawOxm {
  field: 'RAW';
  oxmClass: number;
  oxmField: number;
  hasMask: boolean;
  /** Value, then mask when hasMask. */
  payload: Uint8Array;
}

export type OxmField = UintOxm | MacOxm | Ipv4Oxm | Ipv6Oxm | MetadataOxm | RawOxm;

export function encodingLength(field: OxmField): number {
  if (field.field === 'RAW') return OXM_HEADER_LENGTH + field.payload.length;
  const size = NAMED_OXM_FIELDS[field.field].length;
  return OXM_HEADER_LENGTH + (field.mask === undefined ? size : 2 * size);
}

export function encode(field: OxmField, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(field);
  const out = outputBuffer(length, buf, offset, 'OXM field');
  if (length - OXM_HEADER_LENGTH > 0xff)
    throw new RangeError(`OXM payload of ${length - OXM_HEADER_LENGTH} octets exceeds 255`);
  if (field.field === 'RAW') {
    writeU16Field(out, offset, field.oxmClass, 'OXM class');
    if (!Number.isInteger(field.oxmField) || field.oxmField < 0 || field.oxmField > 0x7f)
      throw new RangeError(`OXM field ${field.oxmField} is not 0..127`);
    out[offset + 2] = (field.oxmField << 1) | (field.hasMask ? 1 : 0);
    out[offset + 3] = field.payload.length;
    out.set(field.payload, offset + OXM_HEADER_LENGTH);
    return out;
  }
  const spec = NAMED_OXM_FIELDS[field.field];
  const hasMask = field.mask !== undefined;
  writeU16Field(out, offset, spec.oxmClass, 'OXM class');
  out[offset + 2] = (spec.number << 1) | (hasMask ? 1 : 0);
  out[offset + 3] = length - OXM_HEADER_LENGTH;
  const at = offset + OXM_HEADER_LENGTH;
  writeValue(field, out, at, spec.length);
  return out;
}

function writeValue(field: Exclude<OxmField, RawOxm>, out: Uint8Array, at: number, size: number): void {
  const { format } = NAMED_OXM_FIELDS[field.field];
  const write = (value: number | string | bigint, where: number, what: string) => {
    switch (format) {
      case 'uint':
        writeUintN(out, where, size, value as number, `${field.field} ${what}`);
        return;
      case 'mac':
        writeMac(out, where, value as string);
        return;
      case 'ipv4':
        writeIPv4(out, where, value as string);
        return;
      case 'ipv6':
        writeIPv6(out, where, value as string);
        return;
      case 'u64':
        writeU64Field(out, where, value as bigint, `${field.field} ${what}`);
        return;
    }
  };
  write(field.value, at, 'value');
  if (field.mask !== undefined) write(field.mask, at + size, 'mask');
}

/** Decodes the one OXM TLV at [start, end) (end = start + 4 + its length). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OxmField {
  need({ at: start, end }, OXM_HEADER_LENGTH, 'an OXM field header', truncated);
  const oxmClass = readU16BE(bytes, start);
  const oxmField = bytes[start + 2]! >> 1;
  const hasMask = (bytes[start + 2]! & 1) === 1;
  const payloadLength = bytes[start + 3]!;
  if (end - start !== OXM_HEADER_LENGTH + payloadLength) {
    throw new OpenFlowDecodeError(
      'bad-length',
      `OXM field of ${payloadLength} payload octets does not fill its ${end - start - OXM_HEADER_LENGTH}`,
    );
  }
  const at = start + OXM_HEADER_LENGTH;
  const name = oxmFieldName(oxmField, oxmClass);
  if (name === undefined) return { field: 'RAW', oxmClass, oxmField, hasMask, payload: copyBytes(bytes, at, end) };
  const spec = NAMED_OXM_FIELDS[name];
  const expected = hasMask ? 2 * spec.length : spec.length;
  if (payloadLength !== expected) {
    throw new OpenFlowDecodeError(
      'bad-field-length',
      `OXM ${name}${hasMask ? ' with mask' : ''} needs ${expected} payload octets, not ${payloadLength}`,
    );
  }
  return readNamed(name, bytes, at, spec.length, hasMask);
}

function readNamed(name: OxmFieldName, bytes: Uint8Array, at: number, size: number, hasMask: boolean): OxmField {
  switch (NAMED_OXM_FIELDS[name].format) {
    case 'uint': {
      const field: UintOxm = { field: name as UintOxmFieldName, value: readUintN(bytes, at, size) };
      if (hasMask) field.mask = readUintN(bytes, at + size, size);
      return field;
    }
    case 'mac': {
      const field: MacOxm = { field: name as MacOxmFieldName, value: readMac(bytes, at) };
      if (hasMask) field.mask = readMac(bytes, at + size);
      return field;
    }
    case 'ipv4': {
      const field: Ipv4Oxm = { field: name as Ipv4OxmFieldName, value: readIPv4(bytes, at) };
      if (hasMask) field.mask = readIPv4(bytes, at + size);
      return field;
    }
    case 'ipv6': {
      const field: Ipv6Oxm = { field: name as Ipv6OxmFieldName, value: readIPv6(bytes, at) };
      if (hasMask) field.mask = readIPv6(bytes, at + size);
      return field;
    }
    case 'u64': {
      const field: MetadataOxm = { field: 'METADATA', value: readU64BE(bytes, at) };
      if (hasMask) field.mask = readU64BE(bytes, at + size);
      return field;
    }
  }
}

/** The length of the OXM TLV at `start` (header + payload), checked against `end`. */
export function lengthAt(bytes: Uint8Array, start: number, end: number): number {
  need({ at: start, end }, OXM_HEADER_LENGTH, 'an OXM field header', truncated);
  const length = OXM_HEADER_LENGTH + bytes[start + 3]!;
  need({ at: start, end }, length, 'an OXM field', truncated);
  return length;
}

function readUintN(bytes: Uint8Array, at: number, size: number): number {
  switch (size) {
    case 1:
      return bytes[at]!;
    case 2:
      return readU16BE(bytes, at);
    default:
      return readU32BE(bytes, at);
  }
}

function writeUintN(out: Uint8Array, at: number, size: number, value: number, name: string): void {
  const max = size === 4 ? 0xffffffff : (1 << (8 * size)) - 1;
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new RangeError(`${name} ${value} is not an integer 0..${max}`);
  for (let i = size - 1; i >= 0; i--) {
    out[at + i] = value & 0xff;
    value = Math.floor(value / 256);
  }
}
