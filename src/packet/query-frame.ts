/**
 * A query as it goes on the wire: an IGMP packet (./igmp-frame.ts) whose message is a
 * query, from the querier (or 0.0.0.0) to 224.0.0.1 or the group asked about; or an MLD
 * packet (./mld-frame.ts) whose message is a query, from the querier's link-local address
 * (or ::) to ff02::1 or the group asked about.
 */
import { textFamily } from '../wire/ip-address.js';
import type { IgmpQuery } from './igmp/message.js';
import type { IgmpPacket } from './igmp-frame.js';
import type { MldQuery } from './mld/message.js';
import type { MldPacket } from './mld-frame.js';

export type QueryPacket = IgmpPacket<IgmpQuery>;
export type MldQueryPacket = MldPacket<MldQuery>;
/** Either family's query; the message's family tells which (`isMldQueryPacket`). */
export type AnyQueryPacket = QueryPacket | MldQueryPacket;

/** True for an MLD query packet: its destination is IPv6. */
export function isMldQueryPacket(packet: AnyQueryPacket): packet is MldQueryPacket {
  return textFamily(packet.dst) === 'ipv6';
}

export { encode, encodeFrame, encodingLength } from './igmp-frame.js';
export {
  encode as encodeMld,
  encodeFrame as encodeMldFrame,
  encodingLength as mldEncodingLength,
} from './mld-frame.js';
