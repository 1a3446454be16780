#!/usr/bin/env node
// Entry point: runs the compiled CLI (npm run build) and exits with its code.
import { run } from '../dist/cli/main.js';

process.stdout.on('error', (error) => {
  // `mcastctl snoop --json | head` closes the pipe early: that is not a failure.
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

process.exitCode = await run(process.argv.slice(2));
