#!/usr/bin/env node
// Entry point: runs the compiled CLI (npm run build) and exits with its code.

// Before anything else: Node's default action for SIGUSR1 opens its inspector, a
// debugger on 127.0.0.1:9229 that any local user can reach and run code through, as
// the root this tool often runs as. A listener replaces that action (the daemon adds
// its own, a state summary in its log).
process.on('SIGUSR1', () => {});

const { run } = await import('../dist/cli/main.js');
const { watchStdout } = await import('../dist/cli/stop.js');

// `mcastctl snoop --json | head` closes the pipe early: that stops the command cleanly.
watchStdout();

process.exitCode = await run(process.argv.slice(2));
