/**
 * MLDv2 Multicast Listener Report codec (ICMPv6 type 143, RFC 3810 §5.2).
 *
 *   type | reserved | checksum(2) | reserved(2) | M = record count(2) | M × record
 *   record: type | aux data len (32-bit words) | N = source count(2) | address(16)
 *           | N × source(16) | aux data
 *
 * Records of an unknown type are skipped (RFC 3810 §5.2.12) and counted in
 * `ignoredRecords`. `decode` sums the words it reads for the caller to verify the checksum
 * (see index.ts).
 */
import { copyBytes, need, outputBuffer, truncationMessage } from '../../wire/bytes.js';
import { wordSum } from '../../wire/checksum.js';
import { IPV6_ADDRESS_LENGTH, isIPv6MulticastAt, readIPv6Summing, writeIPv6 } from '../../wire/ipv6-address.js';
import { RecordType, recordTypeName } from '../igmp/record-type.js';
import { readGroup, sealChecksum, truncated } from './common.js';
import type { MldAddresses, MldRecord, MldV2Report } from './message.js';
import { MldType } from './message.js';

const REPORT_HEADER_LENGTH = 8;
const RECORD_FIXED_LENGTH = 4 + IPV6_ADDRESS_LENGTH;

export function recordEncodingLength(record: MldRecord): number {
  return RECORD_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * record.sources.length + (record.auxData?.length ?? 0);
}

export function encodingLength(report: MldV2Report): number {
  let length = REPORT_HEADER_LENGTH;
  for (const record of report.records) length += recordEncodingLength(record);
  return length;
}

export function encode(report: MldV2Report, addresses: MldAddresses, buf?: Uint8Array, offset = 0): Uint8Array {
  if (report.records.length > 0xffff)
    throw new RangeError(`a report holds at most 65535 records, not ${report.records.length}`);
  const length = encodingLength(report);
  const out = outputBuffer(length, buf, offset, 'MLDv2 report');
  out.fill(0, offset, offset + REPORT_HEADER_LENGTH);
  out[offset] = MldType.V2Report;
  out[offset + 6] = report.records.length >> 8;
  out[offset + 7] = report.records.length & 0xff;
  let at = offset + REPORT_HEADER_LENGTH;
  for (const record of report.records) at = encodeRecord(record, out, at);
  sealChecksum(out, offset, offset + length, addresses);
  return out;
}

function encodeRecord(record: MldRecord, out: Uint8Array, at: number): number {
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
  writeIPv6(out, at + 4, record.group);
  at += RECORD_FIXED_LENGTH;
  for (const source of record.sources) {
    writeIPv6(out, at, source);
    at += IPV6_ADDRESS_LENGTH;
  }
  if (record.auxData !== undefined) {
    out.set(record.auxData, at);
    at += auxLength;
  }
  return at;
}

/**
 * Decodes the report in [start, end), adding every 16-bit word of it to `sum.value` (a
 * ones' complement sum not yet folded, checksum.ts): the caller verifies the checksum
 * from that sum, so the report's 200-odd octets, mostly addresses, are read once.
 */
export function decode(bytes: Uint8Array, start: number, end: number, sum: { value: number }): MldV2Report {
  need({ at: start, end }, REPORT_HEADER_LENGTH, 'an MLDv2 report', truncated);
  const recordCount = (bytes[start + 6]! << 8) | bytes[start + 7]!;
  sum.value += wordSum(bytes, start, start + REPORT_HEADER_LENGTH);
  // Sized once (a first push would allocate room for 17), no larger than the octets can
  // hold (a forged count must not allocate), trimmed if records are skipped.
  const records: MldRecord[] = new Array<MldRecord>(
    Math.min(recordCount, Math.floor((end - start - REPORT_HEADER_LENGTH) / RECORD_FIXED_LENGTH)),
  );
  let kept = 0;
  let ignoredRecords = 0;
  let at = start + REPORT_HEADER_LENGTH;
  for (let i = 0; i < recordCount; i++) {
    if (at + RECORD_FIXED_LENGTH > end)
      throw truncated(truncationMessage({ at, end }, RECORD_FIXED_LENGTH, `record ${i + 1} of ${recordCount}`));
    const typeNumber = bytes[at]!;
    const auxWords = bytes[at + 1]!;
    const auxLength = auxWords * 4;
    const sourceCount = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    const recordLength = RECORD_FIXED_LENGTH + IPV6_ADDRESS_LENGTH * sourceCount + auxLength;
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
      sum.value += wordSum(bytes, at, at + recordLength);
      at += recordLength;
      continue;
    }
    sum.value += ((typeNumber << 8) | auxWords) + sourceCount;
    // readGroup only to say what is wrong: its message, a template per record, and even the
    // closure that would build it lazily, are a tenth of a report's decode.
    const group = isIPv6MulticastAt(bytes, at + 4)
      ? readIPv6Summing(bytes, at + 4, sum)
      : readGroup(bytes, at + 4, `record ${i + 1} names`);
    const sources: string[] = new Array<string>(sourceCount);
    const sourcesAt = at + RECORD_FIXED_LENGTH;
    for (let s = 0; s < sourceCount; s++) sources[s] = readIPv6Summing(bytes, sourcesAt + IPV6_ADDRESS_LENGTH * s, sum);
    const record: MldRecord = { type, group, sources };
    if (auxLength > 0) {
      const auxStart = sourcesAt + IPV6_ADDRESS_LENGTH * sourceCount;
      sum.value += wordSum(bytes, auxStart, auxStart + auxLength);
      // A copy: on a Buffer, slice() would share the capture's memory.
      record.auxData = copyBytes(bytes, auxStart, auxStart + auxLength);
    }
    records[kept++] = record;
    at += recordLength;
  }
  if (kept < records.length) records.length = kept;
  // Octets past the last record: ignored, but covered by the checksum.
  sum.value += wordSum(bytes, at, end);
  const report: MldV2Report = { kind: 'report', version: 2, records };
  if (ignoredRecords > 0) report.ignoredRecords = ignoredRecords;
  return report;
}
