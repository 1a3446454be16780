/**
 * The IPv6 kernel routing struct codecs and /proc parsers. Expected bytes are written out by hand from
 * linux/mroute6.h, linux/in6.h and linux/in.h (x86_64: integers little-endian, in6_addr
 * in network order), with the offsets and sizes a C program printed from the installed
 * headers (sizeof/offsetof): sockaddr_in6 28 (family 0, port 2, flowinfo 4, addr 8,
 * scope_id 24); mif6ctl 12 (flags 2, threshold 3, pifi 4, 2 octets of padding, rate_limit
 * 8); mf6cctl 92 (mcastgrp 28, parent 56, 2 octets of padding, ifset 60, 32 octets);
 * mrt6msg 40 (msgtype 1, mif 2, pad 4, src 8, dst 24); group_req 136 (gr_group 8);
 * group_source_req 264 (gsr_group 8, gsr_source 136); group_filter: gf_fmode 136,
 * gf_numsrc 140, gf_slist 144; ipv6_mreq 20 (ipv6mr_interface 16).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from '../helpers/node-test.js';

import { DecodeError } from '../../src/errors.js';
import * as constants from '../../src/protocol/mroute/constants.js';
import { readUpcall } from '../../src/protocol/mroute/family-kit.js';
import { IPV6_KIT } from '../../src/protocol/mroute/family-kits.js';
import {
  GROUP_REQ_LENGTH,
  GROUP_SOURCE_REQ_LENGTH,
  groupFilter,
  groupFilterLength,
  groupReq,
  groupSourceReq,
} from '../../src/protocol/mroute/group-req.js';
import * as ipv6Mreq from '../../src/protocol/mroute/ipv6-mreq.js';
import * as mf6cctl from '../../src/protocol/mroute/mf6cctl.js';
import * as mif6ctl from '../../src/protocol/mroute/mif6ctl.js';
import * as mrt6msg from '../../src/protocol/mroute/mrt6msg.js';
import {
  parseMfc6Cache,
  parseMifTable,
  procIPv6,
  readMfc6Cache,
  readMifTable,
} from '../../src/protocol/mroute/proc.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const SOURCE_HEX = '20010db8000000000000000000000002'; // 2001:db8::2
const GROUP_HEX = 'ff3e0000000000000000000000000001'; // ff3e::1

/** A sockaddr_in6: family 10 (host order), port 0, flowinfo 0, the address, scope id 0. */
function sockaddrIn6(addressHex: string): string {
  return `0a00 0000 00000000 ${addressHex} 00000000`;
}

/** A sockaddr_storage holding that sockaddr_in6, zeros to 128 octets. */
function storage(addressHex: string): string {
  return `${sockaddrIn6(addressHex)} ${'00'.repeat(100)}`;
}

function decodeError(code: string) {
  return (error: unknown) => error instanceof DecodeError && error.code === code;
}

describe('constants of linux/mroute6.h', () => {
  test('option numbers, flags and message types as the C program printed them', () => {
    assert.deepEqual(
      [
        constants.MRT6_INIT,
        constants.MRT6_DONE,
        constants.MRT6_ADD_MIF,
        constants.MRT6_DEL_MIF,
        constants.MRT6_ADD_MFC,
        constants.MRT6_DEL_MFC,
        constants.MRT6_VERSION,
        constants.MRT6_ASSERT,
        constants.MRT6_PIM,
        constants.MRT6_TABLE,
        constants.MRT6_ADD_MFC_PROXY,
        constants.MRT6_DEL_MFC_PROXY,
        constants.MRT6_FLUSH,
      ],
      [200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212],
    );
    assert.deepEqual(
      [
        constants.IPPROTO_IPV6,
        constants.IPPROTO_ICMPV6,
        constants.AF_INET6,
        constants.MAXMIFS,
        constants.MIFF_REGISTER,
      ],
      [41, 58, 10, 32, 1],
    );
    assert.deepEqual(
      [constants.MRT6MSG_NOCACHE, constants.MRT6MSG_WRONGMIF, constants.MRT6MSG_WHOLEPKT, constants.MRT6MSG_WRMIFWHOLE],
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      [
        constants.MCAST_JOIN_GROUP,
        constants.MCAST_BLOCK_SOURCE,
        constants.MCAST_UNBLOCK_SOURCE,
        constants.MCAST_LEAVE_GROUP,
      ],
      [42, 43, 44, 45],
    );
    assert.deepEqual(
      [constants.MCAST_JOIN_SOURCE_GROUP, constants.MCAST_LEAVE_SOURCE_GROUP, constants.MCAST_MSFILTER],
      [46, 47, 48],
    );
    assert.deepEqual([constants.IPV6_ADD_MEMBERSHIP, constants.IPV6_DROP_MEMBERSHIP], [20, 21]);
  });
});

