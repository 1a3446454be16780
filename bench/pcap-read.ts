/**
 * How fast PcapReader gets records off disk: writes a synthetic 1,000,000-record
 * Ethernet capture (~80 MB, the size `snoop --read` must handle in under 5 s all told)
 * into the temp directory with PcapWriter, reads it back with readPcapFile, prints
 * records/s, and removes the file.
 *
 *   node --import tsx bench/pcap-read.ts [records]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LinkType, PcapReader, PcapWriter, readPcapFile, type PcapRecord } from '../src/packet/pcap/index.js';

const RECORDS = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = 3;

/** An IGMPv3 report in an Ethernet frame, padded to 64 octets like one on the wire. */
function sampleFrame(): Uint8Array {
  const frame = new Uint8Array(64);
  frame.set(
    Buffer.from(
      '01005e000016f2d4354f4d6f080046c00028000040000102f9aa0a4d0002e0000016940400002200e8f90000000104000000ef010203',
      'hex',
    ),
  );
  return frame;
}

async function writeSample(path: string): Promise<void> {
  const writer = PcapWriter.create(path, { linkType: LinkType.ETHERNET });
  const data = sampleFrame();
  for (let i = 0; i < RECORDS; i++) {
    if (!writer.write({ tsSec: 1_700_000_000 + Math.floor(i / 1000), tsFraction: (i % 1000) * 1000, data }))
      await writer.drained();
  }
  await writer.close();
}

// Touch every record so the work cannot be skipped.
let checksum = 0;
function onRecord(record: PcapRecord): void {
  checksum += record.capturedLength + record.data[0]!;
}

function report(label: string, count: number, ms: number, bytes: number): void {
  const perSecond = Math.round((count / ms) * 1000);
  console.log(
    `${label.padEnd(28)} ${count} records in ${ms.toFixed(0)} ms: ${perSecond.toLocaleString('en')} records/s, ${(((bytes / ms) * 1000) / 1e6).toFixed(0)} MB/s`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'mcastctl-bench-'));
try {
  const path = join(dir, 'bench.pcap');
  let started = performance.now();
  await writeSample(path);
  const bytes = statSync(path).size;
  report('write (PcapWriter)', RECORDS, performance.now() - started, bytes);

  for (let round = 1; round <= ROUNDS; round++) {
    started = performance.now();
    const summary = await readPcapFile(path, onRecord);
    report(`read from disk, round ${round}`, summary.recordCount, performance.now() - started, bytes);
  }

  // The parser alone, with the file already in 1 MiB chunks in memory.
  const file = readFileSync(path);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < file.length; at += 1 << 20) chunks.push(file.subarray(at, at + (1 << 20)));
  started = performance.now();
  const reader = new PcapReader(onRecord);
  for (const chunk of chunks) reader.push(chunk);
  reader.end();
  report('parse only (in memory)', reader.recordCount, performance.now() - started, bytes);
  console.log(`(checksum ${checksum})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
