/**
 * JSON-RPC 1.0 messages as RFC 7047 §4 uses them, with the codec shape of the project's
 * wire codecs: `encode`, `decode`, `encodingLength`, plus `toJson`/`fromJson` for the
 * connection, which gets already-parsed values from the JSON stream splitter.
 *
 *   request       {"method": m, "params": [...], "id": <non-null>}
 *   notification  {"method": m, "params": [...], "id": null}
 *   result        {"result": <value>, "error": null, "id": <id>}
 *   error         {"result": null, "error": <non-null>, "id": <id>}
 *
 * Encoding writes every member JSON-RPC 1.0 requires, in the order above. Decoding is
 * lenient where ovsdb-server is terse (an error reply without `result`, a notification
 * without `id`) and ignores members it does not know; it is strict about types.
 */
import { preview, type JsonValue } from './json.js';
import { messageOf } from '../../errors.js';
import { OvsdbDecodeError } from './errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export type { JsonValue };

/** Any JSON value but null (null marks a notification). The client uses numbers; ovsdb-server's echo uses "echo". */
export type RpcId = Exclude<JsonValue, null>;

export interface RpcRequest {
  readonly kind: 'request';
  readonly method: string;
  readonly params: readonly JsonValue[];
  readonly id: RpcId;
}

export interface RpcNotification {
  readonly kind: 'notification';
  readonly method: string;
  readonly params: readonly JsonValue[];
}

export interface RpcResult {
  readonly kind: 'result';
  readonly result: JsonValue;
  readonly id: RpcId;
}

export interface RpcErrorReply {
  readonly kind: 'error';
  /** Never null. ovsdb-server sends an OVSDB error object, or a bare string such as "unknown method". */
  readonly error: JsonValue;
  readonly id: RpcId;
}

export type RpcMessage = RpcRequest | RpcNotification | RpcResult | RpcErrorReply;

export function toJson(message: RpcMessage): Record<string, JsonValue> {
  switch (message.kind) {
    case 'request':
      return { method: message.method, params: message.params, id: message.id };
    case 'notification':
      return { method: message.method, params: message.params, id: null };
    case 'result':
      return { result: message.result, error: null, id: message.id };
    case 'error':
      if (message.error === null) throw new TypeError('an error reply needs a non-null error');
      return { result: null, error: message.error, id: message.id };
  }
}

/** Validates a parsed JSON value as a JSON-RPC message. Throws OvsdbDecodeError (`bad-message`). */
export function fromJson(json: unknown): RpcMessage {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw badMessage(`expected a JSON object, got ${preview(json)}`);
  const object = json as Record<string, JsonValue>;
  const id = object['id'] ?? null;
  const method = object['method'];
  if (method !== undefined) {
    if (typeof method !== 'string') throw badMessage(`"method" must be a string, got ${preview(method)}`);
    const params = object['params'];
    if (!Array.isArray(params)) throw badMessage(`"params" of ${method} must be an array, got ${preview(params)}`);
    if (hasValue(object, 'result') || hasValue(object, 'error'))
      throw badMessage(`a ${method} request must not carry "result" or "error"`);
    return id === null
      ? { kind: 'notification', method, params: params as JsonValue[] }
      : { kind: 'request', method, params: params as JsonValue[], id };
  }
  if (id === null) throw badMessage(`a message with neither "method" nor "id": ${preview(json)}`);
  const error = object['error'] ?? null;
  if (error !== null) {
    if (hasValue(object, 'result')) throw badMessage(`a reply (id ${preview(id)}) with both "result" and "error"`);
    return { kind: 'error', error, id };
  }
  if (!('result' in object)) throw badMessage(`a reply (id ${preview(id)}) with neither "result" nor "error"`);
  return { kind: 'result', result: object['result'] as JsonValue, id };
}

export function encodingLength(message: RpcMessage): number {
  return Buffer.byteLength(JSON.stringify(toJson(message)), 'utf8');
}

/** The message as UTF-8 JSON, into `buf` at `offset` (or a new buffer). */
export function encode(message: RpcMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  const text = JSON.stringify(toJson(message));
  if (buf === undefined) return Buffer.from(text, 'utf8');
  const length = Buffer.byteLength(text, 'utf8');
  if (offset < 0 || offset + length > buf.length) {
    throw new RangeError(
      `a ${length}-byte JSON-RPC message does not fit at offset ${offset} of a ${buf.length}-byte buffer`,
    );
  }
  Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).write(text, offset, length, 'utf8');
  return buf;
}

/** Exactly one JSON-RPC message in bytes [start, end). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): RpcMessage {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(bytes.subarray(start, end)));
  } catch (error) {
    throw new OvsdbDecodeError('bad-json', `not a JSON text: ${messageOf(error)}`);
  }
  return fromJson(json);
}

function hasValue(object: Record<string, JsonValue>, key: string): boolean {
  return object[key] !== undefined && object[key] !== null;
}

function badMessage(message: string): OvsdbDecodeError {
  return new OvsdbDecodeError('bad-message', `not a JSON-RPC message: ${message}`);
}
