/**
 * MLD codec: every message of RFC 2710 and RFC 3810, against bytes written out by hand
 * from the RFC layouts (checksums over the IPv6 pseudo-header by test/helpers/mld-bytes.ts's
 * own routine, one worked by hand), both floating-point forms at their boundaries, and
 * hostile input.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { DecodeError } from '../../src/errors.js';
import * as mld from '../../src/packet/mld/index.js';
import type { MldMessage } from '../../src/packet/mld/index.js';
import { hex } from '../helpers/bytes.js';
import {
  ADDRESSES_FIRST,
  type AddressPair,
  HOST_TO_ROUTERS,
  MESSAGE_AT,
  mldBytes,
  QUERIER_TO_ALL,
  withAddresses,
} from '../helpers/mld-bytes.js';
import { assertRoundTrip, type Codec } from '../helpers/roundtrip.js';

/** The codec between one pair of addresses: what assertRoundTrip drives. */
function codecBetween(pair: AddressPair): Codec<MldMessage> {
  return {
    encode: (message, buf, offset) => mld.encode(message, pair, buf, offset),
    decode: (bytes, start = 0, end = bytes.length) => decodeBetween(bytes.subarray(start, end), pair),
    encodingLength: mld.encodingLength,
  };
}

function decodeBetween(message: Uint8Array, pair: AddressPair = HOST_TO_ROUTERS): MldMessage {
  const packet = withAddresses(message, pair);
  return mld.decode(packet, MESSAGE_AT, packet.length, ADDRESSES_FIRST);
}

const NO_ADDRESS = '0000 0000 0000 0000 0000 0000 0000 0000';
const SSM_GROUP = 'ff3e 0000 0000 0000 0000 0000 8000 0001'; // ff3e::8000:1
const SOURCE_1 = '2001 0db8 0000 0000 0000 0000 0000 0001'; // 2001:db8::1
const SOURCE_2 = '2001 0db8 0000 0000 0000 0000 0000 0002';

interface Vector {
  name: string;
  message: MldMessage;
  pair: AddressPair;
  bytes: Buffer;
}

