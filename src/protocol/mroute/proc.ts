/**
 * Parsers of /proc/net/ip_mr_vif and /proc/net/ip_mr_cache (net/ipv4/ipmr.c,
 * ipmr_vif_seq_show and ipmr_mfc_seq_show), the kernel's view of the VIF table and the
 * multicast forwarding cache of the reading process's network namespace. The mroute
 * sockets offer no ioctl (SIOCGETVIFCNT, SIOCGETSGCNT), so these are where per-VIF and
 * per-(S,G) counters come from.
 *
 * Addresses are a __be32 printed with %08X: on a little-endian machine the octets appear
 * reversed (10.0.0.1 is "0100000A"). Both files only show the default table (table 254).
 *
 *   ip_mr_vif:   "%2d %-10s %8ld %7ld  %8ld %7ld %05X %08X %08X"
 *                 vif, name, bytes in, packets in, bytes out, packets out, flags, local, remote
 *   ip_mr_cache: "%08X %08X %-3hd" group, origin, iif, then for a resolved entry
 *                "%8lu %8lu %8lu" packets, bytes, wrong, then " %2d:%-3d" per oif (vif:ttl);
 *                an unresolved entry (waiting for the daemon's MFC) shows 0 0 0 and no oifs.
 */
import { readFile } from 'node:fs/promises';
import { endianness } from 'node:os';

import { DecodeError } from '../../errors.js';
import { VIFF_STATIC, VIFF_USE_IFINDEX } from './constants.js';

/** A /proc/net/ip_mr_* line this parser cannot read. */
export type ProcDecodeErrorCode = 'bad-proc-file';

export interface VifRow {
  vif: number;
  name: string;
  bytesIn: number;
  packetsIn: number;
  bytesOut: number;
  packetsOut: number;
  flags: number;
  /** VIFF_STATIC (0x8000): added by a socket that is not the MRT_INIT holder; it stays when sockets close. */
  static: boolean;
  /**
   * The VIF's local end. For a VIF added with VIFF_USE_IFINDEX the kernel keeps the ifindex
   * in the same union as the address and prints that (an ifindex 2 shows as 00000002).
   */
  local: { kind: 'ifindex'; ifindex: number } | { kind: 'address'; address: string };
  remoteAddress: string;
}

export interface MfcOif {
  vif: number;
  ttl: number;
}

export interface MfcRow {
  group: string;
  origin: string;
  /** Incoming VIF (-1 is possible for an unresolved entry). */
  iif: number;
  packets: number;
  bytes: number;
  wrong: number;
  oifs: MfcOif[];
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** A %08X-printed __be32 → dotted quad. */
export function procAddress(hex: string, littleEndian = LITTLE_ENDIAN): string {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `not a /proc address: ${JSON.stringify(hex)}`);
  const value = parseInt(hex, 16);
  const octets = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
  return (littleEndian ? octets.reverse() : octets).join('.');
}

/** The union's ifindex (a host-order int) from the same %08X printing of its four octets. */
function procInt32(hex: string, littleEndian: boolean): number {
  const octets = procAddress(hex, littleEndian).split('.').map(Number);
  return littleEndian ? Buffer.from(octets).readInt32LE(0) : Buffer.from(octets).readInt32BE(0);
}

function integer(text: string | undefined, what: string, line: string): number {
  if (text === undefined || !/^-?\d+$/.test(text))
    throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `${what} missing or not a number in ${JSON.stringify(line)}`);
  return Number(text);
}

export function parseVifTable(text: string, littleEndian = LITTLE_ENDIAN): VifRow[] {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.slice(1).map((line) => {
    const fields = line.trim().split(/\s+/);
    if (fields.length !== 9) throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `expected 9 fields in ip_mr_vif line ${JSON.stringify(line)}`);
    const flags = parseInt(fields[6]!, 16);
    return {
      vif: integer(fields[0], 'VIF', line),
      name: fields[1]!,
      bytesIn: integer(fields[2], 'BytesIn', line),
      packetsIn: integer(fields[3], 'PktsIn', line),
      bytesOut: integer(fields[4], 'BytesOut', line),
      packetsOut: integer(fields[5], 'PktsOut', line),
      flags,
      static: (flags & VIFF_STATIC) !== 0,
      local:
        (flags & VIFF_USE_IFINDEX) !== 0
          ? { kind: 'ifindex', ifindex: procInt32(fields[7]!, littleEndian) }
          : { kind: 'address', address: procAddress(fields[7]!, littleEndian) },
      remoteAddress: procAddress(fields[8]!, littleEndian),
    };
  });
}

export function parseMfcCache(text: string, littleEndian = LITTLE_ENDIAN): MfcRow[] {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.slice(1).map((line) => {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6)
      throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `expected at least 6 fields in ip_mr_cache line ${JSON.stringify(line)}`);
    const oifs = fields.slice(6).map((field) => {
      const match = /^(\d+):(\d+)$/.exec(field);
      if (!match) throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `bad oif ${JSON.stringify(field)} in ip_mr_cache line ${JSON.stringify(line)}`);
      return { vif: Number(match[1]), ttl: Number(match[2]) };
    });
    return {
      group: procAddress(fields[0]!, littleEndian),
      origin: procAddress(fields[1]!, littleEndian),
      iif: integer(fields[2], 'Iif', line),
      packets: integer(fields[3], 'Pkts', line),
      bytes: integer(fields[4], 'Bytes', line),
      wrong: integer(fields[5], 'Wrong', line),
      oifs,
    };
  });
}

/** The VIF table of this process's network namespace. */
export async function readVifTable(path = '/proc/net/ip_mr_vif'): Promise<VifRow[]> {
  return parseVifTable(await readFile(path, 'utf8'));
}

/** The multicast forwarding cache of this process's network namespace. */
export async function readMfcCache(path = '/proc/net/ip_mr_cache'): Promise<MfcRow[]> {
  return parseMfcCache(await readFile(path, 'utf8'));
}

/** One group an interface has joined, as /proc/net/igmp (or igmp6) shows it. */
export interface InterfaceMembershipRow {
  /** The device's name. */
  name: string;
  group: string;
}

/**
 * /proc/net/igmp (net/ipv4/igmp.c, igmp_mc_seq_show): a line per device ("%d\t%-10s: %5d
 * %7s") followed by a line per group it has joined ("\t\t\t\t%08X %5d %d:%08lX\t\t%d",
 * the group a __be32 as in the other tables). The kernel's joins of every socket in the
 * namespace, the router's upstream ones among them.
 */
export function parseIgmpMemberships(text: string, littleEndian = LITTLE_ENDIAN): InterfaceMembershipRow[] {
  const rows: InterfaceMembershipRow[] = [];
  let device: string | undefined;
  for (const line of text.split('\n').slice(1)) {
    if (line.trim() === '') continue;
    const deviceLine = /^\d+\s+(\S+)\s*:/.exec(line);
    if (deviceLine !== null) {
      device = deviceLine[1]!;
      continue;
    }
    const group = /^\s+([0-9A-Fa-f]{8})\s/.exec(line);
    if (group === null || device === undefined) throw new DecodeError<ProcDecodeErrorCode>('bad-proc-file', `not an igmp line: ${JSON.stringify(line)}`);
    rows.push({ name: device, group: procAddress(group[1]!, littleEndian) });
  }
  return rows;
}

/** The IPv4 groups every interface of this process's network namespace has joined. */
export async function readIgmpMemberships(path = '/proc/net/igmp'): Promise<InterfaceMembershipRow[]> {
  return parseIgmpMemberships(await readFile(path, 'utf8'));
}
