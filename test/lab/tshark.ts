/**
 * An independent second opinion on a capture: tshark's dissection of every IGMP frame,
 * mapped onto the shape of `mcastctl snoop --json` lines, and a field-by-field comparison
 * of the two.
 *
 * The mapping uses only tshark's igmp.* / ip.* / frame.* fields (checked against tshark
 * 4.0's packet-igmp.c and its real output):
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
 * Two expectations come from the output contract rather than from tshark: a v1/v2
 * message or a query whose group is not multicast (nor 0.0.0.0 for a query) is an
 * `invalid-group` error, and a frame tshark calls malformed must be some error.
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
  /** tshark's raw IGMP type octet, for coverage checks. */
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
      if (name !== undefined) records.push({ type: name, group: text(subtree, 'igmp.maddr') ?? '?', sources: all(subtree, 'igmp.saddr') });
    }
  }
  return records;
}

/** Maps one tshark packet (its `layers`) to the expected line, or undefined when it carries no IGMP at the top. */
export function expectedFromTshark(layers: Tree): ExpectedLine | undefined {
  const frame = first(layers.frame);
  const ipLayer = first(layers.ip);
  if (!isTree(frame) || !isTree(ipLayer)) return undefined;
  if (text(ipLayer, 'ip.proto') !== '2') return undefined;
  const line: ExpectedLine = {
    frame: Number(text(frame, 'frame.number')),
    ts: Number(text(frame, 'frame.time_epoch')),
    src: text(ipLayer, 'ip.src') ?? null,
    dst: text(ipLayer, 'ip.dst') ?? null,
  };
  const flags = first(ipLayer['ip.flags_tree']);
  const fragmented = (isTree(flags) && text(flags, 'ip.flags.mf') === '1') || Number(text(ipLayer, 'ip.frag_offset') ?? 0) !== 0;
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

/**
 * tshark's dissection of every frame of `file` whose (outermost) IPv4 header says
 * protocol 2, in frame order. IP checksums are verified and IP reassembly is off, so
 * that each frame stands alone as it does for snoop.
 */
export async function tsharkIgmp(file: string): Promise<ExpectedLine[]> {
  const { stdout } = await run(
    ['tshark', '-n', '-r', file, '-o', 'ip.check_checksum:TRUE', '-o', 'ip.defragment:FALSE', '-Y', 'ip.proto == 2', '-T', 'json', '--no-duplicate-keys'],
    { timeoutMs: 60_000 },
  );
  const packets = JSON.parse(stdout.trim() === '' ? '[]' : stdout) as { _source: { layers: Tree } }[];
  return packets.map((packet) => expectedFromTshark(packet._source.layers)).filter((line): line is ExpectedLine => line !== undefined);
}

/** tshark's count of frames that carry IGMP (its `igmp` filter), for cross-checking. */
export async function tsharkFrameCount(file: string, filter = 'igmp'): Promise<number> {
  const { stdout } = await run(['tshark', '-n', '-r', file, '-Y', filter, '-T', 'fields', '-e', 'frame.number'], { timeoutMs: 60_000 });
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
  const add = (field: string, a: unknown, e: unknown) => diffs.push(`  ${field}: snoop ${JSON.stringify(a)}  tshark ${JSON.stringify(e)}`);
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
    if (typeof actual.message !== 'string' || actual.message.length === 0) add('message', actual.message, '(a sentence)');
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
  for (const [frame, lines] of byFrame) if (lines.length > 1) out.push(`frame ${frame}: snoop printed ${lines.length} lines`);
  const expectedFrames = new Set(expected.map((line) => line.frame));
  for (const line of actual) {
    if (!expectedFrames.has(line.frame)) out.push(`frame ${line.frame}: snoop printed a line, tshark sees no IGMP\n  snoop  ${JSON.stringify(line)}`);
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
      out.push(`frame ${want.frame}:\n${diffs.join('\n')}\n  snoop  ${JSON.stringify(got)}\n  tshark ${JSON.stringify(shown)}`);
    }
  }
  return out.join('\n');
}

/** A short kind label of a line, for coverage checks: "v3 query general", "v2 leave", "v3 report", ... */
export function kindOf(line: SnoopLine): string {
  if (line.error !== undefined) return `error ${line.error}`;
  if (line.type === 'query') return `v${line.version} query ${line.group === '0.0.0.0' ? 'general' : 'group'}${line.sources?.length ? ' with sources' : ''}`;
  if (line.type === 'other') return `other 0x${line.igmpType?.toString(16)}`;
  return `v${line.version} ${line.type}`;
}
