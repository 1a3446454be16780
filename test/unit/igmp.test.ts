/**
 * IGMP codec: every message of RFC 1112, 2236 and 3376, against bytes written out by
 * hand from the RFC layouts (checksums by test/helpers/bytes.ts's own routine) and
 * literal bytes from real Linux captures.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { DecodeError } from '../../src/errors.js';
import * as igmp from '../../src/packet/igmp/index.js';
import type { IgmpMessage } from '../../src/packet/igmp/index.js';
import { hex, igmpBytes } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const codec = { encode: igmp.encode, decode: igmp.decode, encodingLength: igmp.encodingLength };

interface Vector {
  name: string;
  message: IgmpMessage;
  bytes: Buffer;
}

const vectors: Vector[] = [
  // RFC 1112 Appendix I: version 1, type 1, unused, checksum, group address (zero in a query).
  {
    name: 'v1 query',
    message: { kind: 'query', version: 1, group: '0.0.0.0' },
    bytes: igmpBytes('11 00 0000 00000000'),
  },
  // Literal from a Linux bridge querier (mcast_igmp_version 2): Max Resp Time 10 s.
  {
    name: 'v2 general query (real capture)',
    message: { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 },
    bytes: hex('11 64 ee9b 00000000'),
  },
  {
    name: 'v2 group-specific query',
    message: { kind: 'query', version: 2, group: '239.1.2.3', maxRespTimeDs: 10 },
    bytes: igmpBytes('11 0a 0000 ef010203'),
  },
  // Literal from a Linux bridge querier (mcast_igmp_version 3): MRC 100, QRV 2, QQIC 125.
  {
    name: 'v3 general query (real capture)',
    message: {
      kind: 'query',
      version: 3,
      group: '0.0.0.0',
      maxRespCode: 100,
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [],
    },
    bytes: hex('11 64 ec1e 00000000 02 7d 0000'),
  },
  {
    name: 'v3 group-and-source-specific query, S flag, floating-point codes',
    message: {
      kind: 'query',
      version: 3,
      group: '232.1.1.1',
      maxRespCode: 0x8c,
      sFlag: true,
      qrv: 7,
      qqic: 0x90,
      sources: ['10.0.0.1', '192.168.7.254'],
    },
    bytes: igmpBytes('11 8c 0000 e8010101 0f 90 0002 0a000001 c0a807fe'),
  },
  {
    name: 'v1 report',
    message: { kind: 'report', version: 1, group: '239.1.2.3' },
    bytes: igmpBytes('12 00 0000 ef010203'),
  },
  // v2 report for 239.1.2.3: 0x1600 + 0xef01 + 0x0203 = 0x10704 → 0x0705 → checksum 0xf8fa.
  {
    name: 'v2 report (checksum worked by hand)',
    message: { kind: 'report', version: 2, group: '239.1.2.3' },
    bytes: hex('16 00 f8fa ef010203'),
  },
  {
    name: 'v2 leave',
    message: { kind: 'leave', version: 2, group: '239.255.255.250' },
    bytes: igmpBytes('17 00 0000 effffffa'),
  },
  {
    name: 'v3 report, all six record types, aux data',
    message: {
      kind: 'report',
      version: 3,
      records: [
        { type: 'MODE_IS_INCLUDE', group: '232.1.1.1', sources: ['10.0.0.1'] },
        { type: 'MODE_IS_EXCLUDE', group: '239.1.1.1', sources: [] },
        { type: 'CHANGE_TO_INCLUDE_MODE', group: '239.1.1.2', sources: ['10.0.0.2', '10.0.0.3'] },
        { type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.3', sources: [], auxData: hex('deadbeef') },
        { type: 'ALLOW_NEW_SOURCES', group: '232.1.1.1', sources: ['10.0.0.4'] },
        { type: 'BLOCK_OLD_SOURCES', group: '232.1.1.1', sources: ['10.0.0.1'] },
      ],
    },
    bytes: igmpBytes(
      '22 00 0000 0000 0006' +
        '01 00 0001 e8010101 0a000001' +
        '02 00 0000 ef010101' +
        '03 00 0002 ef010102 0a000002 0a000003' +
        '04 01 0000 ef010103 deadbeef' +
        '05 00 0001 e8010101 0a000004' +
        '06 00 0001 e8010101 0a000001',
    ),
  },
  {
    name: 'v3 report, no records',
    message: { kind: 'report', version: 3, records: [] },
    bytes: igmpBytes('22 00 0000 0000 0000'),
  },
  // mtrace query (RFC 8487 layout; carried, not interpreted).
  {
    name: 'mtrace, carried whole',
    message: {
      kind: 'other',
      igmpType: 0x1f,
      code: 0x10,
      body: hex('ef010203 0a000001 0a000002 0a000003 e0000001 40 000001'),
    },
    bytes: igmpBytes('1f 10 0000 ef010203 0a000001 0a000002 0a000003 e0000001 40 000001'),
  },
];

describe('IGMP round trips (encode, decode, encode again, encodingLength)', () => {
  for (const vector of vectors) it(vector.name, () => assertRoundTrip(codec, vector.message, vector.bytes));
});

describe('IGMP version of a query (RFC 3376 §7.1)', () => {
  it('8 octets with Max Resp 0 is v1', () => assert.equal(decodeQuery('11 00 0000 00000000').version, 1));
  it('8 octets with Max Resp non-zero is v2', () => assert.equal(decodeQuery('11 01 0000 00000000').version, 2));
  it('12 octets is v3, even with Max Resp 0', () =>
    assert.equal(decodeQuery('11 00 0000 00000000 00 00 0000').version, 3));
  for (const length of [9, 10, 11]) {
    it(`${length} octets is no version: bad-length`, () => {
      assertDecodeError(igmpBytes('11 64 0000 00000000' + '00'.repeat(length - 8)), 'bad-length');
    });
  }
  it('a v3 query longer than its sources says ignores the rest', () => {
    const query = decodeQuery('11 64 0000 00000000 02 7d 0000 cafebabe');
    assert.equal(query.version, 3);
    assert.deepEqual(query.version === 3 && query.sources, []);
  });

  function decodeQuery(text: string): igmp.IgmpQuery {
    const message = igmp.decode(igmpBytes(text));
    assert.equal(message.kind, 'query');
    return message as igmp.IgmpQuery;
  }
});

describe('derived times', () => {
  it('v1 carries no Max Resp Time, which hosts take as 10 s (RFC 2236 §4)', () => {
    assert.equal(igmp.maxRespTimeMs({ kind: 'query', version: 1, group: '0.0.0.0' }), 10_000);
  });
  it('v2 counts tenths of a second', () =>
    assert.equal(igmp.maxRespTimeMs({ kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 }), 10_000));
  it('v3 Max Resp Code 0x8c is 22.4 s and QQIC 0x90 is 256 s', () => {
    const query = igmp.decode(igmpBytes('11 8c 0000 00000000 02 90 0000'));
    assert.ok(query.kind === 'query' && query.version === 3);
    assert.equal(igmp.maxRespTimeMs(query), 22_400);
    assert.equal(igmp.qqicSeconds(query), 256);
  });
});

describe('IGMPv3 reports', () => {
  it('skips records of unknown type and counts them (RFC 3376 §4.2.12)', () => {
    const bytes = igmpBytes(
      '22 00 0000 0000 0003' + '07 00 0001 ef010101 0a000001' + '04 00 0000 ef010102' + 'ff 01 0000 ef010103 01020304',
    );
    const report = igmp.decode(bytes);
    assert.deepEqual(report, {
      kind: 'report',
      version: 3,
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.2', sources: [] }],
      ignoredRecords: 2,
    });
  });
  it('a record count past the end is truncated', () =>
    assertDecodeError(igmpBytes('22 00 0000 0000 0002 04 00 0000 ef010102'), 'truncated'));
  it('a source count past the end is truncated', () =>
    assertDecodeError(igmpBytes('22 00 0000 0000 0001 01 00 00ff ef010102 0a000001'), 'truncated'));
  it('aux data past the end is truncated', () =>
    assertDecodeError(igmpBytes('22 00 0000 0000 0001 01 02 0000 ef010102 00000000'), 'truncated'));
  it('a record for a unicast group is invalid-group', () =>
    assertDecodeError(igmpBytes('22 00 0000 0000 0001 04 00 0000 0a010102'), 'invalid-group'));
  it('decodes a report as the Linux kernel sends it (real capture: join 239.1.1.1, v3)', () => {
    // IGMP payload of test/fixtures/real-frames.ts V3_JOIN_239_1_1_1 (tcpdump -xx).
    const report = igmp.decode(hex('2200 e9fb 0000 0001 0400 0000 ef01 0101'));
    assert.deepEqual(report, {
      kind: 'report',
      version: 3,
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1', sources: [] }],
    });
  });
});

describe('IGMP decode failures are typed', () => {
  it('bad checksum', () => {
    const bytes = hex('16 00 f8fb ef010203');
    assertDecodeError(bytes, 'bad-checksum');
  });
  it('the checksum covers trailing octets too (RFC 2236 §2.3)', () => {
    const bytes = Buffer.concat([hex('16 00 f8fa ef010203'), hex('0001')]);
    assertDecodeError(bytes, 'bad-checksum');
    const fixed = igmpBytes('16 00 0000 ef010203 0001');
    assert.deepEqual(igmp.decode(fixed), { kind: 'report', version: 2, group: '239.1.2.3' });
  });
  it('empty', () => assertDecodeError(new Uint8Array(0), 'truncated'));
  it('shorter than 8 octets', () => assertDecodeError(igmpBytes('16 00 0000 ef01'), 'truncated'));
  it('report for a unicast group', () => assertDecodeError(igmpBytes('16 00 0000 0a000001'), 'invalid-group'));
  it('leave for 0.0.0.0', () => assertDecodeError(igmpBytes('17 00 0000 00000000'), 'invalid-group'));
  it('query for a unicast group', () => assertDecodeError(igmpBytes('11 64 0000 0a000001'), 'invalid-group'));
  it('v3 query whose source count runs past the end', () =>
    assertDecodeError(igmpBytes('11 64 0000 00000000 02 7d 0002 0a000001'), 'truncated'));
});

describe('IGMP encode refuses values the wire cannot hold', () => {
  it('a v2 Max Resp Time of 0 would read back as v1', () => {
    assert.throws(() => igmp.encode({ kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 0 }), RangeError);
  });
  it('QRV above 7', () => {
    assert.throws(
      () =>
        igmp.encode({
          kind: 'query',
          version: 3,
          group: '0.0.0.0',
          maxRespCode: 100,
          sFlag: false,
          qrv: 8,
          qqic: 125,
          sources: [],
        }),
      RangeError,
    );
  });
  it('a group that is not an address', () =>
    assert.throws(() => igmp.encode({ kind: 'report', version: 2, group: '239.1.2' }), RangeError));
  it('aux data that is not whole words', () => {
    assert.throws(
      () =>
        igmp.encode({
          kind: 'report',
          version: 3,
          records: [{ type: 'MODE_IS_EXCLUDE', group: '239.1.1.1', sources: [], auxData: hex('01') }],
        }),
      RangeError,
    );
  });
});

function assertDecodeError(bytes: Uint8Array, code: string): void {
  assert.throws(
    () => igmp.decode(bytes),
    (error: unknown) => error instanceof DecodeError && error.code === code && error.message.length > 0,
  );
}
