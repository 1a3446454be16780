#!/usr/bin/env node
// Entry point: runs the compiled CLI (npm run build) and exits with its code.
import { run } from '../dist/cli/main.js';
import { watchStdout } from '../dist/cli/stop.js';

// `mcastctl snoop --json | head` closes the pipe early: that stops the command cleanly.
watchStdout();

process.exitCode = await run(process.argv.slice(2));