const vectors: Vector[] = [
  // RFC 2710 §3: type 130, code, checksum, Maximum Response Delay (10 s), reserved, address (:: for a general query).
  {
    name: 'v1 general query',
    message: { kind: 'query', version: 1, group: '::', maxRespDelayMs: 10_000 },
    pair: QUERIER_TO_ALL,
    bytes: mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS}`, QUERIER_TO_ALL),
  },
  {
    name: 'v1 address-specific query',
    message: { kind: 'query', version: 1, group: 'ff0e::101', maxRespDelayMs: 1000 },
    pair: QUERIER_TO_ALL,
    bytes: mldBytes('82 00 0000 03e8 0000 ff0e 0000 0000 0000 0000 0000 0000 0101', QUERIER_TO_ALL),
  },
  // RFC 3810 §5.1: the v1 fields, then resv|S|QRV, QQIC, N, N sources. A Linux querier's defaults: 10 s, QRV 2, QQIC
  // 125.
  {
    name: 'v2 general query',
    message: {
      kind: 'query',
      version: 2,
      group: '::',
      maxRespCode: 10_000,
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [],
    },
    pair: QUERIER_TO_ALL,
    bytes: mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS} 02 7d 0000`, QUERIER_TO_ALL),
  },
  {
    name: 'v2 address-and-source-specific query, S flag, floating-point codes',
    message: {
      kind: 'query',
      version: 2,
      group: 'ff3e::8000:1',
      maxRespCode: 0xa123,
      sFlag: true,
      qrv: 7,
      qqic: 0x90,
      sources: ['2001:db8::1', '2001:db8:0:1::2'],
    },
    pair: QUERIER_TO_ALL,
    bytes: mldBytes(
      `82 00 0000 a123 0000 ${SSM_GROUP} 0f 90 0002 ${SOURCE_1} 2001 0db8 0000 0001 0000 0000 0000 0002`,
      QUERIER_TO_ALL,
    ),
  },
  // RFC 2710 §3: a report names its address; Maximum Response Delay and reserved are zero.
  {
    name: 'v1 report (solicited-node address)',
    message: { kind: 'report', version: 1, group: 'ff02::1:ff00:1' },
    pair: HOST_TO_ROUTERS,
    bytes: mldBytes('83 00 0000 0000 0000 ff02 0000 0000 0000 0000 0001 ff00 0001'),
  },
  // fe80::1 → ff02::2, 24 octets: fe80 + 0001 + ff02 + 0002 + 0018 + 003a (pseudo-header)
  // + 8400 + ff02 + 0001 + 0003 (message) = 0x380dd → 0x80e0 → checksum 0x7f1f.
  {
    name: 'done (checksum worked by hand)',
    message: { kind: 'leave', version: 1, group: 'ff02::1:3' },
    pair: {
      srcHex: HOST_TO_ROUTERS.srcHex,
      dstHex: 'ff02 0000 0000 0000 0000 0000 0000 0002',
      src: 'fe80::1',
      dst: 'ff02::2',
    },
    bytes: hex('84 00 7f1f 0000 0000 ff02 0000 0000 0000 0000 0000 0001 0003'),
  },
  // RFC 3810 §5.2: type 143, reserved, checksum, reserved, M, then the records.
  {
    name: 'v2 report, all six record types, aux data',
    message: {
      kind: 'report',
      version: 2,
      records: [
        { type: 'MODE_IS_INCLUDE', group: 'ff3e::8000:1', sources: ['2001:db8::1'] },
        { type: 'MODE_IS_EXCLUDE', group: 'ff05::1:3', sources: [] },
        { type: 'CHANGE_TO_INCLUDE_MODE', group: 'ff0e::101', sources: ['2001:db8::2', '2001:db8::3'] },
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: 'ff02::fb', sources: [], auxData: hex('deadbeef') },
        { type: 'ALLOW_NEW_SOURCES', group: 'ff3e::8000:1', sources: ['2001:db8::4'] },
        { type: 'BLOCK_OLD_SOURCES', group: 'ff3e::8000:1', sources: ['2001:db8::1'] },
      ],
    },
    pair: HOST_TO_ROUTERS,
    bytes: mldBytes(
      '8f 00 0000 0000 0006' +
        `01 00 0001 ${SSM_GROUP} ${SOURCE_1}` +
        '02 00 0000 ff05 0000 0000 0000 0000 0000 0001 0003' +
        '03 00 0002 ff0e 0000 0000 0000 0000 0000 0000 0101' +
        '2001 0db8 0000 0000 0000 0000 0000 0002 2001 0db8 0000 0000 0000 0000 0000 0003' +
        '04 01 0000 ff02 0000 0000 0000 0000 0000 0000 00fb deadbeef' +
        `05 00 0001 ${SSM_GROUP} 2001 0db8 0000 0000 0000 0000 0000 0004` +
        `06 00 0001 ${SSM_GROUP} ${SOURCE_1}`,
    ),
  },
  {
    name: 'v2 report, no records',
    message: { kind: 'report', version: 2, records: [] },
    pair: HOST_TO_ROUTERS,
    bytes: mldBytes('8f 00 0000 0000 0000'),
  },
];

describe('MLD round trips (encode, decode, encode again, encodingLength)', () => {
  for (const vector of vectors)
    it(vector.name, () => assertRoundTrip(codecBetween(vector.pair), vector.message, vector.bytes));
});

describe('MLD addresses of the pseudo-header', () => {
  it('are read in place at the offsets of an IPv6 header, wherever the message starts', () => {
    // IPv6 header (addresses at 8 and 24), an 8-octet hop-by-hop header, then the message at 48.
    const message = mldBytes('83 00 0000 0000 0000 ff02 0000 0000 0000 0000 0001 ff00 0001');
    const header = hex(`6000 0000 0020 00 01 ${HOST_TO_ROUTERS.srcHex} ${HOST_TO_ROUTERS.dstHex} 3a 00 0502 0000 0100`);
    const packet = Buffer.concat([header, message, hex('cafe')]);
    const decoded = mld.decode(packet, 48, 48 + message.length, { srcAt: 8, dstAt: 24 });
    assert.deepEqual(decoded, { kind: 'report', version: 1, group: 'ff02::1:ff00:1' });
  });
  it('matter: the same message between other addresses is bad-checksum', () => {
    const message = mldBytes('83 00 0000 0000 0000 ff02 0000 0000 0000 0000 0001 ff00 0001', HOST_TO_ROUTERS);
    assertDecodeError(message, 'bad-checksum', QUERIER_TO_ALL);
  });
  it('encode refuses an address that is not IPv6 text', () => {
    assert.throws(
      () => mld.encode({ kind: 'report', version: 1, group: 'ff02::1' }, { src: '10.0.0.1', dst: 'ff02::16' }),
      RangeError,
    );
  });
  it('decode refuses offsets outside the bytes (a caller mistake)', () => {
    const packet = withAddresses(mldBytes('8f 00 0000 0000 0000'));
    assert.throws(
      () => mld.decode(packet, MESSAGE_AT, packet.length, { srcAt: 0, dstAt: packet.length - 8 }),
      RangeError,
    );
  });
});

