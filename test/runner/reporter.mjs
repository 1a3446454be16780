// The test runner's TAP output, with three additions:
// - just above the summary lines, the tests that did not pass (failed, cancelled, timed
//   out), each with its file and the first line of its error, and the tests that did not
//   run, each with its reason: a CI log that keeps only its tail still says which and why;
// - with MCASTCTL_TEST_RUN set (scripts/test.sh names its runs), the summary lines carry
//   the run's name ("# host: tests 380"), so that the one summary of all runs that
//   scripts/test.sh prints last is the only one in the plain form;
// - with MCASTCTL_TEST_RECORD set to a file, one JSON line per test and per suite that was
//   skipped or failed by itself, and a last line with the run's counts, for that summary
//   (test/runner/summary.ts reads them).
// The added lines start with neither "not ok" nor "fail", so that what reads the summary
// counts as before. Plain JavaScript: the runner loads its reporters before the TypeScript
// loader.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import { tap } from 'node:test/reporters';

const MESSAGE_LIMIT = 400;
const RUN = process.env.MCASTCTL_TEST_RUN ?? '';
const RECORD = process.env.MCASTCTL_TEST_RECORD ?? '';
const SUMMARY_LINE = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;

/** @param {AsyncIterable<import('node:test/reporters').TestEvent>} source */
export default async function* reporter(source) {
  yield* tap(withLists(source));
}

/** @param {AsyncIterable<import('node:test/reporters').TestEvent>} source */
async function* withLists(source) {
  /** @type {string[]} */
  const names = [];
  /** @type {string[]} */
  const unpassed = [];
  /** @type {string[]} */
  const skipped = [];
  let listed = false;
  /** @type {Record<string, number>} */
  const counts = {};
  // The file whose tests are reported now. The tests' own locations name the wrapper that
  // declares them (test/helpers/node-test.ts), so the file is taken from the runner's turn:
  // files run one at a time (--test-concurrency=1), each announced by its dequeue event.
  let currentFile;
  for await (const event of source) {
    if (event.type === 'test:dequeue' && event.data.nesting === 0 && event.data.name === event.data.file) currentFile = event.data.file;
    if (event.type === 'test:start') names[event.data.nesting] = event.data.name;
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      const record = recordOf(event, names, currentFile);
      if (record !== null) {
        if (RECORD !== '') appendFileSync(RECORD, JSON.stringify(record) + '\n');
        if (record.status === 'fail' || record.status === 'cancelled') unpassed.push(`- ${record.file}: ${record.name}: ${record.reason}`);
        if (record.status === 'skip') skipped.push(`- ${record.file}: ${record.name}: ${record.reason}${record.kind === 'suite' ? ' (a whole suite: its tests are not counted)' : ''}`);
      }
    }
    if (isSummaryLine(event)) {
      if (!listed) {
        listed = true;
        yield* list(`${unpassed.length} did not pass:`, unpassed);
        yield* list(`${skipped.length} did not run:`, skipped);
      }
      const [key, value] = event.data.message.split(' ');
      counts[key] = Number(value);
      // The last of the runner's summary lines: the run's counts are complete.
      if (key === 'duration_ms' && RECORD !== '') appendFileSync(RECORD, JSON.stringify({ run: RUN, counts }) + '\n');
      if (RUN !== '') yield diagnostic(`${RUN}: ${event.data.message}`);
      else yield event;
      continue;
    }
    yield event;
  }
}

function* list(title, lines) {
  if (lines.length === 0) return;
  yield diagnostic(title);
  for (const line of lines) yield diagnostic(line);
}

/**
 * What one finished test or suite was: pass, fail, cancelled (timed out, or stopped with its
 * suite), skip or todo. A suite is recorded only when it was skipped (its tests never
 * reported) or failed by itself (a hook); a suite that failed because a test did is not.
 */
function recordOf(event, names, currentFile) {
  const data = event.data;
  const kind = data.details?.type === 'suite' ? 'suite' : 'test';
  const error = data.details?.error;
  let status;
  if (data.skip !== undefined && data.skip !== false) status = 'skip';
  else if (data.todo !== undefined && data.todo !== false) status = 'todo';
  else if (event.type === 'test:pass') status = 'pass';
  else if (error?.failureType === 'cancelledByParent' || /timed out after/.test(String(error?.message ?? ''))) status = 'cancelled';
  else status = 'fail';
  if (kind === 'suite' && status !== 'skip' && (status === 'pass' || error?.failureType === 'subtestsFailed')) return null;
  const path = [...names.slice(0, data.nesting), data.name].join(' > ');
  const where = data.name === data.file ? data.file : (currentFile ?? data.file);
  const file = where === undefined ? '?' : relative(process.cwd(), where);
  const record = { run: RUN, file, name: path, kind, status, durationMs: Math.round(data.details?.duration_ms ?? 0) };
  if (status === 'skip' || status === 'todo') record.reason = reasonText(status === 'skip' ? data.skip : data.todo);
  if (status === 'fail' || status === 'cancelled') record.reason = firstLine(error);
  return record;
}

function reasonText(value) {
  return typeof value === 'string' && value !== '' ? value : '(no reason given)';
}

function firstLine(error) {
  const cause = error?.cause instanceof Error ? error.cause : error;
  return String(cause?.message ?? cause ?? 'failed').split('\n', 1)[0].slice(0, MESSAGE_LIMIT);
}

function isSummaryLine(event) {
  return event.type === 'test:diagnostic' && event.data.nesting === 0 && SUMMARY_LINE.test(event.data.message);
}

function diagnostic(message) {
  return { type: 'test:diagnostic', data: { nesting: 0, message } };
}
