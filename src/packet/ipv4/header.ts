/**
 * IPv4 header codec (RFC 791), with options (IGMP v2/v3 carry Router Alert, RFC 2113).
 *
 *   ver(4) IHL(4) | TOS | total length(2) | id(2) | flags(3) fragment offset(13)
 *   | TTL | protocol | header checksum(2) | source(4) | destination(4) | options
 *
 * `decode` validates everything a receiver must before it may trust the payload bounds:
 * version, IHL, total length against the data, header checksum, option lengths.
 * Fragmentation is reported (`isFragment`), not refused: that is the caller's policy.
 */
import { DecodeError } from '../../errors.js';
import { internetChecksum } from '../../wire/checksum.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { IpOptionType } from './option-type.js';

export const IPV4_MIN_HEADER_LENGTH = 20;
export const IP_PROTOCOL_IGMP = 2;

export interface Ipv4Option {
  type: number;
  /** The octets after type and length (absent for EOL and NOP, which are one octet). */
  data: Uint8Array;
}

export interface Ipv4Header {
  tos: number;
  /** Header plus payload, in octets. */
  totalLength: number;
  identification: number;
  dontFragment: boolean;
  moreFragments: boolean;
  /** In units of 8 octets. */
  fragmentOffset: number;
  ttl: number;
  protocol: number;
  src: string;
  dst: string;
  options: Ipv4Option[];
}

export interface DecodedIpv4 {
  header: Ipv4Header;
  /** Header length in octets (IHL × 4). */
  headerLength: number;
  payloadStart: number;
  payloadEnd: number;
}

/** The Router Alert option (RFC 2113): type 148, length 4, value 0 "router shall examine". */
export const ROUTER_ALERT: Ipv4Option = Object.freeze({ type: IpOptionType.RouterAlert, data: Uint8Array.of(0, 0) });

export function optionsLength(options: readonly Ipv4Option[]): number {
  let length = 0;
  for (const option of options) length += isSingleOctet(option.type) ? 1 : 2 + option.data.length;
  return (length + 3) & ~3; // padded with End of Option List to a 32-bit boundary
}

export function encodingLength(header: Pick<Ipv4Header, 'options'>): number {
  return IPV4_MIN_HEADER_LENGTH + optionsLength(header.options);
}

