/**
 * Fuzz: at least 200,000 random and mutated frames through every decoding layer. The
 * frame decoder must never throw (bad content becomes a malformed event); the IGMP and
 * IPv4 codecs must throw nothing but their own DecodeError. A seeded generator makes
 * any failure reproducible: the seed and the frame are in the assertion message.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../src/errors.js';
import * as igmp from '../../src/packet/igmp/index.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipv4Locator } from '../../src/packet/frame-decoder.js';
import { toJsonLine } from '../../src/packet/frame-event-json.js';
import { toJsonRecord } from '../helpers/json-record.js';
import { V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1 } from '../fixtures/real-frames.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';
import { seededRandom } from '../helpers/random.js';


const seeds: Buffer[] = [V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1, ...Object.values(validFrames), ...hostileFrames.map((h) => h.frame)];

function mutate(random: () => number, base: Buffer): Buffer {
  const int = (n: number) => Math.floor(random() * n);
  let frame = Buffer.from(base);
  const rounds = 1 + int(4);
  for (let r = 0; r < rounds; r++) {
    switch (int(6)) {
      case 0: // flip a bit
        if (frame.length) frame[int(frame.length)]! ^= 1 << int(8);
        break;
      case 1: // set a byte to an interesting value
        if (frame.length) frame[int(frame.length)] = [0, 1, 0x7f, 0x80, 0xff, 0x22, 0x11, 0x45, 0x02][int(9)]!;
        break;
      case 2: // truncate
        frame = frame.subarray(0, int(frame.length + 1));
        break;
      case 3: // extend with random bytes
        frame = Buffer.concat([frame, Buffer.from(Array.from({ length: int(40) }, () => int(256)))]);
        break;
      case 4: // overwrite a 16-bit field (counts, lengths) with a big value
        if (frame.length > 2) frame.writeUInt16BE(int(0x10000), int(frame.length - 1));
        break;
      case 5: // keep the IPv4 ethertype and IGMP protocol so mutations reach the IGMP codec
        if (frame.length > 24) {
          frame[12] = 0x08;
          frame[13] = 0x00;
          frame[23] = 2;
        }
        break;
    }
  }
  return frame;
}

function randomFrame(random: () => number): Buffer {
  const length = Math.floor(random() * 120);
  const frame = Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
  if (length > 24 && random() < 0.7) {
    frame[12] = 0x08; // IPv4
    frame[13] = 0x00;
    frame[14] = 0x45 + (random() < 0.3 ? 1 : 0);
    frame[23] = 2; // IGMP
  }
  return frame;
}

describe('fuzz', () => {
  it('200,000 random and mutated frames: the frame decoder never throws; codecs throw only DecodeError', () => {
    const seed = 0x5eed1;
    const random = seededRandom(seed);
    const locate = ipv4Locator(LinkType.ETHERNET);
    const counts = { igmp: 0, malformed: 0, none: 0 };
    for (let i = 0; i < 200_000; i++) {
      const frame = i % 4 === 0 ? randomFrame(random) : mutate(random, seeds[i % seeds.length]!);
      let event;
      try {
        event = decodeFrame(locate, frame, { frame: i + 1, ts: i });
        // The hand-written serializer must say exactly what JSON.stringify says.
        if (event !== undefined) assert.equal(toJsonLine(event), JSON.stringify(toJsonRecord(event)));
      } catch (error) {
        assert.fail(`seed ${seed}, iteration ${i}, frame ${frame.toString('hex')}: ${String(error)}`);
      }
      counts[event === undefined ? 'none' : event.kind]++;
      // The codecs on their own, on the same bytes at the IPv4 and IGMP offsets.
      for (const [decode, start] of [[ipv4.decode, 14], [igmp.decode, 38]] as const) {
        try {
          decode(frame, Math.min(start, frame.length), frame.length);
        } catch (error) {
          if (!(error instanceof DecodeError)) assert.fail(`seed ${seed}, iteration ${i}: ${String(error)} on ${frame.toString('hex')}`);
        }
      }
    }
    // The generator must reach every outcome, or it is not testing much.
    assert.ok(counts.igmp > 5_000 && counts.malformed > 10_000 && counts.none > 1_000, JSON.stringify(counts));
  });
});
