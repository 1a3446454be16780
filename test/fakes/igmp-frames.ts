/**
 * IGMP frames as hosts send them, built with the project's own encoders (Ethernet, IPv4
 * with Router Alert, IGMP), as the querier builds its queries (src/packet/query-frame.ts).
 */
import * as ethernet from '../../src/packet/ethernet.js';
import { EtherType, multicastMacForGroup } from '../../src/packet/ethernet.js';
import * as igmp from '../../src/packet/igmp/index.js';
import type { IgmpMessage, RecordTypeName } from '../../src/packet/igmp/index.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import { IP_PROTOCOL_IGMP, ROUTER_ALERT } from '../../src/packet/ipv4/header.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';

/** `message` from `src` to `dst`, in an Ethernet frame to the destination's multicast MAC. */
/**
 * A frame as a pod's kernel sends it (TTL 1, Router Alert), or with `ttl` and `routerAlert` as a crafted one may have
 * them.
 */
export function igmpFrame(
  message: IgmpMessage,
  { src, dst, ttl = 1, routerAlert = true }: { src: string; dst: string; ttl?: number; routerAlert?: boolean },
): Uint8Array {
  const options = routerAlert ? [ROUTER_ALERT] : [];
  const header: ipv4.Ipv4Header = {
    tos: 0xc0,
    totalLength: ipv4.encodingLength({ options }) + igmp.encodingLength(message),
    identification: 0,
    dontFragment: true,
    moreFragments: false,
    fragmentOffset: 0,
    ttl,
    protocol: IP_PROTOCOL_IGMP,
    src,
    dst,
    options,
  };
  const eth: ethernet.EthernetHeader = {
    dst: multicastMacForGroup(dst),
    src: '02:00:00:00:00:99',
    vlanIds: [],
    etherType: EtherType.IPv4,
  };
  const at = ethernet.encodingLength(eth);
  const out = Buffer.alloc(at + header.totalLength);
  ethernet.encode(eth, out, 0);
  ipv4.encode(header, out, at);
  igmp.encode(message, out, at + ipv4.encodingLength(header));
  return out;
}

export const v1Report = (host: string, group: string) =>
  igmpFrame({ kind: 'report', version: 1, group }, { src: host, dst: group });
export const v2Report = (host: string, group: string) =>
  igmpFrame({ kind: 'report', version: 2, group }, { src: host, dst: group });
export const v2Leave = (host: string, group: string) =>
  igmpFrame({ kind: 'leave', version: 2, group }, { src: host, dst: '224.0.0.2' });
export const v3Report = (host: string, records: Array<{ type: RecordTypeName; group: string; sources?: string[] }>) =>
  igmpFrame(
    { kind: 'report', version: 3, records: records.map((record) => ({ ...record, sources: record.sources ?? [] })) },
    { src: host, dst: '224.0.0.22' },
  );
export const v2GeneralQuery = (querier: string) =>
  igmpFrame({ kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 }, { src: querier, dst: '224.0.0.1' });

/** A query the daemon sent, decoded: its version and group (0.0.0.0: general). */
export function decodeQuery(frame: Uint8Array): { version: number; group: string; dst: string } | undefined {
  const event = decodeFrame(ipLocator(1), frame, { frame: 1, ts: 0 });
  if (event?.kind !== 'igmp' || event.message.kind !== 'query') return undefined;
  return { version: event.message.version, group: event.message.group, dst: event.dst };
}
