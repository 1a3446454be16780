/**
 * The IPv6 forms of RFC 3678's join structs (linux/in.h) and struct ipv6_mreq
 * (linux/in6.h), the arguments of the options at level IPPROTO_IPV6 that join a group
 * upstream: src/protocol/mroute/group-req.ts writes sockaddr_in only, so these hold a
 * sockaddr_in6 (common6.ts) in each struct __kernel_sockaddr_storage (128 octets, aligned
 * to a pointer). Laid out for 64-bit Linux (checked with sizeof/offsetof on x86_64):
 *
 *   group_req, 136 octets (MCAST_JOIN_GROUP, MCAST_LEAVE_GROUP):
 *     0 gr_interface u32 | 4 padding | 8 gr_group sockaddr_storage
 *   group_source_req, 264 octets (MCAST_JOIN_SOURCE_GROUP, ..., MCAST_UNBLOCK_SOURCE):
 *     0 gsr_interface u32 | 4 padding | 8 gsr_group | 136 gsr_source
 *   group_filter, 144 + 128 × numsrc octets (MCAST_MSFILTER):
 *     0 gf_interface u32 | 4 padding | 8 gf_group | 136 gf_fmode u32 | 140 gf_numsrc u32
 *     144 gf_slist: numsrc × sockaddr_storage
 *   ipv6_mreq, 20 octets (IPV6_ADD_MEMBERSHIP, IPV6_DROP_MEMBERSHIP):
 *     0 ipv6mr_multiaddr in6_addr | 16 ipv6mr_interface int (host order)
 *
 * The kernel takes the interface from the ifindex field (0: the routing table's choice),
 * never from sin6_scope_id, which is written 0. The same 64-bit check as the IPv4 forms
 * (checkLayout) guards every encoder but ipv6_mreq, whose layout has no pointer alignment.
 */
import { DecodeError } from '../../errors.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { readIPv6, writeIPv6 } from '../../wire/ipv6-address.js';
import { checkInt32, truncated, view } from '../mroute/common.js';
import { MCAST_EXCLUDE, MCAST_INCLUDE } from '../mroute/constants.js';
import { checkLayout, type FilterModeName, type GroupReqDecodeCode } from '../mroute/group-req.js';
import { checkIPv6, readSockaddrIn6, type SockaddrIn6DecodeCode, writeSockaddrIn6 } from './common6.js';

const SOCKADDR_STORAGE_LENGTH = 128;
const GROUP_AT = 8;
const SOURCE_AT = 136;
const FMODE_AT = 136;
const NUMSRC_AT = 140;
const SLIST_AT = 144;

export const GROUP_REQ6_LENGTH = 136;
export const GROUP_SOURCE_REQ6_LENGTH = 264;
/** GROUP_FILTER_SIZE(0): a group_filter without sources. */
export const GROUP_FILTER6_BASE_LENGTH = SLIST_AT;
export const IPV6_MREQ_LENGTH = 20;

/** Why these codecs refuse bytes: a sockaddr that is not IPv6, a filter mode that is neither. */
export type GroupReq6DecodeCode = SockaddrIn6DecodeCode | Extract<GroupReqDecodeCode, 'bad-filter-mode'>;

export interface GroupReq6 {
  ifindex: number;
  group: string;
}

export interface GroupSourceReq6 {
  ifindex: number;
  group: string;
  source: string;
}

export interface GroupFilter6 {
  ifindex: number;
  group: string;
  mode: FilterModeName;
  sources: string[];
}

export interface Ipv6Mreq {
  group: string;
  /** 0: the interface the routing table picks for the group. */
  ifindex: number;
}

function writeStorage(out: Uint8Array, at: number, address: string): void {
  writeSockaddrIn6(out, at, address, SOCKADDR_STORAGE_LENGTH);
}

function writeHeader(out: Uint8Array, offset: number, ifindex: number, group: string): void {
  view(out).setUint32(offset, ifindex, true);
  out.fill(0, offset + 4, offset + GROUP_AT);
  writeStorage(out, offset + GROUP_AT, group);
}

