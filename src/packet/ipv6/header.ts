/**
 * IPv6 header codec (RFC 8200), with the extension headers an MLD packet may carry before
 * its ICMPv6 message: hop-by-hop options first (Router Alert, RFC 2711), then any of
 * destination options, routing, fragment and authentication, walked to the upper-layer header.
 *
 *   ver(4) traffic class(8) flow label(20) | payload length(2) | next header | hop limit
 *   | source(16) | destination(16) | extension headers ... | upper-layer message
 *
 * `decode` validates what a receiver must before it may trust the payload bounds: the
 * version, the payload length against the data, every extension header's length, the
 * hop-by-hop options' lengths. A fragment is reported (`fragment`), not refused: that is
 * the caller's policy, as for IPv4.
 *
 * Two codes tell a short capture from a malformed packet: `truncated` when the data ends
 * before the 40 octets or before the payload length says; `bad-extension-header` when an
 * extension header (or a hop-by-hop option) runs past the payload length, which no
 * amount of captured data would mend: the packet contradicts itself.
 */
import { DecodeError } from '../../errors.js';
import { checkUint, copyBytes, outputBuffer, pad8, readU16BE, readU32BE } from '../../wire/bytes.js';
import { readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { Ipv6OptionType, RouterAlertValue } from './option-type.js';

export const IPV6_HEADER_LENGTH = 40;
export const IP_PROTOCOL_HOP_BY_HOP = 0;

/** The next header values of the extension headers `decode` walks (IANA "IPv6 Extension Header Types"). */
export const Ipv6ExtensionHeader = {
  HopByHop: IP_PROTOCOL_HOP_BY_HOP,
  Routing: 43,
  Fragment: 44,
  Authentication: 51,
  DestinationOptions: 60,
} as const;

/** The largest hop-by-hop header: its length octet counts 8-octet units after the first 8. */
const MAX_HOP_BY_HOP_LENGTH = 256 * 8;
const FRAGMENT_HEADER_LENGTH = 8;

/** A hop-by-hop (or destination) option: Pad1 and PadN are never listed. */
export interface Ipv6Option {
  type: number;
  /** The option's data (after type and length). */
  data: Uint8Array;
}

/**
 * The fixed header as on the wire, and the hop-by-hop header when there is one. The
 * model follows the octets: `nextHeader` is the fixed header's own (0 when a hop-by-hop
 * header follows), and `hopByHopNextHeader` the hop-by-hop header's (58 for MLD).
 */
export interface Ipv6Header {
  trafficClass: number;
  flowLabel: number;
  /** Octets after the 40-octet header: extension headers and the upper-layer message. */
  payloadLength: number;
  /** The first next header value (0 when a hop-by-hop header follows). */
  nextHeader: number;
  hopLimit: number;
  src: string;
  dst: string;
  /** The hop-by-hop options, in order (Pad1, PadN left out); absent: no hop-by-hop header. */
  hopByHop?: Ipv6Option[];
  /**
   * The hop-by-hop header's next header: the upper-layer protocol or the next extension header. Present exactly when
   * `hopByHop` is.
   */
  hopByHopNextHeader?: number;
}

export interface DecodedIpv6 {
  header: Ipv6Header;
  /** The Router Alert value of the hop-by-hop header (0: MLD, RFC 2711 §2.1); absent: none. */
  routerAlert?: number;
  /** The extension headers walked, by next header value, in order (0 hop-by-hop, 60, 43, 44, ...). */
  extensions: number[];
  /**
   * A fragment header's fields, when there is one; `offset` in 8-octet units, as IPv4's.
   * Past a fragment with a nonzero offset the walk stops: what follows is the middle of
   * the original packet, and `upperProtocol` is the fragment header's next header.
   */
  fragment?: { offset: number; moreFragments: boolean; identification: number };
  /** The upper-layer protocol: the next header value after the last extension header (58: ICMPv6). */
  upperProtocol: number;
  /** Where the 16-octet source and destination sit in the decoded bytes (the pseudo-header reads them in place). */
  srcAt: number;
  dstAt: number;
  /** The upper-layer message: [payloadStart, payloadEnd). */
  payloadStart: number;
  payloadEnd: number;
}

/** The Router Alert option of MLD (RFC 2711): type 5, length 2, value 0 "MLD message". */
export const MLD_ROUTER_ALERT: Ipv6Option = Object.freeze({
  type: Ipv6OptionType.RouterAlert,
  data: Uint8Array.of(0, 0),
});

/** The octets of a hop-by-hop header holding `options`: next header, length, the options, padded to 8. */
export function hopByHopLength(options: readonly Ipv6Option[]): number {
  let length = 2;
  for (const option of options) length += 2 + option.data.length;
  return pad8(length);
}

/**
 * The octets `header` takes on the wire: 40, and the hop-by-hop header when `hopByHop` is present (padded to 8 octets).
 */
export function encodingLength(header: Pick<Ipv6Header, 'hopByHop'>): number {
  return IPV6_HEADER_LENGTH + (header.hopByHop === undefined ? 0 : hopByHopLength(header.hopByHop));
}

/**
 * Writes the fixed header at `offset` (or into a new Buffer) and, when `hopByHop` is
 * present, the hop-by-hop header after it: `nextHeader` must then be 0 and
 * `hopByHopNextHeader` says what follows. The options go in the order given, padded at
 * the end with Pad1 or PadN to a multiple of 8 octets (RFC 8200 §4.3); MLD's one Router
 * Alert lands at offset 2, the 2n alignment RFC 2711 asks for. `payloadLength` is
 * written as given (the caller's payload follows); it must at least cover the hop-by-hop
 * header. Throws RangeError for a value the wire cannot hold.
 */
export function encode(header: Ipv6Header, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(header);
  const out = outputBuffer(length, buf, offset, 'the IPv6 header');
  const trafficClass = checkUint(header.trafficClass, 0xff, 'IPv6 traffic class');
  const flowLabel = checkUint(header.flowLabel, 0xfffff, 'IPv6 flow label');
  const payloadLength = checkUint(header.payloadLength, 0xffff, 'IPv6 payload length');
  checkUint(header.nextHeader, 0xff, 'IPv6 next header');
  checkUint(header.hopLimit, 0xff, 'IPv6 hop limit');
  checkHopByHop(header, length - IPV6_HEADER_LENGTH);
  out[offset] = 0x60 | (trafficClass >> 4);
  out[offset + 1] = ((trafficClass & 0x0f) << 4) | (flowLabel >> 16);
  out[offset + 2] = (flowLabel >> 8) & 0xff;
  out[offset + 3] = flowLabel & 0xff;
  out[offset + 4] = payloadLength >> 8;
  out[offset + 5] = payloadLength & 0xff;
  out[offset + 6] = header.nextHeader;
  out[offset + 7] = header.hopLimit;
  writeIPv6(out, offset + 8, header.src);
  writeIPv6(out, offset + 24, header.dst);
  if (header.hopByHop !== undefined) {
    encodeHopByHop(header.hopByHop, header.hopByHopNextHeader!, out, offset + IPV6_HEADER_LENGTH, offset + length);
  }
  return out;
}

/** Decodes the IPv6 packet in [start, end); DecodeError (truncated, bad-ip-header, bad-extension-header) otherwise. */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): DecodedIpv6 {
  if (end - start < IPV6_HEADER_LENGTH) {
    throw new DecodeError('truncated', `IPv6 header needs 40 octets; only ${Math.max(0, end - start)} captured`);
  }
  const version = bytes[start]! >> 4;
  if (version !== 6) throw new DecodeError('bad-ip-header', `IP version ${version} in an IPv6 packet`);
  const payloadLength = readU16BE(bytes, start + 4);
  const nextHeader = bytes[start + 6]!;
  if (payloadLength === 0 && nextHeader === IP_PROTOCOL_HOP_BY_HOP) {
    throw new DecodeError(
      'bad-ip-header',
      'payload length 0 with a hop-by-hop header: a jumbogram (RFC 2675), which is not supported',
    );
  }
  // Octets past the payload length (Ethernet padding of a short frame) are not the packet's.
  const payloadEnd = start + IPV6_HEADER_LENGTH + payloadLength;
  if (payloadEnd > end) {
    const captured = end - start - IPV6_HEADER_LENGTH;
    throw new DecodeError(
      'truncated',
      `IPv6 payload length ${payloadLength} runs past the ${captured} octets captured after the header`,
    );
  }
  const header: Ipv6Header = {
    trafficClass: ((bytes[start]! & 0x0f) << 4) | (bytes[start + 1]! >> 4),
    flowLabel: ((bytes[start + 1]! & 0x0f) << 16) | (bytes[start + 2]! << 8) | bytes[start + 3]!,
    payloadLength,
    nextHeader,
    hopLimit: bytes[start + 7]!,
    src: readIPv6(bytes, start + 8),
    dst: readIPv6(bytes, start + 24),
  };
  const decoded: DecodedIpv6 = {
    header,
    extensions: [],
    upperProtocol: nextHeader,
    srcAt: start + 8,
    dstAt: start + 24,
    payloadStart: start + IPV6_HEADER_LENGTH,
    payloadEnd,
  };
  walkExtensionHeaders(bytes, decoded);
  return decoded;
}