describe('mif6ctl', () => {
  test('12 octets: mifi, flags, threshold, pifi, 2 octets of padding, rate_limit', () => {
    assertRoundTrip(
      mif6ctl,
      { mif: 3, flags: 0, threshold: 1, ifindex: 7, rateLimit: 0 },
      //   mifi  flags thr  pifi  pad   rate_limit
      hex('0300  00    01   0700  0000  00000000'),
    );
  });

  test('the register MIF, and every field in host order', () => {
    assertRoundTrip(
      mif6ctl,
      { mif: 0x0102, flags: constants.MIFF_REGISTER, threshold: 0x40, ifindex: 0x0a0b, rateLimit: 0x11223344 },
      hex('0201  01    40   0b0a  0000  44332211'),
    );
  });

  test('pifi is 16 bits: a larger ifindex is refused; short input is truncated', () => {
    assert.throws(() => mif6ctl.encode({ mif: 0, flags: 0, threshold: 1, ifindex: 0x10000, rateLimit: 0 }), RangeError);
    assert.throws(() => mif6ctl.encode({ mif: 0x10000, flags: 0, threshold: 1, ifindex: 1, rateLimit: 0 }), RangeError);
    assert.throws(() => mif6ctl.decode(new Uint8Array(11)), decodeError('truncated'));
  });

  test('padding octets are ignored on decode', () => {
    assert.equal(mif6ctl.decode(hex('0300 00 01 0700 ffff 00000000')).ifindex, 7);
  });
});

describe('mf6cctl', () => {
  test('92 octets: two sockaddr_in6, parent, padding, the if_set as host-order u32s', () => {
    assertRoundTrip(
      mf6cctl,
      { origin: '2001:db8::2', group: 'ff3e::1', parent: 2, oifs: [1, 5, 31] },
      hex(`
        ${sockaddrIn6(SOURCE_HEX)}
        ${sockaddrIn6(GROUP_HEX)}
        0200 0000
        22000080 00000000 00000000 00000000 00000000 00000000 00000000 00000000`),
    );
    assert.equal(mf6cctl.MF6CCTL_LENGTH, 92);
  });

  test('(*,G) with no oifs: origin ::, an all-zero if_set', () => {
    assertRoundTrip(
      mf6cctl,
      { origin: '::', group: 'ff3e::1', parent: 0, oifs: [] },
      hex(`${sockaddrIn6('00'.repeat(16))} ${sockaddrIn6(GROUP_HEX)} 0000 0000 ${'00'.repeat(32)}`),
    );
  });

  test('MIFs past MAXMIFS are refused (the kernel would ignore their bits) but decoded', () => {
    const base = { origin: '2001:db8::2', group: 'ff3e::1', parent: 0 };
    assert.throws(() => mf6cctl.encode({ ...base, oifs: [32] }), RangeError);
    assert.throws(() => mf6cctl.encode({ ...base, oifs: [-1] }), RangeError);
    const bytes = hex(
      `${sockaddrIn6(SOURCE_HEX)} ${sockaddrIn6(GROUP_HEX)} 0000 0000 01000000 01000000 ${'00'.repeat(20)} 00000080`,
    );
    assert.deepEqual(mf6cctl.decode(bytes).oifs, [0, 32, 255]);
  });

  test('a family other than AF_INET6, or short input, is refused', () => {
    const bytes = mf6cctl.encode({ origin: '2001:db8::2', group: 'ff3e::1', parent: 0, oifs: [0] });
    const inet = Uint8Array.from(bytes);
    inet[28] = 2;
    assert.throws(() => mf6cctl.decode(inet), decodeError('not-inet6'));
    assert.throws(() => mf6cctl.decode(bytes, 0, 91), decodeError('truncated'));
    assert.throws(() => mf6cctl.encode({ origin: '10.0.0.1', group: 'ff3e::1', parent: 0, oifs: [] }), RangeError);
  });
});

