/**
 * Which reply answers which OpenFlow request, and what the connection resolves with: a
 * request→reply map, so that `transact({ type: 'GET_CONFIG_REQUEST', ... })` is typed as
 * resolving with a SwitchConfig, checked against the reply's `type` rather than cast.
 */
import type { AsyncConfig } from '../../protocol/openflow/async-config.js';
import type { Echo } from '../../protocol/openflow/echo.js';
import type { EmptyMessage } from '../../protocol/openflow/empty.js';
import type { FeaturesReply } from '../../protocol/openflow/features.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import type { OfpTypeName } from '../../protocol/openflow/message-type.js';
import type { MultipartReply } from '../../protocol/openflow/multipart.js';
import type { SwitchConfig } from '../../protocol/openflow/switch-config.js';

/** What each request that has a reply resolves with (a multipart request: every part of its reply). */
export interface ReplyFor {
  BARRIER_REQUEST: EmptyMessage;
  ECHO_REQUEST: Echo;
  FEATURES_REQUEST: FeaturesReply;
  GET_CONFIG_REQUEST: SwitchConfig;
  GET_ASYNC_REQUEST: AsyncConfig;
  MULTIPART_REQUEST: MultipartReply[];
}

export type RequestType = keyof ReplyFor;

/** A message of a request type that has a reply. */
export type RequestMessage<K extends RequestType = RequestType> = OpenFlowMessage & { type: K };

interface ReplySpec<T> {
  /** The message type that settles the request. */
  readonly replyType: OfpTypeName;
  /** The resolved value, from the final reply (and all the parts, for a multipart reply). */
  readonly accept: (reply: OpenFlowMessage, parts: readonly MultipartReply[]) => T;
}

const REPLIES: { readonly [K in RequestType]: ReplySpec<ReplyFor[K]> } = {
  BARRIER_REQUEST: {
    replyType: 'BARRIER_REPLY',
    accept: (reply) => (reply.type === 'BARRIER_REPLY' ? reply : mismatch('BARRIER_REPLY', reply)),
  },
  ECHO_REQUEST: {
    replyType: 'ECHO_REPLY',
    accept: (reply) => (reply.type === 'ECHO_REPLY' ? reply : mismatch('ECHO_REPLY', reply)),
  },
  FEATURES_REQUEST: {
    replyType: 'FEATURES_REPLY',
    accept: (reply) => (reply.type === 'FEATURES_REPLY' ? reply : mismatch('FEATURES_REPLY', reply)),
  },
  GET_CONFIG_REQUEST: {
    replyType: 'GET_CONFIG_REPLY',
    accept: (reply) => (reply.type === 'GET_CONFIG_REPLY' ? reply : mismatch('GET_CONFIG_REPLY', reply)),
  },
  GET_ASYNC_REQUEST: {
    replyType: 'GET_ASYNC_REPLY',
    accept: (reply) => (reply.type === 'GET_ASYNC_REPLY' ? reply : mismatch('GET_ASYNC_REPLY', reply)),
  },
  MULTIPART_REQUEST: { replyType: 'MULTIPART_REPLY', accept: (_reply, parts) => [...parts] },
};

export function replySpec<K extends RequestType>(type: K): ReplySpec<ReplyFor[K]> {
  return REPLIES[type];
}

/** Unreachable while the connection settles a request only with a reply of its replyType. */
function mismatch(expected: OfpTypeName, reply: OpenFlowMessage): never {
  throw new Error(`expected ${expected}, got ${reply.type}`);
}
