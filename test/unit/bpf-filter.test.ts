/**
 * The live capture's kernel filter must never drop a frame that `snoop --read` would
 * report: for every frame of the hostile suite, the valid frames and 50,000 mutations of
 * them, "the decoder yields a line" implies "the filter accepts it". (The filter may pass
 * more; the decoder then says nothing.) Checked with the interpreter in test/helpers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { igmpFilter } from '../../src/packet/bpf.js';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipv4Locator } from '../../src/packet/frame-decoder.js';
import { V3_JOIN_239_1_1_1 } from '../fixtures/real-frames.js';
import { runBpf } from '../helpers/bpf-interpreter.js';
import { hex } from '../helpers/bytes.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';

const seeds = [V3_JOIN_239_1_1_1, ...Object.values(validFrames), ...hostileFrames.map((hostile) => hostile.frame)];

/** The same IP packet behind VLAN tags (802.1Q, 802.1ad). */
function tagged(frame: Buffer, tags: number[]): Buffer {
  const tagBytes = Buffer.concat(tags.map((tpid, i) => Buffer.from([tpid >> 8, tpid & 0xff, 0, 10 + i])));
  return Buffer.concat([frame.subarray(0, 12), tagBytes, frame.subarray(12)]);
}

function check(linkType: number, frames: Iterable<Buffer>): number {
  const filter = igmpFilter(linkType);
  const locate = ipv4Locator(linkType);
  let reported = 0;
  for (const frame of frames) {
    if (decodeFrame(locate, frame, { frame: 1, ts: 0 }) === undefined) continue;
    reported++;
    assert.notEqual(runBpf(filter, frame), 0, `the filter drops a frame snoop --read reports: ${frame.toString('hex')}`);
  }
  return reported;
}

function* mutations(bases: readonly Buffer[], count: number): Generator<Buffer> {
  let state = 12345;
  const random = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state % n;
  };
  for (let i = 0; i < count; i++) {
    const frame = Buffer.from(bases[i % bases.length]!);
    for (let flips = 1 + random(3); flips > 0 && frame.length > 0; flips--) frame[random(frame.length)] = random(256);
    yield random(4) === 0 ? frame.subarray(0, random(frame.length + 1)) : frame;
  }
}

describe('igmpFilter agrees with the frame decoder', () => {
  it('Ethernet, untagged and with one or two VLAN tags', () => {
    const all = [...seeds, ...seeds.map((f) => tagged(f, [0x8100])), ...seeds.map((f) => tagged(f, [0x88a8, 0x8100]))];
    const reported = check(LinkType.ETHERNET, [...all, ...mutations(all, 50_000)]);
    assert.ok(reported > 10_000, `${reported} frames reported`);
  });
  it('raw IP, including headers whose version is neither 4 nor 6', () => {
    const packets = seeds.map((frame) => frame.subarray(14));
    packets.push(hex('56c0 0028 0000 4000 0102 0000 0a000001 e0000016'));
    const reported = check(LinkType.RAW, [...packets, ...mutations(packets, 50_000)]);
    assert.ok(reported > 10_000, `${reported} packets reported`);
  });
});
