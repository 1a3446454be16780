/**
 * OVSDB error objects (RFC 7047 §3.1 <error>): `{"error": <string>, "details": <string>}`,
 * to which ovsdb-server adds `"syntax"` (the offending JSON) for syntax errors. A JSON-RPC
 * error reply may instead carry a bare string ("unknown method", "canceled").
 */
import { isPlainObject, preview } from './json.js';
import type { OvsdbErrorName } from './errors.js';

export interface OvsdbErrorObject {
  readonly error: OvsdbErrorName;
  readonly details: string | undefined;
  readonly syntax: string | undefined;
}

/** True for an object with a string `error` member: how a failed operation's result looks. */
export function isErrorObject(json: unknown): boolean {
  return isPlainObject(json) && typeof json['error'] === 'string';
}

/** Reads whatever the server put in an `error`; never throws (an odd error is still an error). */
export function errorObjectFromJson(json: unknown): OvsdbErrorObject {
  if (typeof json === 'string') return { error: json, details: undefined, syntax: undefined };
  if (isPlainObject(json) && typeof json['error'] === 'string') {
    return {
      error: json['error'],
      details: typeof json['details'] === 'string' ? json['details'] : undefined,
      syntax: typeof json['syntax'] === 'string' ? json['syntax'] : undefined,
    };
  }
  return { error: preview(json), details: undefined, syntax: undefined };
}
