/**
 * Classic BPF (the socket filter language of SO_ATTACH_FILTER) and the kernel-side filter
 * that `snoop` attaches to its packet socket.
 *
 * Why filter in the kernel: a packet socket otherwise copies every frame of the interface
 * (all data traffic of a busy node) into user space, only for the decoder to throw almost
 * all of it away. The filter is deliberately loose at the edges: whatever it cannot judge
 * cheaply (IP options, broken headers, runts, IPv6 extension headers) it passes on, and
 * the JS decoder decides.
 */

/** One classic BPF instruction, as `struct sock_filter` in linux/filter.h. */
import { EtherType } from './ethernet.js';
import { NEXT_HEADERS_TOWARDS_MLD } from './frame-decoder.js';
import { IP_PROTOCOL_IGMP, IPV4_MIN_HEADER_LENGTH } from './ipv4/header.js';
import { IPV6_HEADER_LENGTH } from './ipv6/header.js';
import { IP_PROTOCOL_ICMPV6, MldType } from './mld/message.js';
import { LinkType } from './pcap/link-type.js';

export interface BpfInstruction {
  /** Opcode: class | size | mode (loads), class | op | source (ALU, jumps). 16 bits. */
  code: number;
  /** Jump offset if the condition is true, relative to the next instruction. 8 bits. */
  jt: number;
  /** Jump offset if the condition is false. 8 bits. */
  jf: number;
  /** The constant operand. 32 bits, unsigned. */
  k: number;
}

/**
 * The pcap link types (LINKTYPE_*) a live capture produces: an Ethernet header first
 * (also Linux loopback, which carries a zeroed one), or the IP header first (tun and
 * other ARPHRD_NONE interfaces).
 */
export type CaptureLinkType = typeof LinkType.ETHERNET | typeof LinkType.RAW;

// Opcode parts, from linux/bpf_common.h.
/** Instruction classes. */
export const BPF_LD = 0x00;
export const BPF_ALU = 0x04;
export const BPF_JMP = 0x05;
export const BPF_RET = 0x06;
/** Load sizes. */
export const BPF_W = 0x00;
export const BPF_H = 0x08;
export const BPF_B = 0x10;
/** Load modes: ABS = packet bytes at a fixed offset, LEN = the frame's length. */
export const BPF_ABS = 0x20;
export const BPF_LEN = 0x80;
/** ALU operations. */
export const BPF_AND = 0x50;
/** Jump conditions (the comparison is unsigned; there is no "less than": swap the targets). */
export const BPF_JEQ = 0x10;
export const BPF_JGE = 0x30;
/** Operand source: K = the constant. */
export const BPF_K = 0x00;

/** Version 4, IHL 5: an IPv4 header without options. */
const IPV4_NO_OPTIONS = 0x45;
/** The version nibble of IPv6, in place (the high four bits of the first octet). */
const IPV6_VERSION_BITS = 0x60;
/** Where the IPv6 header holds its (first) next header. */
const IPV6_NEXT_HEADER_AT = 6;
/**
 * Accept returns "keep this many bytes". The maximum, not the snaplen as tcpdump does: if
 * the filter cut the frame, the kernel would report the cut length as the original one.
 * The snaplen is applied by the size of the receive buffer instead.
 */
const ACCEPT_WHOLE_FRAME = 0xffffffff;

/** An assembler line: an instruction whose jumps name labels, or a label. */
type Line = { code: number; k: number; jt?: string; jf?: string } | string;

/** Resolves label names into the relative, forward-only jump offsets of classic BPF. */
function assemble(lines: readonly Line[]): BpfInstruction[] {
  const labels = new Map<string, number>();
  let count = 0;
  for (const line of lines) {
    if (typeof line === 'string') labels.set(line, count);
    else count += 1;
  }
  const program: BpfInstruction[] = [];
  for (const line of lines) {
    if (typeof line === 'string') continue;
    const here = program.length;
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = labels.get(label);
      if (target === undefined) throw new Error(`BPF assembler: unknown label ${label}`);
      const distance = target - (here + 1);
      if (distance < 0 || distance > 0xff) throw new Error(`BPF assembler: jump to ${label} out of range`);
      return distance;
    };
    program.push({ code: line.code, jt: offset(line.jt), jf: offset(line.jf), k: line.k >>> 0 });
  }
  return program;
}

const ldh = (offset: number): Line => ({ code: BPF_LD | BPF_H | BPF_ABS, k: offset });
const ldb = (offset: number): Line => ({ code: BPF_LD | BPF_B | BPF_ABS, k: offset });
const ldLen = (): Line => ({ code: BPF_LD | BPF_W | BPF_LEN, k: 0 });
const and = (mask: number): Line => ({ code: BPF_ALU | BPF_AND | BPF_K, k: mask });
const jeq = (value: number, jt: string, jf: string): Line => ({ code: BPF_JMP | BPF_JEQ | BPF_K, k: value, jt, jf });
const jge = (value: number, jt: string, jf: string): Line => ({ code: BPF_JMP | BPF_JGE | BPF_K, k: value, jt, jf });
const ret = (value: number): Line => ({ code: BPF_RET | BPF_K, k: value });

