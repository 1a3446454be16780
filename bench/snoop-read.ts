/**
 * `mcastctl snoop --read FILE --json > /dev/null` on a 1,000,000-message capture: the
 * whole command, as a user runs it (process start, file read, decode, JSON, write).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as igmp from '../src/packet/igmp/index.js';
import { LinkType, PcapWriter } from '../src/packet/pcap/index.js';
import { buildFrame } from './frames.js';

export interface SnoopReadFigures {
  messages: number;
  fileBytes: number;
  seconds: number;
  linesPerSecond: number;
}

/** A realistic mix: mostly v2 and v3 reports, some leaves and queries. */
async function writeCapture(path: string, messages: number): Promise<void> {
  const frames = [
    buildFrame(igmp.encode({ kind: 'report', version: 2, group: '239.1.2.3' }), '239.1.2.3'),
    buildFrame(
      igmp.encode({
        kind: 'report',
        version: 3,
        records: [
          { type: 'MODE_IS_EXCLUDE', group: '239.1.1.1', sources: [] },
          { type: 'MODE_IS_INCLUDE', group: '232.1.1.1', sources: ['10.0.0.1', '10.0.0.2'] },
        ],
      }),
      '224.0.0.22',
    ),
    buildFrame(igmp.encode({ kind: 'leave', version: 2, group: '239.1.2.3' }), '224.0.0.2'),
    buildFrame(
      igmp.encode({
        kind: 'query',
        version: 3,
        group: '0.0.0.0',
        maxRespCode: 100,
        sFlag: false,
        qrv: 2,
        qqic: 125,
        sources: [],
      }),
      '224.0.0.1',
      '10.0.0.1',
    ),
  ];
  const writer = PcapWriter.create(path, { linkType: LinkType.ETHERNET });
  for (let i = 0; i < messages; i++) {
    const more = writer.write({
      tsSec: 1_700_000_000 + Math.floor(i / 1000),
      tsFraction: (i % 1000) * 1000,
      data: frames[i % frames.length]!,
    });
    if (!more) await writer.drained();
  }
  await writer.close();
}

export async function benchSnoopRead(messages = 1_000_000): Promise<SnoopReadFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'mcastctl-bench-'));
  try {
    const path = join(dir, 'igmp.pcap');
    await writeCapture(path, messages);
    const started = process.hrtime.bigint();
    const run = spawnSync(process.execPath, ['bin/mcastctl.js', 'snoop', '--read', path, '--json'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (run.status !== 0) throw new Error(`snoop exited ${run.status}: ${run.stderr.toString()}`);
    return { messages, fileBytes: statSync(path).size, seconds, linesPerSecond: messages / seconds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
