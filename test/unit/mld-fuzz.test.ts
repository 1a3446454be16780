/**
 * Fuzz: at least 200,000 random and mutated MLD messages through the MLD codec. Every
 * outcome must be a message or the codec's own DecodeError (a RangeError only for an
 * ICMPv6 type that is not MLD, which callers filter with isMldType); every message decoded
 * must encode and decode back to itself. Three in four frames get their checksum made
 * right after mutation, so that the fuzzing reaches past the checksum into the decoders.
 *
 * The runs are the same every time (a fixed seed); FAST_CHECK_SEED=N and FAST_CHECK_RUNS=N
 * change them. A failure prints the seed, the path and the smallest failing frame.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { DecodeError } from '../../src/errors.js';
import * as mld from '../../src/packet/mld/index.js';
import type { MldMessage } from '../../src/packet/mld/index.js';
import { reportWithFrameHex } from '../helpers/arbitraries.js';
import {
  ADDRESSES_FIRST,
  HOST_TO_ROUTERS,
  MESSAGE_AT,
  mldBytes,
  resealPacket,
  withAddresses,
} from '../helpers/mld-bytes.js';

const SEED = Number(process.env.FAST_CHECK_SEED ?? 0x5eed2);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 200_000);

const GROUP = 'ff3e 0000 0000 0000 0000 0000 8000 0001';
const SOURCE = '2001 0db8 0000 0000 0000 0000 0000 0001';
const NO_ADDRESS = '0000 0000 0000 0000 0000 0000 0000 0000';

/** Valid messages of every kind, between HOST_TO_ROUTERS's addresses. */
const seeds: Buffer[] = [
  mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS}`),
  mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS} 02 7d 0000`),
  mldBytes(`82 00 0000 a123 0000 ${GROUP} 0f 90 0002 ${SOURCE} ${SOURCE}`),
  mldBytes(`83 00 0000 0000 0000 ${GROUP}`),
  mldBytes(`84 00 0000 0000 0000 ${GROUP}`),
  mldBytes('8f 00 0000 0000 0000'),
  mldBytes(
    `8f 00 0000 0000 0003 01 00 0002 ${GROUP} ${SOURCE} ${SOURCE} 04 01 0000 ${GROUP} deadbeef 07 00 0001 ${GROUP} ${SOURCE}`,
  ),
];

/** One edit of a message. Positions are taken modulo the message's length at the time of the edit. */
type Mutation =
  | { kind: 'flip-bit'; at: number; bit: number }
  | { kind: 'set-byte'; at: number; value: number }
  | { kind: 'truncate'; keep: number }
  | { kind: 'extend'; bytes: Uint8Array }
  | { kind: 'write-uint16'; at: number; value: number }
  /** A count or length field of a report or query set to a big value: the classic overrun. */
  | { kind: 'count'; at: number; value: number }
  | { kind: 'set-type'; type: number }
  /** Cut or zero-pad to a length near the boundaries of RFC 3810 §8.1 (24: v1, 25 to 27: none, 28: v2). */
  | { kind: 'resize'; length: number };

/**
 * Report M (6), first record's aux length (9, one octet) and N (10), query N (26), the N of the last seed's second and
 * third records (62, 86).
 */
const COUNT_FIELDS = [6, 9, 10, 26, 62, 86] as const;
const BIG_COUNTS = [0xffff, 0x8000, 0x0100, 0x00ff, 2, 1] as const;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip-bit' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({
    kind: fc.constant('set-byte' as const),
    at: fc.nat(),
    value: fc.constantFrom(0, 1, 0x7f, 0x80, 0xff, 0x07),
  }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('extend' as const), bytes: fc.uint8Array({ maxLength: 40, size: 'max' }) }),
  fc.record({ kind: fc.constant('write-uint16' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 0xffff }) }),
  fc.record({
    kind: fc.constant('count' as const),
    at: fc.constantFrom(...COUNT_FIELDS),
    value: fc.constantFrom(...BIG_COUNTS),
  }),
  fc.record({ kind: fc.constant('set-type' as const), type: fc.constantFrom(130, 131, 132, 143) }),
  fc.record({ kind: fc.constant('resize' as const), length: fc.integer({ min: 20, max: 30 }) }),
);

