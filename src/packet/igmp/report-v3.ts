/**
 * IGMPv3 Membership Report codec (type 0x22, RFC 3376 §4.2).
 *
 *   type | reserved | checksum(2) | reserved(2) | M = record count(2) | M × record
 *   record: type | aux data len (32-bit words) | N = source count(2) | group(4)
 *           | N × source(4) | aux data
 *
 * Records of an unknown type are skipped (RFC 3376 §4.2.12) and counted in
 * `ignoredRecords`. `decode` expects the checksum already verified (see index.ts).
 */
import { DecodeError } from '../../errors.js';
import { readIPv4, writeIPv4 } from '../../wire/ipv4-address.js';
import { need, outputBuffer, truncationMessage } from '../../wire/bytes.js';
import { IGMP_HEADER_LENGTH, isMulticastAt, sealChecksum, truncated } from './common.js';
import type { GroupRecord, IgmpV3Report } from './message.js';
import { IgmpType } from './message-type.js';
import { RecordType, recordTypeName } from './record-type.js';

const RECORD_FIXED_LENGTH = 8;

export function recordEncodingLength(record: GroupRecord): number {
  return RECORD_FIXED_LENGTH + 4 * record.sources.length + (record.auxData?.length ?? 0);
}

export function encodingLength(report: IgmpV3Report): number {
  let length = IGMP_HEADER_LENGTH;
  for (const record of report.records) length += recordEncodingLength(record);
  return length;
}

export function encode(report: IgmpV3Report, buf?: Uint8Array, offset = 0): Uint8Array {
  if (report.records.length > 0xffff)
    throw new RangeError(`a report holds at most 65535 records, not ${report.records.length}`);
  const length = encodingLength(report);
  const out = outputBuffer(length, buf, offset, 'IGMPv3 report');
  out[offset] = IgmpType.V3MembershipReport;
  out[offset + 1] = 0;
  out[offset + 4] = 0;
  out[offset + 5] = 0;
  out[offset + 6] = report.records.length >> 8;
  out[offset + 7] = report.records.length & 0xff;
  let at = offset + IGMP_HEADER_LENGTH;
  for (const record of report.records) at = encodeRecord(record, out, at);
  sealChecksum(out, offset, offset + length);
  return out;
}

function encodeRecord(record: GroupRecord, out: Uint8Array, at: number): number {
  const auxLength = record.auxData?.length ?? 0;
  if (auxLength % 4 !== 0 || auxLength > 255 * 4) {
    throw new RangeError(`aux data must be a whole number of 32-bit words, at most 255, not ${auxLength} octets`);
  }
  if (record.sources.length > 0xffff)
    throw new RangeError(`a record holds at most 65535 sources, not ${record.sources.length}`);
  out[at] = RecordType[record.type];
  out[at + 1] = auxLength / 4;
  out[at + 2] = record.sources.length >> 8;
  out[at + 3] = record.sources.length & 0xff;
  writeIPv4(out, at + 4, record.group);
  at += RECORD_FIXED_LENGTH;
  for (const source of record.sources) {
    writeIPv4(out, at, source);
    at += 4;
  }
  if (record.auxData !== undefined) {
    out.set(record.auxData, at);
    at += auxLength;
  }
  return at;
}

export function decode(bytes: Uint8Array, start: number, end: number): IgmpV3Report {
  need({ at: start, end }, IGMP_HEADER_LENGTH, 'an IGMPv3 report', truncated);
  const recordCount = (bytes[start + 6]! << 8) | bytes[start + 7]!;
  const records: GroupRecord[] = [];
  let ignoredRecords = 0;
  let at = start + IGMP_HEADER_LENGTH;
  for (let i = 0; i < recordCount; i++) {
    if (at + RECORD_FIXED_LENGTH > end)
      throw truncated(truncationMessage({ at, end }, RECORD_FIXED_LENGTH, `record ${i + 1} of ${recordCount}`));
    const typeNumber = bytes[at]!;
    const auxLength = bytes[at + 1]! * 4;
    const sourceCount = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    const recordLength = RECORD_FIXED_LENGTH + 4 * sourceCount + auxLength;
    if (at + recordLength > end) {
      throw truncated(
        truncationMessage(
          { at, end },
          recordLength,
          `record ${i + 1} of ${recordCount} (${sourceCount} sources, ${auxLength} octets of aux data)`,
        ),
      );
    }
    const type = recordTypeName(typeNumber);
    if (type === undefined) {
      ignoredRecords++;
      at += recordLength;
      continue;
    }
    if (!isMulticastAt(bytes, at + 4)) {
      throw new DecodeError(
        'invalid-group',
        `record ${i + 1} names ${readIPv4(bytes, at + 4)}, which is not a multicast address`,
      );
    }
    const group = readIPv4(bytes, at + 4);
    const sources: string[] = new Array<string>(sourceCount);
    for (let s = 0; s < sourceCount; s++) sources[s] = readIPv4(bytes, at + RECORD_FIXED_LENGTH + 4 * s);
    const record: GroupRecord = { type, group, sources };
    if (auxLength > 0) {
      const auxStart = at + RECORD_FIXED_LENGTH + 4 * sourceCount;
      record.auxData = bytes.slice(auxStart, auxStart + auxLength);
    }
    records.push(record);
    at += recordLength;
  }
  const report: IgmpV3Report = { kind: 'report', version: 3, records };
  if (ignoredRecords > 0) report.ignoredRecords = ignoredRecords;
  return report;
}
