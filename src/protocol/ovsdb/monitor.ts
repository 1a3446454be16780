/**
 * The `monitor` method (RFC 7047 §4.1.5–4.1.7): what to watch, the table updates the
 * server sends (in the reply, as the initial state, and in `update` notifications), and a
 * small cache that applies them.
 *
 * A row update carries `new` for initial, insert and modify (every monitored column),
 * and `old` for delete (every monitored column) and modify (only the columns that
 * changed). So the cache replaces a row with `new` and forgets it when `new` is absent.
 */
import { rowFromJson, type Row } from './datum.js';
import { isPlainObject, preview } from './json.js';
import { OvsdbDecodeError } from './errors.js';
import type { JsonValue } from './json.js';

/** Which kinds of change to report (all true by default). */
export interface MonitorSelect {
  readonly initial?: boolean;
  readonly insert?: boolean;
  readonly delete?: boolean;
  readonly modify?: boolean;
}

export interface MonitorRequest {
  /** Default: every column except _uuid (which identifies the row anyway). */
  readonly columns?: readonly string[];
  readonly select?: MonitorSelect;
}

/** Table name → what to watch in it. */
export type MonitorRequests = Readonly<Record<string, MonitorRequest | readonly MonitorRequest[]>>;

export interface RowUpdate {
  readonly old?: Row;
  readonly new?: Row;
}

/** Table name → row UUID → change. */
export type TableUpdates = Readonly<Record<string, Readonly<Record<string, RowUpdate>>>>;

/** Why a monitor callback is called. */
export type MonitorUpdateReason =
  /** The monitor's initial state, once, before any update (also returned by monitor()). */
  | 'initial'
  /** A change (an `update` notification). */
  | 'update'
  /** The complete state again after a reconnection: replace everything held for this monitor. */
  | 'resync';

export type MonitorCallback = (updates: TableUpdates, reason: MonitorUpdateReason) => void;

export type RowChangeKind = 'insert' | 'modify' | 'delete';

/** An initial row counts as an insert. */
export function rowChangeKind(update: RowUpdate): RowChangeKind {
  if (update.new === undefined) return 'delete';
  return update.old === undefined ? 'insert' : 'modify';
}

export function monitorRequestsToJson(requests: MonitorRequests): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [table, request] of Object.entries(requests)) {
    out[table] = Array.isArray(request)
      ? request.map(monitorRequestToJson)
      : monitorRequestToJson(request as MonitorRequest);
  }
  return out;
}

function monitorRequestToJson(request: MonitorRequest): Record<string, JsonValue> {
  return {
    ...(request.columns === undefined ? {} : { columns: request.columns }),
    ...(request.select === undefined ? {} : { select: { ...request.select } }),
  };
}

export function tableUpdatesFromJson(json: unknown, where = 'table updates'): TableUpdates {
  if (!isPlainObject(json)) throw badUpdate(`${where}: expected an object, got ${preview(json)}`);
  const tables: Record<string, Record<string, RowUpdate>> = {};
  for (const [table, rows] of Object.entries(json)) {
    if (!isPlainObject(rows))
      throw badUpdate(`${where}: table ${table}: expected an object of row updates, got ${preview(rows)}`);
    const updates: Record<string, RowUpdate> = {};
    for (const [uuid, update] of Object.entries(rows)) {
      const at = `${where}: ${table} row ${uuid}`;
      if (!isPlainObject(update)) throw badUpdate(`${at}: expected {"old", "new"}, got ${preview(update)}`);
      const oldRow = update['old'] === undefined ? undefined : rowFromJson(update['old'], `${at} old`);
      const newRow = update['new'] === undefined ? undefined : rowFromJson(update['new'], `${at} new`);
      if (oldRow === undefined && newRow === undefined) throw badUpdate(`${at}: neither "old" nor "new"`);
      updates[uuid] = {
        ...(oldRow === undefined ? {} : { old: oldRow }),
        ...(newRow === undefined ? {} : { new: newRow }),
      };
    }
    tables[table] = updates;
  }
  return tables;
}

/**
 * Rows by table and UUID, kept current by `apply` (updates) and `reset` (an initial state
 * or a resync, which replaces everything: rows it does not hold are gone).
 */
export class TableCache {
  private readonly tables = new Map<string, Map<string, Row>>();

  table(name: string): ReadonlyMap<string, Row> {
    return this.tables.get(name) ?? new Map<string, Row>();
  }

  reset(initial: TableUpdates): void {
    this.tables.clear();
    this.apply(initial);
  }

  apply(updates: TableUpdates): void {
    for (const [name, rows] of Object.entries(updates)) {
      let table = this.tables.get(name);
      if (table === undefined) {
        table = new Map();
        this.tables.set(name, table);
      }
      for (const [uuid, update] of Object.entries(rows)) {
        if (update.new === undefined) table.delete(uuid);
        else table.set(uuid, update.new);
      }
    }
  }
}

function badUpdate(message: string): OvsdbDecodeError {
  return new OvsdbDecodeError('bad-datum', message);
}
