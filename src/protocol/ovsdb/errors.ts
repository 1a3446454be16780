/**
 * The OVSDB client's typed errors.
 *
 * - `OvsdbDecodeError`: the server sent bytes or JSON that are not RFC 7047. Like the
 *   project's `DecodeError` it describes input, carries a stable `code` and takes no stack
 *   trace; it has codes of its own because JSON framing fails in ways no packet codec does.
 * - `OvsdbError`: the server answered with an OVSDB error object (`{"error", "details"}`),
 *   for the whole request or for one operation of a transaction. An `McastError`: the CLI
 *   turns it into a message and exit code 1.
 * - `OvsdbTimeoutError`: no reply in time. Exit 69, like every unreachable service.
 *
 * A connection that cannot be made or that drops is an `UnavailableError` (exit 69), from
 * src/errors.ts, with a hint.
 */
import { DecodeError, ExitCode, McastError } from '../../errors.js';

/** Why the OVSDB protocol layer refused the server's data. Kebab-case, stable. */
export type OvsdbDecodeErrorCode =
  /** Not JSON, not UTF-8, or something other than an object or array at the top level of the stream. */
  | 'bad-json'
  /** One JSON value is longer than the configured limit. */
  | 'too-large'
  /** The stream ended inside a JSON value. */
  | 'truncated'
  /** Valid JSON, but not a JSON-RPC 1.0 message (RFC 7047 §4). */
  | 'bad-message'
  /** Valid JSON, but not OVSDB data (RFC 7047 §5.1): an atom, set, map, row or result of the wrong shape. */
  | 'bad-datum';

export class OvsdbDecodeError extends DecodeError<OvsdbDecodeErrorCode> {
  override readonly name = 'OvsdbDecodeError';
}

/**
 * The `error` strings RFC 7047 and ovsdb-server use. Open-ended: a newer server may send
 * others, and they must still arrive intact.
 */
export type OvsdbErrorName =
  | 'referential integrity violation'
  | 'constraint violation'
  | 'resources exhausted'
  | 'I/O error'
  | 'duplicate uuid-name'
  | 'domain error'
  | 'range error'
  | 'timed out'
  | 'not supported'
  | 'aborted'
  | 'not owner'
  | 'syntax error'
  | 'unknown database'
  | 'unknown method'
  | 'unknown monitor'
  | 'canceled'
  | (string & {});

export interface OvsdbErrorInit {
  /** The RPC method that failed (`transact`, `monitor`, ...). */
  method: string;
  /** The database the request named, if any. */
  db?: string | undefined;
  error: OvsdbErrorName;
  details?: string | undefined;
  /** ovsdb-server adds the offending JSON text to syntax errors. */
  syntax?: string | undefined;
  /** transact: the 0-based index of the operation that failed; undefined when the commit failed. */
  operationIndex?: number | undefined;
  /** transact: the operation that failed. */
  operation?: FailedOperation | undefined;
  /** transact: how many operations the transaction had. */
  operationCount?: number | undefined;
}

/** The server refused a request, or one operation of a transaction. */
export class OvsdbError extends McastError {
  override readonly name = 'OvsdbError';
  readonly method: string;
  readonly db: string | undefined;
  /** The OVSDB error string, e.g. `constraint violation`. */
  readonly error: OvsdbErrorName;
  readonly details: string | undefined;
  readonly syntax: string | undefined;
  readonly operationIndex: number | undefined;
  readonly operation: FailedOperation | undefined;

  constructor(init: OvsdbErrorInit) {
    super('refused', describe(init), hintFor(init.error));
    this.method = init.method;
    this.db = init.db;
    this.error = init.error;
    this.details = init.details;
    this.syntax = init.syntax;
    this.operationIndex = init.operationIndex;
    this.operation = init.operation;
  }
}

/** A request got no reply within its timeout. The request was cancelled (RFC 7047 §4.1.4). */
export class OvsdbTimeoutError extends McastError {
  override readonly name = 'OvsdbTimeoutError';
  constructor(
    readonly method: string,
    readonly endpoint: string,
    readonly timeoutMs: number,
  ) {
    super('unavailable', `OVSDB ${endpoint} did not answer ${method} within ${timeoutMs} ms`, {
      exitCode: ExitCode.Unavailable,
      hint: 'is ovsdb-server overloaded or stopped? a transaction with a "wait" operation needs a longer timeout',
    });
  }
}

function describe(init: OvsdbErrorInit): string {
  const what = init.details === undefined || init.details === '' ? init.error : `${init.error}: ${init.details}`;
  const on = init.db === undefined ? '' : ` on ${init.db}`;
  if (init.method !== 'transact' || init.operationCount === undefined)
    return `OVSDB ${init.method}${on} failed: ${what}`;
  if (init.operationIndex === undefined) {
    return `OVSDB transact${on} failed at commit, after all ${init.operationCount} operations succeeded: ${what}`;
  }
  const op = init.operation === undefined ? '' : ` (${describeOperation(init.operation)})`;
  return `OVSDB transact${on} failed at operation ${init.operationIndex} of ${init.operationCount}${op}: ${what}`;
}

/** What an error says of the operation that failed (any Operation of operations.ts fits). */
export interface FailedOperation {
  readonly op: string;
  readonly table?: string;
  readonly lock?: string;
}

function describeOperation(operation: FailedOperation): string {
  switch (operation.op) {
    case 'insert':
      return `insert into ${operation.table}`;
    case 'select':
    case 'update':
    case 'mutate':
    case 'delete':
    case 'wait':
      return `${operation.op} on ${operation.table}`;
    case 'assert':
      return `assert lock ${operation.lock}`;
    default:
      return operation.op;
  }
}

function hintFor(error: string): { hint?: string } {
  switch (error) {
    case 'unknown database':
      return { hint: 'check the database name (ovsdb-client list-dbs)' };
    case 'not owner':
      return { hint: 'the transaction asserts a lock this connection does not hold' };
    default:
      return {};
  }
}
