/**
 * Live snooping: `snoop --iface` on an observer host must see the same IGMP messages that
 * tcpdump captures on that interface in the same window (snoop's MLD lines aside: tcpdump
 * is asked for IGMP only), including reports for groups the
 * observer never joined; `--write` must produce a pcap that tcpdump and tshark read with
 * the same frames; and without CAP_NET_RAW, `snoop --iface` must exit 77 naming it.
 *
 * The lab: a querier bridge (IGMPv3, short intervals) behind a hub, hosts h1 (forced to
 * IGMPv2) and h2 (IGMPv3) joining and leaving, and an observer host that joins nothing.
 * The comparison window is bracketed by marker reports that h1 sends from a raw socket:
 * it opens with the first marker snoop prints (so snoop's start-up does not count) and
 * closes with the end marker.
 *
 * Needs root, iproute2, tcpdump, tshark, python3, setpriv, and a built CLI with the
 * native capture addon (`npm run build`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import * as igmp from '../../src/packet/igmp/index.js';
import { cliMissing, lineSplitter, mcastctl, parseNdjson, startMcastctl, type CliResult } from '../lab/cli.js';
import { Lab, run, sleep, type Host } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import { compareWithTshark, diffLine, kindOf, tsharkIgmp, tsharkMembership, type SnoopLine } from '../lab/tshark.js';

const GA = '239.10.0.1'; // h1 (IGMPv2): joined, then left
const GB = '239.10.0.2'; // h2 (IGMPv3): joined, then left
const START_MARKER = '239.255.0.1';
const END_MARKER = '239.255.0.2';
const SIGINT_GROUP = '239.9.9.9'; // h1, joined while a snoop waits for Ctrl-C
const SNOOP_DURATION_S = 8;
/** Both tools read the kernel's timestamp of the same packet; allow for rounding to µs. */
const TS_TOLERANCE_S = 0.005;

/** An IGMPv2 report for `group`, by the project's own codec. */
const v2Report = (group: string): Uint8Array => igmp.encode({ kind: 'report', version: 2, group });

interface LiveRun {
  observer: Host;
  hosts: Host[];
  snoop: CliResult;
  snoopLines: SnoopLine[];
  tcpdumpFile: string;
  writtenFile: string;
  /** The window: timestamps of the start marker snoop saw first and of the end marker. */
  window: [number, number];
  /** Wall time (ms) when snoop had exited. */
  endedAt: number;
  setupMs: number;
}

