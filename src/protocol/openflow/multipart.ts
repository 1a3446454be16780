/**
 * OFPT_MULTIPART_REQUEST and OFPT_MULTIPART_REPLY (OpenFlow 1.3.5 §7.3.5):
 *
 *   header | type(2) | flags(2) | pad(4) | body
 *
 * A reply too large for one message comes as several with the same xid, every one but
 * the last with flags & MULTIPART_MORE (see connection.ts, which joins them). FLOW,
 * GROUP, GROUP_DESC, METER, METER_CONFIG and METER_FEATURES bodies are decoded; any other
 * type's body is kept as octets.
 */
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import * as flowStats from './flow-stats.js';
import type { FlowStats, FlowStatsRequest } from './flow-stats.js';
import * as groupDesc from './group-desc.js';
import * as groupStats from './group-stats.js';
import type { GroupStats, GroupStatsRequest } from './group-stats.js';
import type { GroupDesc } from './group-desc.js';
import * as meterFeatures from './meter-features.js';
import type { MeterFeatures, MeterFeaturesRequest } from './meter-features.js';
import * as meterStats from './meter-stats.js';
import type { MeterConfig, MeterConfigRequest, MeterStats, MeterStatsRequest } from './meter-stats.js';
import { OFP_TYPE_NUMBERS } from './message-type.js';
import { MultipartType } from './multipart-type.js';
import { copyBytes, outputBuffer, readU16BE, writeU16Field } from '../../wire/bytes.js';

export interface GroupDescRequest {
  kind: 'GROUP_DESC';
}

/** A multipart body of a type this codec does not interpret. */
export interface OtherMultipartBody {
  kind: 'OTHER';
  multipartType: number;
  data: Uint8Array;
}

export type MultipartRequestBody =
  | FlowStatsRequest
  | GroupStatsRequest
  | GroupDescRequest
  | MeterStatsRequest
  | MeterConfigRequest
  | MeterFeaturesRequest
  | OtherMultipartBody;

export interface FlowStatsReply {
  kind: 'FLOW';
  flows: FlowStats[];
}

export interface GroupStatsReply {
  kind: 'GROUP';
  groups: GroupStats[];
}

export interface GroupDescReply {
  kind: 'GROUP_DESC';
  groups: GroupDesc[];
}

export interface MeterStatsReply {
  kind: 'METER';
  meters: MeterStats[];
}

export interface MeterConfigReply {
  kind: 'METER_CONFIG';
  meters: MeterConfig[];
}

export interface MeterFeaturesReply {
  kind: 'METER_FEATURES';
  features: MeterFeatures;
}

export type MultipartReplyBody =
  | FlowStatsReply
  | GroupStatsReply
  | GroupDescReply
  | MeterStatsReply
  | MeterConfigReply
  | MeterFeaturesReply
  | OtherMultipartBody;

export interface MultipartRequest {
  type: 'MULTIPART_REQUEST';
  xid: number;
  /** MULTIPART_MORE when the request continues in another message (never needed for FLOW or GROUP_DESC). */
  flags: number;
  body: MultipartRequestBody;
}

export interface MultipartReply {
  type: 'MULTIPART_REPLY';
  xid: number;
  flags: number;
  body: MultipartReplyBody;
}

export type Multipart = MultipartRequest | MultipartReply;

const FIXED_LENGTH = HEADER_LENGTH + 8;

function multipartTypeOf(body: MultipartRequestBody | MultipartReplyBody): number {
  return body.kind === 'OTHER' ? body.multipartType : MultipartType[body.kind];
}

function bodyLength(message: Multipart): number {
  const body = message.body;
  switch (body.kind) {
    case 'OTHER':
      return body.data.length;
    case 'GROUP':
      return 'groups' in body ? groupStats.reply.encodingLength(body.groups) : groupStats.request.encodingLength(body);
    case 'GROUP_DESC':
      return 'groups' in body ? groupDesc.encodingLength(body.groups) : 0;
    case 'FLOW':
      return 'flows' in body ? flowStats.reply.encodingLength(body.flows) : flowStats.request.encodingLength(body);
    case 'METER':
      return 'meters' in body ? meterStats.stats.encodingLength(body.meters) : meterStats.request.encodingLength(body);
    case 'METER_CONFIG':
      return 'meters' in body ? meterStats.config.encodingLength(body.meters) : meterStats.request.encodingLength(body);
    case 'METER_FEATURES':
      return 'features' in body ? meterFeatures.encodingLength(body.features) : 0;
  }
}

