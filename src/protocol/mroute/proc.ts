/**
 * Parsers of the kernel's multicast routing tables under /proc, both families: the view of
 * the routing interfaces (VIFs, MIFs) and of the forwarding cache of the reading process's
 * network namespace, and each interface's joined groups. The routing sockets offer no ioctl
 * (SIOCGETVIFCNT, SIOCGETSGCNT), so these are where per-interface and per-(S,G) counters
 * come from. Each file shows only the default table.
 *
 *   ip_mr_vif (net/ipv4/ipmr.c, ipmr_vif_seq_show), ip6_mr_vif (net/ipv6/ip6mr.c):
 *     "%2d %-10s %8ld %7ld  %8ld %7ld %05X" index, name, bytes in, packets in, bytes out,
 *     packets out, flags; IPv4 adds " %08X %08X", the local and remote address. A MIF has
 *     no address, and its name is "none" once its device is gone.
 *   ip_mr_cache, ip6_mr_cache (ipmr_mfc_seq_show): group, origin, "%-3hd" iif, then
 *     "%8lu %8lu %8lu" packets, bytes, wrong, then " %2d:%-3d" per oif (index:ttl); an
 *     unresolved entry (waiting for the router's) shows iif -1, 0 0 0 and no oifs.
 *
 * Addresses differ by family. IPv4's are a __be32 printed with %08X: on a little-endian
 * machine the octets appear reversed (10.0.0.1 is "0100000A"). IPv6's are %pI6, the 16
 * octets in order as 8 groups of 4 hex digits ("ff3e:0000:...:0001"), with no byte-order
 * question; rows carry RFC 5952 canonical text. A line that strays from these formats is
 * refused with DecodeError 'bad-proc-file'.
 */
import { readFile } from 'node:fs/promises';
import { endianness } from 'node:os';

import { DecodeError, isSystemError } from '../../errors.js';
import { parseIPv6, readIPv6 } from '../../wire/ipv6-address.js';
import { MIFF_REGISTER, VIFF_STATIC, VIFF_USE_IFINDEX } from './constants.js';

/** A /proc line this parser cannot read. */
export type ProcDecodeErrorCode = 'bad-proc-file';

/** A routing interface the kernel has now (a VIF or a MIF). */
export interface RoutingInterfaceRow {
  index: number;
  /** The device's name as the kernel's table prints it. */
  name: string;
  /** Its ifindex, where the table tells it (IPv4 VIFs added by ifindex). */
  ifindex?: number;
  /** Added by a socket without MRT_INIT: it stays when sockets close. */
  static: boolean;
}

/** One forwarding-cache entry (MFC or MFC6), its interfaces and counters. */
export interface ForwardingCacheRow {
  source: string;
  group: string;
  /** Incoming interface (-1 for an unresolved entry). */
  iif: number;
  oifs: number[];
  packets: number;
  bytes: number;
}

/** One group an interface has joined, as /proc/net/igmp (or igmp6) shows it. */
export interface InterfaceMembershipRow {
  /** The device's name. */
  name: string;
  group: string;
}

/** The columns both interface tables have, after the index and the name. */
interface InterfaceColumns {
  name: string;
  bytesIn: number;
  packetsIn: number;
  bytesOut: number;
  packetsOut: number;
  flags: number;
  /** VIFF_STATIC (0x8000): added by a socket that is not the MRT_INIT holder; it stays when sockets close. */
  static: boolean;
}

export interface VifRow extends InterfaceColumns {
  vif: number;
  /**
   * The VIF's local end. For a VIF added with VIFF_USE_IFINDEX the kernel keeps the ifindex
   * in the same union as the address and prints that (an ifindex 2 shows as 00000002).
   */
  local: { kind: 'ifindex'; ifindex: number } | { kind: 'address'; address: string };
  remoteAddress: string;
}

export interface MifRow extends InterfaceColumns {
  mif: number;
  /** MIFF_REGISTER: the PIM register MIF ("pim6reg"). */
  register: boolean;
}

/** The columns both caches have, the oifs aside. */
interface CacheColumns {
  group: string;
  origin: string;
  /** Incoming interface (-1 for an unresolved entry). */
  iif: number;
  packets: number;
  bytes: number;
  wrong: number;
}

export interface MfcOif {
  vif: number;
  ttl: number;
}

export interface MfcRow extends CacheColumns {
  oifs: MfcOif[];
}

export interface Mfc6Oif {
  mif: number;
  /** Always 1 for entries added through mf6cctl, whose if_set carries no thresholds. */
  ttl: number;
}

