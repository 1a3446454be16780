/**
 * OVSDB data (RFC 7047 §5.1) and the plain TypeScript values they become.
 *
 *   wire                                 TypeScript
 *   "br0", 42, 1.5, true                 the same atom
 *   ["uuid", "550e8400-..."]             { uuid: "550e8400-..." }
 *   ["named-uuid", "row1"]               { namedUuid: "row1" }
 *   ["set", [a, b]]                      [a, b]        (a plain array: no atom is an array)
 *   ["map", [[k, v], ...]]               { map: [[k, v], ...] }
 *
 * A set of exactly one element may travel as the bare atom (§5.1), and a column of type
 * "optional" (min 0, max 1) is such a set: `datumFromJson` returns what was sent, and
 * `asSet` / `asOptional` normalise it. `datumToJson` always writes arrays as
 * `["set", ...]`, which is valid for any size.
 */
import { OvsdbDecodeError } from './errors.js';
import { isPlainObject, preview, type JsonValue } from './json.js';

/** A row's identity, `["uuid", "<uuid>"]`. */
export interface Uuid {
  readonly uuid: string;
}

/** A row inserted earlier in the same transaction, `["named-uuid", "<uuid-name>"]`. */
export interface NamedUuid {
  readonly namedUuid: string;
}

export type Atom = string | number | boolean | Uuid | NamedUuid;

/** `["map", [[key, value], ...]]`, in the server's order. */
export interface OvsdbMap {
  readonly map: ReadonlyArray<readonly [Atom, Atom]>;
}

export type Datum = Atom | readonly Atom[] | OvsdbMap;

/** A row or a partial row: column name → value. */
export type Row = Readonly<Record<string, Datum>>;

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** RFC 7047 §3.1 <id>. */
const ID_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

// --- Constructors and guards --------------------------------------------------------

export function uuid(value: string): Uuid {
  if (!UUID_PATTERN.test(value)) throw new RangeError(`not a UUID: ${JSON.stringify(value)}`);
  return { uuid: value };
}

/**
 * RFC 7047 <id>: letters, digits and `_`, not starting with a digit. uuid-names and lock
 * names must be ids; ovsdb-server refuses others ("Type mismatch for member 'lock'").
 */
export function isOvsdbId(name: string): boolean {
  return ID_PATTERN.test(name);
}

/** Throws RangeError unless `name` is an <id>; `what` names it in the message. */
export function checkOvsdbId(name: string, what: string): void {
  if (!ID_PATTERN.test(name)) {
    throw new RangeError(
      `${what} ${JSON.stringify(name)} is not an OVSDB id (letters, digits and _, not starting with a digit)`,
    );
  }
}

export function namedUuid(name: string): NamedUuid {
  checkOvsdbId(name, 'uuid-name');
  return { namedUuid: name };
}

/** A map from a record (string keys) or from entries. */
export function ovsdbMap(entries: Readonly<Record<string, Atom>> | Iterable<readonly [Atom, Atom]>): OvsdbMap {
  const pairs = isIterable(entries) ? [...entries] : Object.entries(entries);
  return { map: pairs.map(([key, value]) => [key, value] as const) };
}

export function isUuid(value: unknown): value is Uuid {
  return typeof value === 'object' && value !== null && typeof (value as Partial<Uuid>).uuid === 'string';
}

export function isNamedUuid(value: unknown): value is NamedUuid {
  return typeof value === 'object' && value !== null && typeof (value as Partial<NamedUuid>).namedUuid === 'string';
}

export function isOvsdbMap(value: Datum): value is OvsdbMap {
  return typeof value === 'object' && !isSet(value) && 'map' in value;
}

export function isSet(value: Datum): value is readonly Atom[] {
  return Array.isArray(value);
}

// --- Wire form ----------------------------------------------------------------------

export function atomToJson(atom: Atom): JsonValue {
  switch (typeof atom) {
    case 'string':
    case 'boolean':
      return atom;
    case 'number':
      if (!Number.isFinite(atom)) throw new RangeError(`an OVSDB number must be finite, not ${atom}`);
      return atom;
    default:
      if (isUuid(atom)) return ['uuid', atom.uuid];
      if (isNamedUuid(atom)) return ['named-uuid', atom.namedUuid];
      throw new TypeError(`not an OVSDB atom: ${JSON.stringify(atom)}`);
  }
}

export function datumToJson(datum: Datum): JsonValue {
  if (isSet(datum)) return ['set', datum.map(atomToJson)];
  if (isOvsdbMap(datum)) return ['map', datum.map.map(([key, value]) => [atomToJson(key), atomToJson(value)])];
  return atomToJson(datum);
}

export function rowToJson(row: Row): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [column, datum] of Object.entries(row)) out[column] = datumToJson(datum);
  return out;
}