describe('mrt6msg', () => {
  test('40 octets: mbz, msgtype, a host-order u16 MIF, pad, src, dst', () => {
    assertRoundTrip(
      mrt6msg,
      { type: constants.MRT6MSG_NOCACHE, mif: 0x0105, source: '2001:db8::2', group: 'ff3e::1' },
      //   mbz type mif  pad
      hex(`00  01   0501 00000000 ${SOURCE_HEX} ${GROUP_HEX}`),
    );
    assert.throws(() => mrt6msg.decode(new Uint8Array(39)), decodeError('truncated'));
  });

  test('readUpcall: a NOCACHE upcall as the kernel queues it (80 octets, the last 40 undefined)', () => {
    const upcall = hex(`00 01 0200 00000000 ${SOURCE_HEX} ${GROUP_HEX} ${'5a'.repeat(40)}`);
    const parsed = readUpcall(IPV6_KIT, upcall, 16);
    assert.deepEqual(
      { ...parsed, rest: parsed?.rest.length },
      { type: constants.MRT6MSG_NOCACHE, index: 2, source: '2001:db8::2', group: 'ff3e::1', rest: 40 },
    );
  });

  test('readUpcall: WHOLEPKT carries the whole IPv6 packet after the struct', () => {
    // An IPv6 header (version 6, payload 8, next header UDP, hop limit 64) and 8 octets of UDP.
    const packet = hex(`60000000 0008 11 40 ${SOURCE_HEX} ${GROUP_HEX} 1f90 1f90 0008 0000`);
    const upcall = Buffer.concat([hex(`00 03 0100 00000000 ${SOURCE_HEX} ${GROUP_HEX}`), packet]);
    const parsed = readUpcall(IPV6_KIT, upcall, 16);
    assert.equal(parsed?.type, constants.MRT6MSG_WHOLEPKT);
    assert.equal(parsed?.index, 1);
    assert.equal(Buffer.from(parsed!.rest).toString('hex'), packet.toString('hex'));
  });

  test('readUpcall: real ICMPv6 (an MLDv2 report, type 143) and short input are not upcalls', () => {
    const mldv2Report = hex(`8f00 1234 0000 0001  04 00 0000 ${GROUP_HEX} ${'00'.repeat(12)}`);
    assert.equal(readUpcall(IPV6_KIT, mldv2Report, 16), undefined);
    assert.equal(readUpcall(IPV6_KIT, new Uint8Array(39), 16), undefined);
  });
});

