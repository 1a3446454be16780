/**
 * The 8-bit "floating point" codes of IGMPv3 (RFC 3376 §4.1.1 Max Resp Code, §4.1.7 QQIC).
 *
 * Below 128 a code is the value itself. From 128 up it is 1|exp(3)|mant(4) and stands for
 * (mant | 0x10) << (exp + 3), so the largest value is 31744. Max Resp Code counts tenths
 * of a second (so up to 3174.4 s), QQIC counts seconds. A naive `uint8(value)` wraps above
 * 255; these functions never do.
 */

export const MAX_FLOAT_CODE_VALUE = 0x1f << 10; // 31744

export function decodeFloatCode(code: number): number {
  if (code < 0x80) return code;
  const exp = (code >> 4) & 0x07;
  const mant = code & 0x0f;
  return (mant | 0x10) << (exp + 3);
}

/**
 * The code for `value`. Values the form cannot hold exactly round down to the nearest
 * representable value (a querier then waits slightly less, never longer, than asked).
 * Throws RangeError for values outside 0..31744 or not whole.
 */
export function encodeFloatCode(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > MAX_FLOAT_CODE_VALUE) {
    throw new RangeError(`value ${value} cannot be encoded: must be a whole number from 0 to ${MAX_FLOAT_CODE_VALUE}`);
  }
  if (value < 0x80) return value;
  // value >= 128 = 0x10 << 3, so exp >= 0. Find exp with (value >> (exp + 3)) in 16..31.
  let exp = 0;
  while (value >> (exp + 3) > 0x1f) exp++;
  const mant = (value >> (exp + 3)) & 0x0f;
  return 0x80 | (exp << 4) | mant;
}
