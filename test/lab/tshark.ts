/**
 * An independent second opinion on a capture: tshark's dissection of every IGMP and MLD
 * frame, mapped onto the shape of `mcastctl snoop --json` lines, and a field-by-field
 * comparison of the two.
 *
 * The IGMP mapping uses only tshark's igmp.* / ip.* / frame.* fields (checked against
 * tshark 4.0's packet-igmp.c and its real output):
 * - frame.number, frame.time_epoch; ip.src, ip.dst, ip.proto, ip.flags.mf,
 *   ip.frag_offset, ip.checksum.status (with ip.check_checksum on);
 * - igmp.type (hex text), igmp.version (tshark's own: queries by the RFC 3376 §7.1
 *   length rule; 0x12 is v1, 0x16/0x17 v2, 0x22 v3; none for types it does not treat as
 *   IGMP proper), igmp.checksum.status (0 bad, 1 good, 2 not verified), igmp.maddr;
 * - queries: igmp.max_resp in tenths of a second (tshark decodes the v3 floating-point
 *   code itself; a v1 query has no such field), igmp.s, igmp.qrv, igmp.qqic (the raw
 *   code: decoded here per RFC 3376 §4.1.7), igmp.saddr (sources);
 * - v3 reports: one subtree per group record holding igmp.record_type, igmp.maddr,
 *   igmp.num_src and igmp.saddr.
 *
 * The MLD mapping uses only tshark's icmpv6.* / ipv6.* / frame.* fields (checked against
 * tshark 4.0's packet-icmpv6.c and its real output, `tshark -G fields`):
 * - ipv6.src, ipv6.dst; ipv6.opt.router_alert anywhere in the hop-by-hop header (its
 *   absence: `no-router-alert`); ipv6.fraghdr.offset, ipv6.fraghdr.more (IPv6
 *   reassembly off); ipv6.plen and ipv6.hopopts.len_oct, for the ICMPv6 length;
 * - icmpv6.type (decimal: 130 query, 131 v1 report, 132 done, 143 v2 report; other types
 *   are not MLD and give no line), icmpv6.checksum.status (0 bad, 1 good, 2 not verified),
 *   icmpv6.mld.multicast_address (the group of a query, v1 report or done);
 * - queries: tshark reads a query of 28 octets or more as MLDv2 and dissects
 *   icmpv6.mld.flag then (so its presence is the version), a shorter one as MLDv1;
 *   icmpv6.mld.maximum_response_delay (v1, ms), icmpv6.mld.maximum_response_code (v2,
 *   ms: tshark decodes the RFC 3810 §5.1.3 floating-point form itself),
 *   icmpv6.mld.flag.s, icmpv6.mld.flag.qrv, icmpv6.mld.qqi (seconds: tshark decodes the
 *   RFC 3810 §5.1.9 code itself), icmpv6.mld.source_address (sources);
 * - v2 reports: one subtree per multicast address record holding
 *   icmpv6.mldr.mar.record_type (the IGMPv3 numbers and names, RFC 3810 §5.2.12),
 *   icmpv6.mldr.mar.multicast_address and icmpv6.mldr.mar.source_address.
 * Every line says its `protocol`: "igmp" for IPv4 frames, "mld" for IPv6 ones.
 *
 * Expectations that come from the output contract rather than from tshark: a v1/v2 IGMP
 * message, an MLDv1 report or done, or a query whose group is not multicast (nor
 * 0.0.0.0 or :: for a query) is an `invalid-group` error, as is an MLDv2 record of a
 * known type naming one; MLD without the hop-by-hop Router Alert is `no-router-alert`; a
 * query of 25 to 27 octets (MLDv1 to tshark) is `bad-length`; and a frame tshark calls
 * malformed must be some error.
 */
import { isMulticast } from '../../src/wire/ip-address.js';
import { run } from './lab.js';

