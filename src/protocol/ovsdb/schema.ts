/**
 * The database schema that `get_schema` returns (RFC 7047 §3.2), checked only as far as
 * this client relies on it: names, version and tables with columns. Column types are
 * kept as the server sent them.
 */
import { isPlainObject, preview } from './json.js';
import { OvsdbDecodeError } from './errors.js';
import type { JsonValue } from './json.js';

export interface ColumnSchema {
  /** `<type>` of §3.2, as sent: a string atom type or an object with key, value, min, max. */
  readonly type: JsonValue;
  readonly ephemeral?: boolean;
  readonly mutable?: boolean;
}

export interface TableSchema {
  readonly columns: Readonly<Record<string, ColumnSchema>>;
  readonly maxRows?: number;
  readonly isRoot?: boolean;
  readonly indexes?: ReadonlyArray<readonly string[]>;
}

export interface DatabaseSchema {
  readonly name: string;
  readonly version: string;
  readonly cksum?: string;
  readonly tables: Readonly<Record<string, TableSchema>>;
}

export function schemaFromJson(json: unknown): DatabaseSchema {
  if (!isPlainObject(json)) throw badSchema(`expected an object, got ${preview(json)}`);
  const { name, version, tables } = json;
  if (typeof name !== 'string') throw badSchema(`"name" must be a string, got ${preview(name)}`);
  if (typeof version !== 'string') throw badSchema(`${name}: "version" must be a string, got ${preview(version)}`);
  if (!isPlainObject(tables)) throw badSchema(`${name}: "tables" must be an object, got ${preview(tables)}`);
  for (const [table, schema] of Object.entries(tables)) {
    if (!isPlainObject(schema) || !isPlainObject(schema['columns']))
      throw badSchema(`${name}: table ${table} has no "columns" object`);
    for (const [column, columnSchema] of Object.entries(schema['columns'])) {
      if (!isPlainObject(columnSchema) || columnSchema['type'] === undefined) {
        throw badSchema(`${name}: column ${table}.${column} has no "type"`);
      }
    }
  }
  // Checked above; the rest is JSON as the server sent it.
  return json as unknown as DatabaseSchema;
}

function badSchema(message: string): OvsdbDecodeError {
  return new OvsdbDecodeError('bad-datum', `not a database schema: ${message}`);
}