export const groupReq6 = {
  encodingLength(_value: GroupReq6): number {
    return GROUP_REQ6_LENGTH;
  },

  encode(value: GroupReq6, buf?: Uint8Array, offset = 0): Uint8Array {
    checkLayout();
    checkUint(value.ifindex, 0xffffffff, 'ifindex');
    checkIPv6(value.group, 'group');
    const out = outputBuffer(GROUP_REQ6_LENGTH, buf, offset, 'group_req');
    writeHeader(out, offset, value.ifindex, value.group);
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupReq6 {
    need({ at: start, end }, GROUP_REQ6_LENGTH, 'a group_req', truncated);
    return { ifindex: view(bytes).getUint32(start, true), group: readSockaddrIn6(bytes, start + GROUP_AT, 'gr_group') };
  },
};

export const groupSourceReq6 = {
  encodingLength(_value: GroupSourceReq6): number {
    return GROUP_SOURCE_REQ6_LENGTH;
  },

  encode(value: GroupSourceReq6, buf?: Uint8Array, offset = 0): Uint8Array {
    checkLayout();
    checkUint(value.ifindex, 0xffffffff, 'ifindex');
    checkIPv6(value.group, 'group');
    checkIPv6(value.source, 'source');
    const out = outputBuffer(GROUP_SOURCE_REQ6_LENGTH, buf, offset, 'group_source_req');
    writeHeader(out, offset, value.ifindex, value.group);
    writeStorage(out, offset + SOURCE_AT, value.source);
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupSourceReq6 {
    need({ at: start, end }, GROUP_SOURCE_REQ6_LENGTH, 'a group_source_req', truncated);
    return {
      ifindex: view(bytes).getUint32(start, true),
      group: readSockaddrIn6(bytes, start + GROUP_AT, 'gsr_group'),
      source: readSockaddrIn6(bytes, start + SOURCE_AT, 'gsr_source'),
    };
  },
};

/** GROUP_FILTER_SIZE(count). */
export function groupFilter6Length(count: number): number {
  return SLIST_AT + count * SOCKADDR_STORAGE_LENGTH;
}

export const groupFilter6 = {
  encodingLength(value: GroupFilter6): number {
    return groupFilter6Length(value.sources.length);
  },

  encode(value: GroupFilter6, buf?: Uint8Array, offset = 0): Uint8Array {
    checkLayout();
    checkUint(value.ifindex, 0xffffffff, 'ifindex');
    checkIPv6(value.group, 'group');
    checkUint(value.sources.length, 0xffffffff, 'number of sources');
    for (const source of value.sources) checkIPv6(source, 'source');
    const out = outputBuffer(groupFilter6Length(value.sources.length), buf, offset, 'group_filter');
    writeHeader(out, offset, value.ifindex, value.group);
    const dv = view(out);
    dv.setUint32(offset + FMODE_AT, value.mode === 'include' ? MCAST_INCLUDE : MCAST_EXCLUDE, true);
    dv.setUint32(offset + NUMSRC_AT, value.sources.length, true);
    value.sources.forEach((source, index) => writeStorage(out, offset + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH, source));
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupFilter6 {
    need({ at: start, end }, SLIST_AT, 'a group_filter', truncated);
    const dv = view(bytes);
    const fmode = dv.getUint32(start + FMODE_AT, true);
    if (fmode !== MCAST_INCLUDE && fmode !== MCAST_EXCLUDE)
      throw new DecodeError<GroupReq6DecodeCode>('bad-filter-mode', `gf_fmode ${fmode} is neither INCLUDE nor EXCLUDE`);
    const count = dv.getUint32(start + NUMSRC_AT, true);
    need({ at: start, end }, groupFilter6Length(count), `a group_filter of ${count} sources`, truncated);
    const sources = Array.from({ length: count }, (_, index) => readSockaddrIn6(bytes, start + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH, 'gf_slist'));
    return {
      ifindex: dv.getUint32(start, true),
      group: readSockaddrIn6(bytes, start + GROUP_AT, 'gf_group'),
      mode: fmode === MCAST_INCLUDE ? 'include' : 'exclude',
      sources,
    };
  },
};

export const ipv6Mreq = {
  encodingLength(_value: Ipv6Mreq): number {
    return IPV6_MREQ_LENGTH;
  },

  encode(value: Ipv6Mreq, buf?: Uint8Array, offset = 0): Uint8Array {
    checkIPv6(value.group, 'group');
    checkInt32(value.ifindex, 'ifindex');
    const out = outputBuffer(IPV6_MREQ_LENGTH, buf, offset, 'ipv6_mreq');
    writeIPv6(out, offset, value.group);
    view(out).setInt32(offset + 16, value.ifindex, true);
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): Ipv6Mreq {
    need({ at: start, end }, IPV6_MREQ_LENGTH, 'an ipv6_mreq', truncated);
    return { group: readIPv6(bytes, start), ifindex: view(bytes).getInt32(start + 16, true) };
  },
};
