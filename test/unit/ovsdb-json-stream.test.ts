/**
 * RFC 7047 framing: JsonStreamSplitter must give the same values however the stream is
 * cut: in two at every offset, byte by byte, and at random points, including inside
 * strings, escapes (\" \\ \uXXXX) and multi-byte UTF-8 sequences. Two streams: one
 * written out by hand here with its expected values, and one a real ovsdb-server sent
 * (test/fixtures/ovsdb/server-stream.bin, see record-stream.ts).
 *
 * The random cuts are the same every time (a fixed seed); FAST_CHECK_SEED=N and
 * FAST_CHECK_RUNS=N change them. A failure prints the seed and the fewest, earliest cuts that fail.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { OvsdbDecodeError } from '../../src/protocol/ovsdb/errors.js';
import { JsonStreamSplitter } from '../../src/protocol/ovsdb/json-stream.js';

const SEED = Number(process.env.FAST_CHECK_SEED ?? 7047);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 200);

/** The hand-written stream: whitespace between values, escapes, 2-, 3- and 4-byte UTF-8, brackets in strings. */
const HAND_STREAM = Buffer.from(
  [
    '{"id":"echo","method":"echo","params":[]}',
    '\n',
    '{"id":1,"result":["Open_vSwitch","_Server"],"error":null}',
    ' \r\n\t ',
    '{"method":"update","params":["mon",{"Interface":{"6f1e4c0a-0000-4000-8000-000000000001":{"new":{"name":"caf\u00e9-\u65e5\u672c-\u{1f600}",',
    '"external_ids":["map",[["note","say \\"hi\\" \\\\ {[x]} \\u00e9\\ud83d\\ude00 \\/"],["k","\\\\"]]]}}}}],"id":null}',
    '[]',
    '{"id":2,"result":[{"rows":[{"a":[1,[2,[3,{"b":"]}"}]]],"c":-1.5e3,"d":true,"e":null,"f":""}]}],"error":null}',
    '  ',
  ].join(''),
  'utf8',
);

const HAND_VALUES: unknown[] = [
  { id: 'echo', method: 'echo', params: [] },
  { id: 1, result: ['Open_vSwitch', '_Server'], error: null },
  {
    method: 'update',
    params: [
      'mon',
      {
        Interface: {
          '6f1e4c0a-0000-4000-8000-000000000001': {
            new: {
              name: 'café-日本-😀',
              external_ids: [
                'map',
                [
                  ['note', 'say "hi" \\ {[x]} é😀 /'],
                  ['k', '\\'],
                ],
              ],
            },
          },
        },
      },
    ],
    id: null,
  },
  [],
  { id: 2, result: [{ rows: [{ a: [1, [2, [3, { b: ']}' }]]], c: -1500, d: true, e: null, f: '' }] }], error: null },
];

const SERVER_STREAM = readFileSync(new URL('../fixtures/ovsdb/server-stream.bin', import.meta.url));

function splitAll(chunks: Uint8Array[], options = {}): unknown[] {
  const splitter = new JsonStreamSplitter(options);
  const values = chunks.flatMap((chunk) => splitter.push(chunk));
  splitter.end();
  return values;
}

/** A copy per chunk, so no chunk shares memory with the stream or another chunk. */
function cut(stream: Uint8Array, ...offsets: number[]): Uint8Array[] {
  const bounds = [0, ...offsets, stream.length];
  return bounds.slice(1).map((end, i) => stream.slice(bounds[i], end));
}

for (const [name, stream] of [
  ['a hand-written stream', HAND_STREAM],
  ['a stream recorded from ovsdb-server', SERVER_STREAM],
] as const) {
  describe(`framing ${name}`, () => {
    const whole = splitAll([stream]);
    // Equal serialisations of values JSON.parse made are equal values (same keys in the
    // same order), and comparing them is much faster than deepEqual at every offset.
    const wholeText = JSON.stringify(whole);

    it('gives the same values split in two at every offset', () => {
      for (let offset = 0; offset <= stream.length; offset++) {
        const text = JSON.stringify(splitAll(cut(stream, offset)));
        if (text !== wholeText) assert.deepEqual(JSON.parse(text), whole, `split at ${offset}`);
      }
    });

    it('gives the same values byte by byte', () => {
      assert.deepEqual(splitAll(cut(stream, ...Array.from({ length: stream.length - 1 }, (_, i) => i + 1))), whole);
    });

    it(`gives the same values cut at random points (seed ${SEED})`, () => {
      const offsets = fc
        .array(fc.integer({ min: 0, max: stream.length - 1 }), { minLength: 1, maxLength: 8 })
        .map((points) => [...points].sort((a, b) => a - b));
      fc.assert(
        fc.property(offsets, (points) =>
          assert.deepEqual(splitAll(cut(stream, ...points)), whole, `cut at ${points.join(',')}`),
        ),
        { seed: SEED, numRuns: RUNS },
      );
    });

    it('keeps its own copy of a value that spans pushes (the caller may reuse its buffer)', () => {
      const splitter = new JsonStreamSplitter();
      const buffer = new Uint8Array(7);
      const values: unknown[] = [];
      for (let at = 0; at < stream.length; at += buffer.length) {
        const length = Math.min(buffer.length, stream.length - at);
        buffer.set(stream.subarray(at, at + length));
        values.push(...splitter.push(buffer.subarray(0, length)));
        buffer.fill(0x7b); // scribble '{' over what was pushed
      }
      assert.deepEqual(values, whole);
    });
  });
}

