/** Parsers for flag values: each returns the value or throws a UsageError naming the flag. */
import { quoteInput, UsageError } from '../../errors.js';
import { readDecimal, readDuration, readHex } from '../../runtime/values.js';

export function parsePositiveInteger(flag: string, text: string): number {
  const value = readDecimal(text);
  if (!(value >= 1)) throw new UsageError(`${flag} takes a whole number of 1 or more, not ${quoteInput(text)}`);
  return value;
}

/** A whole number from 0 to `max`. */
export function parseDecimal(flag: string, text: string, max: number): number {
  const value = readDecimal(text);
  if (!(value <= max)) throw new UsageError(`${flag} takes a number from 0 to ${max}, not ${quoteInput(text)}`);
  return value;
}

/** Hexadecimal, with or without 0x, from 0 to `max`. */
export function parseHex(flag: string, text: string, max: number): number {
  const value = readHex(text);
  if (!(value <= max))
    throw new UsageError(`${flag} takes a hexadecimal number up to 0x${max.toString(16)}, not ${quoteInput(text)}`);
  return value;
}

/**
 * A duration as people write it: `500ms`, `10s`, `2m`, `1h`, or a bare number of
 * `bareUnit` (seconds unless the flag says otherwise). Returns milliseconds, from 1 to
 * MAX_DURATION_MS.
 */
export function parseDurationMs(flag: string, text: string, bareUnit: 'ms' | 's' = 's'): number {
  const reading = readDuration(text, bareUnit);
  if ('ms' in reading) return reading.ms;
  if (reading.problem === 'too-long')
    throw new UsageError(`${flag} of ${quoteInput(text)} is too long: at most 24 days (596h)`);
  throw new UsageError(`${flag} takes a duration such as 10, 10s, 500ms or 2m, not ${quoteInput(text)}`);
}
