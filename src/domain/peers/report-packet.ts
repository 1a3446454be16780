/**
 * A report to the peers as it goes into the tunnel, in an Ethernet frame from the
 * gateway's MAC to the destination's multicast MAC:
 * - IGMPv3 (IPv4 groups): IPv4 from this node's address to 224.0.0.22 (all IGMPv3
 *   routers), TTL 1, with Router Alert (RFC 3376 §4);
 * - MLDv2 (IPv6 groups): IPv6 from the link-local address of the frame's source MAC
 *   (EUI-64, RFC 4291 appendix A: MLD wants a link-local source, RFC 3810 §5.2.13) to
 *   ff02::16 (all MLDv2 routers), hop limit 1, with Router Alert (RFC 3810 §5).
 * The receiving peer names the sender by the tunnel's outer source, never by these inner
 * addresses, so what they say is only for a capture to read.
 */
import * as igmpFrame from '../../packet/igmp-frame.js';
import * as mldFrame from '../../packet/mld-frame.js';
import { FALLBACK_SOURCE_MAC } from '../../packet/ethernet.js';
import type { HostAddress } from '../../wire/ip-address.js';
import { eui64LinkLocal } from '../../wire/ipv6-address.js';
import type { PeerReport } from './announcer.js';

/** Where IGMPv3 reports go (RFC 3376 §4.2.14). */
const ALL_IGMPV3_ROUTERS = '224.0.0.22';
/** Where MLDv2 reports go (RFC 3810 §5.2.14). */
const ALL_MLDV2_ROUTERS = 'ff02::16';

export interface ReportPacket {
  report: PeerReport;
  /** This node's --node-address: the source of an IGMPv3 report. */
  source: HostAddress;
  /** IPv4 identification: tells our IGMPv3 reports apart in a capture. */
  identification: number;
}

/** The IP packet, checksums computed; an MLDv2 report's source is `sourceMac`'s link-local address. */
export function encodeReportPacket(packet: ReportPacket, sourceMac: string = FALLBACK_SOURCE_MAC): Uint8Array {
  const { report } = packet;
  if (report.version === 2)
    return mldFrame.encode({ message: report, src: eui64LinkLocal(sourceMac), dst: ALL_MLDV2_ROUTERS });
  return igmpFrame.encode({
    message: report,
    src: packet.source,
    dst: ALL_IGMPV3_ROUTERS,
    identification: packet.identification,
  });
}

/** The packet in an Ethernet frame from `sourceMac` (the gateway's) to 224.0.0.22's or ff02::16's MAC. */
export function encodeReportFrame(packet: ReportPacket, sourceMac: string): Uint8Array {
  const { report } = packet;
  if (report.version === 2)
    return mldFrame.encodeFrame({ message: report, src: eui64LinkLocal(sourceMac), dst: ALL_MLDV2_ROUTERS }, sourceMac);
  return igmpFrame.encodeFrame(
    { message: report, src: packet.source, dst: ALL_IGMPV3_ROUTERS, identification: packet.identification },
    sourceMac,
  );
}
