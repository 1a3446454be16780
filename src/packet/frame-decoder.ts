/**
 * From a captured frame to what `snoop` reports: the IGMP or MLD message it carries, a
 * typed decode failure, or nothing (the frame is not IP, or is IP but plainly carries
 * neither).
 *
 * The policy, from the `--json` contract, the same for both families: every IP packet
 * yields one event when it carries the membership protocol of its family (IGMP, IPv4
 * protocol 2; MLD, ICMPv6 types 130, 131, 132 and 143) or when its header is too broken
 * to tell what it carries (too short, wrong version, IPv4's IHL below 5, IPv6's broken
 * extension headers); other packets yield none.
 */
import { DecodeError, type DecodeErrorCode } from '../errors.js';
import * as ethernet from './ethernet.js';
import { EtherType } from './ethernet.js';
import * as igmp from './igmp/index.js';
import type { IgmpMessage } from './igmp/index.js';
import * as ipv4 from './ipv4/header.js';
import { IP_PROTOCOL_IGMP, IPV4_MIN_HEADER_LENGTH, type Ipv4Header } from './ipv4/header.js';
import * as ipv6 from './ipv6/header.js';
import { IPV6_HEADER_LENGTH, Ipv6ExtensionHeader, type Ipv6Header } from './ipv6/header.js';
import * as mld from './mld/index.js';
import { IP_PROTOCOL_ICMPV6, type MldMessage } from './mld/message.js';
import { supportedLinkType } from './pcap/link-type.js';
import * as sll from './sll/sll.js';
import * as sll2 from './sll/sll2.js';
import { readIPv4 } from '../wire/ipv4-address.js';
import { IPV6_ADDRESS_LENGTH, readIPv6 } from '../wire/ipv6-address.js';

export interface FrameMeta {
  /** 1-based index in the capture, or a running count when live. */
  frame: number;
  /** Capture time in seconds since the epoch. */
  ts: number;
}

export interface IgmpFrameEvent extends FrameMeta {
  kind: 'igmp';
  src: string;
  dst: string;
  ip: Ipv4Header;
  message: IgmpMessage;
}

export interface MldFrameEvent extends FrameMeta {
  kind: 'mld';
  src: string;
  dst: string;
  ip: Ipv6Header;
  message: MldMessage;
}

export interface MalformedFrameEvent extends FrameMeta {
  kind: 'malformed';
  /** The membership protocol of the packet's family: IGMP for IPv4, MLD for IPv6. */
  protocol: MembershipProtocol;
  /** Null when the frame ends before the address fields. */
  src: string | null;
  dst: string | null;
  code: DecodeErrorCode;
  message: string;
}

export type FrameEvent = IgmpFrameEvent | MldFrameEvent | MalformedFrameEvent;

export type MembershipProtocol = 'igmp' | 'mld';

/** Where the IP packet of a frame starts, and which IP it is. */
export interface IpLocation {
  readonly family: 4 | 6;
  readonly start: number;
}

/** Finds where the IP packet starts in a frame, or says the frame holds none. */
export type IpLocator = (bytes: Uint8Array) => IpLocation | undefined;

/**
 * The next header values through which an IPv6 packet may lead to MLD: the hop-by-hop
 * header that carries its Router Alert, the other extension headers the IPv6 decoder
 * walks, and ICMPv6 itself. A packet whose first next header is another value (UDP, TCP,
 * ...) carries no MLD, and is not decoded further. The kernel filter (bpf.ts) passes the
 * same set.
 */
export const NEXT_HEADERS_TOWARDS_MLD: readonly number[] = [
  Ipv6ExtensionHeader.HopByHop,
  Ipv6ExtensionHeader.Routing,
  Ipv6ExtensionHeader.Fragment,
  Ipv6ExtensionHeader.Authentication,
  Ipv6ExtensionHeader.DestinationOptions,
  IP_PROTOCOL_ICMPV6,
];

const IPV4_AT_0: IpLocation = Object.freeze({ family: 4, start: 0 });
const IPV6_AT_0: IpLocation = Object.freeze({ family: 6, start: 0 });

