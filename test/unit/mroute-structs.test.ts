/**
 * The mroute struct codecs and /proc parsers. Expected bytes are written out by hand from
 * linux/mroute.h and linux/in.h (x86_64: integers little-endian, in_addr in network
 * order), with the offsets and sizes a C program printed from the installed header
 * (sizeof/offsetof): vifctl 16, mfcctl 60 (ttls at 10, 2 octets of padding, counters at
 * 44), igmpmsg 20 (im_msgtype 8, im_vif 10, im_vif_hi 11, im_src 12, im_dst 16), ip_mreqn 12.
 */
import assert from 'node:assert/strict';
import { describe, test } from '../helpers/node-test.js';

import { DecodeError, McastError, PermissionError, UsageError } from '../../src/errors.js';
import {
  IGMPMSG_NOCACHE,
  IGMPMSG_WHOLEPKT,
  VIFF_TUNNEL,
  VIFF_USE_IFINDEX,
} from '../../src/protocol/mroute/constants.js';
import { errnoOf } from '../../src/protocol/mroute/errno.js';
import { readUpcall } from '../../src/protocol/mroute/family-kit.js';
import { IPV4_KIT } from '../../src/protocol/mroute/family-kits.js';
import * as igmpmsg from '../../src/protocol/mroute/igmpmsg.js';
import * as ipMreqn from '../../src/protocol/mroute/ip-mreqn.js';
import * as mfcctl from '../../src/protocol/mroute/mfcctl.js';
import { MrouteError, mrouteError } from '../../src/protocol/mroute/mroute-error.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { parseMfcCache, parseVifTable, procAddress } from '../../src/protocol/mroute/proc.js';
import * as vifctl from '../../src/protocol/mroute/vifctl.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

describe('vifctl', () => {
  test('by ifindex (VIFF_USE_IFINDEX): the union holds a host-order int', () => {
    assertRoundTrip(
      vifctl,
      {
        vif: 3,
        flags: VIFF_USE_IFINDEX,
        threshold: 1,
        rateLimit: 0,
        local: { kind: 'ifindex', ifindex: 7 },
        remoteAddress: '0.0.0.0',
      },
      //   vifi  flags thr  rate_limit  lcl_ifindex  rmt_addr
      hex('0300  08    01   00000000    07000000     00000000'),
    );
  });

  test('by address: the union holds an in_addr in network order', () => {
    assertRoundTrip(
      vifctl,
      {
        vif: 0x0102,
        flags: VIFF_TUNNEL,
        threshold: 0x40,
        rateLimit: 0x11223344,
        local: { kind: 'address', address: '10.0.0.1' },
        remoteAddress: '192.0.2.9',
      },
      hex('0201  01    40   44332211    0a000001     c0000209'),
    );
  });

  test('flags and union must agree; out-of-range fields are refused', () => {
    assert.throws(
      () =>
        vifctl.encode({
          vif: 0,
          flags: 0,
          threshold: 1,
          rateLimit: 0,
          local: { kind: 'ifindex', ifindex: 2 },
          remoteAddress: '0.0.0.0',
        }),
      RangeError,
    );
    assert.throws(
      () =>
        vifctl.encode({
          vif: 0x10000,
          flags: VIFF_USE_IFINDEX,
          threshold: 1,
          rateLimit: 0,
          local: { kind: 'ifindex', ifindex: 2 },
          remoteAddress: '0.0.0.0',
        }),
      RangeError,
    );
    assert.throws(
      () => vifctl.decode(new Uint8Array(15)),
      (error: unknown) => error instanceof DecodeError && error.code === 'truncated',
    );
  });
});

describe('mfcctl', () => {
  test('60 octets: 32 TTLs, 2 octets of padding, then the counters', () => {
    const ttls = new Array<number>(32).fill(0);
    ttls[1] = 1;
    ttls[5] = 64;
    ttls[31] = 255;
    assertRoundTrip(
      mfcctl,
      {
        origin: '10.91.0.2',
        group: '239.61.0.1',
        parent: 2,
        ttls,
        packets: 0x01020304,
        bytes: 0x0a0b0c0d,
        wrongIf: 5,
        expire: -1,
      },
      hex(`
        0a5b0002 ef3d0001 0200
        00 01 00 00 00 40 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff
        0000
        04030201 0d0c0b0a 05000000 ffffffff`),
    );
  });

  test('fewer TTLs than MAXVIFS are padded with 0 (not an oif); more are refused', () => {
    const bytes = mfcctl.encode({
      origin: '0.0.0.0',
      group: '239.1.1.1',
      parent: 0,
      ttls: [0, 1],
      packets: 0,
      bytes: 0,
      wrongIf: 0,
      expire: 0,
    });
    assert.equal(bytes.length, 60);
    assert.deepEqual(mfcctl.decode(bytes).ttls, [0, 1, ...new Array<number>(30).fill(0)]);
    assert.throws(
      () =>
        mfcctl.encode({
          origin: '0.0.0.0',
          group: '239.1.1.1',
          parent: 0,
          ttls: new Array<number>(33).fill(1),
          packets: 0,
          bytes: 0,
          wrongIf: 0,
          expire: 0,
        }),
      RangeError,
    );
  });
});