export const RECORD_TYPE_NAMES: Record<number, string> = {
  1: 'MODE_IS_INCLUDE',
  2: 'MODE_IS_EXCLUDE',
  3: 'CHANGE_TO_INCLUDE_MODE',
  4: 'CHANGE_TO_EXCLUDE_MODE',
  5: 'ALLOW_NEW_SOURCES',
  6: 'BLOCK_OLD_SOURCES',
};

export interface GroupRecordLine {
  type: string;
  group: string;
  sources: string[];
}

/** One `snoop --json` line (the contract's fields). */
export interface SnoopLine {
  frame: number;
  ts: number;
  src: string | null;
  dst: string | null;
  /** "igmp" for IPv4 frames, "mld" for IPv6 ones. */
  protocol?: 'igmp' | 'mld';
  version?: number;
  type?: 'query' | 'report' | 'leave' | 'other';
  group?: string;
  maxRespTimeMs?: number;
  sFlag?: boolean;
  qrv?: number;
  qqicSec?: number;
  sources?: string[];
  records?: GroupRecordLine[];
  igmpType?: number;
  error?: string;
  message?: string;
}

/**
 * What tshark says about a frame, in snoop's shape. `error` lines carry the code tshark
 * implies, or '*' when tshark only says "malformed" without saying which way. Fields that
 * tshark does not dissect are absent and listed in `undissected`.
 */