export interface Mfc6Row extends CacheColumns {
  oifs: Mfc6Oif[];
}

const LITTLE_ENDIAN = endianness() === 'LE';
/** %pI6: exactly 8 groups of 4 hex digits. */
const PI6 = /^[0-9a-f]{4}(?::[0-9a-f]{4}){7}$/i;

function bad(message: string): DecodeError<ProcDecodeErrorCode> {
  return new DecodeError<ProcDecodeErrorCode>('bad-proc-file', message);
}

function integer(text: string | undefined, what: string, line: string): number {
  if (text === undefined || !/^-?\d+$/.test(text))
    throw bad(`${what} missing or not a number in ${JSON.stringify(line)}`);
  return Number(text);
}

/** The fields of each data line of a /proc table, after checking its header line and the fields' count. */
function dataRows(
  text: string,
  file: string,
  header: string,
  fieldCount: { exactly: number } | { atLeast: number },
): Array<{ line: string; fields: string[] }> {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  if (lines.length === 0) return [];
  if (!lines[0]!.startsWith(header))
    throw bad(`${file} does not start with its header line: ${JSON.stringify(lines[0])}`);
  return lines.slice(1).map((line) => {
    const fields = line.trim().split(/\s+/);
    if ('exactly' in fieldCount ? fields.length !== fieldCount.exactly : fields.length < fieldCount.atLeast) {
      const count = 'exactly' in fieldCount ? `${fieldCount.exactly}` : `at least ${fieldCount.atLeast}`;
      throw bad(`expected ${count} fields in ${file} line ${JSON.stringify(line)}`);
    }
    return { line, fields };
  });
}

function interfaceColumns(fields: string[], line: string, file: string): InterfaceColumns {
  if (!/^[0-9A-Fa-f]+$/.test(fields[6]!)) throw bad(`flags not hex in ${file} line ${JSON.stringify(line)}`);
  const flags = parseInt(fields[6]!, 16);
  return {
    name: fields[1]!,
    bytesIn: integer(fields[2], 'BytesIn', line),
    packetsIn: integer(fields[3], 'PktsIn', line),
    bytesOut: integer(fields[4], 'BytesOut', line),
    packetsOut: integer(fields[5], 'PktsOut', line),
    flags,
    static: (flags & VIFF_STATIC) !== 0,
  };
}

/** A cache line's columns, with its oifs as [index, ttl]; `address` reads the family's address text. */
function cacheColumns(
  fields: string[],
  line: string,
  file: string,
  address: (text: string) => string,
): CacheColumns & { oifs: Array<[number, number]> } {
  const oifs = fields.slice(6).map((field): [number, number] => {
    const match = /^(\d+):(\d+)$/.exec(field);
    if (!match) throw bad(`bad oif ${JSON.stringify(field)} in ${file} line ${JSON.stringify(line)}`);
    return [Number(match[1]), Number(match[2])];
  });
  return {
    group: address(fields[0]!),
    origin: address(fields[1]!),
    iif: integer(fields[2], 'Iif', line),
    packets: integer(fields[3], 'Pkts', line),
    bytes: integer(fields[4], 'Bytes', line),
    wrong: integer(fields[5], 'Wrong', line),
    oifs,
  };
}

// ---------------------------------------------------------------------------------------
// IPv4: /proc/net/ip_mr_vif, /proc/net/ip_mr_cache, /proc/net/igmp

/** A %08X-printed __be32 → dotted quad. */
export function procAddress(hex: string, littleEndian = LITTLE_ENDIAN): string {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) throw bad(`not a /proc address: ${JSON.stringify(hex)}`);
  const value = parseInt(hex, 16);
  const octets = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
  return (littleEndian ? octets.reverse() : octets).join('.');
}

/** The union's ifindex (a host-order int) from the same %08X printing of its four octets. */
function procInt32(hex: string, littleEndian: boolean): number {
  const octets = procAddress(hex, littleEndian).split('.').map(Number);
  return littleEndian ? Buffer.from(octets).readInt32LE(0) : Buffer.from(octets).readInt32BE(0);
}

export function parseVifTable(text: string, littleEndian = LITTLE_ENDIAN): VifRow[] {
  return dataRows(text, 'ip_mr_vif', 'Interface', { exactly: 9 }).map(({ line, fields }) => {
    const columns = interfaceColumns(fields, line, 'ip_mr_vif');
    return {
      vif: integer(fields[0], 'VIF', line),
      ...columns,
      local:
        (columns.flags & VIFF_USE_IFINDEX) !== 0
          ? { kind: 'ifindex', ifindex: procInt32(fields[7]!, littleEndian) }
          : { kind: 'address', address: procAddress(fields[7]!, littleEndian) },
      remoteAddress: procAddress(fields[8]!, littleEndian),
    };
  });
}