describe('group_req, group_source_req, group_filter (IPv6)', () => {
  test('group_req: 136 octets, ifindex, 4 of padding, the group at 8', () => {
    const bytes = hex(`07000000 00000000 ${storage(GROUP_HEX)}`);
    assert.equal(bytes.length, GROUP_REQ_LENGTH);
    assertRoundTrip(groupReq.ipv6, { ifindex: 7, group: 'ff3e::1' }, bytes);
  });

  test('group_source_req: 264 octets, the source sockaddr_in6 at 136', () => {
    const bytes = hex(`07000000 00000000 ${storage(GROUP_HEX)} ${storage(SOURCE_HEX)}`);
    assert.equal(bytes.length, GROUP_SOURCE_REQ_LENGTH);
    assertRoundTrip(groupSourceReq.ipv6, { ifindex: 7, group: 'ff3e::1', source: '2001:db8::2' }, bytes);
    assert.deepEqual([...bytes.subarray(136, 138)], [10, 0], 'family at 136');
    assert.equal(bytes.subarray(144, 160).toString('hex'), SOURCE_HEX, 'source address at 144');
  });

  test('group_filter: 144 + 128n octets, INCLUDE = 1, the list from 144', () => {
    const bytes = hex(
      `03000000 00000000 ${storage(GROUP_HEX)} 01000000 02000000 ${storage(SOURCE_HEX)} ${storage('20010db8000000000000000000000003')}`,
    );
    assert.equal(bytes.length, groupFilterLength(2));
    assertRoundTrip(
      groupFilter.ipv6,
      { ifindex: 3, group: 'ff3e::1', mode: 'include', sources: ['2001:db8::2', '2001:db8::3'] },
      bytes,
    );
    const empty = hex(`03000000 00000000 ${storage(GROUP_HEX)} 00000000 00000000`);
    assertRoundTrip(groupFilter.ipv6, { ifindex: 3, group: 'ff3e::1', mode: 'exclude', sources: [] }, empty);
  });

  test('ipv6_mreq: the group, then a host-order int ifindex', () => {
    const bytes = hex(`${GROUP_HEX} 04000000`);
    assert.equal(bytes.length, ipv6Mreq.IPV6_MREQ_LENGTH);
    assertRoundTrip(ipv6Mreq, { group: 'ff3e::1', ifindex: 4 }, bytes);
  });

  test('IPv4 sockaddrs, unknown modes, short input and bad values are refused', () => {
    const ipv4Family = hex(`07000000 00000000 0200 0000 e8010203 ${'00'.repeat(120)}`);
    assert.throws(() => groupReq.ipv6.decode(ipv4Family), decodeError('not-inet6'));
    const filter = groupFilter.ipv6.encode({ ifindex: 3, group: 'ff3e::1', mode: 'include', sources: ['2001:db8::2'] });
    const badMode = Uint8Array.from(filter);
    badMode[136] = 7;
    assert.throws(() => groupFilter.ipv6.decode(badMode), decodeError('bad-filter-mode'));
    assert.throws(() => groupFilter.ipv6.decode(filter, 0, filter.length - 1), decodeError('truncated'));
    assert.throws(() => groupSourceReq.ipv6.decode(new Uint8Array(263)), decodeError('truncated'));
    assert.throws(() => groupSourceReq.ipv6.encode({ ifindex: 1, group: 'ff3e::1', source: '10.0.0.1' }), RangeError);
    assert.throws(() => ipv6Mreq.encode({ group: 'ff3e::1', ifindex: 2 ** 31 }), RangeError);
  });
});

// Written with the kernel's format strings (printf "%2d %-10s %8ld %7ld  %8ld %7ld %05X\n"
// and "%s %s %-3d %8lu %8lu %8lu" then " %2d:%-3d" per oif, %pI6 as 8 groups of 4 hex
// digits); the header lines are this machine's (Linux 6.18) /proc/net/ip6_mr_* files.
const MIF_HEADER = 'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags';
const MFC_HEADER =
  'Group                            Origin                           Iif      Pkts  Bytes     Wrong  Oifs';
const MIF_FIXTURE = [
  MIF_HEADER,
  ' 0 mclbmu6rs       456       6         0       0 00000',
  ' 1 mclbmu6ra         0       0       456       6 00000',
  ' 2 pim6reg           0       0         0       0 00001',
  ' 3 none              0       0         0       0 08000',
  '',
].join('\n');
const MFC_FIXTURE = [
  MFC_HEADER,
  'ff3e:0000:0000:0000:0000:0000:0000:0001 2001:0db8:0000:0000:0000:0000:0000:0002 0          6      456        0  1:1    2:1  ',
  'ff05:0000:0000:0000:0000:0000:0001:0003 2001:0db8:0000:0000:0000:0000:0000:0002 -1         0        0        0',
  '',
].join('\n');

