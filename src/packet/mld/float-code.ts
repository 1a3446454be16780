/**
 * The 16-bit Maximum Response Code of MLDv2 (RFC 3810 §5.1.3), in milliseconds.
 *
 * Below 32768 a code is the value itself. From 32768 up it is 1|exp(3)|mant(12) and stands
 * for (mant | 0x1000) << (exp + 3), so the largest value is 8387584 ms (about 2.3 hours).
 * The QQIC of an MLDv2 query has IGMPv3's 8-bit form instead: see igmp/float-code.ts.
 */

export const MAX_MAX_RESP_CODE_VALUE = 0x1fff << 10; // 8387584

export function decodeMaxRespCode(code: number): number {
  if (code < 0x8000) return code;
  const exp = (code >> 12) & 0x07;
  const mant = code & 0x0fff;
  return (mant | 0x1000) << (exp + 3);
}

/**
 * The code for `value` ms. Values the form cannot hold exactly round down to the nearest
 * representable value (listeners then answer slightly sooner, never later, than asked).
 * Throws RangeError for values outside 0..8387584 or not whole.
 */
export function encodeMaxRespCode(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > MAX_MAX_RESP_CODE_VALUE) {
    throw new RangeError(
      `value ${value} cannot be encoded: must be a whole number from 0 to ${MAX_MAX_RESP_CODE_VALUE}`,
    );
  }
  if (value < 0x8000) return value;
  // value >= 32768 = 0x1000 << 3, so exp >= 0. Find exp with (value >> (exp + 3)) in 0x1000..0x1fff.
  let exp = 0;
  while (value >> (exp + 3) > 0x1fff) exp++;
  const mant = (value >> (exp + 3)) & 0x0fff;
  return 0x8000 | (exp << 12) | mant;
}