export function encodingLength(message: Multipart): number {
  return FIXED_LENGTH + bodyLength(message);
}

export function encode(message: Multipart, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, message.type);
  writeHeader(out, offset, message.type, length, message.xid);
  writeU16Field(out, offset + 8, multipartTypeOf(message.body), 'multipart type');
  writeU16Field(out, offset + 10, message.flags, 'multipart flags');
  out.fill(0, offset + 12, offset + FIXED_LENGTH);
  const at = offset + FIXED_LENGTH;
  const body = message.body;
  switch (body.kind) {
    case 'OTHER':
      out.set(body.data, at);
      break;
    case 'GROUP':
      if ('groups' in body) groupStats.reply.encode(body.groups, out, at);
      else groupStats.request.encode(body, out, at);
      break;
    case 'GROUP_DESC':
      if ('groups' in body) groupDesc.encode(body.groups, out, at);
      break;
    case 'FLOW':
      if ('flows' in body) flowStats.reply.encode(body.flows, out, at);
      else flowStats.request.encode(body, out, at);
      break;
    case 'METER':
      if ('meters' in body) meterStats.stats.encode(body.meters, out, at);
      else meterStats.request.encode(body, out, at);
      break;
    case 'METER_CONFIG':
      if ('meters' in body) meterStats.config.encode(body.meters, out, at);
      else meterStats.request.encode(body, out, at);
      break;
    case 'METER_FEATURES':
      if ('features' in body) meterFeatures.encode(body.features, out, at);
      break;
  }
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): Multipart {
  const isReply = bytes[start + 1] === OFP_TYPE_NUMBERS.MULTIPART_REPLY;
  const type = isReply ? 'MULTIPART_REPLY' : 'MULTIPART_REQUEST';
  const header = readMessageHeader(bytes, start, end, type, FIXED_LENGTH);
  const multipartType = readU16BE(bytes, start + 8);
  const flags = readU16BE(bytes, start + 10);
  const at = start + FIXED_LENGTH;
  if (isReply)
    return { type: 'MULTIPART_REPLY', xid: header.xid, flags, body: decodeReplyBody(multipartType, bytes, at, end) };
  return { type: 'MULTIPART_REQUEST', xid: header.xid, flags, body: decodeRequestBody(multipartType, bytes, at, end) };
}

function decodeReplyBody(multipartType: number, bytes: Uint8Array, at: number, end: number): MultipartReplyBody {
  switch (multipartType) {
    case MultipartType.FLOW:
      return { kind: 'FLOW', flows: flowStats.reply.decode(bytes, at, end) };
    case MultipartType.GROUP:
      return { kind: 'GROUP', groups: groupStats.reply.decode(bytes, at, end) };
    case MultipartType.GROUP_DESC:
      return { kind: 'GROUP_DESC', groups: groupDesc.decode(bytes, at, end) };
    case MultipartType.METER:
      return { kind: 'METER', meters: meterStats.stats.decode(bytes, at, end) };
    case MultipartType.METER_CONFIG:
      return { kind: 'METER_CONFIG', meters: meterStats.config.decode(bytes, at, end) };
    case MultipartType.METER_FEATURES:
      return { kind: 'METER_FEATURES', features: meterFeatures.decode(bytes, at, end) };
    default:
      return { kind: 'OTHER', multipartType, data: copyBytes(bytes, at, end) };
  }
}

function decodeRequestBody(multipartType: number, bytes: Uint8Array, at: number, end: number): MultipartRequestBody {
  switch (multipartType) {
    case MultipartType.FLOW:
      return flowStats.request.decode(bytes, at, end);
    case MultipartType.GROUP:
      return groupStats.request.decode(bytes, at, end);
    case MultipartType.METER:
      return { kind: 'METER', meterId: meterStats.request.decodeMeterId(bytes, at, end) };
    case MultipartType.METER_CONFIG:
      return { kind: 'METER_CONFIG', meterId: meterStats.request.decodeMeterId(bytes, at, end) };
  }
  if (at === end && multipartType === MultipartType.GROUP_DESC) return { kind: 'GROUP_DESC' };
  if (at === end && multipartType === MultipartType.METER_FEATURES) return { kind: 'METER_FEATURES' };
  return { kind: 'OTHER', multipartType, data: copyBytes(bytes, at, end) };
}