describe('framing: expected values', () => {
  it('the hand-written stream holds exactly the values written out for it', () => {
    assert.deepEqual(splitAll([HAND_STREAM]), HAND_VALUES);
  });

  it('the recorded stream holds every reply and notification of its session, in order', () => {
    const values = splitAll([SERVER_STREAM]) as Array<Record<string, unknown>>;
    const replies = values
      .filter((value) => value['id'] !== null && value['method'] === undefined)
      .map((value) => value['id']);
    assert.deepEqual(replies, [1, 2, 3, 4, 5, 6]);
    const updates = values.filter((value) => value['method'] === 'update');
    assert.ok(updates.length >= 3, `${updates.length} update notifications`);
    const text = JSON.stringify(values);
    assert.ok(text.includes('café-日本-😀'), 'non-ASCII text arrives intact');
    assert.ok(text.includes(JSON.stringify('say "hi" \\ {[back]}\ttab\u0001')), 'escapes arrive intact');
  });

  it('returns nothing until a value is complete, and counts what it holds', () => {
    const splitter = new JsonStreamSplitter();
    assert.deepEqual(splitter.push(Buffer.from('  {"a":')), []);
    assert.equal(splitter.bufferedBytes, 5);
    assert.deepEqual(splitter.push(Buffer.from('"}"}{"b"')), [{ a: '}' }]);
    assert.equal(splitter.bufferedBytes, 4);
    assert.deepEqual(splitter.push(Buffer.from(':[]}')), [{ b: [] }]);
    assert.equal(splitter.bufferedBytes, 0);
    assert.equal(splitter.bytesPushed, 19);
  });

  it('accepts an empty push and an empty stream', () => {
    const splitter = new JsonStreamSplitter();
    assert.deepEqual(splitter.push(new Uint8Array(0)), []);
    splitter.end();
  });
});

describe('framing: refusals', () => {
  function refusal(chunks: string[], options = {}): OvsdbDecodeError {
    const splitter = new JsonStreamSplitter(options);
    try {
      for (const chunk of chunks) splitter.push(Buffer.from(chunk, 'latin1'));
      splitter.end();
    } catch (error) {
      assert.ok(error instanceof OvsdbDecodeError, `${String(error)}`);
      return error;
    }
    assert.fail(`accepted ${JSON.stringify(chunks)}`);
  }

  it('refuses a scalar or a stray closing bracket at the top level (bad-json)', () => {
    assert.match(refusal(['{} 12']).message, /unexpected '1' at byte offset 3/);
    assert.equal(refusal(['"str"']).code, 'bad-json');
    assert.match(refusal(['{}]']).message, /unexpected '\]' at byte offset 2/);
  });

  it('refuses a value that is not JSON, naming its offset (bad-json)', () => {
    const error = refusal(['{"a":1}  {"a":tr', 'ue,}']);
    assert.equal(error.code, 'bad-json');
    assert.match(error.message, /at byte offset 9 does not parse/);
    assert.equal(refusal(['[1,2}']).code, 'bad-json');
  });

  it('refuses invalid UTF-8 (bad-json)', () => {
    const error = refusal(['{"a":"\xff"}']);
    assert.equal(error.code, 'bad-json');
    assert.match(error.message, /UTF-8/);
  });

  it('accepts a value of exactly the size limit, and refuses one byte more (too-large)', () => {
    const splitter = new JsonStreamSplitter({ maxValueBytes: 16 });
    assert.deepEqual(splitter.push(Buffer.from('{"a":"01234567"}')), [{ a: '01234567' }]);
    const error = refusal(['{"a":"012345678"}'], { maxValueBytes: 16 });
    assert.equal(error.code, 'too-large');
    assert.match(error.message, /exceeds the limit of 16 bytes \(17 bytes/);
  });

  it('refuses a value over the size limit as soon as it is over, before it ends (too-large)', () => {
    const splitter = new JsonStreamSplitter({ maxValueBytes: 16 });
    assert.deepEqual(splitter.push(Buffer.from('{}{"a":"0123456789')), [{}]);
    assert.throws(
      () => splitter.push(Buffer.from('AB')),
      (error) =>
        error instanceof OvsdbDecodeError && error.code === 'too-large' && /at byte offset 2 /.test(error.message),
    );
  });

  it('refuses the stream ending inside a value (truncated)', () => {
    const error = refusal(['{"a":[1,2', ']']);
    assert.equal(error.code, 'truncated');
    assert.match(error.message, /began at byte offset 0 \(10 bytes/);
  });

  it('fails for good: after a refusal every call throws the same error', () => {
    const splitter = new JsonStreamSplitter();
    assert.throws(() => splitter.push(Buffer.from('x')), OvsdbDecodeError);
    let first: unknown;
    try {
      splitter.push(Buffer.from('{}'));
    } catch (error) {
      first = error;
    }
    assert.throws(
      () => splitter.push(Buffer.from('{}')),
      (error) => error === first,
    );
    assert.throws(
      () => splitter.end(),
      (error) => error === first,
    );
  });
});
