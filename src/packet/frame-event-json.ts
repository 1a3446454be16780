/**
 * The `snoop --json` line: one object per frame event. This shape is a contract that
 * scripts and tests rely on: fields may be added, never renamed (see mcastctl-snoop(1)).
 */
import { maxRespTimeMs, qqicSeconds } from './igmp/index.js';
import type { FrameEvent } from './frame-decoder.js';
import type { IgmpMessage, IgmpVersion } from './igmp/message.js';
import * as mld from './mld/index.js';
import type { MldMessage } from './mld/message.js';

/**
 * The contract gives every decoded message a version; for types outside IGMP proper
 * (DVMRP, mtrace, MRD, ...) it is RFC 1112's reading of the type octet, whose high
 * nibble is the version (0x13 DVMRP and 0x1f mtrace are "version 1"), when that nibble
 * is 1 to 3, and 2 otherwise.
 */
export function otherMessageVersion(igmpType: number): IgmpVersion {
  const nibble = igmpType >> 4;
  return nibble === 1 || nibble === 3 ? nibble : 2;
}

/**
 * The line, serialized by hand rather than built as an object for JSON.stringify:
 * `snoop --read --json` of a million-message capture spends most of its time here
 * otherwise. Every value but the error message is a number, a boolean, or a string of
 * digits, dots, colons, lower-case hex and capitals, so only that message needs
 * escaping. The unit tests check it against JSON.stringify of the typed record
 * (frame-event-record.ts).
 */
export function toJsonLine(event: FrameEvent): string {
  const frameFields = `{"frame":${event.frame},"ts":${event.ts},"src":${quoteAddress(event.src)},"dst":${quoteAddress(event.dst)}`;
  switch (event.kind) {
    case 'malformed':
      return `${frameFields},"protocol":"${event.protocol}","error":"${event.code}","message":${JSON.stringify(event.message)}}`;
    case 'igmp':
      return igmpLine(`${frameFields},"protocol":"igmp"`, event.message);
    case 'mld':
      return mldLine(`${frameFields},"protocol":"mld"`, event.message);
  }
}

function igmpLine(head: string, message: IgmpMessage): string {
  switch (message.kind) {
    case 'query':
      if (message.version === 3) {
        return (
          `${head},"version":3,"type":"query","group":"${message.group}","maxRespTimeMs":${maxRespTimeMs(message)}` +
          `,"sFlag":${message.sFlag},"qrv":${message.qrv},"qqicSec":${qqicSeconds(message)},"sources":${addressList(message.sources)}}`
        );
      }
      return `${head},"version":${message.version},"type":"query","group":"${message.group}","maxRespTimeMs":${maxRespTimeMs(message)}}`;
    case 'report':
      if (message.version === 3) return `${head},"version":3,"type":"report","records":${recordList(message.records)}}`;
      return `${head},"version":${message.version},"type":"report","group":"${message.group}"}`;
    case 'leave':
      return `${head},"version":2,"type":"leave","group":"${message.group}"}`;
    case 'other':
      return `${head},"version":${otherMessageVersion(message.igmpType)},"type":"other","igmpType":${message.igmpType}}`;
  }
}

/** MLD in IGMP's field names wherever the meaning is the same; Done is MLD's leave. */
function mldLine(head: string, message: MldMessage): string {
  switch (message.kind) {
    case 'query':
      if (message.version === 2) {
        return (
          `${head},"version":2,"type":"query","group":"${message.group}","maxRespTimeMs":${mld.maxRespTimeMs(message)}` +
          `,"sFlag":${message.sFlag},"qrv":${message.qrv},"qqicSec":${mld.qqicSeconds(message)},"sources":${addressList(message.sources)}}`
        );
      }
      return `${head},"version":1,"type":"query","group":"${message.group}","maxRespTimeMs":${mld.maxRespTimeMs(message)}}`;
    case 'report':
      if (message.version === 2) return `${head},"version":2,"type":"report","records":${recordList(message.records)}}`;
      return `${head},"version":1,"type":"report","group":"${message.group}"}`;
    case 'leave':
      return `${head},"version":1,"type":"leave","group":"${message.group}"}`;
  }
}

function recordList(records: readonly { type: string; group: string; sources: readonly string[] }[]): string {
  let list = '';
  for (const record of records) {
    list += `${list === '' ? '' : ','}{"type":"${record.type}","group":"${record.group}","sources":${addressList(record.sources)}}`;
  }
  return `[${list}]`;
}

function quoteAddress(address: string | null): string {
  return address === null ? 'null' : `"${address}"`;
}

function addressList(addresses: readonly string[]): string {
  return addresses.length === 0 ? '[]' : `["${addresses.join('","')}"]`;
}
