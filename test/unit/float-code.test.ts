import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { decodeFloatCode, encodeFloatCode, MAX_FLOAT_CODE_VALUE } from '../../src/packet/igmp/index.js';

/** RFC 3376 §4.1.1: code ≥ 128 is 1|exp|mant, value (mant | 0x10) << (exp + 3). Worked by hand. */
const table: [code: number, value: number][] = [
  [0, 0],
  [100, 100],
  [127, 127],
  [0x80, 128], // exp 0, mant 0: 16 << 3
  [0x81, 136], // 17 << 3
  [0x8f, 248], // 31 << 3
  [0x90, 256], // exp 1: 16 << 4
  [0xa0, 512],
  [0xf0, 16384], // exp 7: 16 << 10
  [0xff, 31744], // 31 << 10
];

describe('IGMPv3 floating-point codes', () => {
  for (const [code, value] of table) {
    it(`code 0x${code.toString(16)} ↔ ${value}`, () => {
      assert.equal(decodeFloatCode(code), value);
      assert.equal(encodeFloatCode(value), code);
    });
  }
  it('every code round-trips (the form is a bijection)', () => {
    for (let code = 0; code < 256; code++) assert.equal(encodeFloatCode(decodeFloatCode(code)), code);
  });
  it('values between representable ones round down, never wrap', () => {
    assert.equal(decodeFloatCode(encodeFloatCode(130)), 128);
    assert.equal(decodeFloatCode(encodeFloatCode(300)), 288);
    // The naive uint8 cast of 300 would be 44.
    assert.equal(decodeFloatCode(encodeFloatCode(1250)), 1216); // 125 s as tenths
    for (let value = 0; value <= MAX_FLOAT_CODE_VALUE; value += 7) {
      const back = decodeFloatCode(encodeFloatCode(value));
      // The coarsest step is 1/16 of the value (mantissa 0), so nothing loses more than that.
      assert.ok(back <= value && back >= value * (15 / 16), `${value} → ${back}`);
    }
  });
  it('refuses what it cannot hold', () => {
    for (const bad of [-1, 0.5, MAX_FLOAT_CODE_VALUE + 1, NaN]) assert.throws(() => encodeFloatCode(bad), RangeError);
  });
});
