/**
 * The OpenFlow 1.3 client: wire codecs (pure, no I/O), stream framing and the
 * connection. See connection.ts for how to talk to a switch.
 */
export * from './message.js';
export type { Hello } from './hello.js';
export type { ErrorMessage } from './error-message.js';
export type { Echo } from './echo.js';
export type { EmptyMessage, EmptyMessageType } from './empty.js';
export { type FeaturesReply, formatDatapathId } from './features.js';
export type { SwitchConfig } from './switch-config.js';
export type { AsyncConfig, RoleMasks } from './async-config.js';
export { type FlowMod, flowMod, DEFAULT_PRIORITY } from './flow-mod.js';
export { type GroupMod, groupMod } from './group-mod.js';
export { type PacketIn, inPortOf } from './packet-in.js';
export { type PacketOut, packetOut } from './packet-out.js';
export type {
  MultipartRequest,
  MultipartReply,
  MultipartRequestBody,
  MultipartReplyBody,
  GroupDescRequest,
  FlowStatsReply,
  GroupDescReply,
  OtherMultipartBody,
} from './multipart.js';
export { type FlowStats, type FlowStatsRequest, flowStatsRequest } from './flow-stats.js';
export type { GroupDesc } from './group-desc.js';
export type { OtherMessage } from './other-message.js';
export type { OxmField, UintOxm, MacOxm, Ipv4Oxm, MetadataOxm, RawOxm } from './oxm.js';
export { type Action, type OutputAction, type GroupAction, type SetFieldAction, type RawAction, output, toController, group, setField } from './action.js';
export {
  type Instruction,
  type ActionsInstruction,
  type GotoTableInstruction,
  type WriteMetadataInstruction,
  type ClearActionsInstruction,
  type MeterInstruction,
  type RawInstruction,
  applyActions,
  writeActions,
  gotoTable,
  clearActions,
} from './instruction.js';
export { type Bucket, bucket } from './bucket.js';
export { type OfpHeader, HEADER_LENGTH, MAX_MESSAGE_LENGTH } from './header.js';
export { OFP_TYPE_NUMBERS, type OfpTypeName, ofpTypeName, describeOfpType, OFP_VERSION, OFP13_VERSION, describeOfpVersion } from './message-type.js';
export { OFP_ERROR_TYPES, type OfpErrorTypeName, EXPERIMENTER_IDS, errorTypeName, errorCodeName, errorCodeNumber, describeError, type ErrorIdentity } from './error-code.js';
export { OXM_FIELDS, OxmClass, type OxmFieldName } from './oxm-field.js';
export { OfpActionType, OfpInstructionType } from './action-type.js';
export { FlowModCommand, FlowModFlag, GroupModCommand, GroupType, flowModCommandName, groupModCommandName, groupTypeName } from './mod-command.js';
export { MultipartType, MULTIPART_MORE } from './multipart-type.js';
export { PacketInReason, PortStatusReason, FlowRemovedReason, packetInReasonName, reasonMask } from './async-reason.js';
export { OfpPort, OfpGroup, OFP_NO_BUFFER, OfpControllerMaxLen, OFPTT_ALL, describePort } from './reserved.js';
export { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD, maxBucketsPerGroupMod } from './limits.js';
export { OpenFlowError, OpenFlowDecodeError, type OpenFlowDecodeReason, type FailedRequest } from './errors.js';
export { OpenFlowFramer, type MessageHandler } from './framer.js';
export { parseEndpoint, type Endpoint } from '../../wire/endpoint.js';
export {
  OpenFlowConnection,
  type OpenFlowConnectionOptions,
  type OpenFlowConnectionEvents,
  type ReconnectOptions,
  type RequestOptions,
  type PacketInOptions,
  type BatchResult,
  type FlowDumpFilter,
  type PacketOutRequest,
} from '../../transport/openflow/connection.js';
