/**
 * Pure readers of the values people type: durations and hexadecimal numbers, written once
 * for the command-line flags and the daemon's configuration file. Each says what is wrong
 * as data (NaN, a reason), so that a flag and a file key can word their own messages.
 */

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Node's timers hold at most 2^31 - 1 ms (24.8 days); a longer one would fire at once. */
const MAX_DURATION_MS = 2 ** 31 - 1;

/** What a duration's text turned out to be: milliseconds, from 1 to MAX_DURATION_MS, or why not. */
export type DurationReading = { ms: number } | { problem: 'malformed' | 'too-long' };

/**
 * A duration as people write it: `500ms`, `10s`, `2m`, `1h`, or a bare number of
 * `bareUnit` (a number, as YAML gives one, counts in `bareUnit` too). Zero and negative
 * durations are malformed; a duration under 1 ms is 1 ms.
 */
export function readDuration(value: string | number, bareUnit: 'ms' | 's' = 's'): DurationReading {
  let ms = NaN;
  if (typeof value === 'number') ms = value * DURATION_UNITS_MS[bareUnit]!;
  else {
    const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(value.trim());
    if (match !== null) ms = Number(match[1]) * DURATION_UNITS_MS[match[2] ?? bareUnit]!;
  }
  if (!(ms > 0) || !Number.isFinite(ms)) return { problem: 'malformed' };
  if (ms > MAX_DURATION_MS) return { problem: 'too-long' };
  return { ms: Math.max(1, Math.round(ms)) };
}

/** A duration as the man page and messages write it: 125s, 1.5s, 500ms. */
export function showMs(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
}

/**
 * Hexadecimal digits, with or without 0x, as cookies and group ids are always written
 * (ovs-ofctl too): 1 to 8 digits, so the value fits 32 bits. NaN when the text is not that.
 */
export function readHex(text: string): number {
  const digits = text.replace(/^0x/i, '');
  return /^[0-9a-f]{1,8}$/i.test(digits) ? parseInt(digits, 16) : NaN;
}

/** A whole decimal number of digits only (no sign, no exponent); NaN otherwise, or when it is not a safe integer. */
export function readDecimal(text: string): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(value) ? value : NaN;
}
