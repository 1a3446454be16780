/** The option and event types of OpenFlowConnection (connection.ts re-exports them). */
import type { UnavailableError } from '../../errors.js';
import type { Action } from '../../protocol/openflow/action.js';
import type { OpenFlowError } from '../../protocol/openflow/errors.js';
import type { FeaturesReply } from '../../protocol/openflow/features.js';
import type { FlowStatsRequest } from '../../protocol/openflow/flow-stats.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import type { PacketIn } from '../../protocol/openflow/packet-in.js';

export interface FlowDumpFilter {
  /** One table (default: all). */
  tableId?: number;
  cookie?: bigint;
  /** Bits of `cookie` that must match (default: all of them when `cookie` is given, else none). */
  cookieMask?: bigint;
  outPort?: number;
  outGroup?: number;
  match?: FlowStatsRequest['match'];
}

export interface PacketOutRequest {
  data: Uint8Array;
  actions: Action[];
  /** Default OfpPort.CONTROLLER. */
  inPort?: number;
}

export interface OpenFlowConnectionEvents {
  /** A PACKET_IN (after enablePacketIn()). */
  'packet-in': [packetIn: PacketIn];
  /** The connection was lost; everything pending was rejected with `reason`. */
  disconnected: [reason: UnavailableError];
  /** Dialled again after `disconnected`, handshake and packet-in configuration redone: replay flows and groups now. */
  reconnected: [features: FeaturesReply];
  /** Closed for good: by close(), or lost without (or after the last) reconnect attempt. */
  closed: [];
  /** An OFPT_ERROR for no pending request (e.g. for a message sent with send()). */
  'switch-error': [error: OpenFlowError];
  /** A message the switch sent unasked that has no event of its own (PORT_STATUS, FLOW_REMOVED, ...). */
  message: [message: OpenFlowMessage];
  /** A message that could not be decoded and belonged to no pending request. */
  'protocol-error': [error: Error];
}