/** Writes the header (checksum computed) at `offset`; the payload is the caller's. */
export function encode(header: Ipv4Header, buf?: Uint8Array, offset = 0): Uint8Array {
  const headerLength = encodingLength(header);
  if (headerLength > 60)
    throw new RangeError(`IPv4 options of ${headerLength - 20} octets exceed the 40 an IHL can describe`);
  if (header.totalLength < headerLength || header.totalLength > 0xffff) {
    throw new RangeError(`total length ${header.totalLength} does not fit a ${headerLength}-octet header`);
  }
  const out = buf ?? Buffer.alloc(offset + headerLength);
  out[offset] = 0x40 | (headerLength / 4);
  out[offset + 1] = header.tos;
  out[offset + 2] = header.totalLength >> 8;
  out[offset + 3] = header.totalLength & 0xff;
  out[offset + 4] = header.identification >> 8;
  out[offset + 5] = header.identification & 0xff;
  const flagsAndOffset =
    (header.dontFragment ? 0x4000 : 0) | (header.moreFragments ? 0x2000 : 0) | (header.fragmentOffset & 0x1fff);
  out[offset + 6] = flagsAndOffset >> 8;
  out[offset + 7] = flagsAndOffset & 0xff;
  out[offset + 8] = header.ttl;
  out[offset + 9] = header.protocol;
  out[offset + 10] = 0;
  out[offset + 11] = 0;
  writeIPv4(out, offset + 12, header.src);
  writeIPv4(out, offset + 16, header.dst);
  let at = offset + IPV4_MIN_HEADER_LENGTH;
  for (const option of header.options) {
    out[at++] = option.type;
    if (isSingleOctet(option.type)) continue;
    out[at++] = 2 + option.data.length;
    out.set(option.data, at);
    at += option.data.length;
  }
  out.fill(IpOptionType.EndOfList, at, offset + headerLength);
  const checksum = internetChecksum(out, offset, offset + headerLength);
  out[offset + 10] = checksum >> 8;
  out[offset + 11] = checksum & 0xff;
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): DecodedIpv4 {
  if (end - start < IPV4_MIN_HEADER_LENGTH) {
    throw new DecodeError('truncated', `IPv4 header needs 20 octets; only ${Math.max(0, end - start)} captured`);
  }
  const version = bytes[start]! >> 4;
  if (version !== 4) throw new DecodeError('bad-ip-header', `IP version ${version} in an IPv4 frame`);
  const headerLength = (bytes[start]! & 0x0f) * 4;
  if (headerLength < IPV4_MIN_HEADER_LENGTH) {
    throw new DecodeError('bad-ip-header', `IHL ${headerLength / 4} is below the minimum of 5`);
  }
  if (start + headerLength > end) {
    throw new DecodeError('truncated', `IPv4 header of ${headerLength} octets; only ${end - start} captured`);
  }
  const totalLength = (bytes[start + 2]! << 8) | bytes[start + 3]!;
  if (totalLength < headerLength) {
    throw new DecodeError(
      'bad-ip-header',
      `total length ${totalLength} is shorter than the ${headerLength}-octet header`,
    );
  }
  if (start + totalLength > end) {
    throw new DecodeError('truncated', `IPv4 total length ${totalLength} runs past the ${end - start} octets captured`);
  }
  if (internetChecksum(bytes, start, start + headerLength) !== 0) {
    const stored = (bytes[start + 10]! << 8) | bytes[start + 11]!;
    throw new DecodeError(
      'bad-ip-checksum',
      `IPv4 header checksum 0x${stored.toString(16).padStart(4, '0')} does not match`,
    );
  }
  const flagsAndOffset = (bytes[start + 6]! << 8) | bytes[start + 7]!;
  const header: Ipv4Header = {
    tos: bytes[start + 1]!,
    totalLength,
    identification: (bytes[start + 4]! << 8) | bytes[start + 5]!,
    dontFragment: (flagsAndOffset & 0x4000) !== 0,
    moreFragments: (flagsAndOffset & 0x2000) !== 0,
    fragmentOffset: flagsAndOffset & 0x1fff,
    ttl: bytes[start + 8]!,
    protocol: bytes[start + 9]!,
    src: readIPv4(bytes, start + 12),
    dst: readIPv4(bytes, start + 16),
    options:
      headerLength > IPV4_MIN_HEADER_LENGTH
        ? decodeOptions(bytes, start + IPV4_MIN_HEADER_LENGTH, start + headerLength)
        : [],
  };
  return { header, headerLength, payloadStart: start + headerLength, payloadEnd: start + totalLength };
}

export function isFragment(header: Pick<Ipv4Header, 'moreFragments' | 'fragmentOffset'>): boolean {
  return header.moreFragments || header.fragmentOffset !== 0;
}

export function hasRouterAlert(header: Pick<Ipv4Header, 'options'>): boolean {
  return header.options.some((option) => option.type === IpOptionType.RouterAlert);
}

function decodeOptions(bytes: Uint8Array, start: number, end: number): Ipv4Option[] {
  const options: Ipv4Option[] = [];
  let at = start;
  while (at < end) {
    const type = bytes[at]!;
    if (type === IpOptionType.EndOfList) break;
    if (type === IpOptionType.NoOperation) {
      options.push({ type, data: new Uint8Array(0) });
      at++;
      continue;
    }
    if (at + 1 >= end) throw new DecodeError('bad-ip-header', `IPv4 option ${type} has no length octet`);
    const length = bytes[at + 1]!;
    if (length < 2 || at + length > end) {
      throw new DecodeError(
        'bad-ip-header',
        `IPv4 option ${type} has length ${length}, outside the ${end - at} octets left in the header`,
      );
    }
    // Nearly every IGMP packet carries exactly this option: share one object, copy nothing.
    const isPlainRouterAlert =
      type === IpOptionType.RouterAlert && length === 4 && bytes[at + 2] === 0 && bytes[at + 3] === 0;
    options.push(isPlainRouterAlert ? ROUTER_ALERT : { type, data: bytes.slice(at + 2, at + length) });
    at += length;
  }
  return options;
}

function isSingleOctet(type: number): boolean {
  return type === IpOptionType.EndOfList || type === IpOptionType.NoOperation;
}
