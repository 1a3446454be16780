/**
 * What a seal costs on one core: sealing a report to the peers and opening one from a
 * peer (HMAC-SHA-256 over the message, the IP length rewritten, a copy of the frame), for
 * the smallest report (one record: a join or a leave) and the largest a 1,500-octet path
 * holds (173 records: a full state). Prints figures; asserts nothing.
 */
import { recordsPerReport } from '../src/domain/peers/announcer.js';
import { parsePeerKeyFile } from '../src/domain/peers/peer-keys.js';
import { openFrame, sealFrame } from '../src/domain/peers/peer-seal.js';
import { encodeReportFrame } from '../src/domain/peers/report-packet.js';
import { formatIPv4 } from '../src/wire/ipv4-address.js';
import { groupAddress, hostAddress } from '../src/wire/ip-address.js';

export interface SealFigures {
  name: string;
  octets: number;
  sealMicroseconds: number;
  openMicroseconds: number;
}

const ROUNDS = 50_000;
const SENDER = hostAddress('192.168.60.12');

function reportFrame(records: number): Uint8Array {
  return encodeReportFrame(
    {
      report: {
        kind: 'report',
        version: 3,
        records: Array.from({ length: records }, (_, index) => ({
          type: 'MODE_IS_EXCLUDE' as const,
          group: groupAddress(formatIPv4(0xef010000 + index)),
          sources: [],
        })),
      },
      source: SENDER,
      identification: 1,
    },
    '02:00:00:00:00:01',
  );
}

function microsecondsEach(rounds: number, body: (round: number) => void): number {
  const started = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) body(round);
  return Number(process.hrtime.bigint() - started) / rounds / 1_000;
}

export function benchPeerSeal(): SealFigures[] {
  const keys = parsePeerKeyFile('a1'.repeat(32), 'bench');
  const figures: SealFigures[] = [];
  for (const [name, records] of [
    ['a join (1 record)', 1],
    ['a full report (173 records)', recordsPerReport(1_500)],
  ] as const) {
    const frame = reportFrame(records);
    const seal = (round: number) => sealFrame(frame, { key: keys.sealing, sender: SENDER, counter: BigInt(round + 1) });
    const sealed = seal(0);
    // Warmed up first: the figure is the steady state, not V8's first compilation.
    microsecondsEach(ROUNDS / 10, seal);
    const sealMicroseconds = microsecondsEach(ROUNDS, seal);
    const open = () => {
      if ('refused' in openFrame(sealed, keys, SENDER)) throw new Error('a seal made here did not open');
    };
    microsecondsEach(ROUNDS / 10, open);
    figures.push({ name, octets: frame.length, sealMicroseconds, openMicroseconds: microsecondsEach(ROUNDS, open) });
  }
  return figures;
}
