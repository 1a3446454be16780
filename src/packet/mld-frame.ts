/**
 * An MLD message as it goes on the wire: IPv6 header with hop limit 1 and a hop-by-hop
 * header holding the Router Alert option (RFC 2710 §3, RFC 3810 §5), then the ICMPv6
 * message, its checksum over the IPv6 pseudo-header; and the Ethernet frame around it, to
 * the destination's multicast MAC (RFC 2464 §7). The MLD counterpart of igmp-frame.ts.
 */
import * as ethernet from './ethernet.js';
import { EtherType, FALLBACK_SOURCE_MAC } from './ethernet.js';
import * as ipv6 from './ipv6/header.js';
import { IP_PROTOCOL_HOP_BY_HOP, MLD_ROUTER_ALERT } from './ipv6/header.js';
import * as mld from './mld/index.js';
import { IP_PROTOCOL_ICMPV6, type MldMessage } from './mld/message.js';
import { multicastMacForIPv6Group } from '../wire/ipv6-address.js';

export interface MldPacket<Message extends MldMessage = MldMessage> {
  message: Message;
  /**
   * The sender's address. Receivers ignore MLD from any other source than a link-local
   * one (RFC 3810 §5.1.14 for queries, §5.2.13 for reports), except a report from `::`,
   * which a host sends before it has a link-local address. This builder does not check:
   * the caller chooses.
   */
  src: string;
  /** ff02::1 for a general query, the group for a specific query or an MLDv1 report, ff02::16 for an MLDv2 report. */
  dst: string;
}

/** The hop-by-hop header of every MLD packet: the Router Alert option alone. */
const HOP_BY_HOP = [MLD_ROUTER_ALERT];
const HEADERS_LENGTH = ipv6.encodingLength({ hopByHop: HOP_BY_HOP });

function ipHeaderOf(packet: MldPacket): ipv6.Ipv6Header {
  return {
    trafficClass: 0,
    flowLabel: 0,
    payloadLength: HEADERS_LENGTH - ipv6.IPV6_HEADER_LENGTH + mld.encodingLength(packet.message),
    nextHeader: IP_PROTOCOL_HOP_BY_HOP,
    hopLimit: 1,
    src: packet.src,
    dst: packet.dst,
    hopByHop: HOP_BY_HOP,
    hopByHopNextHeader: IP_PROTOCOL_ICMPV6,
  };
}

export function encodingLength(packet: MldPacket): number {
  return HEADERS_LENGTH + mld.encodingLength(packet.message);
}

/** The IPv6 packet (header, hop-by-hop header, MLD message with its checksum). */
export function encode(packet: MldPacket, buf?: Uint8Array, offset = 0): Uint8Array {
  const header = ipHeaderOf(packet);
  const out = buf ?? Buffer.alloc(offset + ipv6.IPV6_HEADER_LENGTH + header.payloadLength);
  ipv6.encode(header, out, offset);
  mld.encode(packet.message, { src: packet.src, dst: packet.dst }, out, offset + HEADERS_LENGTH);
  return out;
}

/** The packet in an Ethernet frame from `srcMac` (the link's own, if it has one) to the destination's multicast MAC. */
export function encodeFrame(packet: MldPacket, srcMac: string = FALLBACK_SOURCE_MAC): Uint8Array {
  const header: ethernet.EthernetHeader = {
    dst: multicastMacForIPv6Group(packet.dst),
    src: srcMac,
    vlanIds: [],
    etherType: EtherType.IPv6,
  };
  const headerLength = ethernet.encodingLength(header);
  const out = Buffer.alloc(headerLength + encodingLength(packet));
  ethernet.encode(header, out, 0);
  encode(packet, out, headerLength);
  return out;
}
