/**
 * `mcastctl snoop --read`, run as a user runs it: the built binary on capture files.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1 } from '../fixtures/real-frames.js';
import { ethernetFrame, igmpBytes, ipv4Packet } from '../helpers/bytes.js';
import { MCASTCTL_BIN, mcastctl as runCli, parseNdjson, startMcastctl } from '../lab/cli.js';
import { run, sleep } from '../lab/lab.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';
import { pcapFile } from '../helpers/pcap-bytes.js';
import { encodeFrame } from '../../src/packet/mld-frame.js';
import type { MldMessage } from '../../src/packet/mld/message.js';
import { PcapWriter } from '../../src/packet/pcap/index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcastctl-snoop-read-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function writeCapture(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('snoop --read: hostile input among valid frames', () => {
  // valid, hostile, valid, hostile, ... with noise that must yield no line.
  const frames: Buffer[] = [validFrames.arp];
  for (const hostile of hostileFrames) frames.push(validFrames.v2Report, hostile.frame, validFrames.udp);
  frames.push(validFrames.v3Join, validFrames.mtrace);

  it('gives every hostile frame its error line, decodes the valid ones, and exits 0', async () => {
    const result = await runCli(['snoop', '--read', writeCapture('hostile.pcap', pcapFile(frames)), '--json']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const lines = parseNdjson(result.stdout);
    // One line per IGMP-carrying frame: no line for ARP or UDP.
    assert.equal(lines.length, 2 * hostileFrames.length + 2);
    hostileFrames.forEach((hostile, i) => {
      const valid = lines[2 * i]!;
      const bad = lines[2 * i + 1]!;
      assert.equal(valid.frame, 2 + 3 * i);
      assert.deepEqual([valid.type, valid.group], ['report', '239.1.2.3']);
      assert.equal(bad.frame, 3 + 3 * i);
      assert.equal(bad.error, hostile.error, hostile.name);
      assert.equal(typeof bad.message, 'string');
      assert.ok(!('type' in bad));
      for (const field of ['frame', 'ts', 'src', 'dst']) assert.ok(field in bad, `${field} in ${JSON.stringify(bad)}`);
    });
    assert.deepEqual(lines.at(-1), {
      frame: frames.length,
      ts: 1_700_000_000 + frames.length - 1 + 0.5,
      src: '10.0.0.1',
      dst: '224.0.0.2',
      protocol: 'igmp',
      version: 1,
      type: 'other',
      igmpType: 31,
    });
  });
});

// ---------------------------------------------------------------------------------------
// MLD: hostile frames among valid IGMP and MLD ones

/**
 * The octets of an Ethernet MLD frame as encodeFrame lays them out (RFC 8200 §3, RFC 2711):
 * Ethernet 14, IPv6 header 40, hop-by-hop 8 (next header 58, length 0, Router Alert
 * 05 02 0000, PadN 01 00), then the ICMPv6 message.
 */
const IP6 = 14;
const HBH = IP6 + 40;
const ICMP6 = HBH + 8;

const HOST6 = 'fe80::1';
const SOURCE6 = '2001:db8::5';

function mldFrame(message: MldMessage, dst: string): Buffer {
  return Buffer.from(encodeFrame({ message, src: HOST6, dst }));
}

/**
 * Recomputes the ICMPv6 checksum of `frame` after a corruption, so that the decoder meets
 * the intended damage rather than a bad checksum: the one's complement sum of the RFC 8200
 * §8.1 pseudo-header (source, destination, upper-layer length, next header 58) and the
 * message, written here from the RFC rather than taken from src/.
 */
function reseal(frame: Buffer, icmpStart = ICMP6, icmpEnd = frame.length): Buffer {
  frame.writeUInt16BE(0, icmpStart + 2);
  let sum = 0;
  const add16 = (bytes: Buffer, from: number, to: number) => {
    for (let i = from; i < to; i += 2) sum += (bytes[i]! << 8) | (i + 1 < to ? bytes[i + 1]! : 0);
  };
  add16(frame, IP6 + 8, IP6 + 40); // source and destination
  const length = icmpEnd - icmpStart;
  sum += (length >>> 16) + (length & 0xffff) + 58;
  add16(frame, icmpStart, icmpEnd);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  frame.writeUInt16BE(~sum & 0xffff, icmpStart + 2);
  return frame;
}