/**
 * The checks once the IPv4 header is known to start at `ip`:
 *
 *   P:        ld   len
 *             jge  #ip+20        jt P_hdr     jf accept   ; too short: the decoder reports it
 *   P_hdr:    ldb  [ip]
 *             jeq  #0x45         jt P_proto   jf accept   ; options (Router Alert!) or broken
 *   P_proto:  ldb  [ip+9]
 *             jeq  #2            jt accept    jf reject   ; IGMP
 *
 * Real IGMPv2/v3 carries the Router Alert option, so it takes the 0x46 path; the protocol
 * test only removes plain option-less traffic, which is the bulk of a node's frames.
 */
function ipv4Checks(prefix: string, ip: number): Line[] {
  return [
    prefix,
    ldLen(),
    jge(ip + IPV4_MIN_HEADER_LENGTH, `${prefix}_hdr`, 'accept'),
    `${prefix}_hdr`,
    ldb(ip),
    jeq(IPV4_NO_OPTIONS, `${prefix}_proto`, 'accept'),
    `${prefix}_proto`,
    ldb(ip + 9),
    jeq(IP_PROTOCOL_IGMP, 'accept', 'reject'),
  ];
}

/**
 * The checks once the IPv6 header is known to start at `ip`:
 *
 *   P:        ld   len
 *             jge  #ip+40        jt P_ver     jf accept   ; too short: the decoder reports it
 *   P_ver:    ldb  [ip]
 *             and  #0xf0
 *             jeq  #0x60         jt P_next    jf accept   ; not version 6: the decoder reports it
 *   P_next:   ldb  [ip+6]                                 ; the first next header
 *             jeq  #0            jt accept    jf P_nh1    ; hop-by-hop: MLD's Router Alert
 *   P_nh1:    jeq  #43           jt accept    jf P_nh2    ; routing
 *   P_nh2:    jeq  #44           jt accept    jf P_nh3    ; fragment
 *   P_nh3:    jeq  #51           jt accept    jf P_nh4    ; authentication
 *   P_nh4:    jeq  #60           jt accept    jf P_nh5    ; destination options
 *   P_nh5:    jeq  #58           jt P_icmp    jf reject   ; ICMPv6: MLD without Router Alert, reported
 *   P_icmp:   ld   len
 *             jge  #ip+41        jt P_type    jf accept   ; no type octet: the decoder tells
 *   P_type:   ldb  [ip+40]
 *             jeq  #130 ... #143 jt accept    jf reject   ; the MLD types only
 *
 * The values are the frame decoder's NEXT_HEADERS_TOWARDS_MLD: whatever it walks towards
 * MLD (and may find broken, or MLD without Router Alert) passes; which ICMPv6 type follows
 * an extension header is the decoder's test. ICMPv6 right after the fixed header is tested
 * here, so that the link's Neighbor Discovery stays in the kernel.
 */
const MLD_TYPES: readonly number[] = [MldType.Query, MldType.V1Report, MldType.V1Done, MldType.V2Report];

function ipv6Checks(prefix: string, ip: number): Line[] {
  const lines: Line[] = [
    prefix,
    ldLen(),
    jge(ip + IPV6_HEADER_LENGTH, `${prefix}_ver`, 'accept'),
    `${prefix}_ver`,
    ldb(ip),
    and(0xf0),
    jeq(IPV6_VERSION_BITS, `${prefix}_next`, 'accept'),
    `${prefix}_next`,
    ldb(ip + IPV6_NEXT_HEADER_AT),
  ];
  NEXT_HEADERS_TOWARDS_MLD.forEach((nextHeader, index) => {
    const last = index === NEXT_HEADERS_TOWARDS_MLD.length - 1;
    if (index > 0) lines.push(`${prefix}_nh${index}`);
    lines.push(
      jeq(
        nextHeader,
        nextHeader === IP_PROTOCOL_ICMPV6 ? `${prefix}_icmp` : 'accept',
        last ? 'reject' : `${prefix}_nh${index + 1}`,
      ),
    );
  });
  // ICMPv6 right after the fixed header: only its MLD types (Neighbor Discovery is not ours).
  const icmpAt = ip + IPV6_HEADER_LENGTH;
  lines.push(`${prefix}_icmp`, ldLen(), jge(icmpAt + 1, `${prefix}_type`, 'accept'), `${prefix}_type`, ldb(icmpAt));
  MLD_TYPES.forEach((type, index) => {
    const last = index === MLD_TYPES.length - 1;
    if (index > 0) lines.push(`${prefix}_type${index}`);
    lines.push(jeq(type, 'accept', last ? 'reject' : `${prefix}_type${index + 1}`));
  });
  return lines;
}