describe('igmpmsg', () => {
  test('16-bit VIF (Linux ≥ 5.10): im_vif | im_vif_hi << 8', () => {
    assertRoundTrip(
      igmpmsg.igmpMsgCodec(16),
      { type: IGMPMSG_NOCACHE, vif: 0x0105, source: '10.91.0.2', group: '239.61.0.2' },
      //  unused1  unused2  type mbz vif vif_hi im_src   im_dst
      hex('00000000 00000000 01   00  05  01     0a5b0002 ef3d0002'),
    );
  });

  test('8-bit VIF (before 5.10): the octet after im_vif is ignored, written 0', () => {
    assertRoundTrip(
      igmpmsg.igmpMsgCodec(8),
      { type: IGMPMSG_WHOLEPKT, vif: 5, source: '10.91.0.2', group: '239.61.0.2' },
      hex('00000000 00000000 03   00  05  00     0a5b0002 ef3d0002'),
    );
    const oldKernel = hex('00000000 00000000 01 00 05 aa 0a5b0002 ef3d0002');
    assert.equal(igmpmsg.decode(oldKernel, 0, oldKernel.length, { vifWidth: 8 }).vif, 5);
    assert.throws(
      () => igmpmsg.encode({ type: 1, vif: 256, source: '0.0.0.0', group: '239.1.1.1' }, undefined, 0, { vifWidth: 8 }),
      RangeError,
    );
  });

  test('the VIF width follows the kernel release', () => {
    assert.equal(igmpmsg.kernelVifWidth('4.19.0-26-amd64'), 8);
    assert.equal(igmpmsg.kernelVifWidth('5.9.16'), 8);
    assert.equal(igmpmsg.kernelVifWidth('5.10.0-32-amd64'), 16);
    assert.equal(igmpmsg.kernelVifWidth('6.18.44-fc-v657'), 16);
  });

  test('readUpcall: protocol octet 0 is an upcall, 2 is real IGMP', () => {
    // A NOCACHE upcall as the kernel queues it: the triggering packet's header (ihl 5),
    // TTL overwritten by im_msgtype, protocol by im_mbz, checksum by im_vif/im_vif_hi,
    // then an 8-octet IGMP header whose type repeats im_msgtype.
    const upcall = hex('45000030 12344000 01 00 0000 0a5b0002 ef3d0002   01000000 00000000');
    assert.deepEqual(readUpcall(IPV4_KIT, upcall, 16), {
      type: IGMPMSG_NOCACHE,
      index: 0,
      source: '10.91.0.2',
      group: '239.61.0.2',
      rest: upcall.subarray(20),
    });
    const realIgmp = hex('46c00020 00004000 01 02 0000 0a5b0002 e0000016 94040000   22000000 00000000');
    assert.equal(readUpcall(IPV4_KIT, realIgmp, 16), undefined);
    assert.equal(readUpcall(IPV4_KIT, upcall.subarray(0, 19), 16), undefined);
  });
});

describe('ip_mreqn', () => {
  test('group, address, then a host-order ifindex', () => {
    assertRoundTrip(ipMreqn, { group: '239.1.2.3', address: '0.0.0.0', ifindex: 4 }, hex('ef010203 00000000 04000000'));
  });
});

// Fixtures copied from a real kernel (Linux 6.18, x86_64): the router namespace of
// test/routing/mroute-socket.test.ts after its traffic tests, dumped with
// `ip netns exec <router ns> cat /proc/net/ip_mr_vif /proc/net/ip_mr_cache`. The VIFs were
// added with VIFF_USE_IFINDEX (ifindexes 2, 3, 4); 7 datagrams of 44 octets went from
// 10.91.0.2 to 239.61.0.1 (iif 0 → oif 1), and one to 239.61.0.2, which has no route: its
// entry is unresolved (iif -1, zero counters, no oifs) while the kernel waits for one.
const VIF_FIXTURE = [
  'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags Local    Remote',
  ' 0 mclbmu0rs       308       7         0       0 00008 00000002 00000000',
  ' 1 mclbmu0ra         0       0       308       7 00008 00000003 00000000',
  ' 2 mclbmu0rb         0       0         0       0 00008 00000004 00000000',
  '',
].join('\n');
const MFC_FIXTURE = [
  'Group    Origin   Iif     Pkts    Bytes    Wrong Oifs',
  '01003DEF 02005B0A 0          7      308        0  1:1  ',
  '02003DEF 02005B0A -1         0        0        0',
  '',
].join('\n');