function mutate(base: Buffer, mutations: readonly Mutation[]): Buffer {
  let message = Buffer.from(base);
  for (const edit of mutations) {
    switch (edit.kind) {
      case 'flip-bit':
        if (message.length) message[edit.at % message.length]! ^= 1 << edit.bit;
        break;
      case 'set-byte':
        if (message.length) message[edit.at % message.length] = edit.value;
        break;
      case 'truncate':
        message = message.subarray(0, edit.keep % (message.length + 1));
        break;
      case 'extend':
        message = Buffer.concat([message, edit.bytes]);
        break;
      case 'write-uint16':
        if (message.length > 2) message.writeUInt16BE(edit.value, edit.at % (message.length - 1));
        break;
      case 'count':
        if (edit.at === 9 && message.length > 9) message[9] = edit.value & 0xff;
        else if (edit.at !== 9 && edit.at + 2 <= message.length) message.writeUInt16BE(edit.value, edit.at);
        break;
      case 'set-type':
        if (message.length) message[0] = edit.type;
        break;
      case 'resize':
        message =
          edit.length <= message.length
            ? message.subarray(0, edit.length)
            : Buffer.concat([message, Buffer.alloc(edit.length - message.length)]);
        break;
    }
  }
  return message;
}

const mutated = fc
  .tuple(fc.constantFrom(...seeds), fc.array(mutation, { minLength: 1, maxLength: 4 }))
  .map(([base, edits]) => mutate(base, edits));

/** Random bytes, up to 150 of them, nine in ten with an MLD type in front. */
const random = fc
  .tuple(
    fc.uint8Array({ maxLength: 150, size: 'max' }),
    fc.option(fc.constantFrom(130, 131, 132, 143), { freq: 10, nil: undefined }),
  )
  .map(([bytes, type]) => {
    const message = Buffer.from(bytes);
    if (type !== undefined && message.length > 0) message[0] = type;
    return message;
  });

/** A packet for decode: addresses, then one random or mutated message, its checksum made right three times in four. */
const packet: fc.Arbitrary<Buffer> = fc
  .tuple(fc.oneof({ arbitrary: random, weight: 1 }, { arbitrary: mutated, weight: 3 }), fc.nat({ max: 3 }))
  .map(([message, reseal]) => {
    const out = Buffer.concat([ADDRESSES, message]);
    if (reseal > 0) resealPacket(out);
    return out;
  });

const ADDRESSES = withAddresses(new Uint8Array(0), HOST_TO_ROUTERS);

/** What decode said, for comparing: a decoded report's ignoredRecords are not encoded again. */
function comparable(message: MldMessage): MldMessage {
  if (message.kind !== 'report' || message.version !== 2 || message.ignoredRecords === undefined) return message;
  const { ignoredRecords: _ignored, ...rest } = message;
  return rest;
}

describe('MLD fuzz', () => {
  it(`${RUNS.toLocaleString('en-US')} random and mutated messages: a message or a DecodeError, nothing else (seed ${SEED})`, () => {
    const counts: Record<string, number> = {};
    fc.assert(
      fc.property(packet, (bytes) => {
        const type = bytes[MESSAGE_AT];
        let outcome: string;
        try {
          const message = mld.decode(bytes, MESSAGE_AT, bytes.length, ADDRESSES_FIRST);
          outcome = `${message.kind} v${message.version}`;
          // What was decoded must be what it encodes to.
          const again = mld.encode(message, HOST_TO_ROUTERS);
          assert.equal(again.length, mld.encodingLength(message));
          const packetAgain = withAddresses(again, HOST_TO_ROUTERS);
          assert.deepEqual(
            mld.decode(packetAgain, MESSAGE_AT, packetAgain.length, ADDRESSES_FIRST),
            comparable(message),
          );
        } catch (error) {
          if (error instanceof DecodeError) outcome = error.code;
          else if (error instanceof RangeError && type !== undefined && !mld.isMldType(type)) outcome = 'not MLD';
          else throw error;
        }
        counts[outcome] = (counts[outcome] ?? 0) + 1;
      }),
      { seed: SEED, numRuns: RUNS, reporter: reportWithFrameHex },
    );
    // The generator must reach every outcome, or it is not testing much (thresholds per 200,000 frames).
    const per200k = (outcome: string) => ((counts[outcome] ?? 0) * 200_000) / RUNS;
    const expected = [
      'query v1',
      'query v2',
      'report v1',
      'leave v1',
      'report v2',
      'truncated',
      'bad-checksum',
      'invalid-group',
      'bad-length',
      'not MLD',
    ];
    for (const outcome of expected) assert.ok(per200k(outcome) > 500, `${outcome}: ${JSON.stringify(counts)}`);
  });
});