/** One locator per link type; chosen once per capture, not per frame. */
export function ipLocator(linkType: number): IpLocator {
  const name = supportedLinkType(linkType);
  switch (name) {
    case 'ETHERNET':
      return (bytes) => {
        const v4 = ethernet.payloadOffsetOf(bytes, EtherType.IPv4);
        if (v4 >= 0) return { family: 4, start: v4 };
        const v6 = ethernet.payloadOffsetOf(bytes, EtherType.IPv6);
        return v6 < 0 ? undefined : { family: 6, start: v6 };
      };
    case 'RAW':
      // Raw IP carries v4 or v6; only the version nibble tells. An empty frame or an
      // unknown version goes to the IPv4 decoder, which says why it is broken.
      return (bytes) => (bytes.length > 0 && bytes[0]! >> 4 === 6 ? IPV6_AT_0 : IPV4_AT_0);
    case 'IPV4':
      return () => IPV4_AT_0;
    case 'LINUX_SLL':
      return cookedLocator(sll);
    case 'LINUX_SLL2':
      return cookedLocator(sll2);
  }
}

/** Linux cooked captures name the payload's ethertype in their own header, at a fixed length. */
function cookedLocator(codec: typeof sll | typeof sll2): IpLocator {
  const v4: IpLocation = Object.freeze({ family: 4, start: codec.HEADER_LENGTH });
  const v6: IpLocation = Object.freeze({ family: 6, start: codec.HEADER_LENGTH });
  return (bytes) => {
    if (bytes.length < codec.HEADER_LENGTH) return undefined;
    const protocol = codec.decode(bytes).protocol;
    return protocol === EtherType.IPv4 ? v4 : protocol === EtherType.IPv6 ? v6 : undefined;
  };
}

/** Decodes one frame; never throws for bad packet content. */
export function decodeFrame(locate: IpLocator, bytes: Uint8Array, meta: FrameMeta): FrameEvent | undefined {
  const location = locate(bytes);
  if (location === undefined) return undefined;
  return location.family === 4 ? decodeIpv4(bytes, location.start, meta) : decodeIpv6(bytes, location.start, meta);
}

function decodeIpv4(bytes: Uint8Array, start: number, meta: FrameMeta): FrameEvent | undefined {
  const available = bytes.length - start;

  // Too broken to read the protocol: say so. Readable and not IGMP: not ours to report.
  if (available < IPV4_MIN_HEADER_LENGTH)
    return malformedIpv4(
      bytes,
      start,
      meta,
      'truncated',
      `IPv4 header needs 20 octets; only ${Math.max(0, available)} captured`,
    );
  const versionAndIhl = bytes[start]!;
  if (versionAndIhl >> 4 === 4 && (versionAndIhl & 0x0f) >= 5 && bytes[start + 9] !== IP_PROTOCOL_IGMP)
    return undefined;

  try {
    const packet = ipv4.decode(bytes, start, bytes.length);
    const { header } = packet;
    if (ipv4.isFragment(header)) {
      const detail = `offset ${header.fragmentOffset * 8}${header.moreFragments ? ', more fragments' : ''}`;
      return malformedIpv4(
        bytes,
        start,
        meta,
        'fragmented',
        `IGMP in an IPv4 fragment (${detail}); IGMP is never fragmented`,
      );
    }
    const message = igmp.decode(bytes, packet.payloadStart, packet.payloadEnd);
    return { kind: 'igmp', frame: meta.frame, ts: meta.ts, src: header.src, dst: header.dst, ip: header, message };
  } catch (error) {
    if (error instanceof DecodeError) return malformedIpv4(bytes, start, meta, error.code, error.message);
    throw error;
  }
}

