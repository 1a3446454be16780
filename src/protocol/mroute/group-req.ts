/**
 * struct group_req, struct group_source_req and struct group_filter (linux/in.h), RFC
 * 3678's protocol-independent join structs: the arguments of MCAST_JOIN_GROUP /
 * MCAST_LEAVE_GROUP, of MCAST_JOIN_SOURCE_GROUP / MCAST_LEAVE_SOURCE_GROUP (and BLOCK /
 * UNBLOCK), and of MCAST_MSFILTER, in either family. Their addresses are struct
 * __kernel_sockaddr_storage (128 octets, aligned to a pointer) holding a sockaddr_in or a
 * sockaddr_in6 (common.ts), zeros after. Laid out for 64-bit Linux (checked with
 * sizeof/offsetof on x86_64):
 *
 *   group_req, 136 octets:
 *     0 gr_interface u32 | 4 padding | 8 gr_group sockaddr_storage
 *   group_source_req, 264 octets:
 *     0 gsr_interface u32 | 4 padding | 8 gsr_group sockaddr_storage | 136 gsr_source sockaddr_storage
 *   group_filter, 144 + 128 × numsrc octets (GROUP_FILTER_SIZE):
 *     0 gf_interface u32 | 4 padding | 8 gf_group sockaddr_storage | 136 gf_fmode u32
 *     140 gf_numsrc u32 | 144 gf_slist: numsrc × sockaddr_storage
 *
 * The kernel takes the interface from the ifindex field, never from sin6_scope_id, which is
 * written 0. On a 32-bit kernel the storage is aligned to 4 and every offset after the
 * interface moves, so encoding refuses any other process.arch rather than send the kernel a
 * wrong struct. Each codec exists once per family (`groupReq.ipv4`, `groupReq.ipv6`, ...):
 * decoding checks that every address is of the family the struct is read as.
 */
import { DecodeError, UnavailableError } from '../../errors.js';
import { checkUint, need, outputBuffer } from '../../wire/bytes.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import {
  checkAddressOf,
  readSockaddr,
  SOCKADDR_STORAGE_LENGTH,
  type SockaddrDecodeCode,
  type StructCodec,
  truncated,
  view,
  writeSockaddr,
} from './common.js';
import { MCAST_EXCLUDE, MCAST_INCLUDE } from './constants.js';

const GROUP_AT = 8;
const SOURCE_AT = 136;
const FMODE_AT = 136;
const NUMSRC_AT = 140;
const SLIST_AT = 144;

export const GROUP_REQ_LENGTH = 136;
export const GROUP_SOURCE_REQ_LENGTH = 264;
/** GROUP_FILTER_SIZE(0): a group_filter without sources. */
export const GROUP_FILTER_BASE_LENGTH = SLIST_AT;

/**
 * 64-bit little-endian Linux architectures, whose layout is the one above (the other codecs here also write host order
 * as little-endian).
 */
const SUPPORTED_ARCHES: ReadonlySet<string> = new Set(['x64', 'arm64', 'riscv64', 'loong64']);

/** Why these codecs refuse bytes: a sockaddr of the other family, a filter mode that is neither. */
export type GroupReqDecodeCode = SockaddrDecodeCode | 'bad-filter-mode';

export interface GroupReq {
  ifindex: number;
  group: string;
}

export interface GroupSourceReq extends GroupReq {
  source: string;
}

export type FilterModeName = 'include' | 'exclude';

export interface GroupFilter extends GroupReq {
  mode: FilterModeName;
  sources: string[];
}

/** Throws on an architecture whose struct layout this module does not write. */
export function checkLayout(arch: string = process.arch): void {
  if (SUPPORTED_ARCHES.has(arch)) return;
  throw new UnavailableError(
    `source-specific multicast options need a 64-bit little-endian kernel layout; this process runs on ${arch}`,
    {
      hint: `struct group_source_req and group_filter are encoded for ${[...SUPPORTED_ARCHES].join(', ')} only`,
    },
  );
}

/** GROUP_FILTER_SIZE(count). */
export function groupFilterLength(count: number): number {
  return SLIST_AT + count * SOCKADDR_STORAGE_LENGTH;
}

/** The interface, its padding and the group: what every struct here starts with. */
function writeHeader(family: AddressFamily, out: Uint8Array, offset: number, value: GroupReq): void {
  view(out).setUint32(offset, value.ifindex, true);
  out.fill(0, offset + 4, offset + GROUP_AT);
  writeSockaddr(family, out, offset + GROUP_AT, value.group, SOCKADDR_STORAGE_LENGTH);
}

function checkHeader(family: AddressFamily, value: GroupReq): void {
  checkLayout();
  checkUint(value.ifindex, 0xffffffff, 'ifindex');
  checkAddressOf(family, value.group, 'group');
}