describe('/proc/net/ip_mr_*', () => {
  test('ip_mr_vif: a row per VIF; with VIFF_USE_IFINDEX the local column is the ifindex', () => {
    const common = { flags: VIFF_USE_IFINDEX, static: false, remoteAddress: '0.0.0.0' };
    assert.deepEqual(parseVifTable(VIF_FIXTURE, true), [
      {
        vif: 0,
        name: 'mclbmu0rs',
        bytesIn: 308,
        packetsIn: 7,
        bytesOut: 0,
        packetsOut: 0,
        ...common,
        local: { kind: 'ifindex', ifindex: 2 },
      },
      {
        vif: 1,
        name: 'mclbmu0ra',
        bytesIn: 0,
        packetsIn: 0,
        bytesOut: 308,
        packetsOut: 7,
        ...common,
        local: { kind: 'ifindex', ifindex: 3 },
      },
      {
        vif: 2,
        name: 'mclbmu0rb',
        bytesIn: 0,
        packetsIn: 0,
        bytesOut: 0,
        packetsOut: 0,
        ...common,
        local: { kind: 'ifindex', ifindex: 4 },
      },
    ]);
  });

  test('ip_mr_vif: an address VIF, and the static flag', () => {
    const text =
      'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags Local    Remote\n 3 eth9              1       1         0       0 08000 0100000A 00000000\n';
    const [row] = parseVifTable(text, true);
    assert.deepEqual(row?.local, { kind: 'address', address: '10.0.0.1' });
    assert.equal(row?.static, true);
  });

  test('ip_mr_cache: resolved (S,G) with counters and oif:ttl, unresolved with iif -1', () => {
    assert.deepEqual(parseMfcCache(MFC_FIXTURE, true), [
      {
        group: '239.61.0.1',
        origin: '10.91.0.2',
        iif: 0,
        packets: 7,
        bytes: 308,
        wrong: 0,
        oifs: [{ vif: 1, ttl: 1 }],
      },
      { group: '239.61.0.2', origin: '10.91.0.2', iif: -1, packets: 0, bytes: 0, wrong: 0, oifs: [] },
    ]);
  });

  test('addresses are a __be32 printed with %08X: reversed on little-endian', () => {
    assert.equal(procAddress('01003DEF', true), '239.61.0.1');
    assert.equal(procAddress('EF3D0001', false), '239.61.0.1');
    assert.throws(() => procAddress('1003DEF', true), DecodeError);
  });

  test('a header alone is an empty table; garbage is refused', () => {
    assert.deepEqual(parseMfcCache('Group    Origin   Iif     Pkts    Bytes    Wrong Oifs\n', true), []);
    assert.throws(() => parseMfcCache(`${MFC_FIXTURE}01003DEF 02005B0A 0 7 308 0 1-1\n`, true), DecodeError);
    assert.throws(() => parseVifTable(`${VIF_FIXTURE} 9 x 1 2\n`, true), DecodeError);
  });
});

describe('errors', () => {
  test('system errors give their errno name; anything else none, whatever its text says', () => {
    const systemError = (code: string, message: string) =>
      Object.assign(new Error(message), { code, errno: -1, syscall: 'setsockopt' });
    assert.equal(
      errnoOf(systemError('EADDRINUSE', "EADDRINUSE: Address already in use, setsockopt 'raw IPv4 socket'")),
      'EADDRINUSE',
    );
    assert.equal(errnoOf(Object.assign(new Error('x'), { code: 'ENOENT' })), 'ENOENT');
    assert.equal(errnoOf(Object.assign(new Error('x'), { code: 'ERR_SOCKET_CLOSED' })), undefined);
    assert.equal(errnoOf(new Error('Address already in use')), undefined);
    assert.equal(errnoOf('EPERM'), undefined);
  });

  test("mrouteError: the errno's hint, the message without the errno said twice, EPERM a permission error", () => {
    const refused = Object.assign(new Error("ENOPROTOOPT: Protocol not available, setsockopt 'raw IPv4 socket'"), {
      code: 'ENOPROTOOPT',
      errno: -92,
      syscall: 'setsockopt',
    });
    const typed = mrouteError('cannot become the multicast router (MRT_INIT)', refused, {
      hints: { ENOPROTOOPT: 'no multicast routing' },
    });
    assert.ok(typed instanceof MrouteError);
    assert.equal(typed.errno, 'ENOPROTOOPT');
    assert.equal(typed.hint, 'no multicast routing');
    assert.equal(
      typed.message,
      "cannot become the multicast router (MRT_INIT): ENOPROTOOPT (Protocol not available, setsockopt 'raw IPv4 socket')",
    );
    const denied = mrouteError(
      'cannot open',
      Object.assign(new Error('EPERM: Operation not permitted, socket'), { code: 'EPERM' }),
    );
    assert.ok(denied instanceof PermissionError);
    assert.equal(denied.exitCode, 77);
  });

  test('ifindexOf: /sys/class/net, and a usage error for a missing or invalid name', () => {
    assert.equal(ifindexOf('lo'), 1);
    assert.throws(
      () => ifindexOf('mclnosuchif0'),
      (error: unknown) => error instanceof UsageError && error.code === 'no-such-interface' && error.exitCode === 64,
    );
    assert.throws(
      () => ifindexOf('a/b'),
      (error: unknown) => error instanceof McastError && error.code === 'usage',
    );
  });
});
