/**
 * Fuzz: at least 200,000 random and mutated frames through every decoding layer. The
 * frame decoder must never throw (bad content becomes a malformed event); the IGMP and
 * IPv4 codecs must throw nothing but their own DecodeError; the hand-written NDJSON
 * serializer must say what JSON.stringify says.
 *
 * The runs are the same every time (a fixed seed); FAST_CHECK_SEED=N and FAST_CHECK_RUNS=N
 * change them. A failure prints the seed, the path and the smallest failing frame.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { DecodeError } from '../../src/errors.js';
import * as igmp from '../../src/packet/igmp/index.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { toJsonLine } from '../../src/packet/frame-event-json.js';
import { toJsonRecord } from '../../src/packet/frame-event-record.js';
import { V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1 } from '../fixtures/real-frames.js';
import { mutatedFrame, randomFrame } from '../helpers/arbitraries.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';

const SEED = Number(process.env.FAST_CHECK_SEED ?? 0x5eed1);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 200_000);

const seeds: Buffer[] = [
  V3_JOIN_239_1_1_1,
  V3_LEAVE_239_1_1_1,
  ...Object.values(validFrames),
  ...hostileFrames.map((h) => h.frame),
];

/** One random frame in four; the rest are seed frames with a few edits. */
const frame = fc.oneof({ arbitrary: randomFrame, weight: 1 }, { arbitrary: mutatedFrame(seeds), weight: 3 });

/** fast-check's report (seed, path, counterexample), with the frame in hex, which is how captures are read. */
function report(details: fc.RunDetails<[Buffer]>): void {
  if (!details.failed) return;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  const [counterexample] = details.counterexample ?? [];
  const shown =
    counterexample === undefined ? '' : `\nFrame (${counterexample.length} bytes): ${counterexample.toString('hex')}`;
  throw new Error(`${fc.defaultReportMessage(details) ?? 'property failed'}${shown}\nGot error: ${error}`);
}

describe('fuzz', () => {
  it(`${RUNS.toLocaleString('en-US')} random and mutated frames: the frame decoder never throws; codecs throw only DecodeError (seed ${SEED})`, () => {
    const locate = ipLocator(LinkType.ETHERNET);
    const counts = { igmp: 0, mld: 0, malformed: 0, none: 0 };
    let decoded = 0;
    fc.assert(
      fc.property(frame, (bytes) => {
        decoded++;
        const event = decodeFrame(locate, bytes, { frame: decoded, ts: decoded });
        // The hand-written serializer must say exactly what JSON.stringify says.
        if (event !== undefined) assert.equal(toJsonLine(event), JSON.stringify(toJsonRecord(event)));
        counts[event === undefined ? 'none' : event.kind]++;
        // The codecs on their own, on the same bytes at the IPv4 and IGMP offsets.
        for (const [name, decode, start] of [
          ['ipv4', ipv4.decode, 14],
          ['igmp', igmp.decode, 38],
        ] as const) {
          try {
            decode(bytes, Math.min(start, bytes.length), bytes.length);
          } catch (error) {
            if (!(error instanceof DecodeError))
              assert.fail(`${name}.decode threw ${error instanceof Error ? error.stack : String(error)}`);
          }
        }
      }),
      { seed: SEED, numRuns: RUNS, reporter: report },
    );
    // The generator must reach every outcome, or it is not testing much (thresholds per 200,000 frames).
    const per200k = (count: number) => (count * 200_000) / RUNS;
    assert.ok(
      per200k(counts.igmp) > 5_000 && per200k(counts.malformed) > 10_000 && per200k(counts.none) > 1_000,
      JSON.stringify(counts),
    );
  });
});
