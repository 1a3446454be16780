/**
 * OVSDB (RFC 7047): framing, JSON-RPC messages, data, transactions, monitors, a client
 * with reconnection, and the typed view of the Open_vSwitch rows mcastctl uses.
 */
export {
  OvsdbClient,
  DEFAULT_TIMEOUT_MS,
  type OvsdbClientOptions,
  type ReconnectOptions,
  type RequestOptions,
} from '../../transport/ovsdb/client.js';
export type {
  OvsdbClientEvents,
  OvsdbClientState,
  DisconnectedEvent,
  ReconnectingEvent,
  ReconnectedEvent,
  MonitorErrorEvent,
} from '../../transport/ovsdb/client-events.js';
export { OvsdbError, OvsdbDecodeError, OvsdbTimeoutError, type OvsdbDecodeErrorCode, type OvsdbErrorName, type OvsdbErrorInit } from './errors.js';
export { parseEndpoint, type Endpoint } from '../../wire/endpoint.js';
export { backoffDelay, DEFAULT_MIN_DELAY_MS, DEFAULT_MAX_DELAY_MS, type BackoffOptions } from '../../runtime/backoff.js';
export { JsonStreamSplitter, DEFAULT_MAX_VALUE_BYTES, type JsonStreamSplitterOptions } from './json-stream.js';
export * as rpc from './rpc.js';
export type { JsonValue, RpcId, RpcMessage, RpcRequest, RpcNotification, RpcResult, RpcErrorReply } from './rpc.js';
export * from './datum.js';
export * from './operations.js';
export * from './monitor.js';
export { schemaFromJson, type DatabaseSchema, type TableSchema, type ColumnSchema } from './schema.js';
export { errorObjectFromJson, isErrorObject, type OvsdbErrorObject } from './error-object.js';
export * from '../../adapters/ovs/vswitch.js';