/** Follows the next header chain from the fixed header to the first header that is no extension header. */
function walkExtensionHeaders(bytes: Uint8Array, decoded: DecodedIpv6): void {
  const end = decoded.payloadEnd;
  let type = decoded.header.nextHeader;
  let at = decoded.payloadStart;
  // Every extension header is 8 octets or more, so the walk ends within the payload.
  for (;;) {
    let length: number;
    switch (type) {
      case Ipv6ExtensionHeader.HopByHop:
        if (decoded.extensions.length > 0) {
          throw new DecodeError(
            'bad-extension-header',
            'a hop-by-hop header after another extension header (RFC 8200 §4.3: only directly after the IPv6 header)',
          );
        }
        length = optionsHeaderLength(bytes, at, end, 'hop-by-hop');
        decodeHopByHop(bytes, at, at + length, decoded);
        break;
      case Ipv6ExtensionHeader.DestinationOptions:
        length = optionsHeaderLength(bytes, at, end, 'destination options');
        break;
      case Ipv6ExtensionHeader.Routing:
        length = optionsHeaderLength(bytes, at, end, 'routing');
        break;
      case Ipv6ExtensionHeader.Fragment: {
        fits(at, FRAGMENT_HEADER_LENGTH, end, 'fragment');
        const offsetAndFlags = readU16BE(bytes, at + 2);
        const offset = offsetAndFlags >> 3;
        decoded.fragment = {
          offset,
          moreFragments: (offsetAndFlags & 1) !== 0,
          identification: readU32BE(bytes, at + 4),
        };
        if (offset !== 0) {
          decoded.extensions.push(type);
          decoded.upperProtocol = bytes[at]!;
          decoded.payloadStart = at + FRAGMENT_HEADER_LENGTH;
          return;
        }
        length = FRAGMENT_HEADER_LENGTH;
        break;
      }
      case Ipv6ExtensionHeader.Authentication:
        // RFC 4302 §2.2: the length counts 4-octet units, less 2.
        fits(at, 2, end, 'authentication');
        length = (bytes[at + 1]! + 2) * 4;
        fits(at, length, end, 'authentication');
        break;
      default:
        decoded.upperProtocol = type;
        decoded.payloadStart = at;
        return;
    }
    decoded.extensions.push(type);
    type = bytes[at]!;
    at += length;
  }
}

