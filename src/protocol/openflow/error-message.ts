/**
 * OFPT_ERROR (OpenFlow 1.3.5 §7.4.4):
 *
 *   header | type(2) | code(2) | data
 *   header | type(2) = 0xffff | exp_code(2) | experimenter(4) | data     (experimenter errors)
 *
 * `data` is, for most errors, the start of the request that failed (OVS sends all of it);
 * for HELLO_FAILED, an ASCII explanation. The layout is the same in every OpenFlow
 * version, so an ERROR decodes whatever its header's version (a switch that refuses 1.3
 * may answer in its own).
 */
import { OFP_ERROR_TYPES } from './error-code.js';
import { OpenFlowDecodeError } from './errors.js';
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import { copyBytes, outputBuffer, readU16BE, readU32BE, writeU16Field, writeU32Field } from '../../wire/bytes.js';

export interface ErrorMessage {
  type: 'ERROR';
  xid: number;
  errorType: number;
  /** `code`, or `exp_code` for an experimenter error. */
  code: number;
  /** Present exactly when errorType is EXPERIMENTER (0xffff). */
  experimenter?: number;
  data: Uint8Array;
}

const FIXED_LENGTH = HEADER_LENGTH + 4;

function isExperimenter(message: Pick<ErrorMessage, 'errorType'>): boolean {
  return message.errorType === OFP_ERROR_TYPES.EXPERIMENTER;
}

export function encodingLength(message: ErrorMessage): number {
  return FIXED_LENGTH + (isExperimenter(message) ? 4 : 0) + message.data.length;
}

export function encode(message: ErrorMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'ERROR');
  writeHeader(out, offset, 'ERROR', length, message.xid);
  writeU16Field(out, offset + 8, message.errorType, 'error type');
  writeU16Field(out, offset + 10, message.code, 'error code');
  let at = offset + FIXED_LENGTH;
  if (isExperimenter(message)) {
    if (message.experimenter === undefined) throw new RangeError('an EXPERIMENTER error needs an experimenter id');
    writeU32Field(out, at, message.experimenter, 'experimenter');
    at += 4;
  }
  out.set(message.data, at);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): ErrorMessage {
  const header = readMessageHeader(bytes, start, end, 'ERROR', FIXED_LENGTH);
  const errorType = readU16BE(bytes, start + 8);
  const message: ErrorMessage = {
    type: 'ERROR',
    xid: header.xid,
    errorType,
    code: readU16BE(bytes, start + 10),
    data: new Uint8Array(0),
  };
  let at = start + FIXED_LENGTH;
  if (isExperimenter(message)) {
    if (end - at < 4) throw new OpenFlowDecodeError('bad-length', 'EXPERIMENTER error ends before its experimenter id');
    message.experimenter = readU32BE(bytes, at);
    at += 4;
  }
  message.data = copyBytes(bytes, at, end);
  return message;
}
