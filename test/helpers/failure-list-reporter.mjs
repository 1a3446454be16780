// The test runner's TAP output, with one addition: just above the summary lines, a list of
// the tests that failed, each with its file and the first line of its error. A CI log that
// keeps only its tail then still says which test failed and why, not only how many. The list's
// lines start with neither "not ok" nor "fail", so that what reads the summary counts as before.
// Plain JavaScript: the runner loads its reporters before the TypeScript loader.
import { tap } from 'node:test/reporters';

const MESSAGE_LIMIT = 400;

/** @param {AsyncIterable<import('node:test/reporters').TestEvent>} source */
export default async function* failureListReporter(source) {
  yield* tap(withFailureList(source));
}

/** @param {AsyncIterable<import('node:test/reporters').TestEvent>} source */
async function* withFailureList(source) {
  /** @type {string[]} */
  const names = [];
  /** @type {string[]} */
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:start') names[event.data.nesting] = event.data.name;
    if (event.type === 'test:fail') {
      const failure = describeFailure(event.data, names);
      if (failure !== null) failures.push(failure);
    }
    if (isSummaryStart(event) && failures.length > 0) {
      yield diagnostic(`${failures.length} did not pass:`);
      for (const failure of failures) yield diagnostic(failure);
    }
    yield event;
  }
}

function describeFailure(data, names) {
  const error = data.details.error;
  // A suite fails when one of its tests does: that test is already in the list.
  if (error?.failureType === 'subtestsFailed') return null;
  const path = [...names.slice(0, data.nesting), data.name].join(' > ');
  const cause = error?.cause instanceof Error ? error.cause : error;
  const firstLine = String(cause?.message ?? cause ?? 'failed').split('\n', 1)[0].slice(0, MESSAGE_LIMIT);
  return `- ${data.file ?? '?'}: ${path}: ${firstLine}`;
}

function isSummaryStart(event) {
  return event.type === 'test:diagnostic' && event.data.nesting === 0 && /^tests \d+$/.test(event.data.message);
}

function diagnostic(message) {
  return { type: 'test:diagnostic', data: { nesting: 0, message } };
}
