/**
 * Parsers of /proc/net/ip6_mr_vif and /proc/net/ip6_mr_cache (net/ipv6/ip6mr.c,
 * ip6mr_vif_seq_show and ipmr_mfc_seq_show), the kernel's view of the MIF table and the
 * IPv6 multicast forwarding cache of the reading process's network namespace. Both files
 * show only the default table.
 *
 *   ip6_mr_vif:   "%2td %-10s %8ld %7ld  %8ld %7ld %05X"
 *                  mif, name ("none" once its device is gone), bytes in, packets in,
 *                  bytes out, packets out, flags. No address columns (a MIF has none).
 *   ip6_mr_cache: "%pI6 %pI6 %-3hd" group, origin, iif, then " %8lu %8lu %8lu" packets,
 *                  bytes, wrong, then for a resolved entry " %2d:%-3d" per oif (mif:ttl).
 *                  An unresolved entry (waiting for the daemon's MFC) shows 0 0 0, no oifs.
 *
 * %pI6 prints the 16 octets in order as 8 groups of 4 lower-case hex digits
 * ("ff3e:0000:...:0001"), so unlike ip_mr_cache's %08X there is no byte-order question.
 * Rows carry RFC 5952 canonical text. A line that strays from these formats is refused
 * with DecodeError 'bad-proc-file', the code of the IPv4 parsers.
 */
import { readFile } from 'node:fs/promises';

import { DecodeError, isSystemError } from '../../errors.js';
import { parseIPv6, readIPv6 } from '../../wire/ipv6-address.js';
import { VIFF_STATIC } from '../mroute/constants.js';
import type { InterfaceMembershipRow, ProcDecodeErrorCode } from '../mroute/proc.js';
import { MIFF_REGISTER } from './constants.js';

export interface MifRow {
  mif: number;
  /** The MIF's device ("pim6reg" for the register MIF; "none" once the device is gone). */
  name: string;
  bytesIn: number;
  packetsIn: number;
  bytesOut: number;
  packetsOut: number;
  flags: number;
  /** MIFF_REGISTER: the PIM register MIF. */
  register: boolean;
  /** VIFF_STATIC (0x8000): added by a socket that is not the MRT6_INIT holder; it stays when sockets close. */
  static: boolean;
}

export interface Mfc6Oif {
  mif: number;
  /** Always 1 for entries added through mf6cctl, whose if_set carries no thresholds. */
  ttl: number;
}

export interface Mfc6Row {
  group: string;
  origin: string;
  /** Incoming MIF (-1 for an unresolved entry). */
  iif: number;
  packets: number;
  bytes: number;
  wrong: number;
  oifs: Mfc6Oif[];
}

const VIF_HEADER = 'Interface';
const CACHE_HEADER = 'Group';
/** %pI6: exactly 8 groups of 4 hex digits. */
const PI6 = /^[0-9a-f]{4}(?::[0-9a-f]{4}){7}$/i;

function bad(message: string): DecodeError<ProcDecodeErrorCode> {
  return new DecodeError<ProcDecodeErrorCode>('bad-proc-file', message);
}

/** A %pI6-printed address → RFC 5952 canonical text. */
export function procIPv6(text: string): string {
  const bytes = PI6.test(text) ? parseIPv6(text) : undefined;
  if (bytes === undefined) throw bad(`not a /proc IPv6 address: ${JSON.stringify(text)}`);
  return readIPv6(bytes, 0);
}

function integer(text: string | undefined, what: string, line: string): number {
  if (text === undefined || !/^-?\d+$/.test(text)) throw bad(`${what} missing or not a number in ${JSON.stringify(line)}`);
  return Number(text);
}

/** The data lines of a /proc table after checking its header line. */
function rows(text: string, header: string, file: string): string[] {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  if (lines.length === 0) return [];
  if (!lines[0]!.startsWith(header)) throw bad(`${file} does not start with its header line: ${JSON.stringify(lines[0])}`);
  return lines.slice(1);
}

