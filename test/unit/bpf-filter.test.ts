/**
 * The live capture's kernel filter must never drop a frame that `snoop --read` would
 * report: for every frame of the hostile suite, the valid frames and 50,000 mutations of
 * them, "the decoder yields a line" implies "the filter accepts it". (The filter may pass
 * more; the decoder then says nothing.) Checked with the interpreter in test/helpers.
 *
 * The mutations are fast-check's (test/helpers/arbitraries.ts), so a failure shrinks to the
 * smallest frame the filter drops. The runs are the same every time (a fixed seed);
 * FAST_CHECK_SEED=N and FAST_CHECK_RUNS=N change them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { igmpFilter } from '../../src/packet/bpf.js';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipv4Locator } from '../../src/packet/frame-decoder.js';
import { V3_JOIN_239_1_1_1 } from '../fixtures/real-frames.js';
import { mutatedFrame, reportWithFrameHex } from '../helpers/arbitraries.js';
import { runBpf } from '../helpers/bpf-interpreter.js';
import { hex } from '../helpers/bytes.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';

const seeds = [V3_JOIN_239_1_1_1, ...Object.values(validFrames), ...hostileFrames.map((hostile) => hostile.frame)];

/** The same IP packet behind VLAN tags (802.1Q, 802.1ad). */
function tagged(frame: Buffer, tags: number[]): Buffer {
  const tagBytes = Buffer.concat(tags.map((tpid, i) => Buffer.from([tpid >> 8, tpid & 0xff, 0, 10 + i])));
  return Buffer.concat([frame.subarray(0, 12), tagBytes, frame.subarray(12)]);
}

const SEED = Number(process.env.FAST_CHECK_SEED ?? 0xb9f);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 50_000);

/**
 * Checks every one of `bases`, then RUNS mutations of them; returns how many frames the
 * decoder reported (the mutations that would not decode check nothing).
 */
function check(linkType: number, bases: readonly Buffer[]): number {
  const filter = igmpFilter(linkType);
  const locate = ipv4Locator(linkType);
  let reported = 0;
  const agrees = (frame: Buffer): void => {
    // The one known difference, held by its own test below.
    if (linkType === LinkType.RAW && frame.length === 0) return;
    if (decodeFrame(locate, frame, { frame: 1, ts: 0 }) === undefined) return;
    reported++;
    assert.notEqual(runBpf(filter, frame), 0, `the filter drops a frame snoop --read reports: ${frame.toString('hex')}`);
  };
  for (const frame of bases) agrees(frame);
  fc.assert(fc.property(mutatedFrame(bases), agrees), { seed: SEED, numRuns: RUNS, reporter: reportWithFrameHex });
  return reported;
}

describe('igmpFilter agrees with the frame decoder', () => {
  it('Ethernet, untagged and with one or two VLAN tags', () => {
    const all = [...seeds, ...seeds.map((f) => tagged(f, [0x8100])), ...seeds.map((f) => tagged(f, [0x88a8, 0x8100]))];
    const reported = check(LinkType.ETHERNET, all);
    assert.ok(reported > 10_000, `${reported} frames reported`);
  });
  it('raw IP, including headers whose version is neither 4 nor 6', () => {
    const packets = seeds.map((frame) => frame.subarray(14));
    packets.push(hex('56c0 0028 0000 4000 0102 0000 0a000001 e0000016'));
    const reported = check(LinkType.RAW, packets);
    assert.ok(reported > 10_000, `${reported} packets reported`);
  });
  it('an empty raw IP packet: the decoder reports it truncated, the filter drops it (the one difference, found by fast-check)', () => {
    // A packet socket never delivers an empty packet, and the filter's first load (the
    // version nibble) past the end ends it with "drop"; `snoop --read` still reports one
    // found in a file.
    const empty = Buffer.alloc(0);
    assert.notEqual(decodeFrame(ipv4Locator(LinkType.RAW), empty, { frame: 1, ts: 0 }), undefined);
    assert.equal(runBpf(igmpFilter(LinkType.RAW), empty), 0);
  });
});
