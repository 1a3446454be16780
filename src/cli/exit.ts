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
    return { exitCode: error.exitCode, message: error.message, ...(error.hint === undefined ? {} : { hint: error.hint }) };
  }
  if (error instanceof CommanderError) {
    // Commander has already printed its message or the help. Its own exit code is 0 for
    // help or a version that was asked for; anything else (help shown because no command
    // was given, an unknown option) is a usage error.
    return { exitCode: error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage, message: '' };
  }
  // A bug, not a user error: say so plainly, with the stack for the report.
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return { exitCode: ExitCode.Failure, message: `internal error: ${detail}`, hint: 'this is a bug in mcastctl; please report it with the command line' };
}

export function printFailure(failure: ReportedFailure, stderr: { write(text: string): unknown }, program = 'mcastctl'): void {
  if (failure.message === '') return;
  stderr.write(`${program}: ${failure.message}\n`);
  if (failure.hint !== undefined) stderr.write(`${program}: hint: ${failure.hint}\n`);
}