export function parseMifTable(text: string): MifRow[] {
  return rows(text, VIF_HEADER, 'ip6_mr_vif').map((line) => {
    const fields = line.trim().split(/\s+/);
    if (fields.length !== 7) throw bad(`expected 7 fields in ip6_mr_vif line ${JSON.stringify(line)}`);
    if (!/^[0-9A-Fa-f]+$/.test(fields[6]!)) throw bad(`flags not hex in ip6_mr_vif line ${JSON.stringify(line)}`);
    const flags = parseInt(fields[6]!, 16);
    return {
      mif: integer(fields[0], 'MIF', line),
      name: fields[1]!,
      bytesIn: integer(fields[2], 'BytesIn', line),
      packetsIn: integer(fields[3], 'PktsIn', line),
      bytesOut: integer(fields[4], 'BytesOut', line),
      packetsOut: integer(fields[5], 'PktsOut', line),
      flags,
      register: (flags & MIFF_REGISTER) !== 0,
      static: (flags & VIFF_STATIC) !== 0,
    };
  });
}

export function parseMfc6Cache(text: string): Mfc6Row[] {
  return rows(text, CACHE_HEADER, 'ip6_mr_cache').map((line) => {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6) throw bad(`expected at least 6 fields in ip6_mr_cache line ${JSON.stringify(line)}`);
    const oifs = fields.slice(6).map((field) => {
      const match = /^(\d+):(\d+)$/.exec(field);
      if (!match) throw bad(`bad oif ${JSON.stringify(field)} in ip6_mr_cache line ${JSON.stringify(line)}`);
      return { mif: Number(match[1]), ttl: Number(match[2]) };
    });
    return {
      group: procIPv6(fields[0]!),
      origin: procIPv6(fields[1]!),
      iif: integer(fields[2], 'Iif', line),
      packets: integer(fields[3], 'Pkts', line),
      bytes: integer(fields[4], 'Bytes', line),
      wrong: integer(fields[5], 'Wrong', line),
      oifs,
    };
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

/** Where readRoute6Tables reads (the defaults are this process's namespace; tests point them at files). */
export interface Route6TablePaths {
  mifs?: string;
  cache?: string;
  /** net.ipv6.conf.all.mc_forwarding: 1 while some socket holds MRT6_INIT. */
  mcForwarding?: string;
}

export interface Route6Tables {
  /** Some socket holds MRT6_INIT here: routes forward. */
  routerActive: boolean;
  mifs: MifRow[];
  routes: Mfc6Row[];
}

/**
 * The IPv6 multicast routing tables of this namespace, or undefined when the kernel has
 * none to show (no IPv6, or no CONFIG_IPV6_MROUTE: the /proc files are absent). That is
 * not an error: a host without IPv6 simply has no IPv6 routes.
 */
export async function readRoute6Tables(paths: Route6TablePaths = {}): Promise<Route6Tables | undefined> {
  let mifs: MifRow[];
  let routes: Mfc6Row[];
  try {
    [mifs, routes] = await Promise.all([readMifTable(paths.mifs), readMfc6Cache(paths.cache)]);
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined;
    throw error;
  }
  let routerActive = false;
  try {
    routerActive = (await readFile(paths.mcForwarding ?? '/proc/sys/net/ipv6/conf/all/mc_forwarding', 'utf8')).trim() === '1';
  } catch {
    // No such sysctl: the kernel cannot route IPv6 multicast at all.
  }
  return { routerActive, mifs, routes };
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

/** The IPv6 groups every interface of this process's network namespace has joined (none without IPv6). */
export async function readMldMemberships(path = '/proc/net/igmp6'): Promise<InterfaceMembershipRow[]> {
  try {
    return parseMldMemberships(await readFile(path, 'utf8'));
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return [];
    throw error;
  }
}