/** `where` names what is being decoded, for messages (e.g. `Bridge row 5c1e... column ports`). */
export function atomFromJson(json: unknown, where = 'atom'): Atom {
  switch (typeof json) {
    case 'string':
    case 'number':
    case 'boolean':
      return json;
  }
  if (Array.isArray(json) && json.length === 2 && typeof json[1] === 'string') {
    if (json[0] === 'uuid') {
      if (!UUID_PATTERN.test(json[1])) throw badDatum(where, `${JSON.stringify(json[1])} is not a UUID`);
      return { uuid: json[1] };
    }
    if (json[0] === 'named-uuid') return { namedUuid: json[1] };
  }
  throw badDatum(
    where,
    `expected an atom (string, number, boolean, ["uuid", ...] or ["named-uuid", ...]), got ${preview(json)}`,
  );
}

export function datumFromJson(json: unknown, where = 'datum'): Datum {
  if (Array.isArray(json) && json.length === 2) {
    const [tag, body] = json as [unknown, unknown];
    if (tag === 'set') {
      if (!Array.isArray(body)) throw badDatum(where, `a set holds an array, got ${preview(body)}`);
      return body.map((element, i) => atomFromJson(element, `${where} element ${i}`));
    }
    if (tag === 'map') {
      if (!Array.isArray(body)) throw badDatum(where, `a map holds an array of pairs, got ${preview(body)}`);
      return {
        map: body.map((pair: unknown, i) => {
          if (!Array.isArray(pair) || pair.length !== 2)
            throw badDatum(`${where} pair ${i}`, `expected [key, value], got ${preview(pair)}`);
          return [
            atomFromJson(pair[0], `${where} pair ${i} key`),
            atomFromJson(pair[1], `${where} pair ${i} value`),
          ] as const;
        }),
      };
    }
  }
  return atomFromJson(json, where);
}

export function rowFromJson(json: unknown, where = 'row'): Row {
  if (!isPlainObject(json)) throw badDatum(where, `a row is an object, got ${preview(json)}`);
  const row: Record<string, Datum> = {};
  for (const [column, value] of Object.entries(json)) row[column] = datumFromJson(value, `${where} column ${column}`);
  return row;
}

// --- To plain TypeScript values -----------------------------------------------------

/** Any datum as a set: a bare atom is a set of one (§5.1). A map is refused. */
export function asSet(datum: Datum, where = 'datum'): readonly Atom[] {
  if (isSet(datum)) return datum;
  if (isOvsdbMap(datum)) throw badDatum(where, 'expected a set, got a map');
  return [datum];
}

/** An optional value (a set of 0 or 1): undefined when empty. */
export function asOptional(datum: Datum, where = 'datum'): Atom | undefined {
  const set = asSet(datum, where);
  if (set.length > 1) throw badDatum(where, `expected at most one value, got ${set.length}`);
  return set[0];
}

export function asString(datum: Datum, where = 'datum'): string {
  const atom = asOptional(datum, where);
  if (typeof atom !== 'string') throw badDatum(where, `expected a string, got ${preview(atom)}`);
  return atom;
}

export function asOptionalString(datum: Datum | undefined, where = 'datum'): string | undefined {
  if (datum === undefined) return undefined;
  const atom = asOptional(datum, where);
  if (atom !== undefined && typeof atom !== 'string') throw badDatum(where, `expected a string, got ${preview(atom)}`);
  return atom;
}

export function asOptionalInteger(datum: Datum | undefined, where = 'datum'): number | undefined {
  if (datum === undefined) return undefined;
  const atom = asOptional(datum, where);
  if (atom !== undefined && !Number.isInteger(atom)) throw badDatum(where, `expected an integer, got ${preview(atom)}`);
  return atom as number | undefined;
}

export function asOptionalBoolean(datum: Datum | undefined, where = 'datum'): boolean | undefined {
  if (datum === undefined) return undefined;
  const atom = asOptional(datum, where);
  if (atom !== undefined && typeof atom !== 'boolean')
    throw badDatum(where, `expected a boolean, got ${preview(atom)}`);
  return atom;
}

/** A set of UUIDs as the UUID strings. */
export function asUuidStrings(datum: Datum | undefined, where = 'datum'): string[] {
  if (datum === undefined) return [];
  return asSet(datum, where).map((atom) => {
    if (!isUuid(atom)) throw badDatum(where, `expected a UUID, got ${preview(atom)}`);
    return atom.uuid;
  });
}

/** A map with string keys and values (`external_ids`, `other_config`) as a record. */
export function asStringMap(datum: Datum | undefined, where = 'datum'): Record<string, string> {
  const out: Record<string, string> = {};
  if (datum === undefined) return out;
  // An empty map may arrive as an empty set when a client wrote it that way.
  if (isSet(datum) && datum.length === 0) return out;
  if (!isOvsdbMap(datum)) throw badDatum(where, `expected a map, got ${preview(datum)}`);
  for (const [key, value] of datum.map) {
    if (typeof key !== 'string' || typeof value !== 'string') {
      throw badDatum(where, `expected string keys and values, got ${preview(key)} → ${preview(value)}`);
    }
    out[key] = value;
  }
  return out;
}

// --- Helpers --------------------------------------------------------------------------

function isIterable(value: unknown): value is Iterable<readonly [Atom, Atom]> {
  return typeof value === 'object' && value !== null && Symbol.iterator in value;
}

function badDatum(where: string, message: string): OvsdbDecodeError {
  return new OvsdbDecodeError('bad-datum', `${where}: ${message}`);
}