async function liveRun(lab: Lab, log: (line: string) => void): Promise<LiveRun> {
  const started = Date.now();
  const ns = await lab.namespace('sw');
  const segment = await lab.igmpSegment(ns, {
    address: '10.61.0.1/24',
    querier: {
      igmpVersion: 3,
      queryIntervalMs: 2000,
      queryResponseIntervalMs: 1000,
      lastMemberIntervalMs: 500,
      lastMemberCount: 2,
    },
  });
  await segment.querier.set({ querier: true });
  const h1 = await lab.host('h1', { bridge: segment.hub, igmpVersion: 2 });
  const h2 = await lab.host('h2', { bridge: segment.hub, igmpVersion: 3 });
  const observer = await lab.host('obs', { bridge: segment.hub });
  const [m1, m2] = await Promise.all([Member.start(lab, h1), Member.start(lab, h2)]);
  if (!m1 || !m2) throw new Error('members did not start');
  const setupMs = Date.now() - started;
  log(`lab up in ${setupMs} ms`);

  const tcpdumpFile = lab.file('tcpdump.pcap');
  const writtenFile = lab.file('snoop-write.pcap');
  const tcpdump = await lab.startTcpdump(observer.ns, observer.iface, tcpdumpFile, { filter: ['igmp'] });
  try {
    const waiters: { group: string; resolve: (line: SnoopLine) => void }[] = [];
    const onLine = (text: string) => {
      let line: SnoopLine;
      try {
        line = JSON.parse(text) as SnoopLine;
      } catch {
        return; // parseNdjson reports it at the end
      }
      for (const waiter of waiters.filter((w) => w.group === line.group && line.type === 'report')) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    };
    const marker = (group: string) => new Promise<SnoopLine>((resolve) => waiters.push({ group, resolve }));
    const snoopStarted = Date.now();
    const snoop = startMcastctl(
      ['snoop', '--iface', observer.iface, '--json', '--duration', `${SNOOP_DURATION_S}s`, '--write', writtenFile],
      {
        ns: observer.ns,
        timeoutMs: (SNOOP_DURATION_S + 20) * 1000,
        onStdout: lineSplitter(onLine),
      },
    );
    const exited = snoop.done.then((result) => {
      for (const waiter of waiters.splice(0)) waiter.resolve({ frame: -1, ts: NaN, src: null, dst: null });
      return result;
    });

    // Open the window: start markers until snoop shows one (it is listening from then on).
    const startSeen = marker(START_MARKER);
    let opened: SnoopLine | undefined;
    while (!opened && Date.now() - snoopStarted < 8000) {
      await m1.sendIgmp(START_MARKER, v2Report(START_MARKER));
      opened = await Promise.race([startSeen, sleep(250).then(() => undefined)]);
    }
    if (!opened || opened.frame < 0) {
      const result = await Promise.race([exited, sleep(1000).then(() => undefined)]);
      snoop.child.kill('SIGKILL');
      throw new Error(
        `snoop --iface never showed the start marker: exit ${result?.code ?? 'none yet'}, stderr: ${result?.stderr ?? ''}`,
      );
    }
    log(`snoop listening ${Date.now() - snoopStarted} ms after start`);

    // The traffic: reports for groups the observer never joins.
    await m1.join(GA); // v2 report
    await m2.join(GB); // v3 CHANGE_TO_EXCLUDE
    await sleep(2500); // general queries and their answers
    await m1.leave(GA); // v2 leave, group-specific queries
    await m2.leave(GB); // v3 CHANGE_TO_INCLUDE
    await sleep(800);

    const endSeen = marker(END_MARKER);
    await m1.sendIgmp(END_MARKER, v2Report(END_MARKER));
    const closed = await Promise.race([endSeen, sleep(5000).then(() => undefined)]);
    if (!closed || closed.frame < 0) throw new Error('snoop --iface did not show the end marker within 5 s');
    log(`window closed ${Date.now() - snoopStarted} ms after start; waiting for --duration`);

    const result = await exited;
    const endedAt = Date.now();
    return {
      observer,
      hosts: [h1, h2],
      snoop: result,
      // All of stdout (parsing fails loudly on a line that is not a JSON object).
      snoopLines: parseNdjson<SnoopLine>(result.stdout),
      tcpdumpFile,
      writtenFile,
      window: [opened.ts, closed.ts],
      endedAt,
      setupMs,
    };
  } finally {
    await tcpdump.stop();
  }
}

function inWindow(line: SnoopLine, [from, to]: [number, number]): boolean {
  return line.ts >= from - 1e-6 && line.ts <= to + 1e-6;
}