export function parseMfcCache(text: string, littleEndian = LITTLE_ENDIAN): MfcRow[] {
  return dataRows(text, 'ip_mr_cache', 'Group', { atLeast: 6 }).map(({ line, fields }) => {
    const columns = cacheColumns(fields, line, 'ip_mr_cache', (hex) => procAddress(hex, littleEndian));
    return { ...columns, oifs: columns.oifs.map(([vif, ttl]) => ({ vif, ttl })) };
  });
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
    if (group === null || device === undefined) throw bad(`not an igmp line: ${JSON.stringify(line)}`);
    rows.push({ name: device, group: procAddress(group[1]!, littleEndian) });
  }
  return rows;
}

/** The VIF table of this process's network namespace. */
export async function readVifTable(path = '/proc/net/ip_mr_vif'): Promise<VifRow[]> {
  return parseVifTable(await readFile(path, 'utf8'));
}

/** The multicast forwarding cache of this process's network namespace. */
export async function readMfcCache(path = '/proc/net/ip_mr_cache'): Promise<MfcRow[]> {
  return parseMfcCache(await readFile(path, 'utf8'));
}

/** The IPv4 groups every interface of this process's network namespace has joined. */
export async function readIgmpMemberships(path = '/proc/net/igmp'): Promise<InterfaceMembershipRow[]> {
  return parseIgmpMemberships(await readFile(path, 'utf8'));
}

// ---------------------------------------------------------------------------------------
// IPv6: /proc/net/ip6_mr_vif, /proc/net/ip6_mr_cache, /proc/net/igmp6

/** A %pI6-printed address → RFC 5952 canonical text. */
export function procIPv6(text: string): string {
  const bytes = PI6.test(text) ? parseIPv6(text) : undefined;
  if (bytes === undefined) throw bad(`not a /proc IPv6 address: ${JSON.stringify(text)}`);
  return readIPv6(bytes, 0);
}

export function parseMifTable(text: string): MifRow[] {
  return dataRows(text, 'ip6_mr_vif', 'Interface', { exactly: 7 }).map(({ line, fields }) => {
    const columns = interfaceColumns(fields, line, 'ip6_mr_vif');
    return { mif: integer(fields[0], 'MIF', line), ...columns, register: (columns.flags & MIFF_REGISTER) !== 0 };
  });
}

export function parseMfc6Cache(text: string): Mfc6Row[] {
  return dataRows(text, 'ip6_mr_cache', 'Group', { atLeast: 6 }).map(({ line, fields }) => {
    const columns = cacheColumns(fields, line, 'ip6_mr_cache', procIPv6);
    return { ...columns, oifs: columns.oifs.map(([mif, ttl]) => ({ mif, ttl })) };
  });
}

/**
 * /proc/net/igmp6 (net/ipv6/mcast.c, igmp6_mc_seq_show): "%-4d %-15s %pi6 %5d %08X %ld" a
 * line per joined group: ifindex, device, the group as 32 hex digits, users, flags, timer.
 */
export function parseMldMemberships(text: string): InterfaceMembershipRow[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const fields = line.trim().split(/\s+/);
      const hex = fields[2] ?? '';
      if (fields.length < 3 || !/^[0-9a-f]{32}$/i.test(hex)) throw bad(`not an igmp6 line: ${JSON.stringify(line)}`);
      return { name: fields[1]!, group: procIPv6(hex.match(/.{4}/g)!.join(':')) };
    });
}

/** The MIF table of this process's network namespace. */
export async function readMifTable(path = '/proc/net/ip6_mr_vif'): Promise<MifRow[]> {
  return parseMifTable(await readFile(path, 'utf8'));
}

/** The IPv6 multicast forwarding cache of this process's network namespace. */
export async function readMfc6Cache(path = '/proc/net/ip6_mr_cache'): Promise<Mfc6Row[]> {
  return parseMfc6Cache(await readFile(path, 'utf8'));
}

/** The IPv6 groups every interface of this process's network namespace has joined (none without IPv6). */
export async function readMldMemberships(path = '/proc/net/igmp6'): Promise<InterfaceMembershipRow[]> {
  try {
    return parseMldMemberships(await readFile(path, 'utf8'));
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return [];
    throw error;
  }
}
