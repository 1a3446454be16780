/** Human renderings of snoop events and summaries (the `--json` form is src/packet/frame-event-json.ts). */
import type { ChalkInstance } from 'chalk';
import {
  maxRespTimeMs,
  otherIgmpTypeName,
  qqicSeconds,
  type GroupRecord,
  type IgmpMessage,
} from '../../packet/igmp/index.js';
import * as mld from '../../packet/mld/index.js';
import type { MldMessage, MldRecord } from '../../packet/mld/message.js';
import type { TableSpec } from './output.js';
import type { FrameEvent } from '../../packet/frame-decoder.js';
import type { GroupSummary, MemberState, QuerierSummary, SnoopCounts } from '../../domain/membership-summary.js';

/** "08:40:05.256282" in local time, as tcpdump prints it. */
export function formatClock(ts: number): string {
  // One rounding, to whole microseconds, from which both parts come: .9999996 s carries
  // into the next second instead of printing as .000000 of this one.
  const totalMicros = Math.round(ts * 1e6);
  const date = new Date(Math.floor(totalMicros / 1000));
  const micros = totalMicros % 1_000_000;
  const pad = (value: number, width = 2) => String(value).padStart(width, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(micros, 6)}`;
}

/** One line per event: frame, time, addresses, then what the message says. */
export function formatEvent(event: FrameEvent, style: ChalkInstance): string {
  const head = `${style.dim(String(event.frame).padStart(5))} ${formatClock(event.ts)} ${event.src ?? '?'} > ${event.dst ?? '?'}`;
  switch (event.kind) {
    case 'malformed':
      return `${head}  ${style.red(`malformed (${event.code}):`)} ${event.message}`;
    case 'igmp':
      return `${head}  ${describeMessage(event.message, style)}`;
    case 'mld':
      return `${head}  ${describeMldMessage(event.message, style)}`;
  }
}

function describeMessage(message: IgmpMessage, style: ChalkInstance): string {
  switch (message.kind) {
    case 'query': {
      const target = message.group === '0.0.0.0' ? 'general' : message.group;
      const label = style.cyan(`v${message.version} query`);
      if (message.version === 1) return `${label} ${target}`;
      const resp = `max resp ${formatSeconds(maxRespTimeMs(message) / 1000)}`;
      if (message.version === 2) return `${label} ${target}, ${resp}`;
      const sources = message.sources.length > 0 ? ` sources {${message.sources.join(', ')}}` : '';
      return `${label} ${target}${sources}, ${resp}, qrv ${message.qrv}, qqic ${qqicSeconds(message)}s${message.sFlag ? ', S' : ''}`;
    }
    case 'report':
      if (message.version === 3) {
        const records = message.records.map(describeRecord).join('; ');
        const ignored = message.ignoredRecords
          ? style.dim(` (+${message.ignoredRecords} unknown record${message.ignoredRecords > 1 ? 's' : ''} ignored)`)
          : '';
        return `${style.green('v3 report')} ${records || '(no records)'}${ignored}`;
      }
      return `${style.green(`v${message.version} report`)} ${message.group}`;
    case 'leave':
      return `${style.yellow('v2 leave')} ${message.group}`;
    case 'other':
      return style.magenta(
        `IGMP ${otherIgmpTypeName(message.igmpType)} (type ${message.igmpType}, ${message.body.length + 4} octets)`,
      );
  }
}

/**
 * MLD as IGMP is shown, with the protocol in the label ("MLDv2 report", not "v2 report",
 * which would read as IGMPv2) and Done under its own name.
 */
function describeMldMessage(message: MldMessage, style: ChalkInstance): string {
  switch (message.kind) {
    case 'query': {
      const target = message.group === '::' ? 'general' : message.group;
      const label = style.cyan(`MLDv${message.version} query`);
      const resp = `max resp ${formatSeconds(mld.maxRespTimeMs(message) / 1000)}`;
      if (message.version === 1) return `${label} ${target}, ${resp}`;
      const sources = message.sources.length > 0 ? ` sources {${message.sources.join(', ')}}` : '';
      return `${label} ${target}${sources}, ${resp}, qrv ${message.qrv}, qqic ${mld.qqicSeconds(message)}s${message.sFlag ? ', S' : ''}`;
    }
    case 'report':
      if (message.version === 2) {
        const records = message.records.map(describeRecord).join('; ');
        const ignored = message.ignoredRecords
          ? style.dim(` (+${message.ignoredRecords} unknown record${message.ignoredRecords > 1 ? 's' : ''} ignored)`)
          : '';
        return `${style.green('MLDv2 report')} ${records || '(no records)'}${ignored}`;
      }
      return `${style.green('MLDv1 report')} ${message.group}`;
    case 'leave':
      return `${style.yellow('MLDv1 done')} ${message.group}`;
  }
}

const RECORD_LABELS: Readonly<Record<GroupRecord['type'], string>> = {
  MODE_IS_INCLUDE: 'IS_IN',
  MODE_IS_EXCLUDE: 'IS_EX',
  CHANGE_TO_INCLUDE_MODE: 'TO_IN',
  CHANGE_TO_EXCLUDE_MODE: 'TO_EX',
  ALLOW_NEW_SOURCES: 'ALLOW',
  BLOCK_OLD_SOURCES: 'BLOCK',
};

/** A record type in RFC 3376's shorthand (TO_EX, ALLOW, ...); a type this version does not know, as it came. */
export function recordTypeLabel(type: string): string {
  return (RECORD_LABELS as Readonly<Record<string, string>>)[type] ?? type;
}

/** RFC 3376's own shorthand: "239.1.1.1 TO_EX {}", "232.1.1.1 ALLOW {10.0.0.4}" (MLDv2's records read the same). */
function describeRecord(record: GroupRecord | MldRecord): string {
  return `${record.group} ${RECORD_LABELS[record.type]} {${record.sources.join(', ')}}`;
}

function formatSeconds(seconds: number): string {
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)}s`;
}

