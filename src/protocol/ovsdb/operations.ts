/**
 * Transaction operations (RFC 7047 §5.2) and their results.
 *
 * Operations are plain objects with an `op` tag. Their fields are the RFC's, camel-cased
 * where the RFC uses a hyphen (`uuid-name` → `uuidName`). `transact` maps a tuple of
 * operations to a tuple of typed results (see `TransactResults`).
 *
 * A transact reply is an array with one result per operation; a failed operation's
 * result is an error object and the operations after it were not run. When every
 * operation succeeded but the commit did not (e.g. a referential integrity violation),
 * the array has one more element: the commit's error (§4.1.3).
 */
import {
  atomFromJson,
  checkOvsdbId,
  datumToJson,
  isUuid,
  rowFromJson,
  rowToJson,
  type Datum,
  type Row,
} from './datum.js';
import { isPlainObject, preview } from './json.js';
import { errorObjectFromJson, isErrorObject } from './error-object.js';
import { OvsdbDecodeError, OvsdbError } from './errors.js';
import type { JsonValue } from './json.js';

export type ConditionFunction = '<' | '<=' | '==' | '!=' | '>=' | '>' | 'includes' | 'excludes';
/** `[column, function, value]`. */
export type Condition = readonly [column: string, fn: ConditionFunction, value: Datum];

export type Mutator = '+=' | '-=' | '*=' | '/=' | '%=' | 'insert' | 'delete';
/** `[column, mutator, value]`. */
export type Mutation = readonly [column: string, mutator: Mutator, value: Datum];

export interface InsertOperation {
  readonly op: 'insert';
  readonly table: string;
  readonly row: Row;
  /** Names the new row, so that later operations of the transaction can refer to it as `namedUuid(uuidName)`. */
  readonly uuidName?: string;
}

export interface SelectOperation {
  readonly op: 'select';
  readonly table: string;
  readonly where: readonly Condition[];
  /** Default: every column. */
  readonly columns?: readonly string[];
}

export interface UpdateOperation {
  readonly op: 'update';
  readonly table: string;
  readonly where: readonly Condition[];
  readonly row: Row;
}

export interface MutateOperation {
  readonly op: 'mutate';
  readonly table: string;
  readonly where: readonly Condition[];
  readonly mutations: readonly Mutation[];
}

export interface DeleteOperation {
  readonly op: 'delete';
  readonly table: string;
  readonly where: readonly Condition[];
}

export interface WaitOperation {
  readonly op: 'wait';
  readonly table: string;
  readonly where: readonly Condition[];
  readonly columns: readonly string[];
  /** Wait until the selected rows' `columns` are (`==`) or are not (`!=`) exactly `rows`. */
  readonly until: '==' | '!=';
  readonly rows: readonly Row[];
  /** Milliseconds; 0 fails at once if the condition does not hold. Default: wait forever. */
  readonly timeout?: number;
}

export interface CommitOperation {
  readonly op: 'commit';
  readonly durable: boolean;
}

export interface AbortOperation {
  readonly op: 'abort';
}

export interface CommentOperation {
  readonly op: 'comment';
  readonly comment: string;
}

export interface AssertOperation {
  readonly op: 'assert';
  /** A lock this connection must hold (see OvsdbClient.lock); an <id>, so no hyphens. */
  readonly lock: string;
}

export type Operation =
  | InsertOperation
  | SelectOperation
  | UpdateOperation
  | MutateOperation
  | DeleteOperation
  | WaitOperation
  | CommitOperation
  | AbortOperation
  | CommentOperation
  | AssertOperation;

export interface InsertResult {
  /** The new row's UUID. */
  readonly uuid: string;
}

export interface SelectResult {
  readonly rows: readonly Row[];
}

export interface CountResult {
  /** Rows matched by `where` (update, mutate, delete). */
  readonly count: number;
}

export type EmptyResult = Readonly<Record<string, never>>;

export type OperationResult<O extends Operation> = O extends InsertOperation
  ? InsertResult
  : O extends SelectOperation
    ? SelectResult
    : O extends UpdateOperation | MutateOperation | DeleteOperation
      ? CountResult
      : EmptyResult;

/** One typed result per operation, in order. */
export type TransactResults<Ops extends readonly Operation[]> = { -readonly [K in keyof Ops]: OperationResult<Ops[K]> };

/**
 * Throws RangeError for what ovsdb-server would refuse anyway: a uuid-name or lock that is not an <id>, a number that
 * is not finite.
 */