describe('MLD version of a query (RFC 3810 §8.1)', () => {
  it('24 octets is v1, whatever its Maximum Response field', () => {
    assert.deepEqual(decodeBetween(mldBytes(`82 00 0000 0000 0000 ${NO_ADDRESS}`)), {
      kind: 'query',
      version: 1,
      group: '::',
      maxRespDelayMs: 0,
    });
  });
  it('28 octets is v2', () =>
    assert.equal(decodeBetween(mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS} 02 7d 0000`)).version, 2));
  for (const length of [25, 26, 27]) {
    it(`${length} octets is no version: bad-length`, () => {
      assertDecodeError(mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS}` + '00'.repeat(length - 24)), 'bad-length');
    });
  }
  it('23 octets is truncated', () =>
    assertDecodeError(mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS}`.slice(0, -2)), 'truncated'));
  it('a v2 query longer than its sources say ignores the rest', () => {
    const query = decodeBetween(mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS} 02 7d 0000 cafebabe`));
    assert.deepEqual(query, {
      kind: 'query',
      version: 2,
      group: '::',
      maxRespCode: 10_000,
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [],
    });
  });
  it('a query for a unicast address is invalid-group', () => {
    assertDecodeError(mldBytes(`82 00 0000 2710 0000 ${SOURCE_1} 02 7d 0000`), 'invalid-group');
  });
  it('a v2 query whose source count runs past the end is truncated', () => {
    assertDecodeError(mldBytes(`82 00 0000 2710 0000 ${NO_ADDRESS} 02 7d 0002 ${SOURCE_1}`), 'truncated');
  });
});

describe('Maximum Response Code (RFC 3810 §5.1.3) and QQIC', () => {
  const cases: [code: number, value: number][] = [
    [0, 0],
    [10_000, 10_000],
    [0x7fff, 32767],
    [0x8000, 32768], // exp 0, mant 0: 0x1000 << 3
    [0x8fff, 65528], // exp 0, mant 0xfff: 0x1fff << 3
    [0x9000, 65536], // exp 1, mant 0
    [0xa123, 0x1123 << 5],
    [0xffff, 8_387_584], // exp 7, mant 0xfff: 0x1fff << 10, the largest
  ];
  for (const [code, value] of cases) {
    it(`code 0x${code.toString(16)} is ${value} ms and back`, () => {
      assert.equal(mld.decodeMaxRespCode(code), value);
      assert.equal(mld.encodeMaxRespCode(value), code);
    });
  }
  it('the largest value is 8387584 ms', () => assert.equal(mld.MAX_MAX_RESP_CODE_VALUE, 8_387_584));
  it('values between codes round down', () => {
    assert.equal(mld.encodeMaxRespCode(32769), 0x8000);
    assert.equal(mld.encodeMaxRespCode(65535), 0x8fff);
    assert.equal(mld.encodeMaxRespCode(8_387_583), 0xfffe);
    assert.equal(mld.decodeMaxRespCode(0xfffe), 0x1ffe << 10);
  });
  it('every 16-bit code decodes to a value that encodes back to it', () => {
    for (let code = 0; code <= 0xffff; code++) assert.equal(mld.encodeMaxRespCode(mld.decodeMaxRespCode(code)), code);
  });
  for (const value of [-1, 8_387_585, 1.5, Number.NaN]) {
    it(`${value} cannot be encoded`, () => assert.throws(() => mld.encodeMaxRespCode(value), RangeError));
  }
  it('maxRespTimeMs: v1 carries milliseconds, v2 a code', () => {
    assert.equal(mld.maxRespTimeMs({ kind: 'query', version: 1, group: '::', maxRespDelayMs: 65535 }), 65535);
    const v2: Omit<mld.MldV2Query, 'maxRespCode'> = {
      kind: 'query',
      version: 2,
      group: '::',
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [],
    };
    assert.equal(mld.maxRespTimeMs({ ...v2, maxRespCode: 0x7fff }), 32767);
    assert.equal(mld.maxRespTimeMs({ ...v2, maxRespCode: 0x8000 }), 32768);
    assert.equal(mld.maxRespTimeMs({ ...v2, maxRespCode: 0xffff }), 8_387_584);
  });
  it("qqicSeconds: IGMPv3's 8-bit form (125 is 125 s, 0x90 is 256 s, 0xff is 31744 s)", () => {
    assert.equal(mld.qqicSeconds({ qqic: 125 }), 125);
    assert.equal(mld.qqicSeconds({ qqic: 0x90 }), 256);
    assert.equal(mld.qqicSeconds({ qqic: 0xff }), 31744);
  });
});

