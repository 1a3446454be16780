/**
 * A query as it goes on the wire: IPv4 header with the Router Alert option and TTL 1
 * (RFC 2236 §2, RFC 3376 §4), then the IGMP query; and the Ethernet frame around it,
 * to the group's multicast MAC (RFC 1112 §6.4).
 */
import * as ethernet from './ethernet.js';
import { EtherType, multicastMacForGroup } from './ethernet.js';
import * as igmp from './igmp/index.js';
import type { IgmpQuery } from './igmp/message.js';
import * as ipv4 from './ipv4/header.js';
import { IP_PROTOCOL_IGMP, ROUTER_ALERT } from './ipv4/header.js';

/** IPTOS_PREC_INTERNETCONTROL, which Linux's own IGMP carries. */
const TOS_INTERNETWORK_CONTROL = 0xc0;

export interface QueryPacket {
  message: IgmpQuery;
  /** The querier's address, or 0.0.0.0 (a snooping switch's "proxy" querier). */
  src: string;
  /** 224.0.0.1 for a general query, the group for a specific one. */
  dst: string;
  /** IPv4 identification: tells our queries apart in a capture. */
  identification: number;
}

function ipHeaderOf(packet: QueryPacket): ipv4.Ipv4Header {
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

export function encodingLength(packet: QueryPacket): number {
  return ipHeaderOf(packet).totalLength;
}

/** The IPv4 packet (header and IGMP, both checksums computed). */
export function encode(packet: QueryPacket, buf?: Uint8Array, offset = 0): Uint8Array {
  const header = ipHeaderOf(packet);
  const out = buf ?? Buffer.alloc(offset + header.totalLength);
  ipv4.encode(header, out, offset);
  igmp.encode(packet.message, out, offset + ipv4.encodingLength(header));
  return out;
}

/** Source MAC for a link that reports none: locally administered, "mc". */
const FALLBACK_MAC = '02:00:00:00:6d:63';

/** The packet in an Ethernet frame from `srcMac` (the link's own, if it has one) to the destination's multicast MAC. */
export function encodeFrame(packet: QueryPacket, srcMac: string = FALLBACK_MAC): Uint8Array {
  const header: ethernet.EthernetHeader = { dst: multicastMacForGroup(packet.dst), src: srcMac, vlanIds: [], etherType: EtherType.IPv4 };
  const headerLength = ethernet.encodingLength(header);
  const out = Buffer.alloc(headerLength + encodingLength(packet));
  ethernet.encode(header, out, 0);
  encode(packet, out, headerLength);
  return out;
}
