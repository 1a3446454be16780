/**
 * `mcastctl snoop`: show the IGMP and MLD in a capture file (--read) or crossing an interface
 * (--iface), then who is in which group; or follow the running daemon's events (--daemon).
 */
import { createWriteStream, openSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { CapturedFrame } from '../../transport/packet-socket.js';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { DecodeError, isSystemError, McastError, systemCodeOf, UsageError } from '../../errors.js';
import { PcapWriter, readPcapFile, readPcapStream, type PcapRecord } from '../../packet/pcap/index.js';
import type { FrameEvent } from '../../packet/frame-decoder.js';
import { describeCounts, formatEvent, groupTable, querierTable } from '../render/human-format.js';
import { formatDaemonEvent } from '../render/daemon-events.js';
import { toJsonLine } from '../../packet/frame-event-json.js';
import { SnoopSession } from '../../controllers/snoop/session.js';
import { Output } from '../render/output.js';
import { StopSignal } from '../stop.js';
import { parseDurationMs, parsePositiveInteger } from '../options/parse.js';

interface SnoopFlags {
  read?: string;
  iface?: string;
  daemon?: boolean;
  controlSocket?: string;
  json?: boolean;
  write?: string;
  count?: number;
  duration?: number;
  summary: boolean;
  promiscuous: boolean;
}

export function registerSnoop(program: Command): void {
  program
    .command('snoop')
    .summary('show IGMP and MLD in a capture file or crossing an interface, and who is in which group')
    .description(
      'Decode every IGMP message (v1, v2, v3) and MLD message (v1, v2) in a pcap file (--read) or crossing an interface (--iface), ' +
        'one line each, then summarise the memberships and queriers seen. Malformed IGMP and MLD are shown with ' +
        'the reason, never skipped. Live capture needs CAP_NET_RAW. With --daemon, follow the running ' +
        "daemon's events instead (IGMP from pod ports, joins, leaves, OVS syncs, routes, messages with the peers), one line each.",
    )
    .addOption(
      new Option('-r, --read <file>', 'decode a pcap capture file ("-" for standard input)').conflicts([
        'iface',
        'daemon',
      ]),
    )
    .addOption(new Option('-i, --iface <name>', 'capture live on this interface').conflicts(['read', 'daemon']))
    .addOption(
      new Option('--daemon', "follow the running mcastctl daemon's events (needs root)").conflicts(['read', 'iface']),
    )
    .option(
      '--control-socket <path>',
      `the daemon's control socket, with --daemon (default ${DEFAULT_CONTROL_SOCKET})`,
      parseControlSocket,
    )
    .option('--json', 'one JSON object per message (NDJSON) on stdout, nothing else')
    .option('-w, --write <file>', 'also save the captured frames as a pcap file (with --iface)')
    .option('-c, --count <n>', 'stop after n IGMP or MLD messages', (text) => parsePositiveInteger('--count', text))
    .option('-d, --duration <time>', 'stop after this long (with --iface or --daemon): 30, 30s, 500ms, 2m', (text) =>
      parseDurationMs('--duration', text),
    )
    .option('--no-summary', 'do not print the membership summary at the end')
    .option('--no-promiscuous', 'do not put the interface into promiscuous mode')
    .addHelpText(
      'after',
      `
Examples:
  mcastctl snoop --read capture.pcap
  mcastctl snoop --iface eth0 --json --duration 60 > igmp.ndjson
  mcastctl snoop --iface br-int --write igmp.pcap --count 100
  mcastctl snoop --daemon --json

Ctrl-C stops a live snoop, prints the summary and exits 0. See mcastctl-snoop(1).`,
    )
    .action(async (flags: SnoopFlags) => {
      const output = new Output({ json: flags.json === true });
      if (flags.controlSocket !== undefined && flags.daemon !== true)
        throw new UsageError('--control-socket goes with --daemon');
      if (flags.daemon === true) {
        if (flags.write !== undefined)
          throw new UsageError('--write goes with --iface (the daemon sends events, not frames)');
        await snoopDaemon(flags.controlSocket ?? DEFAULT_CONTROL_SOCKET, flags, output);
        return;
      }
      if (flags.read === undefined && flags.iface === undefined)
        throw new UsageError('snoop needs --read FILE, --iface NAME or --daemon');
      if (flags.read !== undefined) {
        if (flags.write !== undefined)
          throw new UsageError('--write goes with --iface (a capture being read is already a file)');
        if (flags.duration !== undefined)
          throw new UsageError('--duration goes with --iface; use --count to stop reading early');
        await snoopFile(flags.read, flags, output);
      } else {
        await snoopLive(flags.iface!, flags, output);
      }
    });
}

/** Prints one event in the mode asked for. */
function emit(event: FrameEvent, output: Output): void {
  if (output.json) output.recordLine(toJsonLine(event));
  else output.line(formatEvent(event, output.style));
}

/** The summary is for people: JSON output has none. */
function wantsSummary(output: Output, flags: SnoopFlags): boolean {
  return !output.json && flags.summary;
}

function printSummary(session: SnoopSession, output: Output, flags: SnoopFlags): void {
  output.flush();
  if (!wantsSummary(output, flags)) return;
  const groups = session.summary.groupSummaries();
  const queriers = session.summary.querierSummaries();
  output.line();
  output.line(describeCounts(session.summary.counts));
  if (groups.length > 0) output.table(groupTable(groups));
  else output.line('No group has members.');
  if (queriers.length > 0) output.table(querierTable(queriers));
  output.flush();
}

async function snoopFile(path: string, flags: SnoopFlags, output: Output): Promise<void> {
  const name = path === '-' ? 'standard input' : path;
  const stop = new StopSignal();
  let session: SnoopSession | undefined;
  let emitted = 0;
  const onRecord = (record: PcapRecord): void => {
    if (stop.stopped) return;
    const event = session!.frame(record.data, record.index, record.ts);
    if (event === undefined) return;
    emit(event, output);
    if (path === '-') output.flushSoon(); // a pipe (tcpdump -w -) is a live stream: lines as they come
    if (flags.count !== undefined && ++emitted >= flags.count) stop.stop();
  };
  const options = {
    signal: stop.signal,
    onHeader: (header: { linkType: number }) => {
      session = new SnoopSession({ linkType: header.linkType, summarize: wantsSummary(output, flags) });
    },
  };
  try {
    if (path === '-') await readPcapStream(process.stdin, onRecord, options);
    else await readPcapFile(path, onRecord, options);
  } catch (error) {
    // Stopped (--count, Ctrl-C, stdout closed): the reader was aborted on purpose.
    if (!stop.stopped) {
      if (session === undefined) throw unreadableCapture(error, name);
      // Damage after the header: what came before it was shown, and so is its summary.
      printSummary(session, output, flags);
      throw damagedCapture(error, name);
    }
  } finally {
    stop.dispose();
  }
  // Stopped before a capture began (a FIFO that no writer opened yet): nothing to sum up.
  if (session === undefined) {
    output.flush();
    output.info(`stopped before ${name} had a capture header: nothing was read`);
    return;
  }
  printSummary(session, output, flags);
}

/** Nothing could be read (no file, not pcap, an unsupported link type): a usage error. */
function unreadableCapture(error: unknown, name: string): unknown {
  if (error instanceof DecodeError)
    return new UsageError(`cannot read capture ${name}: ${error.message}`, { code: 'bad-file' });
  if (isSystemError(error)) {
    const why =
      error.code === 'ENOENT'
        ? 'no such file'
        : error.code === 'EACCES'
          ? 'permission denied'
          : error.code === 'EISDIR'
            ? 'it is a directory'
            : error.message;
    return new UsageError(`cannot read capture ${name}: ${error.code} (${why})`, { code: 'bad-file' });
  }
  return error; // not an input problem: the exit path reports it as it is
}

/** Reading failed part-way: a runtime failure, after the messages before it were shown. */
function damagedCapture(error: unknown, name: string): unknown {
  if (error instanceof DecodeError) {
    const hint =
      error.code === 'truncated'
        ? 'a capture cut short (tcpdump killed) ends like this'
        : 'the file is damaged from this record on';
    return new McastError('bad-file', `capture ${name} is damaged: ${error.message}`, {
      hint: `the messages before it were shown; ${hint}`,
    });
  }
  if (isSystemError(error))
    return new McastError('io', `reading capture ${name} failed part-way: ${error.code} (${error.message})`);
  return error;
}

async function snoopLive(iface: string, flags: SnoopFlags, output: Output): Promise<void> {
  // Loaded here, not at the top: reading a file must work where the native addon does not.
  const { PacketCapture } = await import('../../transport/packet-socket.js');
  const { igmpFilter } = await import('../../packet/bpf.js');
  // The capture first (a bad interface or a missing privilege), then the --write file,
  // so that a failed start leaves no empty file behind.
  const capture = PacketCapture.open({ iface, promiscuous: flags.promiscuous, filter: igmpFilter });
  let writer: PcapWriter | undefined;
  try {
    if (flags.write !== undefined)
      writer = new PcapWriter(createWriteStream('', { fd: openForWriting(flags.write) }), {
        linkType: capture.linkType,
        endSinkOnClose: true,
      });
  } catch (error) {
    capture.close();
    throw error;
  }
  const session = new SnoopSession({ linkType: capture.linkType, summarize: wantsSummary(output, flags) });
  if (!output.json)
    output.info(`snooping IGMP and MLD on ${iface}${flags.write ? `, saving to ${flags.write}` : ''}; Ctrl-C to stop`);

  const stop = new StopSignal(flags.duration === undefined ? {} : { durationMs: flags.duration });
  let frames = 0;
  let emitted = 0;
  // A failure mid-way (the interface went away, the disk filled): reported after the summary.
  let failure: McastError | undefined;
  const fail = (error: McastError): void => {
    failure ??= error;
    stop.stop();
  };
  capture.onError((error) => {
    if (error.code === 'no-such-interface') fail(error);
    else output.warn(error.message); // link down: the capture resumes when it comes back
  });
  capture.onFrame((captured: CapturedFrame) => {
    if (stop.stopped) return;
    frames++;
    // Microseconds, as tcpdump prints and as the --write file stores them, so that the
    // live lines and a later --read of that file agree to the digit.
    const micros = Math.floor(captured.tsNsec / 1000);
    if (writer !== undefined) {
      try {
        writer.write({
          tsSec: captured.tsSec,
          tsFraction: micros,
          data: captured.data,
          originalLength: captured.originalLength,
        });
        writer.flushSoon(); // like tcpdump -U: what was captured is in the file, batch by batch
      } catch (error) {
        fail(writeFailure(error, flags.write!));
      }
    }
    const event = session.frame(captured.data, frames, captured.tsSec + micros / 1e6);
    if (event === undefined) return;
    emit(event, output);
    output.flushSoon(); // lines as they happen, one write per batch of frames
    if (flags.count !== undefined && ++emitted >= flags.count) stop.stop();
  });

  await stop.whenStopped();
  stop.dispose();
  const stats = capture.stats();
  capture.close();
  try {
    await writer?.close();
  } catch (error) {
    failure ??= writeFailure(error, flags.write!);
  }
  printSummary(session, output, flags);
  if (stats.dropped > 0)
    output.warn(`the kernel dropped ${stats.dropped} frames (capture buffer full); the summary may be incomplete`);
  if (failure !== undefined) throw failure;
}

function writeFailure(error: unknown, path: string): McastError {
  const code = systemCodeOf(error);
  return new McastError('io', `cannot write capture ${path}: ${code}; the capture stopped`);
}

function openForWriting(path: string): number {
  try {
    return openSync(path, 'w');
  } catch (error) {
    const code = systemCodeOf(error);
    throw new UsageError(`cannot write capture ${path}: ${code}`, {
      code: 'bad-file',
      hint: 'check that the directory exists and is writable',
    });
  }
}

/**
 * `snoop --daemon`: the daemon's event stream, one line (or NDJSON object) per event,
 * until --count, --duration, Ctrl-C or stdout closing (exit 0), or the daemon going
 * away (exit 69). There is no summary: `mcastctl groups` shows the daemon's.
 */
async function snoopDaemon(path: string, flags: SnoopFlags, output: Output): Promise<void> {
  const client = await ControlClient.connect(path);
  const stop = new StopSignal(flags.duration === undefined ? {} : { durationMs: flags.duration });
  if (!output.json) output.info(`following the mcastctl daemon at ${path}; Ctrl-C to stop`);
  let emitted = 0;
  try {
    await client.events(
      (event) => {
        if (stop.stopped) return;
        if (output.json) output.record(event);
        else output.line(formatDaemonEvent(event, output.style));
        output.flushSoon();
        if (flags.count !== undefined && ++emitted >= flags.count) stop.stop();
      },
      { signal: stop.signal },
    );
  } finally {
    stop.dispose();
    client.close();
    output.flush();
  }
}
