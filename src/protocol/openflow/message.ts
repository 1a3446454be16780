/**
 * Every OpenFlow 1.3 message this client speaks, as one discriminated union on `type`
 * (the spec's name: `FLOW_MOD`, `PACKET_IN`, ...; `OTHER` for the rest), with
 * `encode`/`decode`/`encodingLength` over the whole union.
 *
 * `decode` takes exactly one message [start, end) (framer.ts finds the boundaries) and
 * reads it with the 1.3 layout whatever its header's version: the connection checks the
 * version first.
 */
import * as asyncConfig from './async-config.js';
import type { AsyncConfig } from './async-config.js';
import * as echo from './echo.js';
import type { Echo } from './echo.js';
import * as empty from './empty.js';
import type { EmptyMessage } from './empty.js';
import * as errorMessage from './error-message.js';
import type { ErrorMessage } from './error-message.js';
import * as features from './features.js';
import type { FeaturesReply } from './features.js';
import * as flowMod from './flow-mod.js';
import type { FlowMod } from './flow-mod.js';
import * as groupMod from './group-mod.js';
import type { GroupMod } from './group-mod.js';
import * as header from './header.js';
import * as hello from './hello.js';
import type { Hello } from './hello.js';
import { OFP_TYPE_NUMBERS, ofpTypeName } from './message-type.js';
import * as meterMod from './meter-mod.js';
import type { MeterMod } from './meter-mod.js';
import * as multipart from './multipart.js';
import type { MultipartReply, MultipartRequest } from './multipart.js';
import * as otherMessage from './other-message.js';
import type { OtherMessage } from './other-message.js';
import * as packetIn from './packet-in.js';
import type { PacketIn } from './packet-in.js';
import * as packetOut from './packet-out.js';
import type { PacketOut } from './packet-out.js';
import * as switchConfig from './switch-config.js';
import type { SwitchConfig } from './switch-config.js';

export type OpenFlowMessage =
  | Hello
  | ErrorMessage
  | Echo
  | EmptyMessage
  | FeaturesReply
  | SwitchConfig
  | AsyncConfig
  | FlowMod
  | GroupMod
  | MeterMod
  | PacketIn
  | PacketOut
  | MultipartRequest
  | MultipartReply
  | OtherMessage;

export type OpenFlowMessageType = OpenFlowMessage['type'];

/** The members of the union whose `type` may be T (a family such as Echo carries two types). */
type MessageOf<T extends OpenFlowMessageType> = OpenFlowMessage extends infer M
  ? M extends { type: infer U }
    ? T extends U
      ? M
      : never
    : never
  : never;

/**
 * One message family's codec, as the table below holds it (properties, not methods: their parameters are checked
 * strictly).
 */
interface MessageCodec<M extends OpenFlowMessage> {
  encodingLength: (message: M) => number;
  encode: (message: M, buf?: Uint8Array, offset?: number) => Uint8Array;
  decode: (bytes: Uint8Array, start?: number, end?: number) => OpenFlowMessage;
}

/** The codec of each message type: one line a type, checked against the union. */
const CODECS = {
  HELLO: hello,
  ERROR: errorMessage,
  ECHO_REQUEST: echo,
  ECHO_REPLY: echo,
  BARRIER_REQUEST: empty,
  BARRIER_REPLY: empty,
  FEATURES_REQUEST: empty,
  GET_CONFIG_REQUEST: empty,
  GET_ASYNC_REQUEST: empty,
  FEATURES_REPLY: features,
  GET_CONFIG_REPLY: switchConfig,
  SET_CONFIG: switchConfig,
  SET_ASYNC: asyncConfig,
  GET_ASYNC_REPLY: asyncConfig,
  FLOW_MOD: flowMod,
  GROUP_MOD: groupMod,
  METER_MOD: meterMod,
  PACKET_IN: packetIn,
  PACKET_OUT: packetOut,
  MULTIPART_REQUEST: multipart,
  MULTIPART_REPLY: multipart,
  OTHER: otherMessage,
} satisfies { [T in OpenFlowMessageType]: MessageCodec<MessageOf<T>> };

/**
 * The codec of `message`'s type (the table's typing pairs each with its own type; TypeScript cannot follow it through
 * an index).
 */
function codecOf(message: OpenFlowMessage): MessageCodec<OpenFlowMessage> {
  return CODECS[message.type] as MessageCodec<OpenFlowMessage>;
}

export function encodingLength(message: OpenFlowMessage): number {
  return codecOf(message).encodingLength(message);
}

export function encode(message: OpenFlowMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  return codecOf(message).encode(message, buf, offset);
}

/**
 * Decodes the one message in [start, end): a type without a codec of its own as OTHER. Throws OpenFlowDecodeError for
 * malformed input.
 */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OpenFlowMessage {
  const name = ofpTypeName(header.decode(bytes, start, end).type);
  const codec = name !== undefined && Object.hasOwn(CODECS, name) ? CODECS[name as OpenFlowMessageType] : otherMessage;
  return codec.decode(bytes, start, end);
}

/** The wire type number of `message`. */
export function typeNumberOf(message: OpenFlowMessage): number {
  return message.type === 'OTHER' ? message.messageType : OFP_TYPE_NUMBERS[message.type];
}
