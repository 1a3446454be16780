/**
 * A report to the peers as it goes into the tunnel: IPv4 from this node's address to
 * 224.0.0.22 (all IGMPv3 routers), TTL 1, with Router Alert (RFC 3376 §4), in an Ethernet
 * frame to 01:00:5e:00:00:16. The peer names us by this inner source, so it is always the
 * configured node address, whatever the underlay makes of the outer one.
 */
import * as ethernet from '../../packet/ethernet.js';
import { EtherType, multicastMacForGroup } from '../../packet/ethernet.js';
import * as igmp from '../../packet/igmp/index.js';
import type { IgmpV3Report } from '../../packet/igmp/message.js';
import * as ipv4 from '../../packet/ipv4/header.js';
import { IP_PROTOCOL_IGMP, ROUTER_ALERT } from '../../packet/ipv4/header.js';
import type { HostAddress } from '../../wire/ip-address.js';

/** Where IGMPv3 reports go (RFC 3376 §4.2.14). */
const ALL_IGMPV3_ROUTERS = '224.0.0.22';
/** IPTOS_PREC_INTERNETCONTROL, as Linux's own IGMP and the daemon's queries carry. */
const TOS_INTERNETWORK_CONTROL = 0xc0;

export interface ReportPacket {
  report: IgmpV3Report;
  /** This node's --node-address. */
  source: HostAddress;
  /** IPv4 identification: tells our reports apart in a capture. */
  identification: number;
}

function headerOf(packet: ReportPacket): ipv4.Ipv4Header {
  const options = [ROUTER_ALERT];
  return {
    tos: TOS_INTERNETWORK_CONTROL,
    totalLength: ipv4.encodingLength({ options }) + igmp.encodingLength(packet.report),
    identification: packet.identification & 0xffff,
    dontFragment: true,
    moreFragments: false,
    fragmentOffset: 0,
    ttl: 1,
    protocol: IP_PROTOCOL_IGMP,
    src: packet.source,
    dst: ALL_IGMPV3_ROUTERS,
    options,
  };
}

/** The IPv4 packet, both checksums computed. */
export function encodeReportPacket(packet: ReportPacket): Uint8Array {
  const header = headerOf(packet);
  const out = Buffer.alloc(header.totalLength);
  ipv4.encode(header, out, 0);
  igmp.encode(packet.report, out, ipv4.encodingLength(header));
  return out;
}

/** The packet in an Ethernet frame from `sourceMac` (the gateway's) to 224.0.0.22's MAC. */
export function encodeReportFrame(packet: ReportPacket, sourceMac: string): Uint8Array {
  const header: ethernet.EthernetHeader = { dst: multicastMacForGroup(ALL_IGMPV3_ROUTERS), src: sourceMac, vlanIds: [], etherType: EtherType.IPv4 };
  const ip = encodeReportPacket(packet);
  const headerLength = ethernet.encodingLength(header);
  const out = Buffer.alloc(headerLength + ip.length);
  ethernet.encode(header, out, 0);
  out.set(ip, headerLength);
  return out;
}
