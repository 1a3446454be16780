/**
 * OpenFlow stream framing: a stream of real Open vSwitch messages, fed in two chunks split
 * at every offset, in single octets, and in one piece, yields the same messages; a length
 * field below 8 stops the stream for good.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { output } from '../../src/protocol/openflow/action.js';
import { bucket } from '../../src/protocol/openflow/bucket.js';
import { OpenFlowDecodeError } from '../../src/protocol/openflow/errors.js';
import { OpenFlowFramer } from '../../src/protocol/openflow/framer.js';
import { groupMod } from '../../src/protocol/openflow/group-mod.js';
import * as openflow from '../../src/protocol/openflow/message.js';
import { hex } from '../helpers/bytes.js';

// From ovs-vswitchd to ovs-ofctl (see openflow-codec.test.ts): HELLO, FEATURES_REPLY,
// BARRIER_REPLY, an ERROR, a GROUP_DESC reply, a PACKET_IN.
const MESSAGES = [
  '0600000800000032',
  '04060020000000020000c2b495d03f4f00000000fe0000000000004f00000000',
  '0415000800000007',
  '0401003c0000000600060000040f003000000006000000000000000700200000ffffffffffffffff0000000000000010000000010000000000000000',
  '04130058000000020007000000000000004800000000000700200000ffffffffffffffff000000000000001000000001000000000000000000200000ffffffffffffffff0000000000000010000000020000000000000000',
  '040a006000000000ffffffff0036010000000000000000200001000c800000040000000100000000000001005e000016da666bf436b9080046c00028000040000102f9ed0a01000be0000016940400002200e5f30000000104000000ef050505',
].map((text) => hex(text));
const STREAM = Buffer.concat(MESSAGES);
const EXPECTED = MESSAGES.map((message) => message.toString('hex'));

function collect(chunks: Uint8Array[]): string[] {
  const seen: string[] = [];
  const framer = new OpenFlowFramer((message) => seen.push(Buffer.from(message).toString('hex')));
  for (const chunk of chunks) framer.push(chunk);
  assert.equal(framer.pending, 0, 'nothing left over');
  return seen;
}

describe('OpenFlow framing', () => {
  it('one chunk', () => {
    assert.deepEqual(collect([STREAM]), EXPECTED);
  });

  it('two chunks, split at every offset', () => {
    for (let split = 0; split <= STREAM.length; split++) {
      assert.deepEqual(collect([STREAM.subarray(0, split), STREAM.subarray(split)]), EXPECTED, `split at ${split}`);
    }
  });

  it('one octet at a time', () => {
    const chunks = Array.from(STREAM, (octet) => Uint8Array.of(octet));
    assert.deepEqual(collect(chunks), EXPECTED);
  });

  it('messages decode the same however the stream was cut', () => {
    const decoded = collect([STREAM.subarray(0, 77), STREAM.subarray(77)]).map((text) => openflow.decode(hex(text)));
    assert.deepEqual(
      decoded.map((message) => message.type),
      ['HELLO', 'FEATURES_REPLY', 'BARRIER_REPLY', 'ERROR', 'MULTIPART_REPLY', 'PACKET_IN'],
    );
  });

  it('a 65520-octet GROUP_MOD across three chunks', () => {
    const big = openflow.encode(
      groupMod({ groupId: 1, buckets: Array.from({ length: 2047 }, (_, i) => bucket([output(i + 1)])) }),
    );
    const stream = Buffer.concat([hex('0415000800000001'), big, hex('0415000800000002')]);
    const seen = collect([stream.subarray(0, 100), stream.subarray(100, 40_000), stream.subarray(40_000)]);
    assert.equal(seen.length, 3);
    assert.equal(seen[1], Buffer.from(big).toString('hex'));
  });

  it('a partial message waits for the rest', () => {
    const seen: string[] = [];
    const framer = new OpenFlowFramer((message) => seen.push(Buffer.from(message).toString('hex')));
    framer.push(STREAM.subarray(0, 12));
    assert.deepEqual(seen, [EXPECTED[0]]);
    assert.equal(framer.pending, 4);
    assert.equal(framer.bytesPushed, 12);
  });

  it('a length below 8 is out of step: bad-length, and it stays failed', () => {
    const framer = new OpenFlowFramer(() => undefined);
    const broken = hex('0402000400000000');
    assert.throws(
      () => framer.push(broken),
      (error: unknown) => error instanceof OpenFlowDecodeError && error.code === 'bad-length',
    );
    assert.throws(() => framer.push(STREAM), OpenFlowDecodeError);
  });

  it('a broken length split across chunks is caught when its header completes', () => {
    const framer = new OpenFlowFramer(() => undefined);
    framer.push(hex('040200'));
    assert.throws(() => framer.push(hex('0000000000')), OpenFlowDecodeError);
  });

  it('an exception from the handler propagates and stops the framer', () => {
    const framer = new OpenFlowFramer(() => {
      throw new Error('handler failed');
    });
    assert.throws(() => framer.push(STREAM), /handler failed/);
    assert.throws(() => framer.push(STREAM), /handler failed/);
  });
});
