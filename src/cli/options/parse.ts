/** Parsers for flag values: each returns the value or throws a UsageError naming the flag. */
import { quoteInput, UsageError } from '../../errors.js';

export function parsePositiveInteger(flag: string, text: string): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`${flag} takes a whole number of 1 or more, not ${quoteInput(text)}`);
  }
  return Number(text);
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Node's timers hold at most 2^31 - 1 ms (24.8 days); a longer one would fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/**
 * A duration as people write it: `500ms`, `10s`, `2m`, `1h`, or a bare number of
 * `bareUnit` (seconds unless the flag says otherwise). Returns milliseconds, from 1 to
 * MAX_DURATION_MS.
 */
export function parseDurationMs(flag: string, text: string, bareUnit: 'ms' | 's' = 's'): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(text.trim());
  const value = match === null ? NaN : Number(match[1]) * DURATION_UNITS_MS[match[2] ?? bareUnit]!;
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new UsageError(`${flag} takes a duration such as 10, 10s, 500ms or 2m, not ${quoteInput(text)}`);
  }
  if (value > MAX_DURATION_MS) throw new UsageError(`${flag} of ${quoteInput(text)} is too long: at most 24 days (596h)`);
  return Math.max(1, Math.round(value));
}
