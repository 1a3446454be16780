/**
 * The OpenFlow client's typed errors.
 *
 * - `OpenFlowError`: the switch answered a request with OFPT_ERROR. It names the error
 *   (`GROUP_MOD_FAILED/GROUP_EXISTS`, stable: compare `errorName`) and the request.
 * - `OpenFlowDecodeError`: a message, or a part of one, is malformed. Its `code` is one of
 *   the project's DecodeErrorCodes (`truncated`: the data ends before a declared length;
 *   `bad-length`: a length or layout field is impossible), and `reason` says precisely
 *   which rule failed, also stable.
 *
 * The connection's other failures (cannot connect, connection lost, no answer in time, no
 * common version) are `UnavailableError`s (exit 69) from ../errors.ts.
 */
import { DecodeError, McastError } from '../../errors.js';
import type { TruncatedError } from '../../wire/bytes.js';
import { describeError, type ErrorIdentity } from './error-code.js';

export type OpenFlowDecodeReason =
  /** The data ends before a header, a field or a declared length does. */
  | 'truncated'
  /**
   * A length field is below its structure's minimum, not a multiple of 8 where one is required, or runs past its
   * container.
   */
  | 'bad-length'
  /** An ofp_match whose type is not OFPMT_OXM (the only one OpenFlow 1.3 defines). */
  | 'bad-match-type'
  /**
   * A named OXM field (basic class, or the NXM_1 tunnel endpoints) whose payload length is not the one its field has.
   */
  | 'bad-field-length';

export class OpenFlowDecodeError extends DecodeError {
  constructor(
    readonly reason: OpenFlowDecodeReason,
    message: string,
  ) {
    super(reason === 'truncated' ? 'truncated' : 'bad-length', message);
  }
}

/** The OpenFlow codecs' error for data that ends too soon (see need() in src/wire/bytes.ts). */
export const truncated: TruncatedError = (message) => new OpenFlowDecodeError('truncated', message);

/** What an OpenFlowError says about the request that failed. */
export interface FailedRequest {
  /** Message type name (`FLOW_MOD`), or `type <n>`. */
  type: string;
  xid: number;
  /** A one-line summary (`GROUP_MOD ADD group 7 type ALL, 3 buckets`), when the request is known. */
  summary?: string;
}

export class OpenFlowError extends McastError {
  override readonly name = 'OpenFlowError';
  /** `GROUP_MOD_FAILED/GROUP_EXISTS`, `NX(12)/NXFMFC_HARDWARE`, ...: see describeError(). */
  readonly errorName: string;
  readonly errorType: number;
  readonly errorCode: number;
  readonly experimenter: number | undefined;
  readonly request: FailedRequest;
  /** The error's data: for most errors the start of the failed request; for HELLO_FAILED, text. */
  readonly data: Uint8Array;

  constructor(error: ErrorIdentity & { data: Uint8Array }, request: FailedRequest, endpoint: string) {
    const errorName = describeError(error);
    const what = request.summary ?? `${request.type} (xid ${request.xid})`;
    super('refused', `switch at ${endpoint} refused ${what}: ${errorName}`, hintFor(errorName));
    this.errorName = errorName;
    this.errorType = error.errorType;
    this.errorCode = error.code;
    this.experimenter = error.experimenter;
    this.request = request;
    this.data = error.data;
  }
}

function hintFor(errorName: string): { hint?: string } {
  switch (errorName) {
    case 'GROUP_MOD_FAILED/GROUP_EXISTS':
      return { hint: 'the group id is taken: modify the group, or delete it first' };
    case 'GROUP_MOD_FAILED/UNKNOWN_GROUP':
      return { hint: 'no group has that id: add it first' };
    case 'GROUP_MOD_FAILED/OUT_OF_BUCKETS':
      return { hint: 'too many buckets for one message: chain groups' };
    case 'METER_MOD_FAILED/METER_EXISTS':
      return { hint: 'the meter id is taken: modify the meter, or delete it first' };
    case 'METER_MOD_FAILED/UNKNOWN_METER':
      return { hint: 'no meter has that id: add it first' };
    case 'METER_MOD_FAILED/INVALID_METER':
      return { hint: 'meter ids run from 1 to 0xffff0000' };
    case 'METER_MOD_FAILED/OUT_OF_METERS':
      return { hint: 'the switch holds no more meters: see its METER_FEATURES max_meter' };
    case 'METER_MOD_FAILED/BAD_FLAGS':
      return { hint: 'set exactly one rate unit (KBPS or PKTPS), and only flags METER_FEATURES lists' };
    case 'BAD_REQUEST/BAD_VERSION':
      return { hint: 'the switch does not speak this OpenFlow version on this connection' };
    default:
      return {};
  }
}
