/**
 * What one stage of a trace decides: passed or failed (with a stable code and a hint),
 * skipped, or not applicable to the node, with the facts it was decided on. Shared by
 * every stage so that each reads alike.
 */
import type { TraceFailureCode } from './trace-report.js';

export type StageOutcome =
  | { status: 'pass'; summary: string; facts: Record<string, unknown> }
  | { status: 'skipped' | 'not-applicable'; summary: string; facts: Record<string, unknown> }
  | { status: 'fail'; summary: string; code: TraceFailureCode; hint: string; facts: Record<string, unknown> };

export const pass = (summary: string, facts: Record<string, unknown>): StageOutcome => ({
  status: 'pass',
  summary,
  facts,
});
export const fail = (
  code: TraceFailureCode,
  summary: string,
  hint: string,
  facts: Record<string, unknown>,
): StageOutcome => ({
  status: 'fail',
  code,
  summary,
  hint,
  facts,
});
