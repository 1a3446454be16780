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

export function encodingLength(message: OpenFlowMessage): number {
  switch (message.type) {
    case 'HELLO':
      return hello.encodingLength(message);
    case 'ERROR':
      return errorMessage.encodingLength(message);
    case 'ECHO_REQUEST':
    case 'ECHO_REPLY':
      return echo.encodingLength(message);
    case 'BARRIER_REQUEST':
    case 'BARRIER_REPLY':
    case 'FEATURES_REQUEST':
    case 'GET_CONFIG_REQUEST':
    case 'GET_ASYNC_REQUEST':
      return empty.encodingLength(message);
    case 'FEATURES_REPLY':
      return features.encodingLength(message);
    case 'GET_CONFIG_REPLY':
    case 'SET_CONFIG':
      return switchConfig.encodingLength(message);
    case 'SET_ASYNC':
    case 'GET_ASYNC_REPLY':
      return asyncConfig.encodingLength(message);
    case 'FLOW_MOD':
      return flowMod.encodingLength(message);
    case 'GROUP_MOD':
      return groupMod.encodingLength(message);
    case 'METER_MOD':
      return meterMod.encodingLength(message);
    case 'PACKET_IN':
      return packetIn.encodingLength(message);
    case 'PACKET_OUT':
      return packetOut.encodingLength(message);
    case 'MULTIPART_REQUEST':
    case 'MULTIPART_REPLY':
      return multipart.encodingLength(message);
    case 'OTHER':
      return otherMessage.encodingLength(message);
  }
}

export function encode(message: OpenFlowMessage, buf?: Uint8Array, offset = 0): Uint8Array {
  switch (message.type) {
    case 'HELLO':
      return hello.encode(message, buf, offset);
    case 'ERROR':
      return errorMessage.encode(message, buf, offset);
    case 'ECHO_REQUEST':
    case 'ECHO_REPLY':
      return echo.encode(message, buf, offset);
    case 'BARRIER_REQUEST':
    case 'BARRIER_REPLY':
    case 'FEATURES_REQUEST':
    case 'GET_CONFIG_REQUEST':
    case 'GET_ASYNC_REQUEST':
      return empty.encode(message, buf, offset);
    case 'FEATURES_REPLY':
      return features.encode(message, buf, offset);
    case 'GET_CONFIG_REPLY':
    case 'SET_CONFIG':
      return switchConfig.encode(message, buf, offset);
    case 'SET_ASYNC':
    case 'GET_ASYNC_REPLY':
      return asyncConfig.encode(message, buf, offset);
    case 'FLOW_MOD':
      return flowMod.encode(message, buf, offset);
    case 'GROUP_MOD':
      return groupMod.encode(message, buf, offset);
    case 'METER_MOD':
      return meterMod.encode(message, buf, offset);
    case 'PACKET_IN':
      return packetIn.encode(message, buf, offset);
    case 'PACKET_OUT':
      return packetOut.encode(message, buf, offset);
    case 'MULTIPART_REQUEST':
    case 'MULTIPART_REPLY':
      return multipart.encode(message, buf, offset);
    case 'OTHER':
      return otherMessage.encode(message, buf, offset);
  }
}

/** Decodes the one message in [start, end). Throws OpenFlowDecodeError for malformed input. */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): OpenFlowMessage {
  const { type } = header.decode(bytes, start, end);
  switch (ofpTypeName(type)) {
    case 'HELLO':
      return hello.decode(bytes, start, end);
    case 'ERROR':
      return errorMessage.decode(bytes, start, end);
    case 'ECHO_REQUEST':
    case 'ECHO_REPLY':
      return echo.decode(bytes, start, end);
    case 'BARRIER_REQUEST':
    case 'BARRIER_REPLY':
    case 'FEATURES_REQUEST':
    case 'GET_CONFIG_REQUEST':
    case 'GET_ASYNC_REQUEST':
      return empty.decode(bytes, start, end);
    case 'FEATURES_REPLY':
      return features.decode(bytes, start, end);
    case 'GET_CONFIG_REPLY':
    case 'SET_CONFIG':
      return switchConfig.decode(bytes, start, end);
    case 'SET_ASYNC':
    case 'GET_ASYNC_REPLY':
      return asyncConfig.decode(bytes, start, end);
    case 'FLOW_MOD':
      return flowMod.decode(bytes, start, end);
    case 'GROUP_MOD':
      return groupMod.decode(bytes, start, end);
    case 'METER_MOD':
      return meterMod.decode(bytes, start, end);
    case 'PACKET_IN':
      return packetIn.decode(bytes, start, end);
    case 'PACKET_OUT':
      return packetOut.decode(bytes, start, end);
    case 'MULTIPART_REQUEST':
    case 'MULTIPART_REPLY':
      return multipart.decode(bytes, start, end);
    default:
      return otherMessage.decode(bytes, start, end);
  }
}

/** The wire type number of `message`. */
export function typeNumberOf(message: OpenFlowMessage): number {
  return message.type === 'OTHER' ? message.messageType : OFP_TYPE_NUMBERS[message.type];
}
