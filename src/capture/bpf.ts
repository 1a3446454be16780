/**
 * Classic BPF (the socket filter language of SO_ATTACH_FILTER) and the kernel-side filter
 * that `snoop` attaches to its packet socket.
 *
 * Why filter in the kernel: a packet socket otherwise copies every frame of the interface
 * (all data traffic of a busy node) into user space, only for the decoder to throw almost
 * all of it away. The filter is deliberately loose at the edges: whatever it cannot judge
 * cheaply (IP options, broken headers, runts) it passes on, and the JS decoder decides.
 */

/** One classic BPF instruction, as `struct sock_filter` in linux/filter.h. */
import { LinkType } from '../pcap/link-type.js';

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

const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_VLAN = 0x8100;
const IPV4_MIN_HEADER = 20;
const IPPROTO_IGMP = 2;
/** Version 4, IHL 5: an IPv4 header without options. */
const IPV4_NO_OPTIONS = 0x45;
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
    jge(ip + IPV4_MIN_HEADER, `${prefix}_hdr`, 'accept'),
    `${prefix}_hdr`,
    ldb(ip),
    jeq(IPV4_NO_OPTIONS, `${prefix}_proto`, 'accept'),
    `${prefix}_proto`,
    ldb(ip + 9),
    jeq(IPPROTO_IGMP, 'accept', 'reject'),
  ];
}

/**
 * Ethernet, optionally with one 802.1Q tag:
 *
 *             ldh  [12]                                   ; ethertype
 *             jeq  #0x0800       jt ip14      jf tagged
 *   tagged:   jeq  #0x8100       jt vlan      jf reject
 *   vlan:     ldh  [16]                                   ; ethertype after the tag
 *             jeq  #0x0800       jt ip18      jf reject
 *   ip14:     <ipv4Checks at 14>
 *   ip18:     <ipv4Checks at 18>
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
    jeq(ETHERTYPE_IPV4, 'ip14', 'tagged'),
    'tagged',
    jeq(ETHERTYPE_VLAN, 'vlan', 'reject'),
    'vlan',
    ldh(16),
    jeq(ETHERTYPE_IPV4, 'ip18', 'reject'),
    ...ipv4Checks('ip14', 14),
    ...ipv4Checks('ip18', 18),
    'accept',
    ret(ACCEPT_WHOLE_FRAME),
    'reject',
    ret(0),
  ];
}

/**
 * Raw IP: no ethertype, so the version nibble tells IPv4 from IPv6 (a tun device carries
 * both). Only then do the IPv4 checks apply:
 *
 *             ldb  [0]
 *             and  #0xf0
 *             jeq  #0x40         jt ip0       jf reject   ; not IPv4 (IPv6, or empty)
 *   ip0:      <ipv4Checks at 0>
 *   accept:   ret  #0xffffffff
 *   reject:   ret  #0
 */
function rawProgram(): Line[] {
  return [
    ldb(0),
    and(0xf0),
    jeq(0x40, 'ip0', 'reject'),
    ...ipv4Checks('ip0', 0),
    'accept',
    ret(ACCEPT_WHOLE_FRAME),
    'reject',
    ret(0),
  ];
}

/**
 * The kernel filter for `snoop`: passes IPv4 frames that carry IGMP, and those it cannot
 * judge (shorter than an IPv4 header, or a first header byte other than 0x45: options or a
 * broken header) for the decoder to classify; rejects everything else (ARP, IPv6, plain
 * UDP/TCP). Same result as `tcpdump igmp`, plus the frames the decoder must see to report
 * errors.
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
