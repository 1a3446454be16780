/**
 * The one exit path: every failure of every subcommand ends here, becomes one message on
 * stderr (what failed, on what, and what to do) and one exit code (see ExitCode).
 */
import { CommanderError } from 'commander';
import { ExitCode, McastError } from '../errors.js';

export interface ReportedFailure {
  exitCode: ExitCode;
  /** Lines for stderr, without the program-name prefix. */
  message: string;
  hint?: string;
}

export function describeFailure(error: unknown): ReportedFailure {
  if (error instanceof McastError) {
    return {
      exitCode: error.exitCode,
      message: error.message,
      ...(error.hint === undefined ? {} : { hint: error.hint }),
    };
  }
  if (error instanceof CommanderError) {
    // Commander has already printed its message or the help. Its own exit code is 0 for
    // help or a version that was asked for; anything else (help shown because no command
    // was given, an unknown option) is a usage error.
    return { exitCode: error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage, message: '' };
  }
  // A bug, not a user error: say so plainly, with the stack for the report.
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return {
    exitCode: ExitCode.Failure,
    message: `internal error: ${detail}`,
    hint: 'this is a bug in mcastctl; please report it with the command line',
  };
}

/** The longest line of a failure that reaches stderr (the program-name prefix aside). */
export const MAX_FAILURE_LINE_CHARACTERS = 1000;
/** The most lines of a failure's message that reach stderr. */
const MAX_FAILURE_LINES = 100;

export function printFailure(
  failure: ReportedFailure,
  stderr: { write(text: string): unknown },
  program = 'mcastctl',
): void {
  if (failure.message === '') return;
  stderr.write(`${program}: ${boundText(failure.message)}\n`);
  if (failure.hint !== undefined) stderr.write(`${program}: hint: ${boundText(failure.hint)}\n`);
}

/**
 * `text` with each line cut to MAX_FAILURE_LINE_CHARACTERS and at most MAX_FAILURE_LINES
 * lines, each cut saying how much was left out. Messages quote a user's values through
 * quoteInput already; this is the backstop for anything that does not (a server's reply,
 * a path), so that no input comes back whole on the terminal or in the journal.
 */
export function boundText(text: string): string {
  const lines = text.split('\n');
  const kept = lines.slice(0, MAX_FAILURE_LINES).map((line) => {
    if (line.length <= MAX_FAILURE_LINE_CHARACTERS) return line;
    // Never cut a surrogate pair in half.
    const cut = /[\uD800-\uDBFF]/.test(line[MAX_FAILURE_LINE_CHARACTERS - 1]!)
      ? MAX_FAILURE_LINE_CHARACTERS - 1
      : MAX_FAILURE_LINE_CHARACTERS;
    return `${line.slice(0, cut)}… (${line.length - cut} more characters left out)`;
  });
  if (lines.length > MAX_FAILURE_LINES) kept.push(`… (${lines.length - MAX_FAILURE_LINES} more lines left out)`);
  return kept.join('\n');
}
