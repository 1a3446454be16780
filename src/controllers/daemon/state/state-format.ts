/**
 * The format of the daemon's saved state (`state.json`): what it holds, which versions of
 * it this release reads, and the check of every field that a file read back must pass.
 * Apart from the store (./state-store.ts), which only writes, reads and moves the file
 * aside, so that a new version of the format is a change to this file alone.
 *
 * The format is versioned (`version`): this release writes STATE_FORMAT and reads every
 * format from OLDEST_STATE_FORMAT up, so that an upgrade keeps what was learned. A file of
 * a newer format (a downgrade) is refused, not moved aside: it holds a newer release's
 * state that this one cannot read, and a later upgrade back would want it.
 */
import { quoteInput, UsageError } from '../../../errors.js';
import type { IgmpVersion } from '../../../packet/igmp/message.js';
import { VERSION } from '../../../version.js';
import {
  type GroupAddress,
  type HostAddress,
  parseGroupAddress,
  parseHostAddress,
  parseSourceAddress,
  type SourceAddress,
} from '../../../wire/ip-address.js';

export interface SavedMember {
  portName: string;
  /**
   * `namespace/name` of the pod on that port then: a member is restored only to the same
   * pod, never to another pod whose port got the same name while the daemon was down.
   */
  pod?: string;
  host: HostAddress;
  mode: 'include' | 'exclude';
  sources: SourceAddress[];
  compatibility: IgmpVersion;
  /** Epoch milliseconds. */
  lastReportAt: number;
  /**
   * When each requested source's timer ends (epoch milliseconds): the included sources, or in
   * EXCLUDE mode the sources asked for by name. Absent (files of earlier releases): every
   * source lives a Group Membership Interval from lastReportAt.
   */
  sourceTimers?: SavedSourceTimer[];
  /** EXCLUDE mode: when the group timer ends (epoch milliseconds); absent: as lastReportAt says. */
  groupTimerEndsAt?: number;
}

interface SavedSourceTimer {
  source: SourceAddress;
  /** Epoch milliseconds. */
  endsAt: number;
}

interface SavedGroup {
  group: GroupAddress;
  members: SavedMember[];
}

/** The format this release writes. 2: `writtenBy` was added. */
export const STATE_FORMAT = 2;
/** The oldest format this release reads. */
const OLDEST_STATE_FORMAT = 1;

export interface SavedState {
  version: typeof STATE_FORMAT;
  /** The mcastctl release that wrote the file (absent from format 1). */
  writtenBy?: string;
  /** Epoch milliseconds. */
  savedAt: number;
  bridge: string;
  groups: SavedGroup[];
}

/**
 * Throws a UsageError 'bad-file' (exit 64) when `root`, a state file's JSON, is of a format newer than this
 * release reads: refused, the file left where it is. Any other fault in it is parseSavedState's to find.
 */
export function refuseNewerFormat(root: unknown, file: string): void {
  const format = (root as { version?: unknown } | null)?.version;
  if (typeof format !== 'number' || !Number.isInteger(format) || format <= STATE_FORMAT) return;
  const writer = (root as { writtenBy?: unknown }).writtenBy;
  const by = typeof writer === 'string' && /^[\w.+-]{1,64}$/.test(writer) ? ` (written by mcastctl ${writer})` : '';
  throw new UsageError(
    `the daemon state ${quoteInput(file)} is of format ${format}${by}, newer than this mcastctl ${VERSION} reads (formats ${OLDEST_STATE_FORMAT} to ${STATE_FORMAT})`,
    {
      code: 'bad-file',
      hint: 'run the mcastctl release that wrote it, or move the file away to start with no learned memberships',
    },
  );
}

/**
 * Checks every field; throws an Error naming the first bad one. Returns a copy with only
 * the known fields, in the current format (a format 1 file has every field format 2 needs).
 */
