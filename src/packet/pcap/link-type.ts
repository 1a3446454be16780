/**
 * The link-layer header types mcastctl reads, number ↔ name (pcap-linktype(7),
 * https://www.tcpdump.org/linktypes.html). Names are the LINKTYPE_ names without the
 * prefix, as `tcpdump -L` and `-y` spell them.
 */
import { DecodeError } from '../../errors.js';

export const LinkType = {
  /** DLT_EN10MB: Ethernet II / 802.3 frames, no FCS. */
  ETHERNET: 1,
  /** Raw IPv4 or IPv6; the version nibble says which. */
  RAW: 101,
  /** Linux "cooked" capture v1 (16-octet header, see src/packet/sll/sll.ts). */
  LINUX_SLL: 113,
  /** Raw IPv4 only. */
  IPV4: 228,
  /** Linux "cooked" capture v2 (20-octet header, see src/packet/sll/sll2.ts); tcpdump -i any. */
  LINUX_SLL2: 276,
} as const;

export type LinkTypeName = keyof typeof LinkType;

/**
 * Values some old files carry for raw IP: DLT_RAW is 12 in most BSDs' <net/bpf.h> and 14
 * in OpenBSD's and BSD/OS's, and libpcap versions before 0.6 wrote the platform's DLT_
 * value into files instead of LINKTYPE_RAW (101). libpcap and Wireshark read both as raw.
 */
const RAW_ALIASES: ReadonlySet<number> = new Set([12, 14]);

const NAME_BY_VALUE: ReadonlyMap<number, LinkTypeName> = new Map(
  (Object.entries(LinkType) as [LinkTypeName, number][]).map(([name, value]) => [value, name]),
);

/** The name of a link type value, with the BSD raw-IP aliases mapped to RAW; undefined if unknown. */
export function linkTypeName(value: number): LinkTypeName | undefined {
  return NAME_BY_VALUE.get(value) ?? (RAW_ALIASES.has(value) ? 'RAW' : undefined);
}

/** The value a writer should use for a name: the canonical LINKTYPE_ number. */
export function linkTypeValue(name: LinkTypeName): number {
  return LinkType[name];
}

/** "LINUX_SLL2 (276)", "RAW (12)", "link type 147": for messages. */
export function describeLinkType(value: number): string {
  const name = linkTypeName(value);
  return name === undefined ? `link type ${value}` : `${name} (${value})`;
}

/**
 * The name of a link type mcastctl can decode, or `DecodeError('unsupported-link-type')`
 * naming the ones it can. Readers call this once, on the file header.
 */
export function supportedLinkType(value: number): LinkTypeName {
  const name = linkTypeName(value);
  if (name !== undefined) return name;
  const known = (Object.entries(LinkType) as [LinkTypeName, number][]).map(([n, v]) => `${n} (${v})`).join(', ');
  throw new DecodeError(
    'unsupported-link-type',
    `${describeLinkType(value)} is not supported; mcastctl reads ${known}`,
  );
}