function groupReqCodec(family: AddressFamily): StructCodec<GroupReq> {
  return {
    encodingLength: () => GROUP_REQ_LENGTH,
    encode(value, buf, offset = 0) {
      checkHeader(family, value);
      const out = outputBuffer(GROUP_REQ_LENGTH, buf, offset, 'group_req');
      writeHeader(family, out, offset, value);
      return out;
    },
    decode(bytes, start = 0, end = bytes.length) {
      need({ at: start, end }, GROUP_REQ_LENGTH, 'a group_req', truncated);
      return {
        ifindex: view(bytes).getUint32(start, true),
        group: readSockaddr(family, bytes, start + GROUP_AT, 'gr_group'),
      };
    },
  };
}

function groupSourceReqCodec(family: AddressFamily): StructCodec<GroupSourceReq> {
  return {
    encodingLength: () => GROUP_SOURCE_REQ_LENGTH,
    encode(value, buf, offset = 0) {
      checkHeader(family, value);
      checkAddressOf(family, value.source, 'source');
      const out = outputBuffer(GROUP_SOURCE_REQ_LENGTH, buf, offset, 'group_source_req');
      writeHeader(family, out, offset, value);
      writeSockaddr(family, out, offset + SOURCE_AT, value.source, SOCKADDR_STORAGE_LENGTH);
      return out;
    },
    decode(bytes, start = 0, end = bytes.length) {
      need({ at: start, end }, GROUP_SOURCE_REQ_LENGTH, 'a group_source_req', truncated);
      return {
        ifindex: view(bytes).getUint32(start, true),
        group: readSockaddr(family, bytes, start + GROUP_AT, 'gsr_group'),
        source: readSockaddr(family, bytes, start + SOURCE_AT, 'gsr_source'),
      };
    },
  };
}

function groupFilterCodec(family: AddressFamily): StructCodec<GroupFilter> {
  return {
    encodingLength: (value) => groupFilterLength(value.sources.length),
    encode(value, buf, offset = 0) {
      checkHeader(family, value);
      checkUint(value.sources.length, 0xffffffff, 'number of sources');
      for (const source of value.sources) checkAddressOf(family, source, 'source');
      const out = outputBuffer(groupFilterLength(value.sources.length), buf, offset, 'group_filter');
      writeHeader(family, out, offset, value);
      const dv = view(out);
      dv.setUint32(offset + FMODE_AT, value.mode === 'include' ? MCAST_INCLUDE : MCAST_EXCLUDE, true);
      dv.setUint32(offset + NUMSRC_AT, value.sources.length, true);
      value.sources.forEach((source, index) =>
        writeSockaddr(
          family,
          out,
          offset + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH,
          source,
          SOCKADDR_STORAGE_LENGTH,
        ),
      );
      return out;
    },
    decode(bytes, start = 0, end = bytes.length) {
      need({ at: start, end }, SLIST_AT, 'a group_filter', truncated);
      const dv = view(bytes);
      const fmode = dv.getUint32(start + FMODE_AT, true);
      if (fmode !== MCAST_INCLUDE && fmode !== MCAST_EXCLUDE)
        throw new DecodeError<GroupReqDecodeCode>(
          'bad-filter-mode',
          `gf_fmode ${fmode} is neither INCLUDE nor EXCLUDE`,
        );
      const count = dv.getUint32(start + NUMSRC_AT, true);
      need({ at: start, end }, groupFilterLength(count), `a group_filter of ${count} sources`, truncated);
      const sources = Array.from({ length: count }, (_, index) =>
        readSockaddr(family, bytes, start + SLIST_AT + index * SOCKADDR_STORAGE_LENGTH, 'gf_slist'),
      );
      return {
        ifindex: dv.getUint32(start, true),
        group: readSockaddr(family, bytes, start + GROUP_AT, 'gf_group'),
        mode: fmode === MCAST_INCLUDE ? 'include' : 'exclude',
        sources,
      };
    },
  };
}

export const groupReq: Readonly<Record<AddressFamily, StructCodec<GroupReq>>> = {
  ipv4: groupReqCodec('ipv4'),
  ipv6: groupReqCodec('ipv6'),
};
export const groupSourceReq: Readonly<Record<AddressFamily, StructCodec<GroupSourceReq>>> = {
  ipv4: groupSourceReqCodec('ipv4'),
  ipv6: groupSourceReqCodec('ipv6'),
};
export const groupFilter: Readonly<Record<AddressFamily, StructCodec<GroupFilter>>> = {
  ipv4: groupFilterCodec('ipv4'),
  ipv6: groupFilterCodec('ipv6'),
};
