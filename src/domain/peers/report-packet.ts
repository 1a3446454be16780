/**
 * A report to the peers as it goes into the tunnel: IPv4 from this node's address to
 * 224.0.0.22 (all IGMPv3 routers), TTL 1, with Router Alert (RFC 3376 §4), in an Ethernet
 * frame to 01:00:5e:00:00:16. The peer names us by this inner source, so it is always the
 * configured node address, whatever the underlay makes of the outer one.
 */
import * as igmpFrame from '../../packet/igmp-frame.js';
import type { IgmpV3Report } from '../../packet/igmp/message.js';
import type { HostAddress } from '../../wire/ip-address.js';

/** Where IGMPv3 reports go (RFC 3376 §4.2.14). */
const ALL_IGMPV3_ROUTERS = '224.0.0.22';

export interface ReportPacket {
  report: IgmpV3Report;
  /** This node's --node-address. */
  source: HostAddress;
  /** IPv4 identification: tells our reports apart in a capture. */
  identification: number;
}

function packetOf(packet: ReportPacket): igmpFrame.IgmpPacket<IgmpV3Report> {
  return { message: packet.report, src: packet.source, dst: ALL_IGMPV3_ROUTERS, identification: packet.identification };
}

/** The IPv4 packet, both checksums computed. */
export function encodeReportPacket(packet: ReportPacket): Uint8Array {
  return igmpFrame.encode(packetOf(packet));
}

/** The packet in an Ethernet frame from `sourceMac` (the gateway's) to 224.0.0.22's MAC. */
export function encodeReportFrame(packet: ReportPacket, sourceMac: string): Uint8Array {
  return igmpFrame.encodeFrame(packetOf(packet), sourceMac);
}