export function operationToJson(operation: Operation): Record<string, JsonValue> {
  switch (operation.op) {
    case 'insert':
      if (operation.uuidName !== undefined) checkOvsdbId(operation.uuidName, 'uuid-name');
      return {
        op: 'insert',
        table: operation.table,
        row: rowToJson(operation.row),
        ...(operation.uuidName === undefined ? {} : { 'uuid-name': operation.uuidName }),
      };
    case 'select':
      return {
        op: 'select',
        table: operation.table,
        where: operation.where.map(conditionToJson),
        ...(operation.columns === undefined ? {} : { columns: operation.columns }),
      };
    case 'update':
      return {
        op: 'update',
        table: operation.table,
        where: operation.where.map(conditionToJson),
        row: rowToJson(operation.row),
      };
    case 'mutate':
      return {
        op: 'mutate',
        table: operation.table,
        where: operation.where.map(conditionToJson),
        mutations: operation.mutations.map(([column, mutator, value]) => [column, mutator, datumToJson(value)]),
      };
    case 'delete':
      return { op: 'delete', table: operation.table, where: operation.where.map(conditionToJson) };
    case 'wait':
      return {
        op: 'wait',
        table: operation.table,
        where: operation.where.map(conditionToJson),
        columns: operation.columns,
        until: operation.until,
        rows: operation.rows.map(rowToJson),
        ...(operation.timeout === undefined ? {} : { timeout: operation.timeout }),
      };
    case 'commit':
      return { op: 'commit', durable: operation.durable };
    case 'abort':
      return { op: 'abort' };
    case 'comment':
      return { op: 'comment', comment: operation.comment };
    case 'assert':
      checkOvsdbId(operation.lock, 'lock name');
      return { op: 'assert', lock: operation.lock };
  }
}

function conditionToJson([column, fn, value]: Condition): JsonValue[] {
  return [column, fn, datumToJson(value)];
}

/**
 * The results of a transact reply, one per operation. Rejects with OvsdbError for the
 * first error in the array (naming the operation, or the commit), and with
 * OvsdbDecodeError for a reply of the wrong shape.
 */
export function transactResultsFromJson<Ops extends readonly Operation[]>(
  db: string,
  operations: Ops,
  json: unknown,
): TransactResults<Ops> {
  if (!Array.isArray(json)) throw badResult(`transact on ${db} returned ${preview(json)}, not an array of results`);
  const failed = json.findIndex(isErrorObject);
  if (failed >= 0) {
    const { error, details, syntax } = errorObjectFromJson(json[failed]);
    const isOperation = failed < operations.length;
    throw new OvsdbError({
      method: 'transact',
      db,
      error,
      details,
      syntax,
      operationIndex: isOperation ? failed : undefined,
      operation: isOperation ? operations[failed] : undefined,
      operationCount: operations.length,
    });
  }
  if (json.length < operations.length) {
    throw badResult(`transact on ${db} returned ${json.length} results for ${operations.length} operations`);
  }
  return operations.map((operation, i) => operationResultFromJson(operation, json[i], i)) as TransactResults<Ops>;
}

function operationResultFromJson(
  operation: Operation,
  json: unknown,
  index: number,
): InsertResult | SelectResult | CountResult | EmptyResult {
  const where = `result ${index} (${operation.op})`;
  if (!isPlainObject(json)) throw badResult(`${where}: expected an object, got ${preview(json)}`);
  switch (operation.op) {
    case 'insert': {
      const atom = json['uuid'] === undefined ? undefined : atomFromJson(json['uuid'], `${where} uuid`);
      if (!isUuid(atom)) throw badResult(`${where}: expected {"uuid": ["uuid", ...]}, got ${preview(json)}`);
      return { uuid: atom.uuid };
    }
    case 'select': {
      const rows = json['rows'];
      if (!Array.isArray(rows)) throw badResult(`${where}: expected {"rows": [...]}, got ${preview(json)}`);
      return { rows: rows.map((row, i) => rowFromJson(row, `${where} row ${i}`)) };
    }
    case 'update':
    case 'mutate':
    case 'delete': {
      const count = json['count'];
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
        throw badResult(`${where}: expected {"count": <integer>}, got ${preview(json)}`);
      }
      return { count };
    }
    default:
      return {};
  }
}

function badResult(message: string): OvsdbDecodeError {
  return new OvsdbDecodeError('bad-datum', message);
}