export function parseSavedState(value: unknown): SavedState {
  const root = object(value, 'the file');
  if (
    !Number.isInteger(root.version) ||
    (root.version as number) < OLDEST_STATE_FORMAT ||
    (root.version as number) > STATE_FORMAT
  )
    throw new Error(
      `version ${JSON.stringify(root.version)} is not a format from ${OLDEST_STATE_FORMAT} to ${STATE_FORMAT}`,
    );
  if (root.writtenBy !== undefined && (typeof root.writtenBy !== 'string' || root.writtenBy === ''))
    throw new Error('writtenBy is not a non-empty string');
  const savedAt = epochMs(root.savedAt, 'savedAt');
  if (typeof root.bridge !== 'string' || root.bridge === '') throw new Error('bridge is not a non-empty string');
  if (!Array.isArray(root.groups)) throw new Error('groups is not an array');
  const seen = new Set<GroupAddress>();
  const groups = root.groups.map((item, index): SavedGroup => {
    const where = `groups[${index}]`;
    const group = object(item, where);
    const address = typeof group.group === 'string' ? parseGroupAddress(group.group) : undefined;
    if (address === undefined)
      throw new Error(`${where}.group ${JSON.stringify(group.group)} is not an IPv4 multicast address`);
    if (seen.has(address)) throw new Error(`${where}.group ${address} appears twice`);
    seen.add(address);
    if (!Array.isArray(group.members)) throw new Error(`${where}.members is not an array`);
    return {
      group: address,
      members: group.members.map((member, memberIndex) => parseMember(member, `${where}.members[${memberIndex}]`)),
    };
  });
  return {
    version: STATE_FORMAT,
    ...(root.writtenBy === undefined ? {} : { writtenBy: root.writtenBy as string }),
    savedAt,
    bridge: root.bridge,
    groups,
  };
}

function parseMember(value: unknown, where: string): SavedMember {
  const member = object(value, where);
  if (typeof member.portName !== 'string' || member.portName === '')
    throw new Error(`${where}.portName is not a non-empty string`);
  const host = typeof member.host === 'string' ? parseHostAddress(member.host) : undefined;
  if (host === undefined)
    throw new Error(`${where}.host ${JSON.stringify(member.host)} is not an IPv4 unicast address`);
  if (member.mode !== 'include' && member.mode !== 'exclude')
    throw new Error(`${where}.mode ${JSON.stringify(member.mode)} is not include or exclude`);
  if (!Array.isArray(member.sources)) throw new Error(`${where}.sources is not an array`);
  const sources = member.sources.map((text: unknown, index) => {
    const source = typeof text === 'string' ? parseSourceAddress(text) : undefined;
    if (source === undefined)
      throw new Error(`${where}.sources[${index}] ${JSON.stringify(text)} is not an IPv4 unicast address`);
    return source;
  });
  if (member.compatibility !== 1 && member.compatibility !== 2 && member.compatibility !== 3)
    throw new Error(`${where}.compatibility ${JSON.stringify(member.compatibility)} is not 1, 2 or 3`);
  if (member.pod !== undefined && (typeof member.pod !== 'string' || member.pod === ''))
    throw new Error(`${where}.pod is not a non-empty string`);
  return {
    portName: member.portName,
    ...(member.pod === undefined ? {} : { pod: member.pod as string }),
    host,
    mode: member.mode,
    sources,
    compatibility: member.compatibility,
    lastReportAt: epochMs(member.lastReportAt, `${where}.lastReportAt`),
    ...(member.sourceTimers === undefined
      ? {}
      : { sourceTimers: parseSourceTimers(member.sourceTimers, `${where}.sourceTimers`) }),
    ...(member.groupTimerEndsAt === undefined
      ? {}
      : { groupTimerEndsAt: epochMs(member.groupTimerEndsAt, `${where}.groupTimerEndsAt`) }),
  };
}

function parseSourceTimers(value: unknown, where: string): SavedSourceTimer[] {
  if (!Array.isArray(value)) throw new Error(`${where} is not an array`);
  return value.map((item: unknown, index) => {
    const timer = object(item, `${where}[${index}]`);
    const source = typeof timer.source === 'string' ? parseSourceAddress(timer.source) : undefined;
    if (source === undefined)
      throw new Error(`${where}[${index}].source ${JSON.stringify(timer.source)} is not an IPv4 unicast address`);
    return { source, endsAt: epochMs(timer.endsAt, `${where}[${index}].endsAt`) };
  });
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${where} is not a JSON object`);
  return value as Record<string, unknown>;
}

function epochMs(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new Error(`${where} ${JSON.stringify(value)} is not a time (epoch milliseconds)`);
  return value;
}