/** The length of a hop-by-hop, destination options or routing header at `at`: 8-octet units after the first 8. */
function optionsHeaderLength(bytes: Uint8Array, at: number, end: number, what: string): number {
  fits(at, 2, end, what);
  const length = (bytes[at + 1]! + 1) * 8;
  fits(at, length, end, what);
  return length;
}

function fits(at: number, octets: number, end: number, what: string): void {
  if (at + octets > end) {
    const left = end - at;
    throw new DecodeError(
      'bad-extension-header',
      `the ${what} header needs ${octets} octets; the payload length leaves ${left}`,
    );
  }
}

/** Lists the options of the hop-by-hop header in [start, end) into `decoded`, and its Router Alert value. */
function decodeHopByHop(bytes: Uint8Array, start: number, end: number, decoded: DecodedIpv6): void {
  const options: Ipv6Option[] = [];
  let at = start + 2;
  while (at < end) {
    const type = bytes[at]!;
    if (type === Ipv6OptionType.Pad1) {
      at++;
      continue;
    }
    if (at + 2 > end) throw new DecodeError('bad-extension-header', `hop-by-hop option ${type} has no length octet`);
    const dataEnd = at + 2 + bytes[at + 1]!;
    if (dataEnd > end) {
      throw new DecodeError(
        'bad-extension-header',
        `hop-by-hop option ${type} of ${dataEnd - at} octets runs past its header (${end - at} left)`,
      );
    }
    if (type === Ipv6OptionType.RouterAlert) {
      if (dataEnd - at !== 4)
        throw new DecodeError(
          'bad-extension-header',
          `Router Alert option of length ${dataEnd - at - 2}; RFC 2711 §2.1 fixes it at 2`,
        );
      const value = readU16BE(bytes, at + 2);
      // RFC 2711 allows one; should a sender repeat it, the first counts.
      decoded.routerAlert ??= value;
      // Every MLD packet carries exactly this option: share one object, copy nothing.
      options.push(
        value === RouterAlertValue.Mld ? MLD_ROUTER_ALERT : { type, data: copyBytes(bytes, at + 2, dataEnd) },
      );
    } else if (type !== Ipv6OptionType.PadN) {
      options.push({ type, data: copyBytes(bytes, at + 2, dataEnd) });
    }
    at = dataEnd;
  }
  decoded.header.hopByHop = options;
  decoded.header.hopByHopNextHeader = bytes[start]!;
}

