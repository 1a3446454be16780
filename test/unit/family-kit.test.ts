/**
 * The two family kits (src/protocol/mroute/family-kits.ts) and what is written once against
 * them (family-kit.ts): each kit's socket and option numbers as the kernel's headers give
 * them, the option values it encodes from the router socket's calls (expected bytes written
 * out by hand, as in the struct tests), its tables read into rows of either family's shape
 * (files in a temporary directory, in the kernel's own formats), and the bounds it names.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from '../helpers/node-test.js';

import { boundSetting, readRouteTables, readUpcall } from '../../src/protocol/mroute/family-kit.js';
import { FAMILY_KITS, IPV4_KIT, IPV6_KIT } from '../../src/protocol/mroute/family-kits.js';
import { groupFilter, groupSourceReq } from '../../src/protocol/mroute/group-req.js';
import * as igmpmsg from '../../src/protocol/mroute/igmpmsg.js';
import * as mrt6msg from '../../src/protocol/mroute/mrt6msg.js';
import { hex } from '../helpers/bytes.js';

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('the kits', () => {
  test('one a family, keyed by it', () => {
    assert.equal(FAMILY_KITS.ipv4, IPV4_KIT);
    assert.equal(FAMILY_KITS.ipv6, IPV6_KIT);
    for (const [family, kit] of Object.entries(FAMILY_KITS)) assert.equal(kit.family, family);
  });

  test('IPv4: a raw IGMP socket, MRT_* at level IPPROTO_IP, 32 VIFs', () => {
    assert.deepEqual(IPV4_KIT.socket, { ipVersion: 4, protocol: 2, protocolName: 'IGMP', level: 0 });
    assert.deepEqual(IPV4_KIT.options, {
      init: 200,
      done: 201,
      addInterface: 202,
      delInterface: 203,
      addEntry: 204,
      delEntry: 205,
      flush: 212,
    });
    assert.equal(IPV4_KIT.flushAll, 1 | 4);
    assert.deepEqual([IPV4_KIT.interfaceWord, IPV4_KIT.maxInterfaces, IPV4_KIT.optionPrefix], ['vif', 32, 'MRT']);
    assert.deepEqual(IPV4_KIT.upcall.types, { noCache: 1, wrongInterface: 2, wholePacket: 3, wrongInterfaceWhole: 4 });
    assert.deepEqual(
      [
        IPV4_KIT.memberships.join,
        IPV4_KIT.memberships.leave,
        IPV4_KIT.memberships.joinSource,
        IPV4_KIT.memberships.filter,
      ],
      [35, 36, 46, 48],
    );
    assert.equal(IPV4_KIT.structs.sourceMembership, groupSourceReq.ipv4);
    assert.equal(IPV4_KIT.structs.filter, groupFilter.ipv4);
  });

  test('IPv6: a raw ICMPv6 socket that blocks every ICMPv6 type, MRT6_* at level IPPROTO_IPV6, 32 MIFs', () => {
    const { setup, ...socket } = IPV6_KIT.socket;
    assert.deepEqual(socket, { ipVersion: 6, protocol: 58, protocolName: 'ICMPv6', level: 41 });
    assert.deepEqual([setup.level, setup.option, hexOf(setup.value)], [58, 1, 'ff'.repeat(32)]);
    assert.deepEqual(IPV6_KIT.options, {
      init: 200,
      done: 201,
      addInterface: 202,
      delInterface: 203,
      addEntry: 204,
      delEntry: 205,
      flush: 212,
    });
    assert.equal(IPV6_KIT.flushAll, 1 | 4);
    assert.deepEqual([IPV6_KIT.interfaceWord, IPV6_KIT.maxInterfaces, IPV6_KIT.optionPrefix], ['mif', 32, 'MRT6']);
    assert.deepEqual(
      [
        IPV6_KIT.memberships.join,
        IPV6_KIT.memberships.leave,
        IPV6_KIT.memberships.joinSource,
        IPV6_KIT.memberships.filter,
      ],
      [20, 21, 46, 48],
    );
    assert.equal(IPV6_KIT.structs.sourceMembership, groupSourceReq.ipv6);
    assert.equal(IPV6_KIT.structs.filter, groupFilter.ipv6);
  });

  test('the membership bounds: sysctls read at open, and the one IPv6 holds to', () => {
    assert.equal(boundSetting(IPV4_KIT.memberships.perSocket), 'net.ipv4.igmp_max_memberships');
    assert.equal(boundSetting(IPV4_KIT.memberships.maxSources), 'net.ipv4.igmp_max_msf');
    assert.equal(boundSetting(IPV6_KIT.memberships.perSocket), 'net.core.optmem_max');
    assert.equal(boundSetting(IPV6_KIT.memberships.maxSources), 'net.ipv6.mld_max_msf');
    assert.deepEqual(IPV6_KIT.memberships.perSocket, { fixed: 16, limitedBy: 'net.core.optmem_max' });
  });
});

describe('the option values a kit encodes', () => {
  test('an interface by ifindex: vifctl with VIFF_USE_IFINDEX, mif6ctl on mif6c_pifi', () => {
    const spec = { index: 3, ifindex: 7, threshold: 1 };
    //                                                       vifi flags thr rate_limit lcl_ifindex rmt_addr
    assert.equal(hexOf(IPV4_KIT.interfaceArgument(spec)), hexOf(hex('0300 08 01 00000000 07000000 00000000')));
    //                                                       mifi flags thr pifi pad rate_limit
    assert.equal(hexOf(IPV6_KIT.interfaceArgument(spec)), hexOf(hex('0300 00 01 0700 0000 00000000')));
  });

  test('deleting an interface: a vifctl naming it, a bare mifi_t', () => {
    assert.equal(hexOf(IPV4_KIT.interfaceKeyArgument(5)), hexOf(hex('0500 08 00 00000000 00000000 00000000')));
    assert.equal(hexOf(IPV6_KIT.interfaceKeyArgument(5)), '0500');
  });

  test("an entry: mfcctl's TTL at each oif, mf6cctl's if_set bits", () => {
    const ipv4 = IPV4_KIT.entryArgument({ source: '10.0.0.1', group: '239.1.1.1', iif: 0, oifs: [1, 3], ttl: 4 });
    assert.equal(ipv4.length, 60);
    assert.deepEqual([...ipv4.subarray(8, 10)], [0, 0], 'parent 0');
    assert.deepEqual([...ipv4.subarray(10, 14)], [0, 4, 0, 4], 'TTL 4 at VIFs 1 and 3');
    const ipv6 = IPV6_KIT.entryArgument({ source: '2001:db8::1', group: 'ff3e::1', iif: 2, oifs: [1, 3], ttl: 1 });
    assert.equal(ipv6.length, 92);
    assert.deepEqual([...ipv6.subarray(56, 58)], [2, 0], 'parent 2');
    assert.deepEqual([...ipv6.subarray(60, 64)], [0b1010, 0, 0, 0], 'MIFs 1 and 3');
    assert.equal(
      hexOf(IPV4_KIT.entryKeyArgument({ source: '10.0.0.1', group: '239.1.1.1' }).subarray(0, 8)),
      '0a000001ef010101',
    );
    assert.equal(IPV6_KIT.entryKeyArgument({ source: '2001:db8::1', group: 'ff3e::1' }).length, 92);
  });

  test('a membership: ip_mreqn with the ifindex choosing the interface, ipv6_mreq', () => {
    assert.equal(
      hexOf(IPV4_KIT.membershipArgument({ group: '239.1.2.3', ifindex: 4 })),
      hexOf(hex('ef010203 00000000 04000000')),
    );
    assert.equal(
      hexOf(IPV6_KIT.membershipArgument({ group: 'ff3e::1', ifindex: 4 })),
      hexOf(hex('ff3e0000000000000000000000000001 04000000')),
    );
  });
});

describe('readUpcall', () => {
  test("each family's upcall in the same terms: its interface as the index, what follows as the rest", () => {
    const ipv4 = Buffer.concat([
      igmpmsg.encode({ type: 1, vif: 0x0102, source: '10.0.0.1', group: '239.1.1.1' }),
      hex('01000000 00000000'),
    ]);
    assert.deepEqual(
      { ...readUpcall(IPV4_KIT, ipv4, 16), rest: undefined },
      { type: 1, index: 0x0102, source: '10.0.0.1', group: '239.1.1.1', rest: undefined },
    );
    assert.equal(readUpcall(IPV4_KIT, ipv4, 8)?.index, 2, 'im_vif_hi is not read before Linux 5.10');
    const ipv6 = Buffer.concat([
      mrt6msg.encode({ type: 3, mif: 7, source: '2001:db8::1', group: 'ff3e::1' }),
      hex('60000000'),
    ]);
    assert.deepEqual(
      { ...readUpcall(IPV6_KIT, ipv6, 16), rest: hexOf(readUpcall(IPV6_KIT, ipv6, 16)!.rest) },
      {
        type: 3,
        index: 7,
        source: '2001:db8::1',
        group: 'ff3e::1',
        rest: '60000000',
      },
    );
    assert.equal(IPV6_KIT.upcall.kernelWidth(), 16);
  });
});

describe('readRouteTables of the IPv4 kit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcastctl-proc4-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  /** An address as the kernel prints a __be32 with %08X on this machine (octets reversed on a little-endian one). */
  const be32 = (octets: string) => (endianness() === 'LE' ? octets.match(/../g)!.reverse().join('') : octets);
  const interfaces = file(
    'ip_mr_vif',
    'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags Local    Remote\n' +
      ' 0 veth0           308       7         0       0 00008 00000002 00000000\n' +
      ` 1 eth9              0       0       308       7 08000 ${be32('0A000001')} 00000000\n` +
      ' 2 pimreg            0       0         0       0 00004 00000000 00000000\n',
  );
  const cache = file(
    'ip_mr_cache',
    'Group    Origin   Iif     Pkts    Bytes    Wrong Oifs\n' +
      `${be32('EF3D0001')} ${be32('0A5B0002')} 0          7      308        0  1:1  \n` +
      `${be32('EF3D0002')} ${be32('0A5B0002')} -1         0        0        0\n`,
  );

  test('interfaces with the ifindex where the table tells it, static and register flags; routes with counters', async () => {
    const tables = await readRouteTables(IPV4_KIT, { interfaces, cache, mcForwarding: file('mc_forwarding', '1\n') });
    const counters = (packetsIn: number, packetsOut: number) => ({
      packetsIn,
      packetsOut,
      bytesIn: 44 * packetsIn,
      bytesOut: 44 * packetsOut,
    });
    assert.deepEqual(tables, {
      routerActive: true,
      interfaces: [
        { index: 0, name: 'veth0', ifindex: 2, static: false, register: false, ...counters(7, 0) },
        { index: 1, name: 'eth9', static: true, register: false, ...counters(0, 7) },
        { index: 2, name: 'pimreg', static: false, register: true, ...counters(0, 0) },
      ],
      routes: [
        {
          source: '10.91.0.2',
          group: '239.61.0.1',
          iif: 0,
          packets: 7,
          bytes: 308,
          wrong: 0,
          oifs: [{ index: 1, ttl: 1 }],
        },
        { source: '10.91.0.2', group: '239.61.0.2', iif: -1, packets: 0, bytes: 0, wrong: 0, oifs: [] },
      ],
    });
  });

  test('absent tables: undefined, no error', async () => {
    assert.equal(await readRouteTables(IPV4_KIT, { interfaces: join(dir, 'absent-vif'), cache }), undefined);
  });
});
