/**
 * `mcastctl top`: the groups carrying traffic now, a live table of packets and bytes a
 * second per group and per pod, from the daemon's per-pod counters read every interval.
 */
import type { Command } from 'commander';
import { UsageError, quoteInput } from '../../errors.js';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import type { TrafficStatsView } from '../../transport/control/daemon-view.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { Output } from '../render/output.js';
import { measuringLines, RATE_WINDOW_SECONDS, TrafficRateWindow, topLines } from '../render/traffic-rates.js';
import { StopSignal } from '../stop.js';

interface TopFlags {
  controlSocket: string;
  interval: number;
  once?: boolean;
  json?: boolean;
}

/** The screen's size where stdout is no terminal (`top --once` into a file). */
const NO_TERMINAL = { columns: 200, rows: 1000 };
const CTRL_C = '\u0003';

function parseInterval(text: string): number {
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || seconds < 0.2 || seconds > 3600)
    throw new UsageError(`--interval ${quoteInput(text)} is not a number of seconds from 0.2 to 3600`);
  return seconds;
}

export function registerTop(program: Command): void {
  program
    .command('top')
    .summary('a live view of the groups carrying traffic: packets and bytes a second, per group and per pod')
    .description(
      "Read the running daemon's per-pod traffic counters (those of `groups --stats`) every interval and show the groups busiest first, each with what its pods received and sent a second over the last 5 s (or the interval, if longer: OVS adds its datapath's counts to these counters only about every half second), and under it its pods. The table refreshes in place and fits the terminal; q or Ctrl-C quits. Sent is counted only with the daemon's trafficCounters on. Needs root (the control socket is root-only).",
    )
    .option('--interval <seconds>', 'seconds between two reads and refreshes (0.2 to 3600)', parseInterval, 1)
    .option('--once', 'read until the reads span 5 s (or two reads, one interval apart), print the rates once, exit')
    .option('--json', 'with --once: print one JSON document (the groups with their rates, and their pods)')
    .option(
      '--control-socket <path>',
      "the daemon's control socket (a path; relative to the working directory)",
      parseControlSocket,
      DEFAULT_CONTROL_SOCKET,
    )
    .addHelpText(
      'after',
      '\nExit status: 0 quit (q, Ctrl-C) or done (--once); 64 a bad flag; 69 the daemon is not reachable; 77 not root. See mcastctl-top(1).',
    )
    .action(async (flags: TopFlags) => {
      if (flags.json === true && flags.once !== true)
        throw new UsageError('--json needs --once (a live view is no document)');
      const output = new Output({ json: flags.json === true });
      const client = await ControlClient.connect(flags.controlSocket);
      const stop = new StopSignal();
      const keys = quitOnKeys(stop);
      try {
        const window = new TrafficRateWindow({ seconds: Math.max(RATE_WINDOW_SECONDS, flags.interval) });
        const started = performance.now();
        const read = async () => {
          const stats = await client.request<TrafficStatsView>('stats');
          window.add(stats, (performance.now() - started) / 1000);
          return stats;
        };
        await read();
        while (!stop.stopped) {
          await pause(flags.interval * 1000, stop.signal);
          if (stop.stopped) break;
          const stats = await read();
          const rates = window.rates();
          if (rates === undefined) {
            if (flags.once !== true) output.screen(measuringLines(stats, window, output.style, new Date()));
            continue;
          }
          if (output.json) {
            output.document({ ...rates, windowSeconds: Math.round(rates.windowSeconds * 1000) / 1000 });
          } else {
            output.screen(topLines(rates, output.terminalSize() ?? NO_TERMINAL, output.style, new Date()));
          }
          if (flags.once === true) break;
        }
      } finally {
        keys.dispose();
        stop.dispose();
        client.close();
      }
    });
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** On a terminal, q or Ctrl-C stops `stop` (the terminal is in raw mode meanwhile, so no key is echoed). */
function quitOnKeys(stop: StopSignal): { dispose(): void } {
  const stdin = process.stdin;
  if (stdin.isTTY !== true) return { dispose: () => undefined };
  const onKey = (chunk: Buffer) => {
    const text = chunk.toString();
    if (text.includes('q') || text.includes('Q') || text.includes(CTRL_C)) stop.stop();
  };
  stdin.setRawMode(true);
  stdin.on('data', onKey);
  stdin.resume();
  return {
    dispose() {
      stdin.off('data', onKey);
      stdin.setRawMode(false);
      stdin.pause();
    },
  };
}