function decodeIpv6(bytes: Uint8Array, start: number, meta: FrameMeta): FrameEvent | undefined {
  const available = bytes.length - start;

  // Too broken to read the next header: say so. Readable and leading nowhere near MLD
  // (UDP, TCP, ...): not ours to report, and not worth walking.
  if (available < IPV6_HEADER_LENGTH)
    return malformedIpv6(
      bytes,
      start,
      meta,
      'truncated',
      `IPv6 header needs 40 octets; only ${Math.max(0, available)} captured`,
    );
  if (bytes[start]! >> 4 === 6 && !NEXT_HEADERS_TOWARDS_MLD.includes(bytes[start + 6]!)) return undefined;
  // ICMPv6 right after the fixed header, of a type that is not MLD (Neighbor Discovery,
  // echo, ...): not ours, however its lengths read (the kernel filter tests the same).
  if (
    bytes[start]! >> 4 === 6 &&
    bytes[start + 6] === IP_PROTOCOL_ICMPV6 &&
    available > IPV6_HEADER_LENGTH &&
    !mld.isMldType(bytes[start + IPV6_HEADER_LENGTH]!)
  ) {
    return undefined;
  }

  try {
    const packet = ipv6.decode(bytes, start, bytes.length);
    const { header, fragment } = packet;
    if (packet.upperProtocol !== IP_PROTOCOL_ICMPV6) return undefined;
    // A later fragment starts mid-message: its first octet is no ICMPv6 type, and nothing
    // says it belongs to MLD rather than to a large echo request (which fragments).
    if (fragment !== undefined && fragment.offset !== 0) return undefined;
    // Other ICMPv6 (Neighbor Discovery, echo, ...) and an empty message are not MLD.
    if (packet.payloadStart >= packet.payloadEnd || !mld.isMldType(bytes[packet.payloadStart]!)) return undefined;
    // A fragment header with offset 0 and no more fragments is an atomic fragment: a
    // whole packet, processed as one (RFC 6946 §4).
    if (fragment?.moreFragments === true) {
      return malformedIpv6(
        bytes,
        start,
        meta,
        'fragmented',
        'MLD in the first fragment of an IPv6 packet; MLD is never fragmented',
      );
    }
    // RFC 2710 §3, RFC 3810 §5: MLD without the hop-by-hop Router Alert is ignored by
    // listeners and routers; shown, so that a sender that leaves it out is found. A Router
    // Alert value other than 0 ("MLD", RFC 2711 §2.1) still makes every router on the path
    // look at the packet, and the message is MLD by its ICMPv6 type: decoded as MLD.
    if (packet.routerAlert === undefined) {
      return malformedIpv6(
        bytes,
        start,
        meta,
        'no-router-alert',
        'MLD without the hop-by-hop Router Alert option (RFC 2710 §3); listeners and routers ignore it',
      );
    }
    // The checksum covers the pseudo-header: the decoder reads the addresses where they sit.
    const message = mld.decode(bytes, packet.payloadStart, packet.payloadEnd, {
      srcAt: packet.srcAt,
      dstAt: packet.dstAt,
    });
    return { kind: 'mld', frame: meta.frame, ts: meta.ts, src: header.src, dst: header.dst, ip: header, message };
  } catch (error) {
    if (error instanceof DecodeError) return malformedIpv6(bytes, start, meta, error.code, error.message);
    throw error;
  }
}

/** A malformed IPv4 event, with whatever addresses the frame still holds (null past its end). */
function malformedIpv4(
  bytes: Uint8Array,
  start: number,
  meta: FrameMeta,
  code: DecodeErrorCode,
  message: string,
): MalformedFrameEvent {
  const available = bytes.length - start;
  const src = available >= 16 ? readIPv4(bytes, start + 12) : null;
  const dst = available >= IPV4_MIN_HEADER_LENGTH ? readIPv4(bytes, start + 16) : null;
  return { kind: 'malformed', frame: meta.frame, ts: meta.ts, protocol: 'igmp', src, dst, code, message };
}

/** The same for IPv6, whose source sits at octet 8 and destination at octet 24. */
function malformedIpv6(
  bytes: Uint8Array,
  start: number,
  meta: FrameMeta,
  code: DecodeErrorCode,
  message: string,
): MalformedFrameEvent {
  const available = bytes.length - start;
  const src = available >= IPV6_SRC_AT + IPV6_ADDRESS_LENGTH ? readIPv6(bytes, start + IPV6_SRC_AT) : null;
  const dst = available >= IPV6_DST_AT + IPV6_ADDRESS_LENGTH ? readIPv6(bytes, start + IPV6_DST_AT) : null;
  return { kind: 'malformed', frame: meta.frame, ts: meta.ts, protocol: 'mld', src, dst, code, message };
}

const IPV6_SRC_AT = 8;
const IPV6_DST_AT = 24;
