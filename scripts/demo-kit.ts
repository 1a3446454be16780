/**
 * What every demo script shares: its voice on stderr, the checks before it builds a lab
 * (root for the namespaces and OVS, a built CLI), and its one exit path: an error is one
 * line, never a stack trace.
 */
import { Chalk } from 'chalk';
import { cliMissing } from '../test/lab/cli.js';

export const color = new Chalk({ level: process.stdout.isTTY && !process.env.NO_COLOR ? 1 : 0 });

export function say(text: string): void {
  process.stderr.write(`${color.dim('demo:')} ${text}\n`);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a demo's `main` after the checks (exit 77 without root, 1 without a built CLI) and sets the exit status. */
export async function runDemo(command: string, main: () => Promise<number>): Promise<void> {
  if (process.getuid?.() !== 0) {
    say(`the demo builds network namespaces and runs OVS: run it as root (sudo ${command})`);
    process.exitCode = 77;
    return;
  }
  const missing = cliMissing();
  if (missing) {
    say(`cannot run mcastctl: ${missing}`);
    process.exitCode = 1;
    return;
  }
  process.exitCode = await main().catch((error: unknown) => {
    say(`${color.red('error')}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  });
}
