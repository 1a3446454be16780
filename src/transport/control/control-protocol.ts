/**
 * The control socket's protocol lines (newline-delimited JSON, one object a line, UTF-8):
 *   request   {"id":1,"method":"status"|"groups"|"routes"|"events"|"port","params":{}}   (params optional;
 *             `port` takes {"pod":"ns/name"} or {"name":"<interface>"}, and {"group":"<address>"})
 *   answer    {"id":1,"result":...}
 *   failure   {"id":1,"error":{"code":"unknown-method","message":"..."}}
 *   event     {"event":<DaemonEvent>}   (after `events` answered {"subscribed":true}, until the client closes)
 * A bad line (not JSON, no method) gets an error line with `"id":null`.
 */
import { messageOf } from '../../errors.js';

export const CONTROL_METHODS = ['status', 'groups', 'routes', 'events', 'port', 'stats'] as const;
export type ControlMethod = (typeof CONTROL_METHODS)[number];

/** Error codes of the protocol's error answers. */
type ControlErrorCode =
  | 'bad-json'
  | 'bad-request'
  | 'unknown-method'
  | 'request-too-long'
  | 'too-many-clients'
  | 'idle-timeout'
  | 'internal';

export interface ControlRequest {
  id: number | string | null;
  method: string;
  params?: Record<string, unknown>;
}

export type ControlResponse =
  | { id: number | string | null; result: unknown }
  | { id: number | string | null; error: { code: ControlErrorCode | string; message: string } };

/** Reads one request line: the request, or the error answer a bad line gets. */
export function parseRequestLine(text: string): { request: ControlRequest } | { refusal: ControlResponse } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      refusal: { id: null, error: { code: 'bad-json', message: `a request line is not JSON: ${messageOf(error)}` } },
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      refusal: {
        id: null,
        error: { code: 'bad-request', message: 'a request must be a JSON object {"id":..., "method":...}' },
      },
    };
  }
  const fields = value as Record<string, unknown>;
  const id = typeof fields.id === 'number' || typeof fields.id === 'string' ? fields.id : null;
  if (typeof fields.method !== 'string')
    return { refusal: { id, error: { code: 'bad-request', message: 'a request needs a "method" string' } } };
  if (
    fields.params !== undefined &&
    (typeof fields.params !== 'object' || fields.params === null || Array.isArray(fields.params))
  ) {
    return { refusal: { id, error: { code: 'bad-request', message: '"params", when given, must be an object' } } };
  }
  return {
    request: {
      id,
      method: fields.method,
      ...(fields.params === undefined ? {} : { params: fields.params as Record<string, unknown> }),
    },
  };
}
