/**
 * An IGMP message as it goes on the wire: IPv4 header with the Router Alert option and
 * TTL 1 (RFC 2236 §2, RFC 3376 §4), then the message; and the Ethernet frame around it,
 * to the destination's multicast MAC (RFC 1112 §6.4). The daemon's queries to its pods and
 * its reports and queries to its peers through the tunnel are all built here.
 */
import * as ethernet from './ethernet.js';
import { EtherType, FALLBACK_SOURCE_MAC, multicastMacForGroup } from './ethernet.js';
import * as igmp from './igmp/index.js';
import type { IgmpMessage } from './igmp/message.js';
import * as ipv4 from './ipv4/header.js';
import { IP_PROTOCOL_IGMP, ROUTER_ALERT } from './ipv4/header.js';

/** IPTOS_PREC_INTERNETCONTROL, which Linux's own IGMP carries. */
const TOS_INTERNETWORK_CONTROL = 0xc0;

export interface IgmpPacket<Message extends IgmpMessage = IgmpMessage> {
  message: Message;
  /**
   * The sender's address: a querier's, 0.0.0.0 (a snooping switch's "proxy" querier), or this node's toward its peers.
   */
  src: string;
  /** 224.0.0.1 for a general query, the group for a specific one, 224.0.0.22 for an IGMPv3 report. */
  dst: string;
  /** IPv4 identification: tells our messages apart in a capture. */
  identification: number;
}

function ipHeaderOf(packet: IgmpPacket): ipv4.Ipv4Header {
  const options = [ROUTER_ALERT];
  return {
    tos: TOS_INTERNETWORK_CONTROL,
    totalLength: ipv4.encodingLength({ options }) + igmp.encodingLength(packet.message),
    identification: packet.identification & 0xffff,
    dontFragment: true,
    moreFragments: false,
    fragmentOffset: 0,
    ttl: 1,
    protocol: IP_PROTOCOL_IGMP,
    src: packet.src,
    dst: packet.dst,
    options,
  };
}

export function encodingLength(packet: IgmpPacket): number {
  return ipHeaderOf(packet).totalLength;
}

/** The IPv4 packet (header and IGMP, both checksums computed). */
export function encode(packet: IgmpPacket, buf?: Uint8Array, offset = 0): Uint8Array {
  const header = ipHeaderOf(packet);
  const out = buf ?? Buffer.alloc(offset + header.totalLength);
  ipv4.encode(header, out, offset);
  igmp.encode(packet.message, out, offset + ipv4.encodingLength(header));
  return out;
}

/** The packet in an Ethernet frame from `srcMac` (the link's own, if it has one) to the destination's multicast MAC. */
export function encodeFrame(packet: IgmpPacket, srcMac: string = FALLBACK_SOURCE_MAC): Uint8Array {
  const header: ethernet.EthernetHeader = {
    dst: multicastMacForGroup(packet.dst),
    src: srcMac,
    vlanIds: [],
    etherType: EtherType.IPv4,
  };
  const headerLength = ethernet.encodingLength(header);
  const out = Buffer.alloc(headerLength + encodingLength(packet));
  ethernet.encode(header, out, 0);
  encode(packet, out, headerLength);
  return out;
}