export interface ExpectedLine extends SnoopLine {
  undissected?: string[];
  /** tshark's raw IGMP type octet or ICMPv6 type, for coverage checks. */
  rawType?: number;
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type Tree = { [key: string]: Json };

function first(value: Json | undefined): Json | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function text(tree: Tree, key: string): string | undefined {
  const value = first(tree[key]);
  return typeof value === 'string' ? value : undefined;
}

function all(tree: Tree, key: string): string[] {
  const value = tree[key];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
}

function isTree(value: Json | undefined): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 3376 §4.1.1/§4.1.7 code: below 128 the value itself, else (mant | 0x10) << (exp + 3). */
export function decodeFloatCode(code: number): number {
  return code < 128 ? code : ((code & 0x0f) | 0x10) << (((code >> 4) & 0x07) + 3);
}

/** Group records of a v3 report: the subtrees that hold igmp.record_type, in order. */
function groupRecords(igmp: Tree): GroupRecordLine[] {
  const records: GroupRecordLine[] = [];
  for (const [key, value] of Object.entries(igmp)) {
    if (key.startsWith('igmp.')) continue;
    for (const subtree of Array.isArray(value) ? value : [value]) {
      if (!isTree(subtree) || text(subtree, 'igmp.record_type') === undefined) continue;
      const name = RECORD_TYPE_NAMES[Number(text(subtree, 'igmp.record_type'))];
      // Unknown record types are ignored (RFC 3376 §4.2.12), as snoop does.
      if (name !== undefined)
        records.push({ type: name, group: text(subtree, 'igmp.maddr') ?? '?', sources: all(subtree, 'igmp.saddr') });
    }
  }
  return records;
}

/**
 * Maps one tshark packet (its `layers`) to the expected line, or undefined when it
 * carries neither IGMP (IPv4) nor MLD (IPv6) at the top.
 */
export function expectedFromTshark(layers: Tree): ExpectedLine | undefined {
  const frame = first(layers.frame);
  if (!isTree(frame)) return undefined;
  const meta = { frame: Number(text(frame, 'frame.number')), ts: Number(text(frame, 'frame.time_epoch')) };
  // The outermost IP layer decides, as the frame decoder's locator does.
  const ipLayer = first(layers.ip);
  const ipv6Layer = first(layers.ipv6);
  const keys = Object.keys(layers);
  const v4First = isTree(ipLayer) && (!isTree(ipv6Layer) || keys.indexOf('ip') < keys.indexOf('ipv6'));
  if (v4First) return expectedFromIgmp(layers, ipLayer, meta);
  if (isTree(ipv6Layer)) return expectedFromMld(layers, ipv6Layer, meta);
  return undefined;
}

function expectedFromIgmp(layers: Tree, ipLayer: Tree, meta: { frame: number; ts: number }): ExpectedLine | undefined {
  if (text(ipLayer, 'ip.proto') !== '2') return undefined;
  const line: ExpectedLine = {
    ...meta,
    src: text(ipLayer, 'ip.src') ?? null,
    dst: text(ipLayer, 'ip.dst') ?? null,
    protocol: 'igmp',
  };
  const flags = first(ipLayer['ip.flags_tree']);
  const fragmented =
    (isTree(flags) && text(flags, 'ip.flags.mf') === '1') || Number(text(ipLayer, 'ip.frag_offset') ?? 0) !== 0;
  if (text(ipLayer, 'ip.checksum.status') === '0') return { ...line, error: 'bad-ip-checksum' };
  if (fragmented) return { ...line, error: 'fragmented' };
  const igmp = first(layers.igmp);
  if (!isTree(igmp) || '_ws.malformed' in layers) return { ...line, error: '*' };
  const typeText = text(igmp, 'igmp.type');
  if (typeText === undefined) return { ...line, error: '*' };
  const igmpType = parseInt(typeText, 16);
  line.rawType = igmpType;
  if (text(igmp, 'igmp.checksum.status') === '0') return { ...line, error: 'bad-checksum' };
  const version = Number(text(igmp, 'igmp.version'));
  const group = text(igmp, 'igmp.maddr');
  // tshark has no opinion on this one; the contract does: a report or leave names a
  // multicast group, a query one or 0.0.0.0 (general).
  const groupOk = group !== undefined && (isMulticast(group) || (igmpType === 0x11 && group === '0.0.0.0'));
  if ([0x11, 0x12, 0x16, 0x17].includes(igmpType) && !groupOk) return { ...line, error: 'invalid-group' };
  switch (igmpType) {
    case 0x11: {
      const query: ExpectedLine = { ...line, version, type: 'query', group };
      if (version === 1) {
        query.undissected = ['maxRespTimeMs'];
        return query;
      }
      query.maxRespTimeMs = Number(text(igmp, 'igmp.max_resp')) * 100;
      if (version === 3) {
        query.sFlag = ['1', 'True', 'true'].includes(text(igmp, 'igmp.s') ?? '');
        query.qrv = Number(text(igmp, 'igmp.qrv'));
        query.qqicSec = decodeFloatCode(Number(text(igmp, 'igmp.qqic')));
        query.sources = all(igmp, 'igmp.saddr');
      }
      return query;
    }
    case 0x12:
    case 0x16:
      return { ...line, version, type: 'report', group };
    case 0x17:
      return { ...line, version, type: 'leave', group };
    case 0x22:
      return { ...line, version, type: 'report', records: groupRecords(igmp) };
    default:
      // tshark gives types outside IGMP proper no IGMP version (or version 0, RFC 988).
      return { ...line, type: 'other', igmpType, undissected: ['version'] };
  }
}

/** Every value stored under `key` anywhere in `tree`, in document order. */
function findAll(tree: Json | undefined, key: string, out: Json[] = []): Json[] {
  if (Array.isArray(tree)) for (const item of tree) findAll(item, key, out);
  else if (isTree(tree)) {
    for (const [k, v] of Object.entries(tree)) {
      if (k === key) out.push(...(Array.isArray(v) ? v : [v]));
      else findAll(v, key, out);
    }
  }
  return out;
}

function findText(tree: Json | undefined, key: string): string | undefined {
  const value = findAll(tree, key)[0];
  return typeof value === 'string' ? value : undefined;
}

/** The ICMPv6 types of MLD: query, v1 report, done, v2 report. */
const MLD_TYPES = [130, 131, 132, 143];

/**
 * ff00::/8, read from tshark's text: the first group of a multicast address is always
 * four digits, ff00 to ffff, whatever else is compressed. Written here rather than taken
 * from src/, so that the second opinion stays independent.
 */
function isIPv6Multicast(address: string | undefined): boolean {
  return address !== undefined && /^ff[0-9a-f]{2}:/i.test(address);
}

/** The multicast address records of an MLDv2 report: the subtrees holding icmpv6.mldr.mar.record_type, in order. */
function addressRecords(
  tree: Json | undefined,
  out: { type: number; group: string | undefined; sources: string[] }[] = [],
) {
  if (Array.isArray(tree)) for (const item of tree) addressRecords(item, out);
  else if (isTree(tree)) {
    if (text(tree, 'icmpv6.mldr.mar.record_type') !== undefined) {
      out.push({
        type: Number(text(tree, 'icmpv6.mldr.mar.record_type')),
        group: text(tree, 'icmpv6.mldr.mar.multicast_address'),
        sources: all(tree, 'icmpv6.mldr.mar.source_address'),
      });
      return out;
    }
    for (const value of Object.values(tree)) addressRecords(value, out);
  }
  return out;
}

function expectedFromMld(layers: Tree, ipv6Layer: Tree, meta: { frame: number; ts: number }): ExpectedLine | undefined {
  const icmpv6 = first(layers.icmpv6);
  const typeText = isTree(icmpv6) ? text(icmpv6, 'icmpv6.type') : undefined;
  if (typeText === undefined || !MLD_TYPES.includes(Number(typeText))) return undefined;
  const icmpType = Number(typeText);
  // A later fragment carries no ICMPv6 header of its own: snoop gives it no line.
  const fragmentOffset = Number(findText(ipv6Layer, 'ipv6.fraghdr.offset') ?? 0);
  if (fragmentOffset !== 0) return undefined;
  const line: ExpectedLine = {
    ...meta,
    src: text(ipv6Layer, 'ipv6.src') ?? null,
    dst: text(ipv6Layer, 'ipv6.dst') ?? null,
    protocol: 'mld',
    rawType: icmpType,
  };
  if (!isTree(icmpv6) || '_ws.malformed' in layers) return { ...line, error: '*' };
  if (['1', 'True', 'true'].includes(findText(ipv6Layer, 'ipv6.fraghdr.more') ?? ''))
    return { ...line, error: 'fragmented' };
  // The hop-by-hop header is a subtree of the ipv6 layer in tshark 4.0; looked for everywhere but in the ICMPv6
  // message.
  const routerAlert = findAll({ ...layers, icmpv6: null }, 'ipv6.opt.router_alert').length > 0;
  if (!routerAlert) return { ...line, error: 'no-router-alert' };
  if (text(icmpv6, 'icmpv6.checksum.status') === '0') return { ...line, error: 'bad-checksum' };
  const group = text(icmpv6, 'icmpv6.mld.multicast_address');
  switch (icmpType) {
    case 130: {
      if (!isIPv6Multicast(group) && group !== '::') return { ...line, error: 'invalid-group' };
      if (text(icmpv6, 'icmpv6.mld.flag') === undefined && findText(icmpv6, 'icmpv6.mld.flag.s') === undefined) {
        // tshark reads 24 to 27 octets as MLDv1; RFC 3810 §8.1 (and snoop) only 24.
        if (mldLength(ipv6Layer) !== undefined && mldLength(ipv6Layer) !== 24) return { ...line, error: 'bad-length' };
        return {
          ...line,
          version: 1,
          type: 'query',
          group,
          maxRespTimeMs: Number(text(icmpv6, 'icmpv6.mld.maximum_response_delay')),
        };
      }
      return {
        ...line,
        version: 2,
        type: 'query',
        group,
        maxRespTimeMs: Number(text(icmpv6, 'icmpv6.mld.maximum_response_code')),
        sFlag: ['1', 'True', 'true'].includes(findText(icmpv6, 'icmpv6.mld.flag.s') ?? ''),
        qrv: Number(findText(icmpv6, 'icmpv6.mld.flag.qrv')),
        qqicSec: Number(text(icmpv6, 'icmpv6.mld.qqi')),
        sources: all(icmpv6, 'icmpv6.mld.source_address'),
      };
    }
    case 131:
    case 132:
      if (!isIPv6Multicast(group)) return { ...line, error: 'invalid-group' };
      return { ...line, version: 1, type: icmpType === 131 ? 'report' : 'leave', group };
    default: {
      const records: GroupRecordLine[] = [];
      for (const record of addressRecords(icmpv6)) {
        const name = RECORD_TYPE_NAMES[record.type];
        // Unknown record types are skipped (RFC 3810 §5.2.12), as snoop does; known ones must name a multicast address.
        if (name === undefined) continue;
        if (!isIPv6Multicast(record.group)) return { ...line, error: 'invalid-group' };
        records.push({ type: name, group: record.group!, sources: record.sources });
      }
      return { ...line, version: 2, type: 'report', records };
    }
  }
}

/**
 * The ICMPv6 message's length when the hop-by-hop header is the only extension header (as in every MLD packet), else
 * undefined.
 */
function mldLength(ipv6Layer: Tree): number | undefined {
  const payload = Number(text(ipv6Layer, 'ipv6.plen'));
  const hopByHop = Number(findText(ipv6Layer, 'ipv6.hopopts.len_oct'));
  if (
    !Number.isFinite(payload) ||
    !Number.isFinite(hopByHop) ||
    findAll(ipv6Layer, 'ipv6.hopopts.len_oct').length !== 1
  )
    return undefined;
  if (
    findAll(ipv6Layer, 'ipv6.fraghdr').length > 0 ||
    findAll(ipv6Layer, 'ipv6.dstopts').length > 0 ||
    findAll(ipv6Layer, 'ipv6.routing').length > 0
  )
    return undefined;
  return payload - hopByHop;
}

/**
 * tshark's dissection of every frame of `file` whose (outermost) IPv4 header says
 * protocol 2, in frame order. IP checksums are verified and IP reassembly is off, so
 * that each frame stands alone as it does for snoop.
 */
export async function tsharkIgmp(file: string): Promise<ExpectedLine[]> {
  return (await tsharkLines(file, 'ip.proto == 2')).filter((line) => line.protocol === 'igmp');
}

/**
 * The same for both families: every IGMP frame and every MLD frame (ICMPv6 types 130, 131, 132, 143), in frame order.
 */
export async function tsharkMembership(file: string): Promise<ExpectedLine[]> {
  return tsharkLines(file, `ip.proto == 2 || ${MLD_FILTER}`);
}

/** tshark's display filter for MLD frames. */
export const MLD_FILTER = MLD_TYPES.map((type) => `icmpv6.type == ${type}`).join(' || ');

async function tsharkLines(file: string, filter: string): Promise<ExpectedLine[]> {
  const { stdout } = await run(
    [
      'tshark',
      '-n',
      '-r',
      file,
      '-o',
      'ip.check_checksum:TRUE',
      '-o',
      'ip.defragment:FALSE',
      '-o',
      'ipv6.defragment:FALSE',
      '-Y',
      filter,
      '-T',
      'json',
      '--no-duplicate-keys',
    ],
    { timeoutMs: 60_000 },
  );
  const packets = JSON.parse(stdout.trim() === '' ? '[]' : stdout) as { _source: { layers: Tree } }[];
  return packets
    .map((packet) => expectedFromTshark(packet._source.layers))
    .filter((line): line is ExpectedLine => line !== undefined);
}

/**
 * tshark's count of frames that match `filter` (default: carry IGMP), for cross-checking; MLD_FILTER counts MLD frames.
 */
export async function tsharkFrameCount(file: string, filter = 'igmp'): Promise<number> {
  const { stdout } = await run(['tshark', '-n', '-r', file, '-Y', filter, '-T', 'fields', '-e', 'frame.number'], {
    timeoutMs: 60_000,
  });
  return stdout.split('\n').filter((l) => l.trim() !== '').length;
}

// ---------------------------------------------------------------------------------------
// Comparison

const TS_TOLERANCE_S = 2e-6;

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Field-by-field differences of one frame ('' when they agree). */
export function diffLine(actual: SnoopLine, expected: ExpectedLine): string[] {
  const diffs: string[] = [];
  const add = (field: string, a: unknown, e: unknown) =>
    diffs.push(`  ${field}: snoop ${JSON.stringify(a)}  tshark ${JSON.stringify(e)}`);
  const { undissected = [], rawType: _rawType, ...wanted } = expected;
  for (const [field, value] of Object.entries(wanted)) {
    const got = (actual as unknown as Record<string, unknown>)[field];
    if (field === 'ts') {
      if (typeof got !== 'number' || Math.abs(got - (value as number)) > TS_TOLERANCE_S) add(field, got, value);
    } else if (field === 'error') {
      if (typeof got !== 'string' || (value !== '*' && got !== value)) add(field, got, value);
    } else if (!same(got, value)) add(field, got, value);
  }
  if (expected.error !== undefined) {
    if (typeof actual.message !== 'string' || actual.message.length === 0)
      add('message', actual.message, '(a sentence)');
    if (actual.type !== undefined) add('type', actual.type, undefined);
  }
  // Fields snoop prints that tshark's dissection does not imply.
  for (const field of Object.keys(actual)) {
    if (field in wanted || field === 'message') continue;
    if (undissected.includes(field)) {
      const got = (actual as unknown as Record<string, unknown>)[field];
      if (field === 'version' && ![1, 2, 3].includes(got as number)) add(field, got, '1, 2 or 3');
      if (field === 'maxRespTimeMs' && typeof got !== 'number') add(field, got, '(a number)');
      continue;
    }
    add(field, (actual as unknown as Record<string, unknown>)[field], undefined);
  }
  return diffs;
}

/**
 * Compares snoop's lines with tshark's, by frame number. Returns a readable report of
 * every difference, or an empty string when they agree message by message and field by
 * field.
 */
export function compareWithTshark(actual: readonly SnoopLine[], expected: readonly ExpectedLine[]): string {
  const out: string[] = [];
  const byFrame = new Map<number, SnoopLine[]>();
  for (const line of actual) byFrame.set(line.frame, [...(byFrame.get(line.frame) ?? []), line]);
  for (const [frame, lines] of byFrame)
    if (lines.length > 1) out.push(`frame ${frame}: snoop printed ${lines.length} lines`);
  const expectedFrames = new Set(expected.map((line) => line.frame));
  for (const line of actual) {
    if (!expectedFrames.has(line.frame))
      out.push(
        `frame ${line.frame}: snoop printed a line, tshark sees no IGMP or MLD\n  snoop  ${JSON.stringify(line)}`,
      );
  }
  for (const want of expected) {
    const got = byFrame.get(want.frame)?.[0];
    const { undissected: _u, rawType: _r, ...shown } = want;
    if (!got) {
      out.push(`frame ${want.frame}: no snoop line\n  tshark ${JSON.stringify(shown)}`);
      continue;
    }
    const diffs = diffLine(got, want);
    if (diffs.length > 0) {
      out.push(
        `frame ${want.frame}:\n${diffs.join('\n')}\n  snoop  ${JSON.stringify(got)}\n  tshark ${JSON.stringify(shown)}`,
      );
    }
  }
  return out.join('\n');
}

/**
 * A short kind label of a line, for coverage checks: "v3 query general", "v2 leave",
 * "v3 report", ...; MLD lines start with "mld " ("mld v2 query general", "mld v1 leave").
 */
export function kindOf(line: SnoopLine): string {
  const family = line.protocol === 'mld' ? 'mld ' : '';
  if (line.error !== undefined) return `${family}error ${line.error}`;
  if (line.type === 'query') {
    const general = line.group === '0.0.0.0' || line.group === '::';
    return `${family}v${line.version} query ${general ? 'general' : 'group'}${line.sources?.length ? ' with sources' : ''}`;
  }
  if (line.type === 'other') return `other 0x${line.igmpType?.toString(16)}`;
  return `${family}v${line.version} ${line.type}`;
}
