/**
 * The one round-trip check every codec test uses: given a value and the bytes an
 * independent source says it encodes to, assert
 *   encode(value) = bytes, encodingLength(value) = bytes.length,
 *   decode(bytes) = value, and encode(decode(bytes)) = bytes.
 */
import assert from 'node:assert/strict';

export interface Codec<T> {
  encode(value: T, buf?: Uint8Array, offset?: number): Uint8Array;
  decode(bytes: Uint8Array, start?: number, end?: number): T;
  encodingLength(value: T): number;
}

export function assertRoundTrip<T>(codec: Codec<T>, value: T, expected: Uint8Array): void {
  const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
  assert.equal(codec.encodingLength(value), expected.length, 'encodingLength');
  assert.equal(hexOf(codec.encode(value)), hexOf(expected), 'encode(value)');
  const decoded = codec.decode(expected, 0, expected.length);
  assert.deepEqual(normalize(decoded), normalize(value), 'decode(bytes)');
  assert.equal(hexOf(codec.encode(decoded)), hexOf(expected), 'encode(decode(bytes))');
  // Encoding at an offset into a caller's buffer writes the same bytes there and nothing else.
  const buf = Buffer.alloc(expected.length + 7, 0xaa);
  codec.encode(value, buf, 3);
  assert.equal(hexOf(buf.subarray(3, 3 + expected.length)), hexOf(expected), 'encode at offset');
  assert.equal(
    hexOf(buf.subarray(0, 3)) + hexOf(buf.subarray(3 + expected.length)),
    'aa'.repeat(7),
    'encode stays in bounds',
  );
}

/** Buffers and Uint8Arrays compare by content. */
function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, normalize(inner)]));
  }
  return value;
}
