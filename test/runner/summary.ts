/**
 * The one summary of a whole test suite's runs (scripts/test.sh: unit, host, routing), from
 * what test/runner/reporter.mjs recorded of each: the tests that did not pass, the tests
 * that did not run with their reasons, each checked against the allowlist, and the counts
 * of all runs together in the runner's own summary form, last, so that a CI log's tail and
 * whatever reads the summary lines see the whole suite.
 *
 * Exit 0 when every run ended well, nothing failed or was cancelled, and every skip is on
 * the allowlist; 1 otherwise.
 *
 * Usage: node --import tsx test/runner/summary.ts RECORDS_DIR [ALLOWLIST]
 *   RECORDS_DIR holds, per run NAME, NAME.json ({ order, run, label, status, seconds }) and
 *   NAME.ndjson (the reporter's records); ALLOWLIST defaults to test/runner/skips-allowed.json.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** One finished test, or a suite that was skipped or failed by itself. */
interface TestRecord {
  run: string;
  file: string;
  name: string;
  kind: 'test' | 'suite';
  status: 'pass' | 'fail' | 'cancelled' | 'skip' | 'todo';
  durationMs: number;
  reason?: string;
}

/** The runner's own counts of one run, as its summary lines gave them. */
interface RunCounts {
  run: string;
  counts: Partial<Record<CountName, number>>;
}

/** What scripts/test.sh knows of one run: where it ran, how it ended, how long it took. */
interface RunMeta {
  /** Its place in the suite: runs are listed in the order they ran. */
  order: number;
  run: string;
  label: string;
  status: number;
  seconds: number;
}

/** A skip that may happen, with the reason the test gives when it does. */
interface AllowedSkip {
  file: string;
  test: string;
  reason: string;
  /** Why it may happen, and where it does not. */
  why: string;
}

const COUNT_NAMES = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo', 'duration_ms'] as const;
type CountName = (typeof COUNT_NAMES)[number];

interface RunResult {
  meta: RunMeta;
  records: TestRecord[];
  counts: RunCounts['counts'] | undefined;
}

function readRun(directory: string, metaFile: string): RunResult {
  const meta = JSON.parse(readFileSync(join(directory, metaFile), 'utf8')) as RunMeta;
  const recordFile = join(directory, `${meta.run}.ndjson`);
  const records: TestRecord[] = [];
  let counts: RunCounts['counts'] | undefined;
  if (existsSync(recordFile)) {
    for (const line of readFileSync(recordFile, 'utf8').split('\n')) {
      if (line === '') continue;
      const entry = JSON.parse(line) as TestRecord | RunCounts;
      if ('counts' in entry) counts = entry.counts;
      else records.push(entry);
    }
  }
  return { meta, records, counts };
}

function readAllowlist(file: string): AllowedSkip[] {
  const entries = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(entries)) throw new Error(`${file}: not a JSON array of allowed skips`);
  for (const [index, entry] of entries.entries()) {
    const fields = entry as Record<string, unknown>;
    for (const key of ['file', 'test', 'reason', 'why']) {
      if (typeof fields[key] !== 'string' || fields[key] === '')
        throw new Error(`${file}: entry ${index} has no ${key}`);
    }
  }
  return entries as AllowedSkip[];
}

/** Why a skip is not allowed, or undefined when the allowlist names it with its reason. */
function refusal(record: TestRecord, allowlist: readonly AllowedSkip[]): string | undefined {
  if (record.kind === 'suite')
    return 'a whole suite was skipped: its tests are not even counted (skip them one by one)';
  const entry = allowlist.find((allowed) => allowed.file === record.file && allowed.test === record.name);
  if (entry === undefined) return 'not on the allowlist';
  if (entry.reason !== record.reason) return `the allowlist allows it only for "${entry.reason}"`;
  return undefined;
}

function main(argv: readonly string[]): number {
  const [directory, allowlistFile = 'test/runner/skips-allowed.json'] = argv;
  if (directory === undefined) {
    console.error('usage: summary.ts RECORDS_DIR [ALLOWLIST]');
    return 64;
  }
  const allowlist = readAllowlist(allowlistFile);
  const runs = readdirSync(directory)
    .filter((name) => name.endsWith('.json'))
    .map((name) => readRun(directory, name))
    .sort((a, b) => a.meta.order - b.meta.order);
  const lines: string[] = [];
  const problems: string[] = [];

  lines.push(`${runs.length} runs:`);
  for (const { meta, counts } of runs) {
    const tests = counts?.tests ?? 0;
    lines.push(`- ${meta.run}: ${meta.label}: ${tests} tests in ${meta.seconds} s, exit ${meta.status}`);
    if (counts === undefined)
      problems.push(`- run ${meta.run} ended (exit ${meta.status}) without a summary: it did not run to its end`);
    else if (meta.status !== 0 && (counts.fail ?? 0) === 0 && (counts.cancelled ?? 0) === 0) {
      problems.push(`- run ${meta.run} exited ${meta.status} though no test failed`);
    }
  }

  const all = runs.flatMap((run) => run.records);
  const unpassed = all.filter((record) => record.status === 'fail' || record.status === 'cancelled');
  if (unpassed.length > 0) {
    lines.push(`${unpassed.length} did not pass:`);
    for (const record of unpassed)
      lines.push(`- [${record.run}] ${record.file}: ${record.name}: ${record.status}: ${record.reason ?? ''}`);
  }
  const skipped = all.filter((record) => record.status === 'skip');
  lines.push(skipped.length === 0 ? 'no test was skipped' : `${skipped.length} did not run:`);
  for (const record of skipped) {
    const why = refusal(record, allowlist);
    lines.push(
      `- [${record.run}] ${record.file}: ${record.name}: ${record.reason ?? ''} (${why === undefined ? 'allowed' : `NOT ALLOWED: ${why}`})`,
    );
    if (why !== undefined) problems.push(`- a skip that is not allowed: ${record.file}: ${record.name}: ${why}`);
  }
  if (problems.length > 0) {
    lines.push('the suite fails:');
    lines.push(...problems);
  }

  const total = (name: CountName) => runs.reduce((sum, run) => sum + (run.counts?.[name] ?? 0), 0);
  const skippedSuites = skipped.filter((record) => record.kind === 'suite').length;
  lines.push(`tests ${total('tests')}`);
  lines.push(`suites ${total('suites')}`);
  lines.push(`pass ${total('pass')}`);
  lines.push(`fail ${total('fail')}`);
  lines.push(`cancelled ${total('cancelled')}`);
  lines.push(`skipped ${total('skipped') + skippedSuites}`);
  lines.push(`todo ${total('todo')}`);
  lines.push(`duration_ms ${Math.round(total('duration_ms'))}`);
  for (const line of lines) console.log(`# ${line}`);
  return problems.length === 0 && total('fail') === 0 && total('cancelled') === 0 ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
