/**
 * The source-specific mroute structs: struct group_source_req and struct group_filter
 * (linux/in.h). Expected bytes are written out from the offsets a C program printed from
 * the installed header on x86_64 (sizeof/offsetof): group_source_req 264 (gsr_group 8,
 * gsr_source 136); group_filter: gf_group 8, gf_fmode 136, gf_numsrc 140, gf_slist 144,
 * GROUP_FILTER_SIZE(n) = 144 + 128n. A sockaddr_storage holds a sockaddr_in: family 2 in
 * host order, port 0, the address in network order, then zeros to 128 octets.
 */
import assert from 'node:assert/strict';
import { describe, test } from '../helpers/node-test.js';

import { DecodeError, McastError } from '../../src/errors.js';
import {
  MCAST_EXCLUDE,
  MCAST_INCLUDE,
  MCAST_JOIN_SOURCE_GROUP,
  MCAST_LEAVE_SOURCE_GROUP,
  MCAST_MSFILTER,
} from '../../src/protocol/mroute/constants.js';
import {
  checkLayout,
  GROUP_SOURCE_REQ_LENGTH,
  groupFilter,
  groupFilterLength,
  groupSourceReq,
} from '../../src/protocol/mroute/group-req.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

/** A sockaddr_storage holding sockaddr_in `addressHex` (8 hex digits). */
function storage(addressHex: string): string {
  return `0200 0000 ${addressHex} ${'00'.repeat(120)}`;
}

describe('constants of linux/in.h', () => {
  test('the option numbers and filter modes', () => {
    assert.deepEqual(
      [MCAST_JOIN_SOURCE_GROUP, MCAST_LEAVE_SOURCE_GROUP, MCAST_MSFILTER, MCAST_EXCLUDE, MCAST_INCLUDE],
      [46, 47, 48, 0, 1],
    );
  });
});

describe('group_source_req', () => {
  test('264 octets: ifindex, 4 of padding, the group at 8, the source at 136', () => {
    const bytes = hex(`07000000 00000000 ${storage('e8010203')} ${storage('0a000105')}`);
    assert.equal(bytes.length, 264);
    assert.equal(GROUP_SOURCE_REQ_LENGTH, 264);
    assertRoundTrip(groupSourceReq.ipv4, { ifindex: 7, group: '232.1.2.3', source: '10.0.1.5' }, bytes);
    assert.equal(bytes[8], 2, 'family at 8');
    assert.equal(bytes[136], 2, 'family at 136');
    assert.deepEqual([...bytes.subarray(140, 144)], [10, 0, 1, 5], 'source address at 140');
  });

  test('refuses bad values and short or non-IPv4 input', () => {
    assert.throws(
      () => groupSourceReq.ipv4.encode({ ifindex: -1, group: '232.1.2.3', source: '10.0.1.5' }),
      RangeError,
    );
    assert.throws(() => groupSourceReq.ipv4.encode({ ifindex: 1, group: '232.1.2.3', source: 'nope' }), RangeError);
    assert.throws(
      () => groupSourceReq.ipv4.decode(new Uint8Array(263)),
      (error: unknown) => error instanceof DecodeError && error.code === 'truncated',
    );
    const inet6 = groupSourceReq.ipv4.encode({ ifindex: 1, group: '232.1.2.3', source: '10.0.1.5' });
    inet6[136] = 10;
    assert.throws(
      () => groupSourceReq.ipv4.decode(inet6),
      (error: unknown) => error instanceof DecodeError && error.code === 'not-inet',
    );
  });
});

describe('group_filter', () => {
  test('no sources: 144 octets, EXCLUDE = 0', () => {
    const bytes = hex(`03000000 00000000 ${storage('ef010203')} 00000000 00000000`);
    assert.equal(bytes.length, 144);
    assertRoundTrip(groupFilter.ipv4, { ifindex: 3, group: '239.1.2.3', mode: 'exclude', sources: [] }, bytes);
  });

  test('n sources: 144 + 128n octets, INCLUDE = 1, the list from 144', () => {
    const bytes = hex(
      `03000000 00000000 ${storage('e8000001')} 01000000 02000000 ${storage('0a000001')} ${storage('0a000002')}`,
    );
    assert.equal(bytes.length, 144 + 2 * 128);
    assert.equal(groupFilterLength(2), 400);
    assertRoundTrip(
      groupFilter.ipv4,
      { ifindex: 3, group: '232.0.0.1', mode: 'include', sources: ['10.0.0.1', '10.0.0.2'] },
      bytes,
    );
    assert.deepEqual([...bytes.subarray(136, 144)], [1, 0, 0, 0, 2, 0, 0, 0], 'fmode at 136, numsrc at 140');
    assert.deepEqual([...bytes.subarray(272, 276)], [2, 0, 0, 0], 'second source at 144 + 128');
  });

  test('a numsrc past the bytes, or an unknown mode, is refused', () => {
    const bytes = groupFilter.ipv4.encode({ ifindex: 3, group: '232.0.0.1', mode: 'include', sources: ['10.0.0.1'] });
    assert.throws(
      () => groupFilter.ipv4.decode(bytes, 0, bytes.length - 1),
      (error: unknown) => error instanceof DecodeError && error.code === 'truncated',
    );
    const badMode = Uint8Array.from(bytes);
    badMode[136] = 7;
    assert.throws(
      () => groupFilter.ipv4.decode(badMode),
      (error: unknown) => error instanceof DecodeError && error.code === 'bad-filter-mode',
    );
  });
});

describe('layout', () => {
  test('only 64-bit little-endian architectures are encoded', () => {
    checkLayout('x64');
    checkLayout('arm64');
    for (const arch of ['ia32', 'arm', 's390x']) {
      assert.throws(
        () => checkLayout(arch),
        (error: unknown) => error instanceof McastError && error.code === 'unavailable' && error.message.includes(arch),
      );
    }
  });
});