describe('MLDv2 reports', () => {
  it('skips records of unknown type and counts them (RFC 3810 §5.2.12)', () => {
    const bytes = mldBytes(
      '8f 00 0000 0000 0003' +
        `07 00 0001 ${SSM_GROUP} ${SOURCE_1}` +
        '04 00 0000 ff05 0000 0000 0000 0000 0000 0001 0003' +
        `ff 01 0000 ${NO_ADDRESS} 01020304`,
    );
    assert.deepEqual(decodeBetween(bytes), {
      kind: 'report',
      version: 2,
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: 'ff05::1:3', sources: [] }],
      ignoredRecords: 2,
    });
  });
  it('a record count past the end is truncated, naming the record', () => {
    const bytes = mldBytes('8f 00 0000 0000 0002 04 00 0000 ff05 0000 0000 0000 0000 0000 0001 0003');
    assertDecodeError(bytes, 'truncated', HOST_TO_ROUTERS, /record 2 of 2/);
  });
  it('a source count past the end is truncated', () => {
    assertDecodeError(
      mldBytes(`8f 00 0000 0000 0001 01 00 00ff ${SSM_GROUP} ${SOURCE_1}`),
      'truncated',
      HOST_TO_ROUTERS,
      /record 1 of 1 \(255 sources/,
    );
  });
  it('aux data past the end is truncated', () =>
    assertDecodeError(mldBytes(`8f 00 0000 0000 0001 01 02 0000 ${SSM_GROUP} 00000000`), 'truncated'));
  it('a record for a unicast address is invalid-group', () => {
    assertDecodeError(
      mldBytes(`8f 00 0000 0000 0001 04 00 0000 ${SOURCE_1}`),
      'invalid-group',
      HOST_TO_ROUTERS,
      /record 1 names 2001:db8::1/,
    );
  });
  it('a record for :: is invalid-group', () =>
    assertDecodeError(mldBytes(`8f 00 0000 0000 0001 04 00 0000 ${NO_ADDRESS}`), 'invalid-group'));
  it('cut at every offset (checksum made right for the cut) is truncated, never another exception', () => {
    const records = `01 00 0002 ${SSM_GROUP} ${SOURCE_1} ${SOURCE_2} 04 01 0000 ff05 0000 0000 0000 0000 0000 0001 0003 deadbeef`;
    const full = `8f 00 0000 0000 0002 ${records}`;
    const bytes = hex(full);
    assert.equal(decodeBetween(mldBytes(full)).kind, 'report');
    for (let cut = 0; cut < bytes.length; cut++) {
      const message = mldBytes(bytes.subarray(0, cut).toString('hex'));
      assertDecodeError(message, 'truncated', HOST_TO_ROUTERS, undefined, `cut at ${cut}`);
    }
  });
  it('a v2 query cut at every offset is truncated below 24, v1 at 24, bad-length at 25 to 27, truncated after', () => {
    const full = `82 00 0000 2710 0000 ${SSM_GROUP} 02 7d 0002 ${SOURCE_1} ${SOURCE_2}`;
    const bytes = hex(full);
    for (let cut = 0; cut < bytes.length; cut++) {
      const message = mldBytes(bytes.subarray(0, cut).toString('hex'));
      if (cut === 24) assert.equal(decodeBetween(message).version, 1);
      else
        assertDecodeError(
          message,
          cut >= 25 && cut <= 27 ? 'bad-length' : 'truncated',
          HOST_TO_ROUTERS,
          undefined,
          `cut at ${cut}`,
        );
    }
  });
});

