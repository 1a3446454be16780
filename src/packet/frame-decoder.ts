/**
 * From a captured frame to what `snoop` reports: the IGMP message it carries, a typed
 * decode failure, or nothing (the frame is not IPv4, or is IPv4 but plainly not IGMP).
 *
 * The policy, from the `--json` contract: every IPv4 frame yields one event when it
 * carries IGMP (protocol 2) or when its IPv4 header is too broken to tell what it
 * carries (too short, version not 4, IHL below 5); other frames yield none.
 */
import { DecodeError, type DecodeErrorCode } from '../errors.js';
import * as ethernet from './ethernet.js';
import { EtherType } from './ethernet.js';
import * as igmp from './igmp/index.js';
import type { IgmpMessage } from './igmp/index.js';
import * as ipv4 from './ipv4/header.js';
import { IP_PROTOCOL_IGMP, IPV4_MIN_HEADER_LENGTH, type Ipv4Header } from './ipv4/header.js';
import { supportedLinkType } from './pcap/link-type.js';
import * as sll from './sll/sll.js';
import * as sll2 from './sll/sll2.js';
import { readIPv4 } from '../wire/ipv4-address.js';

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

export interface MalformedFrameEvent extends FrameMeta {
  kind: 'malformed';
  /** Null when the frame ends before the address fields. */
  src: string | null;
  dst: string | null;
  code: DecodeErrorCode;
  message: string;
}

export type FrameEvent = IgmpFrameEvent | MalformedFrameEvent;

/** Finds where the IPv4 packet starts in a frame, or says the frame holds none. */
type Ipv4Locator = (bytes: Uint8Array) => number | undefined;

/** One locator per link type; chosen once per capture, not per frame. */
export function ipv4Locator(linkType: number): Ipv4Locator {
  const name = supportedLinkType(linkType);
  switch (name) {
    case 'ETHERNET':
      return (bytes) => {
        const offset = ethernet.payloadOffsetOf(bytes, EtherType.IPv4);
        return offset < 0 ? undefined : offset;
      };
    case 'RAW':
      // Raw IP carries v4 or v6; only the version nibble tells. An empty frame or an
      // unknown version goes to the IPv4 decoder, which says why it is broken.
      return (bytes) => (bytes.length > 0 && bytes[0]! >> 4 === 6 ? undefined : 0);
    case 'IPV4':
      return () => 0;
    case 'LINUX_SLL':
      return (bytes) => cookedOffset(bytes, sll);
    case 'LINUX_SLL2':
      return (bytes) => cookedOffset(bytes, sll2);
  }
}

function cookedOffset(bytes: Uint8Array, codec: typeof sll | typeof sll2): number | undefined {
  if (bytes.length < codec.HEADER_LENGTH) return undefined;
  return codec.decode(bytes).protocol === EtherType.IPv4 ? codec.HEADER_LENGTH : undefined;
}

/** Decodes one frame; never throws for bad packet content. */
export function decodeFrame(locate: Ipv4Locator, bytes: Uint8Array, meta: FrameMeta): FrameEvent | undefined {
  const start = locate(bytes);
  if (start === undefined) return undefined;
  const available = bytes.length - start;

  // Too broken to read the protocol: say so. Readable and not IGMP: not ours to report.
  if (available < IPV4_MIN_HEADER_LENGTH)
    return malformed(bytes, start, meta, 'truncated', `IPv4 header needs 20 octets; only ${Math.max(0, available)} captured`);
  const versionAndIhl = bytes[start]!;
  if (versionAndIhl >> 4 === 4 && (versionAndIhl & 0x0f) >= 5 && bytes[start + 9] !== IP_PROTOCOL_IGMP) return undefined;

  try {
    const packet = ipv4.decode(bytes, start, bytes.length);
    const { header } = packet;
    if (ipv4.isFragment(header)) {
      const detail = `offset ${header.fragmentOffset * 8}${header.moreFragments ? ', more fragments' : ''}`;
      return malformed(bytes, start, meta, 'fragmented', `IGMP in an IPv4 fragment (${detail}); IGMP is never fragmented`);
    }
    const message = igmp.decode(bytes, packet.payloadStart, packet.payloadEnd);
    return { kind: 'igmp', frame: meta.frame, ts: meta.ts, src: header.src, dst: header.dst, ip: header, message };
  } catch (error) {
    if (error instanceof DecodeError) return malformed(bytes, start, meta, error.code, error.message);
    throw error;
  }
}

/** A malformed event, with whatever addresses the frame still holds (null past its end). */
function malformed(bytes: Uint8Array, start: number, meta: FrameMeta, code: DecodeErrorCode, message: string): MalformedFrameEvent {
  const available = bytes.length - start;
  const src = available >= 16 ? readIPv4(bytes, start + 12) : null;
  const dst = available >= IPV4_MIN_HEADER_LENGTH ? readIPv4(bytes, start + 16) : null;
  return { kind: 'malformed', frame: meta.frame, ts: meta.ts, src, dst, code, message };
}