export function describeFilter(member: Pick<MemberState, 'mode' | 'sources'>): string {
  if (member.mode === 'exclude' && member.sources.length === 0) return 'any source';
  return `${member.mode.toUpperCase()} {${member.sources.join(', ')}}`;
}

/** The membership table: one row per group, one line per member in each cell. */
export function groupTable(groups: readonly GroupSummary[]): TableSpec {
  return {
    head: ['Group', 'Members', 'Filter', 'Version', 'Last seen'],
    rows: groups.map((group) => [
      group.group,
      group.members.map((member) => member.host).join('\n'),
      group.members.map(describeFilter).join('\n'),
      group.members.map(versionLabel).join('\n'),
      group.members.map((member) => formatClock(member.lastSeen)).join('\n'),
    ]),
  };
}

export function querierTable(queriers: readonly QuerierSummary[]): TableSpec {
  return {
    head: ['Querier', 'Version', 'Queries', 'Last seen'],
    rows: queriers.map((querier) => [
      querier.address,
      versionLabel(querier),
      String(querier.queries),
      formatClock(querier.lastSeen),
    ]),
    alignRight: [2],
  };
}

/** "v3" for IGMP, as it always read; "MLDv2" for MLD, whose v2 is not IGMP's. */
function versionLabel(member: Pick<MemberState, 'protocol' | 'version'>): string {
  return member.protocol === 'mld' ? `MLDv${member.version}` : `v${member.version}`;
}

export function describeCounts(counts: SnoopCounts): string {
  const total = counts.queries + counts.reports + counts.leaves + counts.other + counts.malformed;
  const parts = [
    plural(counts.queries, 'query', 'queries'),
    plural(counts.reports, 'report'),
    plural(counts.leaves, 'leave'),
  ];
  if (counts.other > 0) parts.push(`${counts.other} other`);
  if (counts.malformed > 0) parts.push(`${counts.malformed} malformed`);
  const protocols = counts.mld === 0 ? 'IGMP' : counts.mld === total ? 'MLD' : 'IGMP and MLD';
  return `${plural(total, `${protocols} message`)}: ${parts.join(', ')}`;
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