describe('MLDv1 reports and dones', () => {
  it('octets past the first 24 are ignored, but covered by the checksum (RFC 2710 §3)', () => {
    const report = '83 00 0000 0000 0000 ff02 0000 0000 0000 0000 0001 ff00 0001';
    assert.deepEqual(decodeBetween(mldBytes(`${report} 0001`)), {
      kind: 'report',
      version: 1,
      group: 'ff02::1:ff00:1',
    });
    const stale = Buffer.concat([mldBytes(report), hex('0001')]);
    assertDecodeError(stale, 'bad-checksum');
  });
  it('a report for a unicast address is invalid-group', () =>
    assertDecodeError(mldBytes(`83 00 0000 0000 0000 ${SOURCE_1}`), 'invalid-group'));
  it('a done for :: is invalid-group', () =>
    assertDecodeError(mldBytes(`84 00 0000 0000 0000 ${NO_ADDRESS}`), 'invalid-group'));
  it('shorter than 24 octets is truncated', () =>
    assertDecodeError(mldBytes('83 00 0000 0000 0000 ff02 0000'), 'truncated'));
});

describe('MLD decode failures are typed', () => {
  it('bad checksum', () => {
    const bytes = hex('84 00 7f1e 0000 0000 ff02 0000 0000 0000 0000 0000 0001 0003');
    const pair = {
      srcHex: HOST_TO_ROUTERS.srcHex,
      dstHex: 'ff02 0000 0000 0000 0000 0000 0000 0002',
      src: 'fe80::1',
      dst: 'ff02::2',
    };
    assertDecodeError(bytes, 'bad-checksum', pair, /0x7f1e/);
  });
  it('empty', () => assertDecodeError(new Uint8Array(0), 'truncated'));
  it('3 octets', () => assertDecodeError(hex('8f 00 00'), 'truncated'));
  it('ICMPv6 types that are not MLD are a caller mistake: RangeError', () => {
    for (const type of [128, 133, 135, 0]) {
      assert.equal(mld.isMldType(type), false);
      assert.throws(
        () => decodeBetween(mldBytes(`${type.toString(16).padStart(2, '0')} 00 0000 0000 0000 ${NO_ADDRESS}`)),
        RangeError,
      );
    }
    for (const type of [130, 131, 132, 143]) assert.equal(mld.isMldType(type), true);
  });
});

describe('MLD encode refuses values the wire cannot hold', () => {
  const encode = (message: MldMessage) => mld.encode(message, HOST_TO_ROUTERS);
  const v2Query: mld.MldV2Query = {
    kind: 'query',
    version: 2,
    group: '::',
    maxRespCode: 10_000,
    sFlag: false,
    qrv: 2,
    qqic: 125,
    sources: [],
  };
  it('a v1 Maximum Response Delay above 65535', () => {
    assert.throws(() => encode({ kind: 'query', version: 1, group: '::', maxRespDelayMs: 65536 }), RangeError);
  });
  it('a v2 Maximum Response Code above 16 bits', () =>
    assert.throws(() => encode({ ...v2Query, maxRespCode: 0x10000 }), RangeError));
  it('QRV above 7', () => assert.throws(() => encode({ ...v2Query, qrv: 8 }), RangeError));
  it('QQIC above 8 bits', () => assert.throws(() => encode({ ...v2Query, qqic: 256 }), RangeError));
  it('more than 65535 sources', () => {
    const sources = new Array<string>(65536).fill('2001:db8::1');
    assert.throws(() => encode({ ...v2Query, sources }), RangeError);
    assert.throws(
      () => encode({ kind: 'report', version: 2, records: [{ type: 'MODE_IS_INCLUDE', group: 'ff3e::1', sources }] }),
      RangeError,
    );
  });
  it('more than 65535 records', () => {
    const records = new Array(65536).fill({ type: 'MODE_IS_EXCLUDE', group: 'ff3e::1', sources: [] });
    assert.throws(() => encode({ kind: 'report', version: 2, records }), RangeError);
  });
  it('aux data that is not whole words', () => {
    const record: mld.MldRecord = { type: 'MODE_IS_EXCLUDE', group: 'ff3e::1', sources: [], auxData: hex('01') };
    assert.throws(() => encode({ kind: 'report', version: 2, records: [record] }), RangeError);
  });
  it('an address that is not IPv6 text', () =>
    assert.throws(() => encode({ kind: 'report', version: 1, group: '239.1.2.3' }), RangeError));
});

function assertDecodeError(
  message: Uint8Array,
  code: string,
  pair: AddressPair = HOST_TO_ROUTERS,
  text?: RegExp,
  note?: string,
): void {
  assert.throws(
    () => decodeBetween(message, pair),
    (error: unknown) => {
      assert.ok(error instanceof DecodeError, `${note ?? ''} not a DecodeError: ${String(error)}`);
      assert.equal(error.code, code, `${note ?? ''} ${error.message}`);
      if (text !== undefined) assert.match(error.message, text);
      return error.message.length > 0;
    },
  );
}
