/**
 * The `snoop --json` record as a typed object, built the obvious way: what the daemon
 * sends `snoop --daemon` for each IGMP message, and the oracle that the hand-written
 * serializer of `snoop --json` (frame-event-json.ts, toJsonLine) is checked against.
 */
import { maxRespTimeMs, qqicSeconds, type IgmpMessage, type RecordTypeName } from './igmp/index.js';
import type { FrameEvent, MembershipProtocol } from './frame-decoder.js';
import { otherMessageVersion } from './frame-event-json.js';
import * as mld from './mld/index.js';
import type { MldMessage } from './mld/message.js';

export interface FrameEventRecord {
  frame: number;
  ts: number;
  src: string | null;
  dst: string | null;
  /** IGMP for IPv4 packets, MLD for IPv6 ones; the fields below mean the same in both. */
  protocol: MembershipProtocol;
  /** IGMP 1 to 3, MLD 1 or 2. */
  version?: 1 | 2 | 3;
  /** `leave` is IGMPv2's Leave Group and MLD's Done. */
  type?: 'query' | 'report' | 'leave' | 'other';
  group?: string;
  maxRespTimeMs?: number;
  sFlag?: boolean;
  qrv?: number;
  qqicSec?: number;
  sources?: string[];
  records?: { type: RecordTypeName; group: string; sources: string[] }[];
  igmpType?: number;
  error?: string;
  message?: string;
}

type MessageFields = Omit<FrameEventRecord, 'frame' | 'ts' | 'src' | 'dst' | 'protocol'>;

export function toJsonRecord(event: FrameEvent): FrameEventRecord {
  const base = { frame: event.frame, ts: event.ts, src: event.src, dst: event.dst };
  switch (event.kind) {
    case 'malformed':
      return { ...base, protocol: event.protocol, error: event.code, message: event.message };
    case 'igmp':
      return { ...base, protocol: 'igmp', ...igmpFields(event.message) };
    case 'mld':
      return { ...base, protocol: 'mld', ...mldFields(event.message) };
  }
}

function igmpFields(message: IgmpMessage): MessageFields {
  switch (message.kind) {
    case 'query':
      if (message.version === 3) {
        return {
          version: 3,
          type: 'query',
          group: message.group,
          maxRespTimeMs: maxRespTimeMs(message),
          sFlag: message.sFlag,
          qrv: message.qrv,
          qqicSec: qqicSeconds(message),
          sources: message.sources,
        };
      }
      return { version: message.version, type: 'query', group: message.group, maxRespTimeMs: maxRespTimeMs(message) };
    case 'report':
      if (message.version === 3) {
        return {
          version: 3,
          type: 'report',
          records: message.records.map((record) => ({
            type: record.type,
            group: record.group,
            sources: record.sources,
          })),
        };
      }
      return { version: message.version, type: 'report', group: message.group };
    case 'leave':
      return { version: 2, type: 'leave', group: message.group };
    case 'other':
      return { version: otherMessageVersion(message.igmpType), type: 'other', igmpType: message.igmpType };
  }
}

function mldFields(message: MldMessage): MessageFields {
  switch (message.kind) {
    case 'query':
      if (message.version === 2) {
        return {
          version: 2,
          type: 'query',
          group: message.group,
          maxRespTimeMs: mld.maxRespTimeMs(message),
          sFlag: message.sFlag,
          qrv: message.qrv,
          qqicSec: mld.qqicSeconds(message),
          sources: message.sources,
        };
      }
      return { version: 1, type: 'query', group: message.group, maxRespTimeMs: mld.maxRespTimeMs(message) };
    case 'report':
      if (message.version === 2) {
        return {
          version: 2,
          type: 'report',
          records: message.records.map((record) => ({
            type: record.type,
            group: record.group,
            sources: record.sources,
          })),
        };
      }
      return { version: 1, type: 'report', group: message.group };
    case 'leave':
      return { version: 1, type: 'leave', group: message.group };
  }
}