describe('/proc/net/ip6_mr_*', () => {
  test('ip6_mr_vif: a row per MIF, with the register and static flags', () => {
    const zero = { bytesIn: 0, packetsIn: 0, bytesOut: 0, packetsOut: 0 };
    assert.deepEqual(parseMifTable(MIF_FIXTURE), [
      {
        mif: 0,
        name: 'mclbmu6rs',
        bytesIn: 456,
        packetsIn: 6,
        bytesOut: 0,
        packetsOut: 0,
        flags: 0,
        register: false,
        static: false,
      },
      {
        mif: 1,
        name: 'mclbmu6ra',
        bytesIn: 0,
        packetsIn: 0,
        bytesOut: 456,
        packetsOut: 6,
        flags: 0,
        register: false,
        static: false,
      },
      { mif: 2, name: 'pim6reg', ...zero, flags: 1, register: true, static: false },
      { mif: 3, name: 'none', ...zero, flags: 0x8000, register: false, static: true },
    ]);
  });

  test('ip6_mr_cache: resolved (S,G) with counters and oifs, unresolved with iif -1; canonical addresses', () => {
    assert.deepEqual(parseMfc6Cache(MFC_FIXTURE), [
      {
        group: 'ff3e::1',
        origin: '2001:db8::2',
        iif: 0,
        packets: 6,
        bytes: 456,
        wrong: 0,
        oifs: [
          { mif: 1, ttl: 1 },
          { mif: 2, ttl: 1 },
        ],
      },
      { group: 'ff05::1:3', origin: '2001:db8::2', iif: -1, packets: 0, bytes: 0, wrong: 0, oifs: [] },
    ]);
  });

  test('%pI6 is the full form only', () => {
    assert.equal(procIPv6('FF02:0000:0000:0000:0000:0000:0000:0016'), 'ff02::16');
    for (const text of [
      'ff02::16',
      'ff02:0000:0000:0000:0000:0000:0000:001',
      'ff02:0000:0000:0000:0000:0000:0000:00g6',
      '0100003D',
    ])
      assert.throws(() => procIPv6(text), decodeError('bad-proc-file'), text);
  });

  test("this machine's files (header only when no MIF exists) parse", async () => {
    for (const [path, read] of [
      ['/proc/net/ip6_mr_vif', readMifTable],
      ['/proc/net/ip6_mr_cache', readMfc6Cache],
    ] as const) {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch {
        continue; // a kernel without CONFIG_IPV6_MROUTE
      }
      assert.ok(Array.isArray(await read(path)), path);
      assert.ok(text.startsWith(path.endsWith('vif') ? 'Interface' : 'Group'), path);
    }
    assert.deepEqual(parseMifTable(`${MIF_HEADER}\n`), []);
    assert.deepEqual(parseMfc6Cache(`${MFC_HEADER}\n`), []);
    assert.deepEqual(parseMfc6Cache(''), []);
  });

  test('hostile lines: missing fields, bad hex, bad oifs, the IPv4 file', () => {
    const hostile: Array<[string, () => unknown]> = [
      ['a MIF row of 6 fields', () => parseMifTable(`${MIF_HEADER}\n 0 eth0 1 2 3 4\n`)],
      ['flags not hex', () => parseMifTable(`${MIF_HEADER}\n 0 eth0 1 2 3 4 0000G\n`)],
      ['a counter not a number', () => parseMifTable(`${MIF_HEADER}\n 0 eth0 1 x 3 4 00000\n`)],
      [
        'an MFC row of 5 fields',
        () =>
          parseMfc6Cache(
            `${MFC_HEADER}\nff3e:0000:0000:0000:0000:0000:0000:0001 2001:0db8:0000:0000:0000:0000:0000:0002 0 6 456\n`,
          ),
      ],
      [
        'bad hex in the group',
        () =>
          parseMfc6Cache(
            `${MFC_HEADER}\nff3e:0000:0000:0000:0000:0000:0000:000x 2001:0db8:0000:0000:0000:0000:0000:0002 0 0 0 0\n`,
          ),
      ],
      [
        'a bad oif',
        () =>
          parseMfc6Cache(
            `${MFC_FIXTURE}ff3e:0000:0000:0000:0000:0000:0000:0001 2001:0db8:0000:0000:0000:0000:0000:0002 0 0 0 0 1-1\n`,
          ),
      ],
      [
        'the IPv4 ip_mr_vif file',
        () =>
          parseMifTable(
            'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags Local    Remote\n 0 eth0 1 1 0 0 00008 00000002 00000000\n',
          ),
      ],
      [
        'the IPv4 ip_mr_cache file',
        () =>
          parseMfc6Cache('Group    Origin   Iif     Pkts    Bytes    Wrong Oifs\n01003DEF 02005B0A 0 7 308 0  1:1\n'),
      ],
      ['no header line', () => parseMifTable(' 0 eth0 1 2 3 4 00000\n 1 eth1 1 2 3 4 00000\n')],
    ];
    for (const [what, parse] of hostile) assert.throws(parse, decodeError('bad-proc-file'), what);
  });
});