const v1Report = () => mldFrame({ kind: 'report', version: 1, group: 'ff05::101' }, 'ff05::101');
const v2Report = () =>
  mldFrame(
    { kind: 'report', version: 2, records: [{ type: 'MODE_IS_INCLUDE', group: 'ff3e::8000:1', sources: [SOURCE6] }] },
    'ff02::16',
  );
const v2Query = () =>
  mldFrame(
    {
      kind: 'query',
      version: 2,
      group: 'ff05::101',
      maxRespCode: 1000,
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [SOURCE6],
    },
    'ff05::101',
  );
const v1Query = () => mldFrame({ kind: 'query', version: 1, group: '::', maxRespDelayMs: 10_000 }, 'ff02::1');

/** The frame with its IPv6 packet cut short at `at` octets of the frame (a snap length would do this). */
const cut = (frame: Buffer, at: number) => frame.subarray(0, at);

const hostileMld: { name: string; error: string; frame: Buffer; src: string | null; dst: string | null }[] = [
  {
    name: 'a v1 report with a bad ICMPv6 checksum',
    error: 'bad-checksum',
    frame: (() => {
      const frame = v1Report();
      frame[ICMP6 + 2] = frame[ICMP6 + 2]! ^ 0x5a;
      return frame;
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'cut inside the IPv6 header, past the source',
    error: 'truncated',
    frame: cut(v1Report(), IP6 + 30),
    src: HOST6,
    dst: null,
  },
  {
    name: 'cut inside the IPv6 header, before the source ends',
    error: 'truncated',
    frame: cut(v1Report(), IP6 + 12),
    src: null,
    dst: null,
  },
  {
    name: 'cut inside the hop-by-hop header',
    error: 'truncated',
    frame: cut(v1Report(), HBH + 4),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'cut inside the MLDv1 address',
    error: 'truncated',
    frame: cut(v1Report(), ICMP6 + 12),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'one octet short of the payload length',
    error: 'truncated',
    frame: (() => {
      const frame = v1Report();
      return cut(frame, frame.length - 1);
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'cut inside an MLDv2 record',
    error: 'truncated',
    frame: cut(v2Report(), ICMP6 + 8 + 10),
    src: HOST6,
    dst: 'ff02::16',
  },
  {
    name: 'an MLDv2 report announcing 3 records and holding 1',
    error: 'truncated',
    frame: (() => {
      const frame = v2Report();
      frame.writeUInt16BE(3, ICMP6 + 6);
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff02::16',
  },
  {
    name: 'an MLDv2 record announcing 5 sources and holding 1',
    error: 'truncated',
    frame: (() => {
      const frame = v2Report();
      frame.writeUInt16BE(5, ICMP6 + 8 + 2);
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff02::16',
  },
  {
    name: 'an MLDv2 query announcing 4 sources and holding 1',
    error: 'truncated',
    frame: (() => {
      const frame = v2Query();
      frame.writeUInt16BE(4, ICMP6 + 26);
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'a hop-by-hop header whose length runs past the payload',
    error: 'bad-extension-header',
    frame: (() => {
      const frame = v1Report();
      frame[HBH + 1] = 5; // 48 octets; the payload is 32
      return frame;
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'a Router Alert option of length 4 (RFC 2711 §2.1 fixes 2)',
    error: 'bad-extension-header',
    frame: (() => {
      const frame = v1Report();
      frame[HBH + 3] = 4; // the option now ends exactly at the header's end, over the PadN
      return frame;
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'an MLDv1 report without the hop-by-hop header',
    error: 'no-router-alert',
    frame: (() => {
      const frame = v1Report();
      // Drop the 8 octets: next header 58 straight away, payload length 24. The ICMPv6
      // checksum still holds (same addresses, same message).
      const bare = Buffer.concat([frame.subarray(0, HBH), frame.subarray(ICMP6)]);
      bare[IP6 + 6] = 58;
      bare.writeUInt16BE(24, IP6 + 4);
      return bare;
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'an MLDv1 report for a unicast address',
    error: 'invalid-group',
    frame: (() => {
      const frame = v1Report();
      frame.set([0xfe, 0x80], ICMP6 + 8); // ff05::101 becomes fe80::101
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff05::101',
  },
  {
    name: 'an MLDv2 record naming a unicast address',
    error: 'invalid-group',
    frame: (() => {
      const frame = v2Report();
      frame.set([0x20, 0x01], ICMP6 + 8 + 4); // ff3e::8000:1 becomes 2001::8000:1
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff02::16',
  },
  {
    name: 'a 26-octet query (neither MLDv1 nor MLDv2, RFC 3810 §8.1)',
    error: 'bad-length',
    frame: (() => {
      const frame = Buffer.concat([v1Query(), Buffer.alloc(2)]);
      frame.writeUInt16BE(8 + 26, IP6 + 4);
      return reseal(frame);
    })(),
    src: HOST6,
    dst: 'ff02::1',
  },
];

/** The valid MLD frames between the hostile ones, and the lines they must give (written out from the RFC layouts). */
const validMld: { frame: () => Buffer; line: Record<string, unknown> }[] = [
  {
    frame: v1Report,
    line: { src: HOST6, dst: 'ff05::101', protocol: 'mld', version: 1, type: 'report', group: 'ff05::101' },
  },
  {
    frame: v2Report,
    line: {
      src: HOST6,
      dst: 'ff02::16',
      protocol: 'mld',
      version: 2,
      type: 'report',
      records: [{ type: 'MODE_IS_INCLUDE', group: 'ff3e::8000:1', sources: [SOURCE6] }],
    },
  },
  {
    frame: v2Query,
    line: {
      src: HOST6,
      dst: 'ff05::101',
      protocol: 'mld',
      version: 2,
      type: 'query',
      group: 'ff05::101',
      maxRespTimeMs: 1000,
      sFlag: false,
      qrv: 2,
      qqicSec: 125,
      sources: [SOURCE6],
    },
  },
  {
    frame: v1Query,
    line: {
      src: HOST6,
      dst: 'ff02::1',
      protocol: 'mld',
      version: 1,
      type: 'query',
      group: '::',
      maxRespTimeMs: 10_000,
    },
  },
];

/** Writes `frames` with the project's own pcap writer, one a second from 1,700,000,000.25. */
async function writeWithPcapWriter(name: string, frames: readonly Uint8Array[]): Promise<string> {
  const path = join(dir, name);
  const writer = PcapWriter.create(path, { linkType: 1 });
  frames.forEach((data, index) => writer.write({ tsSec: 1_700_000_000 + index, tsFraction: 250_000, data }));
  await writer.close();
  return path;
}

describe('snoop --read: hostile MLD among valid IGMP and MLD frames', () => {
  it('gives every hostile MLD frame its error line, decodes the frames around it, and exits 0', async () => {
    // IGMP report, valid MLD, hostile MLD, UDP (no line); repeated; then a valid MLD frame.
    const frames: Uint8Array[] = [];
    hostileMld.forEach((hostile, i) =>
      frames.push(validFrames.v2Report, validMld[i % validMld.length]!.frame(), hostile.frame, validFrames.udp),
    );
    frames.push(v1Report());
    const result = await runCli(['snoop', '--read', await writeWithPcapWriter('hostile-mld.pcap', frames), '--json']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const lines = parseNdjson(result.stdout);
    assert.equal(lines.length, 3 * hostileMld.length + 1, 'one line per IGMP or MLD frame, none for UDP');
    hostileMld.forEach((hostile, i) => {
      const [igmpLine, mldLine, bad] = lines.slice(3 * i, 3 * i + 3);
      const frame = 1 + 4 * i;
      assert.deepEqual(
        [igmpLine!.frame, igmpLine!.protocol, igmpLine!.type, igmpLine!.group],
        [frame, 'igmp', 'report', '239.1.2.3'],
        `the IGMP frame before ${hostile.name}`,
      );
      assert.deepEqual(
        mldLine,
        { frame: frame + 1, ts: 1_700_000_000 + frame + 0.25, ...validMld[i % validMld.length]!.line },
        `the MLD frame before ${hostile.name}`,
      );
      assert.equal(bad!.frame, frame + 2, hostile.name);
      assert.equal(bad!.error, hostile.error, `${hostile.name}: ${JSON.stringify(bad)}`);
      assert.equal(bad!.protocol, 'mld', hostile.name);
      assert.deepEqual(
        [bad!.src, bad!.dst],
        [hostile.src, hostile.dst],
        `${hostile.name}: the addresses the frame still holds`,
      );
      assert.equal(typeof bad!.message, 'string');
      assert.ok((bad!.message as string).length > 0);
      assert.ok(!('type' in bad!), `${hostile.name}: an error line has no type`);
    });
    assert.deepEqual(lines.at(-1), {
      frame: frames.length,
      ts: 1_700_000_000 + frames.length - 1 + 0.25,
      ...validMld[0]!.line,
    });
  });
});

describe('snoop --read: human output', () => {
  const query = ethernetFrame(
    ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1' }, igmpBytes('11 64 0000 00000000 02 7d 0000')),
  );
  const capture = () =>
    writeCapture(
      'human.pcap',
      pcapFile([
        query,
        V3_JOIN_239_1_1_1,
        validFrames.v2Report,
        ethernetFrame(
          ipv4Packet(
            { src: '10.0.0.3', dst: '224.0.0.22' },
            igmpBytes('22 00 0000 0000 0001 01 00 0002 e8010101 0a000001 0a000002'),
          ),
        ),
      ]),
    );

  it('prints a line per message and the membership summary, no colour with NO_COLOR', async () => {
    const result = await runCli(['snoop', '--read', capture()]);
    assert.equal(result.code, 0, result.stderr);
    const out = result.stdout;
    assert.match(out, /v3 query general, max resp 10s, qrv 2, qqic 125s/);
    assert.match(out, /10\.9\.0\.1 > 224\.0\.0\.22 +v3 report 239\.1\.1\.1 TO_EX \{\}/);
    assert.match(out, /4 IGMP messages: 1 query, 3 reports, 0 leaves/);
    // Summary rows: group, member, filter, version.
    assert.match(out, /│ 232\.1\.1\.1 +│ 10\.0\.0\.3 +│ INCLUDE \{10\.0\.0\.1, 10\.0\.0\.2\} +│ v3/);
    assert.match(out, /│ 239\.1\.1\.1 +│ 10\.9\.0\.1 +│ any source +│ v3/);
    assert.match(out, /│ 239\.1\.2\.3 +│ 10\.0\.0\.2 +│ any source +│ v2/);
    assert.match(out, /│ 10\.0\.0\.1 +│ v3 +│ +1 │/, 'the querier');
    assert.doesNotMatch(out, /\x1b\[/, 'no escape codes');
  });
  it('a leave removes the member from the summary', async () => {
    const result = await runCli([
      'snoop',
      '--read',
      writeCapture('leave.pcap', pcapFile([V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1])),
    ]);
    assert.match(result.stdout, /No group has members\./);
  });
  it('colours when FORCE_COLOR says so, and --no-summary drops the summary', async () => {
    const result = await runCli(['snoop', '--read', capture(), '--no-summary'], {
      env: { NO_COLOR: '', FORCE_COLOR: '1' },
    });
    assert.match(result.stdout, /\x1b\[3\dm/);
    assert.doesNotMatch(result.stdout, /IGMP messages/);
  });
});

describe('snoop --read: stopping and sources', () => {
  const frames = Array.from({ length: 10 }, () => validFrames.v2Report);
  it('--count stops after n messages', async () => {
    const lines = parseNdjson(
      (await runCli(['snoop', '--read', writeCapture('ten.pcap', pcapFile(frames)), '--json', '--count', '3'])).stdout,
    );
    assert.deepEqual(
      lines.map((line) => line.frame),
      [1, 2, 3],
    );
  });
  it('reads standard input with -', async () => {
    const result = await runCli(['snoop', '--read', '-', '--json'], { input: pcapFile(frames) });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(parseNdjson(result.stdout).length, 10);
  });
  it('a capture cut short mid-record: the messages before it, then exit 1 naming the damage', async () => {
    const whole = pcapFile(frames);
    const result = await runCli([
      'snoop',
      '--read',
      writeCapture('cut.pcap', whole.subarray(0, whole.length - 5)),
      '--json',
    ]);
    assert.equal(result.code, 1);
    assert.equal(parseNdjson(result.stdout).length, 9);
    assert.match(result.stderr, /cut\.pcap is damaged/);
  });
});

describe('snoop --read: streams that stay open, and stdout that goes away', () => {
  const frames = Array.from({ length: 5 }, () => validFrames.v2Report);

  /** Starts snoop reading a pipe that this test keeps open (as tcpdump -w - would). */
  function snoopOnOpenPipe(args: string[]) {
    const child = spawn(process.execPath, [MCASTCTL_BIN, 'snoop', '--read', '-', ...args], {
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.on('close', (code) => resolve({ code, stdout, stderr })),
    );
    child.stdin.write(pcapFile(frames)); // and never end it
    const linesSeen = async (count: number) => {
      for (let waited = 0; stdout.split('\n').length <= count && waited < 10_000; waited += 50) await sleep(50);
    };
    return { child, done, linesSeen };
  }

  it('--count ends a read of a pipe that stays open', async () => {
    const snoop = snoopOnOpenPipe(['--json', '--count', '2']);
    const result = await Promise.race([snoop.done, sleep(10_000).then(() => undefined)]);
    snoop.child.kill('SIGKILL');
    assert.ok(result !== undefined, 'snoop did not stop after --count on an open pipe');
    assert.equal(result.code, 0, result.stderr);
    assert.equal(parseNdjson(result.stdout).length, 2);
  });
  it('Ctrl-C on a read of a pipe: the lines so far, the summary, exit 0', async () => {
    const snoop = snoopOnOpenPipe([]);
    await snoop.linesSeen(5); // lines show as they come, before the pipe ends
    snoop.child.kill('SIGINT');
    const result = await snoop.done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /5 IGMP messages: 0 queries, 5 reports, 0 leaves/);
    assert.match(result.stdout, /│ 239\.1\.2\.3 +│ 10\.0\.0\.2 +│ any source/);
  });
  it('a reader that goes away (| head -1) ends it cleanly with exit 0', async () => {
    const capture = writeCapture('many.pcap', pcapFile(Array.from({ length: 50_000 }, () => validFrames.v2Report)));
    const shell = await run([
      'bash',
      '-c',
      `"${process.execPath}" "${MCASTCTL_BIN}" snoop --read "${capture}" --json | head -1; echo "status \${PIPESTATUS[0]}" >&2`,
    ]);
    assert.equal(parseNdjson(shell.stdout).length, 1);
    assert.match(shell.stderr, /^status 0$/m);
    assert.doesNotMatch(shell.stderr, /\n\s+at /, 'no stack trace');
  });
  it('stdout that cannot be written (a full disk) is a clear failure, exit 1', async () => {
    const shell = await run([
      'bash',
      '-c',
      `"${process.execPath}" "${MCASTCTL_BIN}" snoop --read "${writeCapture('five.pcap', pcapFile(frames))}" --json > /dev/full; echo "status $?" >&2`,
    ]);
    assert.match(shell.stderr, /mcastctl: cannot write standard output: ENOSPC/);
    assert.match(shell.stderr, /^status 1$/m);
    assert.doesNotMatch(shell.stderr, /\n\s+at /, 'no stack trace');
  });
});

describe('snoop: bad input is a usage error (64) with a clear message', () => {
  const cases: [string, () => string[], RegExp][] = [
    ['neither --read nor --iface', () => ['snoop'], /needs --read FILE, --iface NAME or --daemon/],
    ['both --read and --iface', () => ['snoop', '--read', 'x', '--iface', 'lo'], /cannot be used with/],
    ['--count 0', () => ['snoop', '--read', 'x', '--count', '0'], /--count takes a whole number of 1 or more/],
    ['--duration nonsense', () => ['snoop', '--iface', 'lo', '--duration', 'soon'], /--duration takes a duration/],
    [
      '--duration past what a timer holds',
      () => ['snoop', '--iface', 'lo', '--duration', '600h'],
      /too long: at most 24 days/,
    ],
    ['--write with --read', () => ['snoop', '--read', 'x', '--write', 'y'], /--write goes with --iface/],
    ['a missing file', () => ['snoop', '--read', join(dir, 'nope.pcap')], /cannot read capture .*nope\.pcap: ENOENT/],
    [
      'a file that is not pcap',
      () => ['snoop', '--read', writeCapture('text.pcap', Buffer.from('hello, world, this is not pcap\n'))],
      /not a pcap file/,
    ],
    [
      'a pcapng file',
      () => [
        'snoop',
        '--read',
        writeCapture('ng.pcap', Buffer.from('0a0d0d0a1c0000004d3c2b1a01000000ffffffffffffffff1c000000', 'hex')),
      ],
      /editcap/,
    ],
    [
      'an unsupported link type',
      () => ['snoop', '--read', writeCapture('wifi.pcap', pcapFile([], 105))],
      /not supported/,
    ],
    ['an unknown flag', () => ['snoop', '--read', 'x', '--bogus'], /unknown option '--bogus'/],
  ];
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const result = await runCli(args());
      assert.equal(result.code, 64, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    });
  }
});

describe('snoop --read of a FIFO', () => {
  const fifo = (name: string): string => {
    const path = join(dir, name);
    execFileSync('mkfifo', [path]);
    return path;
  };

  it('stops at once on SIGINT or SIGTERM while no writer has opened it yet, exit 0', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const cli = startMcastctl(['snoop', '--read', fifo(`idle-${signal}.fifo`)]);
      await sleep(800);
      const sentAt = Date.now();
      cli.child.kill(signal);
      const result = await cli.done;
      assert.equal(result.code, 0, `${signal}: ${result.stderr}`);
      assert.ok(Date.now() - sentAt < 2_000, `${signal}: exited ${Date.now() - sentAt} ms after the signal`);
      assert.match(result.stderr, /stopped before .* had a capture header/);
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    }
  });

  it('reads the capture a writer sends through it, and ends when the writer closes', async () => {
    const path = fifo('capture.fifo');
    const cli = startMcastctl(['snoop', '--read', path, '--json']);
    await sleep(300);
    writeFileSync(path, pcapFile([V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1]));
    const result = await cli.done;
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      parseNdjson(result.stdout).map((line) => line.type),
      ['report', 'report'],
    );
  });
});

describe('docs match the code', () => {
  it('every subcommand in --help has a man page, and every snoop flag is in mcastctl-snoop(1)', async () => {
    const help = (await runCli(['--help'])).stdout;
    const commands = [...help.matchAll(/^ {2}([a-z]+) /gm)].map((match) => match[1]!).filter((name) => name !== 'help');
    assert.ok(commands.includes('snoop'));
    for (const command of commands) {
      const page = readFileSync(new URL(`../../man/mcastctl-${command}.1`, import.meta.url), 'utf8');
      const flags = [...(await runCli([command, '--help'])).stdout.matchAll(/(--[a-z-]+)/g)].map((match) => match[1]!);
      for (const flag of new Set(flags)) {
        if (flag === '--help') continue;
        assert.ok(
          page.includes(flag.replace(/-/g, '\\-')),
          `${flag} of ${command} is missing from mcastctl-${command}(1)`,
        );
      }
      assert.ok(
        readFileSync(new URL('../../man/mcastctl.1', import.meta.url), 'utf8').includes(`.B ${command}`),
        `${command} in mcastctl(1)`,
      );
    }
  });
});