/** Refuses a hop-by-hop model the wire cannot carry, or one that would not decode to itself. */
function checkHopByHop(header: Ipv6Header, hopByHopOctets: number): void {
  const { hopByHop, hopByHopNextHeader } = header;
  if (hopByHop === undefined) {
    if (hopByHopNextHeader !== undefined)
      throw new RangeError('hopByHopNextHeader without a hop-by-hop header (hopByHop)');
    return;
  }
  if (header.nextHeader !== IP_PROTOCOL_HOP_BY_HOP) {
    throw new RangeError(
      `next header ${header.nextHeader} with a hop-by-hop header: it must be 0 (the upper protocol goes in hopByHopNextHeader)`,
    );
  }
  if (hopByHopNextHeader === undefined)
    throw new RangeError('a hop-by-hop header needs hopByHopNextHeader (58 for ICMPv6)');
  checkUint(hopByHopNextHeader, 0xff, 'hop-by-hop next header');
  if (hopByHopOctets > MAX_HOP_BY_HOP_LENGTH)
    throw new RangeError(`hop-by-hop options of ${hopByHopOctets} octets exceed ${MAX_HOP_BY_HOP_LENGTH}`);
  if (header.payloadLength < hopByHopOctets) {
    throw new RangeError(
      `payload length ${header.payloadLength} does not cover the ${hopByHopOctets}-octet hop-by-hop header`,
    );
  }
  for (const option of hopByHop) {
    checkUint(option.type, 0xff, 'hop-by-hop option type');
    if (option.type === Ipv6OptionType.Pad1 || option.type === Ipv6OptionType.PadN) {
      throw new RangeError('Pad1 and PadN are not listed: encode pads the hop-by-hop header itself');
    }
    checkUint(option.data.length, 0xff, `hop-by-hop option ${option.type} data length`);
  }
}

function encodeHopByHop(
  options: readonly Ipv6Option[],
  nextHeader: number,
  out: Uint8Array,
  start: number,
  end: number,
): void {
  out[start] = nextHeader;
  out[start + 1] = (end - start) / 8 - 1;
  let at = start + 2;
  for (const option of options) {
    out[at] = option.type;
    out[at + 1] = option.data.length;
    out.set(option.data, at + 2);
    at += 2 + option.data.length;
  }
  const padding = end - at;
  if (padding === 1) out[at] = Ipv6OptionType.Pad1;
  else if (padding >= 2) {
    out[at] = Ipv6OptionType.PadN;
    out[at + 1] = padding - 2;
    out.fill(0, at + 2, end);
  }
}
