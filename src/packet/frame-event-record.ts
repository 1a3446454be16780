/**
 * The `snoop --json` record as a typed object, built the obvious way: what the daemon
 * sends `snoop --daemon` for each IGMP message, and the oracle that the hand-written
 * serializer of `snoop --json` (frame-event-json.ts, toJsonLine) is checked against.
 */
import { maxRespTimeMs, qqicSeconds, type IgmpMessage, type RecordTypeName } from './igmp/index.js';
import type { FrameEvent } from './frame-decoder.js';
import { otherMessageVersion } from './frame-event-json.js';

export interface FrameEventRecord {
  frame: number;
  ts: number;
  src: string | null;
  dst: string | null;
  version?: 1 | 2 | 3;
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

export function toJsonRecord(event: FrameEvent): FrameEventRecord {
  const base = { frame: event.frame, ts: event.ts, src: event.src, dst: event.dst };
  if (event.kind === 'malformed') return { ...base, error: event.code, message: event.message };
  return { ...base, ...messageFields(event.message) };
}

function messageFields(message: IgmpMessage): Omit<FrameEventRecord, 'frame' | 'ts' | 'src' | 'dst'> {
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
          records: message.records.map((record) => ({ type: record.type, group: record.group, sources: record.sources })),
        };
      }
      return { version: message.version, type: 'report', group: message.group };
    case 'leave':
      return { version: 2, type: 'leave', group: message.group };
    case 'other':
      return { version: otherMessageVersion(message.igmpType), type: 'other', igmpType: message.igmpType };
  }
}
