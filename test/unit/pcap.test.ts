/**
 * pcap file format: header codecs against bytes written out by hand from pcap-savefile(5),
 * the reader against tshark's view of files real tcpdump wrote (test/fixtures, made by
 * make-fixtures.sh), split and truncated at every offset, and the writer against
 * tcpdump's own output and what tcpdump -r and tshark -r make of it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';
import { DecodeError } from '../../src/errors.js';
import {
  decodeMagic,
  describeLinkType,
  LinkType,
  linkTypeName,
  linkTypeValue,
  pcapFileHeader,
  pcapRecordHeader,
  PcapReader,
  PcapWriter,
  readPcapFile,
  readPcapStream,
  supportedLinkType,
  type PcapFileHeader,
  type PcapReaderOptions,
  type PcapRecord,
} from '../../src/packet/pcap/index.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const fixture = (name: string) => join(FIXTURES, name);
const scratch = mkdtempSync(join(tmpdir(), 'mcastctl-pcap-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function hasTool(name: string): boolean {
  try {
    execFileSync(name, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
/** These tests check the codec against tshark and tcpdump, never without them: scripts/setup.sh installs both. */
function requireTools(...tools: string[]): void {
  for (const tool of tools) assert.ok(hasTool(tool), `${tool} is not installed: run scripts/setup.sh`);
}

// --- Independent views of a capture file -------------------------------------------

interface TsharkFrame {
  sec: number;
  /** The nine fraction digits of frame.time_epoch, as a number of nanoseconds. */
  nanos: number;
  epoch: number;
  len: number;
  capLen: number;
  raw: string;
}

interface TsharkJsonPacket {
  _source: { layers: { frame: Record<string, string>; frame_raw: [string, ...unknown[]] } };
}

/** What tshark (Wireshark's own pcap reader) sees in a file. */
function tsharkFrames(path: string): TsharkFrame[] {
  const out = execFileSync('tshark', ['-r', path, '-T', 'json', '-x'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 1 << 26,
  });
  return (JSON.parse(out) as TsharkJsonPacket[]).map(({ _source: { layers } }) => {
    const epoch = layers.frame['frame.time_epoch']!;
    const [sec, fraction = ''] = epoch.split('.');
    return {
      sec: Number(sec),
      nanos: Number(fraction.padEnd(9, '0')),
      epoch: Number(epoch),
      len: Number(layers.frame['frame.len']),
      capLen: Number(layers.frame['frame.cap_len']),
      raw: layers.frame_raw[0],
    };
  });
}