describe('snoop --iface (live capture)', { timeout: 120_000 }, () => {
  let lab: Lab;
  let live: LiveRun | undefined;
  let failure: unknown;

  before(async () => {
    lab = Lab.create();
    const missing = cliMissing();
    if (missing) {
      failure = new Error(`cannot run mcastctl: ${missing}`);
      return;
    }
    try {
      live = await liveRun(lab, (line) => console.error(`# ${line}`));
    } catch (error) {
      failure = error;
    }
  });

  after(async () => {
    await lab?.destroy();
  });

  /** The live run, or the reason it failed (reported by each test that needs it). */
  function liveOrFail(): LiveRun {
    if (!live) throw failure instanceof Error ? failure : new Error(String(failure));
    return live;
  }

  it('exits 0 after --duration with nothing but NDJSON on stdout', () => {
    const { snoop, window, endedAt } = liveOrFail();
    assert.equal(snoop.code, 0, `snoop exited ${snoop.code} (${snoop.signal ?? 'no signal'}): ${snoop.stderr}`);
    assert.ok(
      snoop.elapsedMs >= SNOOP_DURATION_S * 1000 - 100,
      `snoop stopped after ${snoop.elapsedMs} ms, before its --duration`,
    );
    // Its start-up (before it listens) takes what a loaded machine gives it: the end is
    // judged from the first marker it saw, the whole run only against a hang.
    const afterListening = endedAt - window[0] * 1000;
    assert.ok(
      afterListening < (SNOOP_DURATION_S + 3) * 1000,
      `snoop ended ${afterListening} ms after it was listening, for --duration ${SNOOP_DURATION_S}s`,
    );
    assert.ok(
      snoop.elapsedMs < (SNOOP_DURATION_S + 15) * 1000,
      `snoop ran ${snoop.elapsedMs} ms for --duration ${SNOOP_DURATION_S}s`,
    );
  });

  it('sees the same IGMP messages tcpdump captured on that interface in the same window', async (t) => {
    const run = liveOrFail();
    const fromTcpdump = (await tsharkIgmp(run.tcpdumpFile)).filter((line) => inWindow(line, run.window));
    // tcpdump captured `igmp` only: snoop's MLD lines, if any host sent MLD, have no counterpart there.
    const fromSnoop = run.snoopLines.filter((line) => inWindow(line, run.window) && line.protocol === 'igmp');
    t.diagnostic(
      `window ${(run.window[1] - run.window[0]).toFixed(3)} s: tcpdump ${fromTcpdump.length} IGMP frames, snoop ${fromSnoop.length} lines`,
    );
    // Frame numbers differ (a file index and a running count): pair the messages in time order.
    // Two frames from different hosts within the same instant may reach two packet
    // sockets in either order (seen once in CI): such a neighbouring pair is put back in
    // tcpdump's order before comparing; anything else still counts as a difference.
    const same = (got: (typeof fromSnoop)[number] | undefined, want: (typeof fromTcpdump)[number] | undefined) =>
      got !== undefined &&
      want !== undefined &&
      diffLine({ ...got, frame: want.frame, ts: want.ts }, want).length === 0 &&
      Math.abs(got.ts - want.ts) <= TS_TOLERANCE_S;
    for (let i = 0; i + 1 < fromSnoop.length; i++) {
      if (
        !same(fromSnoop[i], fromTcpdump[i]) &&
        same(fromSnoop[i], fromTcpdump[i + 1]) &&
        same(fromSnoop[i + 1], fromTcpdump[i])
      ) {
        [fromSnoop[i], fromSnoop[i + 1]] = [fromSnoop[i + 1]!, fromSnoop[i]!];
      }
    }
    const differences: string[] = [];
    const count = Math.max(fromTcpdump.length, fromSnoop.length);
    for (let i = 0; i < count; i++) {
      const want = fromTcpdump[i];
      const got = fromSnoop[i];
      if (!want || !got) {
        differences.push(`message ${i + 1}: only ${want ? 'tcpdump' : 'snoop'} has it: ${JSON.stringify(want ?? got)}`);
        continue;
      }
      const diffs = diffLine({ ...got, frame: want.frame, ts: want.ts }, want);
      if (Math.abs(got.ts - want.ts) > TS_TOLERANCE_S) diffs.push(`  ts: snoop ${got.ts}  tcpdump ${want.ts}`);
      if (diffs.length > 0) differences.push(`message ${i + 1} (${kindOf(want)}):\n${diffs.join('\n')}`);
    }
    assert.equal(differences.join('\n'), '', 'snoop --iface and tcpdump disagree');
    assert.ok(fromSnoop.length >= 6, `only ${fromSnoop.length} messages in the window`);
  });

  it('shows reports for groups the observer never joined', async () => {
    const { snoopLines, hosts, observer } = liveOrFail();
    const [h1, h2] = hosts;
    const memberships = (await lab.exec(observer.ns, ['cat', '/proc/net/igmp'])).stdout;
    for (const group of [GA, GB, START_MARKER, END_MARKER]) {
      const hex = group
        .split('.')
        .map((octet) => Number(octet).toString(16).padStart(2, '0').toUpperCase())
        .reverse()
        .join('');
      assert.ok(!memberships.includes(hex), `the observer is a member of ${group}:\n${memberships}`);
    }
    assert.ok(
      snoopLines.some((l) => l.type === 'report' && l.version === 2 && l.src === h1?.address && l.group === GA),
      `no v2 report for ${GA} from h1 in snoop's output`,
    );
    assert.ok(
      snoopLines.some((l) => l.type === 'leave' && l.src === h1?.address && l.group === GA),
      `no v2 leave for ${GA} from h1`,
    );
    assert.ok(
      snoopLines.some(
        (l) =>
          l.type === 'report' && l.version === 3 && l.src === h2?.address && l.records?.some((r) => r.group === GB),
      ),
      `no v3 report for ${GB} from h2 in snoop's output`,
    );
    assert.ok(
      snoopLines.some((l) => l.type === 'query'),
      'no query in snoop output',
    );
  });

  it('--write produces a pcap that tcpdump -r and tshark -r read with the same frames, those snoop showed', async () => {
    const { writtenFile, snoopLines } = liveOrFail();
    const header = readFileSync(writtenFile).subarray(0, 4).toString('hex');
    assert.ok(['d4c3b2a1', 'a1b2c3d4', '4d3cb2a1', 'a1b23c4d'].includes(header), `not a pcap file (magic ${header})`);
    // tcpdump: one line per frame, epoch timestamp first.
    const tcpdump = await run(['tcpdump', '-r', writtenFile, '-n', '-tt', '-q']);
    const tcpdumpFrames = tcpdump.stdout.split('\n').filter((l) => l.trim() !== '');
    const tshark = await run([
      'tshark',
      '-r',
      writtenFile,
      '-n',
      '-T',
      'fields',
      '-E',
      'separator=,',
      '-e',
      'frame.time_epoch',
      '-e',
      'ip.src',
      '-e',
      'ip.dst',
    ]);
    const tsharkFrames = tshark.stdout.split('\n').filter((l) => l.trim() !== '');
    assert.equal(tcpdumpFrames.length, tsharkFrames.length, 'tcpdump and tshark count different frames');
    assert.ok(tsharkFrames.length > 0, 'the written pcap holds no frame');
    for (const [i, text] of tsharkFrames.entries()) {
      const [ts = '', src = '', dst = ''] = text.split(',');
      const line = tcpdumpFrames[i] ?? '';
      const tcpdumpTs = Number(line.split(' ')[0]);
      assert.ok(Math.abs(tcpdumpTs - Number(ts)) < 2e-6, `frame ${i + 1}: tcpdump ts ${tcpdumpTs}, tshark ${ts}`);
      if (src !== '')
        assert.ok(line.includes(`${src} > ${dst}`), `frame ${i + 1}: tcpdump shows ${line}, tshark ${src} > ${dst}`);
    }
    // The written frames are the frames snoop counted: same numbering, same decoding.
    const differences = compareWithTshark(snoopLines, await tsharkMembership(writtenFile));
    assert.equal(differences, '', 'snoop output and the pcap it wrote disagree');
  });

  it('Ctrl-C (SIGINT) stops it: the membership summary, then exit 0', async () => {
    const { observer, hosts } = liveOrFail();
    const [h1] = hosts;
    const snoop = startMcastctl(['snoop', '--iface', observer.iface], { ns: observer.ns, timeoutMs: 30_000 });
    let stderr = '';
    snoop.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 10_000;
    while (!stderr.includes('Ctrl-C to stop') && Date.now() < deadline) await sleep(50);
    assert.match(stderr, /snooping IGMP and MLD on/, 'the banner on stderr');
    const member = await Member.start(lab, h1!);
    await member.join(SIGINT_GROUP); // a v2 report the summary must show
    await sleep(500);
    snoop.child.kill('SIGINT');
    const result = await snoop.done;
    await member.quit();
    assert.equal(result.code, 0, `exit ${result.code} (${result.signal ?? 'no signal'}): ${result.stderr}`);
    assert.match(result.stdout, /v2 report 239\.9\.9\.9/);
    assert.match(result.stdout, /\d+ IGMP( and MLD)? messages?:/, 'the counts line of the summary');
    assert.match(
      result.stdout,
      new RegExp(`│ 239\\.9\\.9\\.9 +│ ${h1!.address.replace(/\./g, '\\.')} +│ any source +│ v2`),
      'the membership table',
    );
  });

  it('a --write file that cannot be written (a full disk) stops it with a clear error, exit 1', async () => {
    const { observer } = liveOrFail();
    const result = await mcastctl(['snoop', '--iface', observer.iface, '--write', '/dev/full', '--duration', '1s'], {
      ns: observer.ns,
      timeoutMs: 20_000,
    });
    assert.equal(result.code, 1, `exit ${result.code}: ${result.stderr}`);
    assert.match(result.stderr, /cannot write capture \/dev\/full: ENOSPC/);
    assert.match(result.stdout, /IGMP( and MLD)? messages?:/, 'the summary still printed');
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });

  it('exits 77 naming CAP_NET_RAW when run without privilege', async () => {
    const missing = cliMissing();
    if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
    const ns = live?.observer.ns ?? (await lab.namespace('unpriv'));
    const iface = live?.observer.iface ?? 'lo';
    const result = await mcastctl(['snoop', '--iface', iface, '--json', '--duration', '2s'], {
      ns,
      wrapper: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all'],
      timeoutMs: 20_000,
    });
    assert.equal(result.code, 77, `exit ${result.code}, stderr: ${result.stderr}`);
    assert.match(result.stderr, /CAP_NET_RAW/);
    assert.equal(result.stdout, '', 'nothing on stdout');
  });
});