/**
 * Ethernet, untagged or with up to two VLAN tags (802.1Q 0x8100 or 802.1ad 0x88a8), the
 * same frames the decoder accepts:
 *
 *             ldh  [12]                                   ; ethertype
 *             jeq  #0x0800       jt ip14      jf v6at14
 *   v6at14:   jeq  #0x86dd       jt ip6at14   jf tag1
 *   tag1:     jeq  #0x8100       jt vlan1     jf tag1ad
 *   tag1ad:   jeq  #0x88a8       jt vlan1     jf reject
 *   vlan1:    ldh  [16]                                   ; ethertype after one tag
 *             jeq  #0x0800       jt ip18      jf v6at18
 *   v6at18:   jeq  #0x86dd       jt ip6at18   jf tag2
 *   tag2:     jeq  #0x8100       jt vlan2     jf tag2ad
 *   tag2ad:   jeq  #0x88a8       jt vlan2     jf reject
 *   vlan2:    ldh  [20]                                   ; ethertype after two tags
 *             jeq  #0x0800       jt ip22      jf v6at22
 *   v6at22:   jeq  #0x86dd       jt ip6at22   jf reject
 *   ip14:     <ipv4Checks at 14>
 *   ip18:     <ipv4Checks at 18>
 *   ip22:     <ipv4Checks at 22>
 *   ip6at14:  <ipv6Checks at 14>
 *   ip6at18:  <ipv6Checks at 18>
 *   ip6at22:  <ipv6Checks at 22>
 *   accept:   ret  #0xffffffff
 *   reject:   ret  #0
 *
 * A frame too short for the loads is rejected by the kernel itself (an out-of-range load
 * ends the program with 0). Note that a NIC with VLAN offload strips the tag before the
 * packet socket sees the frame; such frames simply look untagged here.
 */
function ethernetProgram(): Line[] {
  return [
    ldh(12),
    jeq(EtherType.IPv4, 'ip14', 'v6at14'),
    'v6at14',
    jeq(EtherType.IPv6, 'ip6at14', 'tag1'),
    'tag1',
    jeq(EtherType.VLAN, 'vlan1', 'tag1ad'),
    'tag1ad',
    jeq(EtherType.QinQ, 'vlan1', 'reject'),
    'vlan1',
    ldh(16),
    jeq(EtherType.IPv4, 'ip18', 'v6at18'),
    'v6at18',
    jeq(EtherType.IPv6, 'ip6at18', 'tag2'),
    'tag2',
    jeq(EtherType.VLAN, 'vlan2', 'tag2ad'),
    'tag2ad',
    jeq(EtherType.QinQ, 'vlan2', 'reject'),
    'vlan2',
    ldh(20),
    jeq(EtherType.IPv4, 'ip22', 'v6at22'),
    'v6at22',
    jeq(EtherType.IPv6, 'ip6at22', 'reject'),
    ...ipv4Checks('ip14', 14),
    ...ipv4Checks('ip18', 18),
    ...ipv4Checks('ip22', 22),
    ...ipv6Checks('ip6at14', 14),
    ...ipv6Checks('ip6at18', 18),
    ...ipv6Checks('ip6at22', 22),
    'accept',
    ret(ACCEPT_WHOLE_FRAME),
    'reject',
    ret(0),
  ];
}

/**
 * Raw IP: no ethertype, so the version nibble tells IPv6 (a tun device carries both) from
 * IPv4. Anything not IPv6 is IPv4 or too broken to tell, which the decoder reports (as it
 * does reading a file), so it goes through the IPv4 checks:
 *
 *             ldb  [0]
 *             and  #0xf0
 *             jeq  #0x60         jt ip6at0    jf ip0      ; IPv6
 *   ip0:      <ipv4Checks at 0>
 *   ip6at0:   <ipv6Checks at 0>
 *   accept:   ret  #0xffffffff
 *   reject:   ret  #0
 */
function rawProgram(): Line[] {
  return [
    ldb(0),
    and(0xf0),
    jeq(IPV6_VERSION_BITS, 'ip6at0', 'ip0'),
    ...ipv4Checks('ip0', 0),
    ...ipv6Checks('ip6at0', 0),
    'accept',
    ret(ACCEPT_WHOLE_FRAME),
    'reject',
    ret(0),
  ];
}

/**
 * The kernel filter for `snoop`: passes IPv4 frames that carry IGMP, IPv6 frames that may
 * carry MLD (a first next header of hop-by-hop, where MLD's Router Alert sits, another
 * extension header, or ICMPv6), and those it cannot judge (shorter than an IP header, a
 * first IPv4 header byte other than 0x45: options or a broken header; an IPv6 version
 * other than 6) for the decoder to classify; rejects everything else (ARP, plain UDP/TCP
 * of either family). For IPv4, the same result as `tcpdump igmp`; for IPv6, a superset
 * of MLD whose exact test (the ICMPv6 type) is the decoder's; plus, for both, the frames
 * the decoder must see to report errors. (The name predates MLD.)
 */
export function igmpFilter(linkType: number): BpfInstruction[] {
  switch (linkType) {
    case LinkType.ETHERNET:
      return assemble(ethernetProgram());
    case LinkType.RAW:
      return assemble(rawProgram());
    default:
      throw new RangeError(`no IGMP filter for pcap link type ${linkType} (only 1, Ethernet, and 101, raw IP)`);
  }
}
