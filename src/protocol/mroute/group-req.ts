/**
 * struct group_source_req and struct group_filter (linux/in.h), the arguments of
 * MCAST_JOIN_SOURCE_GROUP / MCAST_LEAVE_SOURCE_GROUP and of MCAST_MSFILTER. Their
 * addresses are struct __kernel_sockaddr_storage (128 octets, aligned to a pointer),
 * holding a sockaddr_in: family AF_INET (host-order u16), port 0, in_addr in network
 * order, zeros after. Laid out for 64-bit Linux (checked with sizeof/offsetof on x86_64):
 *
 *   group_source_req, 264 octets:
 *     0 gsr_interface u32 | 4 padding | 8 gsr_group sockaddr_storage | 136 gsr_source sockaddr_storage
 *   group_filter, 144 + 128 × numsrc octets (GROUP_FILTER_SIZE):
 *     0 gf_interface u32 | 4 padding | 8 gf_group sockaddr_storage | 136 gf_fmode u32
 *     140 gf_numsrc u32 | 144 gf_slist: numsrc × sockaddr_storage
 *
 * On a 32-bit kernel the storage is aligned to 4 and every offset after the interface moves,
 * so encoding refuses any other process.arch rather than send the kernel a wrong struct.
 */
import { DecodeError, UnavailableError } from '../../errors.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import { checkIPv4, truncated, view } from './common.js';
import { MCAST_EXCLUDE, MCAST_INCLUDE } from './constants.js';

const SOCKADDR_STORAGE_LENGTH = 128;
const AF_INET = 2;
const GROUP_AT = 8;
const SOURCE_AT = 136;
const FMODE_AT = 136;
const NUMSRC_AT = 140;
const SLIST_AT = 144;

export const GROUP_SOURCE_REQ_LENGTH = 264;
/** GROUP_FILTER_SIZE(0): a group_filter without sources. */
export const GROUP_FILTER_BASE_LENGTH = SLIST_AT;

/** 64-bit little-endian Linux architectures, whose layout is the one above (the other codecs here also write host order as little-endian). */
const SUPPORTED_ARCHES: ReadonlySet<string> = new Set(['x64', 'arm64', 'riscv64', 'loong64']);

/** Why these codecs refuse bytes: a sockaddr that is not IPv4, a filter mode that is neither. */
export type GroupReqDecodeCode = 'not-inet' | 'bad-filter-mode';

export interface GroupSourceReq {
  ifindex: number;
  group: string;
  source: string;
}

export type FilterModeName = 'include' | 'exclude';

export interface GroupFilter {
  ifindex: number;
  group: string;
  mode: FilterModeName;
  sources: string[];
}

/** Throws on an architecture whose struct layout this module does not write. */
export function checkLayout(arch: string = process.arch): void {
  if (SUPPORTED_ARCHES.has(arch)) return;
  throw new UnavailableError(`source-specific multicast options need a 64-bit little-endian kernel layout; this process runs on ${arch}`, {
    hint: `struct group_source_req and group_filter are encoded for ${[...SUPPORTED_ARCHES].join(', ')} only`,
  });
}

function writeSockaddrIn(out: Uint8Array, at: number, address: string): void {
  out.fill(0, at, at + SOCKADDR_STORAGE_LENGTH);
  view(out).setUint16(at, AF_INET, true);
  writeIPv4(out, at + 4, address);
}

function readSockaddrIn(bytes: Uint8Array, at: number, what: string): string {
  const family = view(bytes).getUint16(at, true);
  if (family !== AF_INET) throw new DecodeError<GroupReqDecodeCode>('not-inet', `${what} has address family ${family}, not AF_INET (${AF_INET})`);
  return readIPv4(bytes, at + 4);
}

function writeHeader(out: Uint8Array, offset: number, ifindex: number, group: string): void {
  view(out).setUint32(offset, ifindex, true);
  out.fill(0, offset + 4, offset + GROUP_AT);
  writeSockaddrIn(out, offset + GROUP_AT, group);
}

export const groupSourceReq = {
  encodingLength(_value: GroupSourceReq): number {
    return GROUP_SOURCE_REQ_LENGTH;
  },

  encode(value: GroupSourceReq, buf?: Uint8Array, offset = 0): Uint8Array {
    checkLayout();
    checkUint(value.ifindex, 0xffffffff, 'ifindex');
    checkIPv4(value.group, 'group');
    checkIPv4(value.source, 'source');
    const out = outputBuffer(GROUP_SOURCE_REQ_LENGTH, buf, offset, 'group_source_req');
    writeHeader(out, offset, value.ifindex, value.group);
    writeSockaddrIn(out, offset + SOURCE_AT, value.source);
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupSourceReq {
    need({ at: start, end }, GROUP_SOURCE_REQ_LENGTH, 'a group_source_req', truncated);
    return {
      ifindex: view(bytes).getUint32(start, true),
      group: readSockaddrIn(bytes, start + GROUP_AT, 'gsr_group'),
      source: readSockaddrIn(bytes, start + SOURCE_AT, 'gsr_source'),
    };
  },
};

/** GROUP_FILTER_SIZE(count). */
export function groupFilterLength(count: number): number {
  return SLIST_AT + count * SOCKADDR_STORAGE_LENGTH;
}

export const groupFilter = {
  encodingLength(value: GroupFilter): number {
    return groupFilterLength(value.sources.length);
  },

  encode(value: GroupFilter, buf?: Uint8Array, offset = 0): Uint8Array {
    checkLayout();
    checkUint(value.ifindex, 0xffffffff, 'ifindex');
    checkIPv4(value.group, 'group');
    checkUint(value.sources.length, 0xffffffff, 'number of sources');
    for (const source of value.sources) checkIPv4(source, 'source');
    const out = outputBuffer(groupFilterLength(value.sources.length), buf, offset, 'group_filter');
    writeHeader(out, offset, value.ifindex, value.group);
    const dv = view(out);
    dv.setUint32(offset + FMODE_AT, value.mode === 'include' ? MCAST_INCLUDE : MCAST_EXCLUDE, true);
    dv.setUint32(offset + NUMSRC_AT, value.sources.length, true);
    value.sources.forEach((source, index) => writeSockaddrIn(out, offset + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH, source));
    return out;
  },

  decode(bytes: Uint8Array, start = 0, end = bytes.length): GroupFilter {
    need({ at: start, end }, SLIST_AT, 'a group_filter', truncated);
    const dv = view(bytes);
    const fmode = dv.getUint32(start + FMODE_AT, true);
    if (fmode !== MCAST_INCLUDE && fmode !== MCAST_EXCLUDE)
      throw new DecodeError<GroupReqDecodeCode>('bad-filter-mode', `gf_fmode ${fmode} is neither INCLUDE nor EXCLUDE`);
    const count = dv.getUint32(start + NUMSRC_AT, true);
    need({ at: start, end }, groupFilterLength(count), `a group_filter of ${count} sources`, truncated);
    const sources = Array.from({ length: count }, (_, index) => readSockaddrIn(bytes, start + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH, 'gf_slist'));
    return {
      ifindex: dv.getUint32(start, true),
      group: readSockaddrIn(bytes, start + GROUP_AT, 'gf_group'),
      mode: fmode === MCAST_INCLUDE ? 'include' : 'exclude',
      sources,
    };
  },
};