/** Lines tcpdump prints for a file, with nanosecond epoch time stamps first. */
function tcpdumpLines(path: string): string[] {
  const out = execFileSync('tcpdump', ['-r', path, '-nn', '-tt', '--time-stamp-precision=nano'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out.split('\n').filter((line) => line !== '');
}

/**
 * Rewrites a little-endian pcap file in big-endian order, field by field, with Buffer's
 * own integer methods: what a SPARC or PowerPC tcpdump would have written.
 */
function toBigEndian(file: Buffer): Buffer {
  const out = Buffer.alloc(file.length);
  out.writeUInt32BE(file.readUInt32LE(0), 0);
  out.writeUInt16BE(file.readUInt16LE(4), 4);
  out.writeUInt16BE(file.readUInt16LE(6), 6);
  for (let at = 8; at < 24; at += 4) out.writeUInt32BE(file.readUInt32LE(at), at);
  let at = 24;
  while (at < file.length) {
    for (let field = 0; field < 16; field += 4) out.writeUInt32BE(file.readUInt32LE(at + field), at + field);
    const capturedLength = file.readUInt32LE(at + 8);
    file.copy(out, at + 16, at + 16, at + 16 + capturedLength);
    at += 16 + capturedLength;
  }
  return out;
}

/** Record boundaries of a little-endian file, found by Buffer reads alone. */
function recordBoundaries(file: Buffer): number[] {
  const boundaries = [24];
  let at = 24;
  while (at < file.length) {
    at += 16 + file.readUInt32LE(at + 8);
    boundaries.push(at);
  }
  return boundaries;
}

// --- Helpers over the code under test ---------------------------------------------

interface Seen {
  header: PcapFileHeader | undefined;
  records: string[];
}

/** A record as comparable text; copies nothing but reads data before the next push. */
function describeRecord(record: PcapRecord): string {
  const { index, offset, tsSec, tsFraction, ts, capturedLength, originalLength, data } = record;
  return JSON.stringify({
    index,
    offset,
    tsSec,
    tsFraction,
    ts,
    capturedLength,
    originalLength,
    data: Buffer.from(data).toString('hex'),
  });
}

function readChunks(chunks: readonly Uint8Array[], options: PcapReaderOptions = {}): Seen {
  const records: string[] = [];
  const reader = new PcapReader((record) => records.push(describeRecord(record)), options);
  for (const chunk of chunks) reader.push(chunk);
  reader.end();
  return { header: reader.header, records };
}

function collect(file: Uint8Array): PcapRecord[] {
  const records: PcapRecord[] = [];
  const reader = new PcapReader((record) => records.push({ ...record, data: record.data.slice() }));
  reader.push(file);
  reader.end();
  return records;
}

function decodeErrorOf(action: () => void): DecodeError {
  try {
    action();
  } catch (error) {
    if (error instanceof DecodeError) return error;
    throw error;
  }
  assert.fail('expected a DecodeError');
}

const FIXTURE_FILES = [
  { name: 'ethernet-micro.pcap', linkType: LinkType.ETHERNET, precision: 'micro', snaplen: 262144 },
  { name: 'ethernet-nano.pcap', linkType: LinkType.ETHERNET, precision: 'nano', snaplen: 128 },
  { name: 'any-sll.pcap', linkType: LinkType.LINUX_SLL, precision: 'micro', snaplen: 262144 },
  { name: 'any-sll2.pcap', linkType: LinkType.LINUX_SLL2, precision: 'micro', snaplen: 262144 },
] as const;

// --- File header ------------------------------------------------------------------

describe('pcapFileHeader', () => {
  it('round-trips a little-endian microsecond Ethernet header written out from pcap-savefile(5)', () => {
    assertRoundTrip(
      pcapFileHeader,
      {
        byteOrder: 'little',
        precision: 'micro',
        versionMajor: 2,
        versionMinor: 4,
        thiszone: 0,
        sigfigs: 0,
        snaplen: 262144,
        linkType: 1,
      },
      // magic d4c3b2a1 | 2 | 4 | thiszone | sigfigs | snaplen 0x40000 | network 1
      hex('d4c3b2a1 0200 0400 00000000 00000000 00000400 01000000'),
    );
  });

  it('round-trips a big-endian nanosecond SLL2 header with non-zero legacy fields', () => {
    assertRoundTrip(
      pcapFileHeader,
      {
        byteOrder: 'big',
        precision: 'nano',
        versionMajor: 2,
        versionMinor: 4,
        thiszone: -3600,
        sigfigs: 3,
        snaplen: 65535,
        linkType: 276,
      },
      hex('a1b23c4d 0002 0004 fffff1f0 00000003 0000ffff 00000114'),
    );
  });

  it('keeps the FCS length (P bit, 16-bit words) apart from the link type', () => {
    // FCS len 2 words (4 octets), P set: 0x2 << 28 | 0x04000000 | 1 = 0x24000001.
    assertRoundTrip(
      pcapFileHeader,
      {
        byteOrder: 'little',
        precision: 'micro',
        versionMajor: 2,
        versionMinor: 4,
        thiszone: 0,
        sigfigs: 0,
        snaplen: 1514,
        linkType: 1,
        fcsLength: 4,
      },
      hex('d4c3b2a1 0200 0400 00000000 00000000 ea050000 01000024'),
    );
  });

  it('decodes the headers tcpdump wrote', () => {
    for (const { name, linkType, precision, snaplen } of FIXTURE_FILES) {
      const bytes = readFileSync(fixture(name));
      const header = pcapFileHeader.decode(bytes);
      assert.deepEqual(
        header,
        {
          byteOrder: 'little',
          precision,
          versionMajor: 2,
          versionMinor: 4,
          thiszone: 0,
          sigfigs: 0,
          snaplen,
          linkType,
        },
        name,
      );
      assert.equal(
        Buffer.from(pcapFileHeader.encode(header)).toString('hex'),
        bytes.subarray(0, 24).toString('hex'),
        name,
      );
    }
  });

  it('refuses what is not pcap, naming pcapng and the conversion', () => {
    const notPcap = decodeErrorOf(() =>
      pcapFileHeader.decode(hex('7f454c46 0201 0100 00000000 00000000 00000000 00000000')),
    );
    assert.equal(notPcap.code, 'bad-pcap');
    assert.equal(notPcap.message, 'not a pcap file: magic 0x7f454c46');

    const pcapng = decodeErrorOf(() =>
      pcapFileHeader.decode(hex('0a0d0d0a 1c000000 4d3c2b1a 01000000 ffffffff ffffffff')),
    );
    assert.equal(pcapng.code, 'bad-pcap');
    assert.match(pcapng.message, /^not a pcap file: magic 0x0a0d0d0a/);
    assert.match(pcapng.message, /pcapng is not supported; convert with `editcap -F pcap in\.pcapng out\.pcap`/);

    const kuznetzov = decodeErrorOf(() => decodeMagic(hex('34cdb2a1')));
    assert.equal(kuznetzov.code, 'bad-pcap');
    assert.match(kuznetzov.message, /Kuznetzov/);
  });

  it('refuses versions other than 2.0 to 2.4, and reserved link type bits', () => {
    for (const version of ['0300 0000', '0200 0500', '1f02 0000']) {
      const error = decodeErrorOf(() =>
        pcapFileHeader.decode(hex(`d4c3b2a1 ${version} 00000000 00000000 00000400 01000000`)),
      );
      assert.equal(error.code, 'bad-pcap');
      assert.match(error.message, /unsupported pcap version/);
    }
    for (const network of ['01000100' /* Reserved3 */, '01000008' /* R */]) {
      const error = decodeErrorOf(() =>
        pcapFileHeader.decode(hex(`d4c3b2a1 0200 0400 00000000 00000000 00000400 ${network}`)),
      );
      assert.equal(error.code, 'bad-pcap');
      assert.match(error.message, /reserved bits/);
    }
  });

  it('says truncated for a header shorter than 24 octets', () => {
    const full = hex('d4c3b2a1 0200 0400 00000000 00000000 00000400 01000000');
    for (let length = 0; length < 24; length++) {
      assert.equal(
        decodeErrorOf(() => pcapFileHeader.decode(full.subarray(0, length))).code,
        'truncated',
        `length ${length}`,
      );
    }
  });

  it('refuses values the header cannot hold', () => {
    const base: PcapFileHeader = {
      byteOrder: 'little',
      precision: 'micro',
      versionMajor: 2,
      versionMinor: 4,
      thiszone: 0,
      sigfigs: 0,
      snaplen: 0,
      linkType: 1,
    };
    assert.throws(() => pcapFileHeader.encode({ ...base, linkType: 0x10000 }), RangeError);
    assert.throws(() => pcapFileHeader.encode({ ...base, fcsLength: 3 }), RangeError);
    assert.throws(() => pcapFileHeader.encode({ ...base, fcsLength: 32 }), RangeError);
    assert.throws(() => pcapFileHeader.encode({ ...base, thiszone: 2 ** 31 }), RangeError);
  });
});

describe('pcapRecordHeader', () => {
  it('round-trips a little-endian record header written out by hand', () => {
    // ts_sec 1700000000 = 0x6553f100, ts_usec 123456 = 0x0001e240, incl 60, orig 1514.
    assertRoundTrip(
      pcapRecordHeader,
      { tsSec: 1_700_000_000, tsFraction: 123_456, capturedLength: 60, originalLength: 1514 },
      hex('00f15365 40e20100 3c000000 ea050000'),
    );
  });

  it('takes the byte order after the usual codec parameters', () => {
    const bytes = hex('6553f100 3ade68b1 0000003c 000005ea');
    const value = { tsSec: 1_700_000_000, tsFraction: 987_654_321, capturedLength: 60, originalLength: 1514 };
    assert.deepEqual(pcapRecordHeader.decode(bytes, 0, bytes.length, 'big'), value);
    assert.equal(
      Buffer.from(pcapRecordHeader.encode(value, undefined, 0, 'big')).toString('hex'),
      bytes.toString('hex'),
    );
    assert.equal(pcapRecordHeader.encodingLength(value), 16);
    assert.equal(decodeErrorOf(() => pcapRecordHeader.decode(bytes, 1)).code, 'truncated');
    assert.throws(() => pcapRecordHeader.encode({ ...value, tsSec: -1 }), RangeError);
  });
});

// --- Link types ---------------------------------------------------------------------

describe('link types', () => {
  it('maps numbers to names, the BSD DLT_RAW values 12 and 14 to RAW', () => {
    assert.equal(linkTypeName(1), 'ETHERNET');
    assert.equal(linkTypeName(101), 'RAW');
    assert.equal(linkTypeName(12), 'RAW');
    assert.equal(linkTypeName(14), 'RAW');
    assert.equal(linkTypeName(228), 'IPV4');
    assert.equal(linkTypeName(113), 'LINUX_SLL');
    assert.equal(linkTypeName(276), 'LINUX_SLL2');
    assert.equal(linkTypeName(105), undefined);
    assert.equal(linkTypeValue('RAW'), 101);
    assert.equal(describeLinkType(14), 'RAW (14)');
    assert.equal(describeLinkType(147), 'link type 147');
  });

  it('agrees with tshark on what the fixtures carry', () => {
    requireTools('tshark');
    const expected: Record<string, string> = { ETHERNET: 'ether', LINUX_SLL: 'linux-sll', LINUX_SLL2: 'linux-sll2' };
    for (const { name } of FIXTURE_FILES) {
      const out = execFileSync('capinfos', ['-E', '-T', '-r', fixture(name)], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const ours = supportedLinkType(pcapFileHeader.decode(readFileSync(fixture(name))).linkType);
      assert.equal(out.trim().split('\t')[1], expected[ours], name);
    }
  });

  it('refuses link types mcastctl cannot decode with unsupported-link-type', () => {
    const error = decodeErrorOf(() => supportedLinkType(105));
    assert.equal(error.code, 'unsupported-link-type');
    assert.match(error.message, /^link type 105 is not supported; mcastctl reads ETHERNET \(1\)/);
  });
});

// --- Reader -------------------------------------------------------------------------

describe('PcapReader', () => {
  for (const { name, precision } of FIXTURE_FILES) {
    it(`reads ${name} as tshark does`, () => {
      requireTools('tshark');
      const expected = tsharkFrames(fixture(name));
      const records = collect(readFileSync(fixture(name)));
      assert.ok(expected.length > 5, 'fixture has records');
      assert.equal(records.length, expected.length);
      records.forEach((record, i) => {
        const frame = expected[i]!;
        assert.equal(record.index, i + 1);
        assert.equal(record.tsSec, frame.sec, `record ${i + 1} seconds`);
        assert.equal(
          precision === 'nano' ? record.tsFraction : record.tsFraction * 1000,
          frame.nanos,
          `record ${i + 1} fraction`,
        );
        assert.ok(Math.abs(record.ts - frame.epoch) < 1e-6, `record ${i + 1} ts ${record.ts} vs ${frame.epoch}`);
        assert.equal(record.originalLength, frame.len, `record ${i + 1} frame.len`);
        assert.equal(record.capturedLength, frame.capLen, `record ${i + 1} frame.cap_len`);
        assert.equal(Buffer.from(record.data).toString('hex'), frame.raw, `record ${i + 1} data`);
      });
    });
  }

  it('finds the record cut by the snaplen in the nanosecond file', () => {
    const cut = collect(readFileSync(fixture('ethernet-nano.pcap'))).filter((r) => r.capturedLength < r.originalLength);
    assert.ok(cut.length > 0);
    for (const record of cut) assert.equal(record.capturedLength, 128);
  });

  for (const { name } of FIXTURE_FILES) {
    it(`gives the same records for ${name} split into two chunks at every offset`, () => {
      const file = readFileSync(fixture(name));
      const whole = readChunks([file]);
      for (let cut = 0; cut <= file.length; cut++) {
        const split = readChunks([file.subarray(0, cut), file.subarray(cut)]);
        assert.deepEqual(split.records, whole.records, `cut at ${cut}`);
        assert.deepEqual(split.header, whole.header);
      }
    });
  }

  it('gives the same records for one-octet chunks and for three chunks at every pair of offsets near a record', () => {
    const file = readFileSync(fixture('any-sll2.pcap'));
    const whole = readChunks([file]).records;
    assert.deepEqual(readChunks([...file].map((octet) => Uint8Array.of(octet))).records, whole);
    const [, second = 0, third = 0] = recordBoundaries(file);
    for (let a = 0; a <= third; a++) {
      for (let b = Math.max(a, second - 20); b <= third + 4; b++) {
        assert.deepEqual(
          readChunks([file.subarray(0, a), file.subarray(a, b), file.subarray(b)]).records,
          whole,
          `cuts ${a}, ${b}`,
        );
      }
    }
  });

  for (const { name } of FIXTURE_FILES) {
    it(`says truncated, naming record and offset, for ${name} cut at every offset`, () => {
      const file = readFileSync(fixture(name));
      const boundaries = new Set(recordBoundaries(file));
      const all = readChunks([file]).records;
      for (let length = 0; length < file.length; length++) {
        const prefix = file.subarray(0, length);
        if (boundaries.has(length)) {
          // A cut between records is a shorter, valid file.
          const kept = readChunks([prefix]).records;
          assert.deepEqual(kept, all.slice(0, kept.length), `length ${length}`);
          continue;
        }
        const error = decodeErrorOf(() => readChunks([prefix]));
        assert.equal(error.code, 'truncated', `length ${length}: ${error.message}`);
        if (length >= 24) {
          const boundary = Math.max(...[...boundaries].filter((b) => b <= length));
          const index = [...boundaries].filter((b) => b <= length).length;
          assert.match(
            error.message,
            new RegExp(`^file ends inside record ${index} at byte offset ${boundary}: `),
            `length ${length}`,
          );
        }
      }
    });
  }

  it('names empty and short files', () => {
    assert.equal(decodeErrorOf(() => readChunks([])).message, 'empty file: no pcap file header');
    assert.equal(
      decodeErrorOf(() => readChunks([hex('d4c3b2a1 0200')])).message,
      'file ends inside the pcap file header: it needs 24 octets; only 6 present',
    );
    assert.equal(
      decodeErrorOf(() => readChunks([hex('d4c3b2a1 0200 0400 00000000 00000000 00000400 01000000 00f15365 40e2')]))
        .message,
      'file ends inside record 1 at byte offset 24: its header needs 16 octets; only 6 present',
    );
    assert.equal(
      decodeErrorOf(() =>
        readChunks([
          hex('d4c3b2a1 0200 0400 00000000 00000000 00000400 01000000 00f15365 40e20100 3c000000 3c000000 0102'),
        ]),
      ).message,
      'file ends inside record 1 at byte offset 24: its data needs 60 octets; only 2 present',
    );
  });

  it('refuses a non-pcap file as soon as the magic number is in', () => {
    const reader = new PcapReader(() => assert.fail('no records'));
    const error = decodeErrorOf(() => reader.push(hex('0a0d0d0a')));
    assert.equal(error.code, 'bad-pcap');
    assert.match(error.message, /pcapng is not supported; convert with `editcap -F pcap in\.pcapng out\.pcap`/);
    // The reader stays failed with the same error.
    assert.equal(
      decodeErrorOf(() => reader.push(hex('00'))),
      error,
    );
    assert.equal(
      decodeErrorOf(() => reader.end()),
      error,
    );
  });

  it('refuses a pcapng file made by editcap', () => {
    requireTools('tshark');
    const converted = join(scratch, 'converted.pcapng');
    execFileSync('editcap', ['-F', 'pcapng', fixture('ethernet-micro.pcap'), converted], { stdio: 'ignore' });
    const error = decodeErrorOf(() => readChunks([readFileSync(converted)]));
    assert.equal(error.code, 'bad-pcap');
    assert.match(error.message, /^not a pcap file: magic 0x0a0d0d0a/);
  });

  it('refuses absurd record lengths, naming the record and its offset', () => {
    const header = 'd4c3b2a1 0200 0400 00000000 00000000 00000400 01000000';
    const record = '00f15365 40e20100 04000000 04000000 01020304';
    // 0x10000001 = 256 MiB + 1.
    const huge = decodeErrorOf(() => readChunks([hex(`${header} ${record} 00f15365 00000000 01000010 01000010`)]));
    assert.equal(huge.code, 'bad-pcap');
    assert.match(
      huge.message,
      /^record 2 at byte offset 44: captured length 268435457 exceeds the limit of 4194304 \(snaplen 262144\)/,
    );
    // 16 × snaplen (and never less than 16 × 262144): 4194304 passes the check, 4194305 does not.
    const reader = new PcapReader(() => {});
    reader.push(hex(`${header} 00f15365 00000000 00004000 00004000`));
    assert.equal(reader.recordCount, 0);
    assert.equal(
      decodeErrorOf(() => readChunks([hex(`${header} 00f15365 00000000 01004000 01004000`)])).code,
      'bad-pcap',
    );
    // And split inside the record header, so the length is only seen in the carry.
    const file = hex(`${header} ${record} 00f15365 00000000 01000010 01000010`);
    for (let cut = 44; cut < file.length; cut++) {
      assert.equal(
        decodeErrorOf(() => readChunks([file.subarray(0, cut), file.subarray(cut)])).code,
        'bad-pcap',
        `cut ${cut}`,
      );
    }
    // A caller's limit replaces the default.
    assert.equal(
      decodeErrorOf(() => readChunks([hex(`${header} ${record}`)], { maxRecordLength: 3 })).code,
      'bad-pcap',
    );
  });

  it('reads big-endian files (byte-swapped tcpdump output) as tshark does', () => {
    requireTools('tshark');
    for (const { name } of FIXTURE_FILES) {
      const little = readFileSync(fixture(name));
      const big = toBigEndian(little);
      const path = join(scratch, `big-${name}`);
      writeFileSync(path, big);
      assert.deepEqual(tsharkFrames(path), tsharkFrames(fixture(name)), `tshark reads ${name} swapped the same`);
      const swapped = readChunks([big]);
      assert.equal(swapped.header?.byteOrder, 'big');
      assert.deepEqual(swapped.records, readChunks([little]).records, name);
      assert.equal(
        Buffer.from(pcapFileHeader.encode(swapped.header!)).toString('hex'),
        big.subarray(0, 24).toString('hex'),
      );
    }
  });

  it('reads pre-2.3 files with incl_len and orig_len the other way round, as libpcap does', () => {
    const record = (first: number, second: number) => {
      const bytes = Buffer.alloc(16 + Math.min(first, second));
      bytes.writeUInt32LE(1_700_000_000, 0);
      bytes.writeUInt32LE(first, 8);
      bytes.writeUInt32LE(second, 12);
      return bytes;
    };
    const header = (minor: string) => hex(`d4c3b2a1 0200 ${minor} 00000000 00000000 00000400 01000000`);
    const lengths = (chunks: Buffer[]) =>
      collect(Buffer.concat(chunks)).map((r) => [r.capturedLength, r.originalLength]);
    // 2.2: orig_len first.
    assert.deepEqual(lengths([header('0200'), record(100, 4)]), [[4, 100]]);
    // 2.3: either order; the smaller is the captured length.
    assert.deepEqual(lengths([header('0300'), record(100, 4), record(4, 100)]), [
      [4, 100],
      [4, 100],
    ]);
  });

  it('calls onHeader before the first record, and exposes the header', () => {
    const events: string[] = [];
    const reader = new PcapReader(() => events.push('record'), {
      onHeader: (header) => events.push(`header ${header.linkType}`),
    });
    const before = reader.header;
    assert.equal(before, undefined);
    reader.push(readFileSync(fixture('any-sll2.pcap')));
    reader.end();
    assert.equal(events[0], 'header 276');
    assert.equal(events[1], 'record');
    assert.equal(reader.header?.linkType, 276);
  });

  it('hands out views of the pushed chunk, not copies', () => {
    const file = readFileSync(fixture('ethernet-micro.pcap'));
    const seen: Uint8Array[] = [];
    const reader = new PcapReader((record) => seen.push(record.data));
    reader.push(file);
    assert.ok(seen.length > 0);
    for (const data of seen) assert.equal(data.buffer, file.buffer);
  });

  it('rethrows an exception from onRecord, and stays failed', () => {
    const failure = new Error('consumer failed');
    const reader = new PcapReader(() => {
      throw failure;
    });
    assert.throws(
      () => reader.push(readFileSync(fixture('ethernet-micro.pcap'))),
      (error) => error === failure,
    );
    assert.throws(
      () => reader.push(new Uint8Array(1)),
      (error) => error === failure,
    );
  });
});

describe('readPcapFile', () => {
  it('reads a fixture through fs streams with small and default chunks', async () => {
    const expected = readChunks([readFileSync(fixture('any-sll.pcap'))]).records;
    for (const highWaterMark of [7, 100, undefined]) {
      const records: string[] = [];
      const summary = await readPcapFile(fixture('any-sll.pcap'), (record) => records.push(describeRecord(record)), {
        highWaterMark,
      });
      assert.deepEqual(records, expected, `highWaterMark ${highWaterMark}`);
      assert.equal(summary.recordCount, expected.length);
      assert.equal(summary.header.linkType, LinkType.LINUX_SLL);
      assert.equal(summary.byteLength, readFileSync(fixture('any-sll.pcap')).length);
    }
  });

  it('rejects with the file system error for a missing file, and DecodeError for a cut one', async () => {
    await assert.rejects(
      readPcapFile(join(scratch, 'missing.pcap'), () => {}),
      { code: 'ENOENT' },
    );
    const cut = join(scratch, 'cut.pcap');
    writeFileSync(cut, readFileSync(fixture('ethernet-micro.pcap')).subarray(0, 100));
    let delivered = 0;
    await assert.rejects(
      readPcapFile(cut, () => delivered++),
      (error) => error instanceof DecodeError && error.code === 'truncated',
    );
    assert.equal(delivered, 1, 'records before the damage are delivered');
  });

  it('reads from a stream', async () => {
    const stream = new PassThrough();
    stream.end(readFileSync(fixture('ethernet-nano.pcap')));
    let count = 0;
    const summary = await readPcapStream(stream, () => count++);
    assert.equal(summary.header.precision, 'nano');
    assert.equal(count, summary.recordCount);
  });
});

// --- Writer -------------------------------------------------------------------------

describe('PcapWriter', () => {
  for (const { name, linkType, precision, snaplen } of FIXTURE_FILES) {
    it(`writes the same octets as tcpdump did for ${name} (frames as tshark sees them)`, async () => {
      requireTools('tshark');
      const path = join(scratch, `rewritten-${name}`);
      const writer = PcapWriter.create(path, { linkType, precision, snaplen });
      for (const frame of tsharkFrames(fixture(name))) {
        writer.write({
          tsSec: frame.sec,
          tsFraction: precision === 'nano' ? frame.nanos : frame.nanos / 1000,
          data: hex(frame.raw),
          originalLength: frame.len,
        });
      }
      await writer.close();
      assert.equal(readFileSync(path).toString('hex'), readFileSync(fixture(name)).toString('hex'));
    });
  }

  it('writes big-endian files identical to byte-swapped tcpdump output', async () => {
    const little = readFileSync(fixture('ethernet-nano.pcap'));
    const sink = new PassThrough();
    const parts: Buffer[] = [];
    sink.on('data', (part: Buffer) => parts.push(part));
    const writer = new PcapWriter(sink, {
      linkType: 1,
      precision: 'nano',
      snaplen: 128,
      byteOrder: 'big',
      bufferSize: 100,
    });
    for (const record of collect(little)) writer.write(record);
    await writer.close();
    assert.equal(Buffer.concat(parts).toString('hex'), toBigEndian(little).toString('hex'));
  });

  it('cuts data to the snaplen, keeping the original length', async () => {
    const path = join(scratch, 'snaplen.pcap');
    const writer = PcapWriter.create(path, { linkType: LinkType.RAW, snaplen: 20 });
    writer.write({ tsSec: 1, tsFraction: 2, data: new Uint8Array(50).fill(0x45) });
    await writer.close();
    const [record] = collect(readFileSync(path));
    assert.equal(record?.capturedLength, 20);
    assert.equal(record?.originalLength, 50);
  });

  it('writes files tcpdump and tshark open, with the time stamps and lengths given', async () => {
    requireTools('tshark', 'tcpdump');
    // IGMPv2 report for 239.1.2.3 from 10.0.0.1, as raw IPv4 (hand-assembled; checksums need not be right).
    const packet = hex('46c0 0020 0000 4000 0102 0000 0a000001 ef010203 94040000 1600 0000 ef010203');
    for (const precision of ['micro', 'nano'] as const) {
      for (const byteOrder of ['little', 'big'] as const) {
        const path = join(scratch, `written-${precision}-${byteOrder}.pcap`);
        const writer = PcapWriter.create(path, { linkType: LinkType.RAW, precision, byteOrder, bufferSize: 64 });
        const fractions = precision === 'nano' ? [0, 1, 999_999_999] : [0, 1, 999_999];
        fractions.forEach((tsFraction, i) =>
          writer.write({ tsSec: 1_700_000_000 + i, tsFraction, data: packet, originalLength: packet.length + i }),
        );
        assert.equal(writer.recordCount, 3);
        await writer.close();

        const frames = tsharkFrames(path);
        assert.deepEqual(
          frames.map(({ sec, nanos, len, capLen }) => [sec, nanos, len, capLen]),
          fractions.map((f, i) => [
            1_700_000_000 + i,
            precision === 'nano' ? f : f * 1000,
            packet.length + i,
            packet.length,
          ]),
          `${precision} ${byteOrder}`,
        );
        const lines = tcpdumpLines(path);
        assert.equal(lines.length, 3);
        const nanos = (f: number) => String(precision === 'nano' ? f : f * 1000).padStart(9, '0');
        fractions.forEach((f, i) =>
          assert.ok(lines[i]!.startsWith(`${1_700_000_000 + i}.${nanos(f)} IP 10.0.0.1 > 239.1.2.3: igmp`), lines[i]),
        );
      }
    }
  });

  it('writes a valid empty file and large records', async () => {
    const path = join(scratch, 'empty.pcap');
    await PcapWriter.create(path, { linkType: LinkType.ETHERNET }).close();
    assert.equal(
      readFileSync(path).toString('hex'),
      hex('d4c3b2a1 0200 0400 00000000 00000000 00000400 01000000').toString('hex'),
    );

    const bigPath = join(scratch, 'big-records.pcap');
    const writer = PcapWriter.create(bigPath, { linkType: LinkType.ETHERNET, bufferSize: 1000 });
    const data = new Uint8Array(5000).map((_, i) => i & 0xff);
    writer.write({ tsSec: 1, tsFraction: 0, data: new Uint8Array(10) });
    writer.write({ tsSec: 2, tsFraction: 0, data });
    writer.write({ tsSec: 3, tsFraction: 0, data: new Uint8Array(10) });
    await writer.close();
    const records = collect(readFileSync(bigPath));
    assert.deepEqual(
      records.map((r) => r.tsSec),
      [1, 2, 3],
    );
    assert.deepEqual(Buffer.from(records[1]!.data), Buffer.from(data));
  });

  it('refuses time stamps and lengths the format cannot hold', async () => {
    const writer = new PcapWriter(new PassThrough(), { linkType: 1 });
    const data = new Uint8Array(4);
    assert.throws(() => writer.write({ tsSec: -1, tsFraction: 0, data }), RangeError);
    assert.throws(() => writer.write({ tsSec: 2 ** 32, tsFraction: 0, data }), RangeError);
    assert.throws(() => writer.write({ tsSec: 0, tsFraction: 1_000_000, data }), RangeError);
    assert.throws(() => writer.write({ tsSec: 0, tsFraction: 0.5, data }), RangeError);
    assert.throws(() => writer.write({ tsSec: 0, tsFraction: 0, data, originalLength: 3 }), RangeError);
    assert.throws(() => new PcapWriter(new PassThrough(), { linkType: 0x10000 }), RangeError);
    await writer.close();
    assert.throws(() => writer.write({ tsSec: 0, tsFraction: 0, data }), /after close/);
  });

  it('rejects close() with the file system error', async () => {
    const writer = PcapWriter.create(join(scratch, 'no-such-dir', 'x.pcap'), { linkType: 1 });
    writer.write({ tsSec: 0, tsFraction: 0, data: new Uint8Array(4) });
    await assert.rejects(writer.close(), { code: 'ENOENT' });
  });
});
