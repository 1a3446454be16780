/**
 * A query as it goes on the wire: an IGMP packet (./igmp-frame.ts) whose message is a
 * query, from the querier (or 0.0.0.0) to 224.0.0.1 or the group asked about.
 */
import type { IgmpQuery } from './igmp/message.js';
import type { IgmpPacket } from './igmp-frame.js';

export type QueryPacket = IgmpPacket<IgmpQuery>;

export { encode, encodeFrame, encodingLength } from './igmp-frame.js';
