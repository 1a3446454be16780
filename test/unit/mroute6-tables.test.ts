/**
 * The router socket's argument checks as each family's kit binds them (UsageError before
 * any struct is encoded), and readRouteTables with the IPv6 kit, the IPv6 half of
 * `mcastctl routes`: absent /proc files mean "no IPv6 multicast routing here" (undefined,
 * no error), present ones are parsed with the router state from mc_forwarding. Files are
 * written to a temporary directory in the kernel's own formats (net/ipv6/ip6mr.c).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from '../helpers/node-test.js';

import { UsageError } from '../../src/errors.js';
import { checkThreshold } from '../../src/protocol/mroute/arguments.js';
import {
  checkFamilyAddress,
  checkIndex,
  checkInterfaceIfindex,
  type FamilyKit,
  readRouteTables,
} from '../../src/protocol/mroute/family-kit.js';
import { IPV4_KIT, IPV6_KIT } from '../../src/protocol/mroute/family-kits.js';

describe('the router socket argument checks of each kit', () => {
  test('MIF and VIF indexes 0..31', () => {
    for (const kit of [IPV6_KIT, IPV4_KIT]) {
      checkIndex(kit, 0);
      checkIndex(kit, 31);
      for (const bad of [-1, 32, 1.5, Number.NaN]) assert.throws(() => checkIndex(kit, bad), UsageError);
    }
    assert.throws(() => checkIndex(IPV6_KIT, 32), /invalid MIF 32: an integer from 0 to 31/);
    assert.throws(() => checkIndex(IPV4_KIT, 32, 'outgoing VIF'), /invalid outgoing VIF 32/);
  });

  test('hop-limit (TTL) thresholds 1..254', () => {
    checkThreshold(1, 'threshold');
    checkThreshold(254, 'threshold');
    for (const bad of [0, 255, 2.5]) assert.throws(() => checkThreshold(bad, 'threshold'), UsageError);
  });

  test('a MIF ifindex fits mif6c_pifi (16 bits); a VIF takes any positive one', () => {
    checkInterfaceIfindex(IPV6_KIT, 1);
    checkInterfaceIfindex(IPV6_KIT, 0xffff);
    for (const bad of [0, 0x10000, -3])
      assert.throws(() => checkInterfaceIfindex(IPV6_KIT, bad), /mif6c_pifi is 16 bits/);
    checkInterfaceIfindex(IPV4_KIT, 0x10000);
    for (const bad of [0, -3, 1.5]) assert.throws(() => checkInterfaceIfindex(IPV4_KIT, bad), UsageError);
  });

  test("addresses: the kit's family only, groups multicast, with code bad-address", () => {
    checkFamilyAddress(IPV6_KIT, 'fd00::1', 'source', false);
    checkFamilyAddress(IPV6_KIT, 'ff1e::1', 'group', true);
    checkFamilyAddress(IPV4_KIT, '10.0.0.1', 'source', false);
    checkFamilyAddress(IPV4_KIT, '239.1.1.1', 'group', true);
    const refused = (kit: FamilyKit, address: string, multicast: boolean) =>
      assert.throws(
        () => checkFamilyAddress(kit, address, 'x', multicast),
        (error: unknown) => error instanceof UsageError && error.code === 'bad-address',
      );
    refused(IPV6_KIT, '10.0.0.1', false);
    refused(IPV6_KIT, '239.1.1.1', true);
    refused(IPV6_KIT, 'fd00::1', true);
    refused(IPV6_KIT, 'not an address', false);
    refused(IPV4_KIT, 'fd00::1', false);
    refused(IPV4_KIT, 'ff1e::1', true);
    refused(IPV4_KIT, '10.0.0.1', true);
    assert.throws(
      () => checkFamilyAddress(IPV4_KIT, '10.0.0.1', 'group', true),
      /not a multicast address \(224\.0\.0\.0\/4\)/,
    );
    assert.throws(
      () => checkFamilyAddress(IPV6_KIT, 'fd00::1', 'group', true),
      /not a multicast address \(ff00::\/8\)/,
    );
  });
});

describe('readRouteTables of the IPv6 kit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcastctl-proc6-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  const mifs = file(
    'ip6_mr_vif',
    'Interface      BytesIn  PktsIn  BytesOut PktsOut Flags\n' +
      ' 0 veth0          1000      10         0       0 00000\n' +
      ' 1 veth1             0       0      1000      10 00000\n',
  );
  const cache = file(
    'ip6_mr_cache',
    'Group                            Origin                           Iif      Pkts  Bytes     Wrong  Oifs\n' +
      'ff1e:0000:0000:0000:0000:0000:0061:0001 fd61:0001:0000:0000:0000:0000:0000:0002 0         10     1000        0  1:1  \n',
  );

  test('absent /proc files: undefined, no error (a kernel without IPv6 multicast routing)', async () => {
    assert.equal(
      await readRouteTables(IPV6_KIT, { interfaces: join(dir, 'absent-vif'), cache: join(dir, 'absent-cache') }),
      undefined,
    );
    assert.equal(await readRouteTables(IPV6_KIT, { interfaces: mifs, cache: join(dir, 'absent-cache') }), undefined);
  });

  test('present files: MIFs, routes and the router state', async () => {
    const tables = await readRouteTables(IPV6_KIT, {
      interfaces: mifs,
      cache,
      mcForwarding: file('mc_forwarding', '1\n'),
    });
    assert.equal(tables?.routerActive, true);
    assert.deepEqual(
      tables?.interfaces.map((m) => [m.index, m.name, m.packetsIn, m.packetsOut]),
      [
        [0, 'veth0', 10, 0],
        [1, 'veth1', 0, 10],
      ],
    );
    assert.deepEqual(tables?.routes, [
      {
        source: 'fd61:1::2',
        group: 'ff1e::61:1',
        iif: 0,
        packets: 10,
        bytes: 1000,
        wrong: 0,
        oifs: [{ index: 1, ttl: 1 }],
      },
    ]);
  });

  test('mc_forwarding 0 or absent: no router', async () => {
    assert.equal(
      (await readRouteTables(IPV6_KIT, { interfaces: mifs, cache, mcForwarding: file('mc_forwarding0', '0\n') }))
        ?.routerActive,
      false,
    );
    assert.equal(
      (await readRouteTables(IPV6_KIT, { interfaces: mifs, cache, mcForwarding: join(dir, 'absent-sysctl') }))
        ?.routerActive,
      false,
    );
  });

  test('a malformed file is still an error', async () => {
    await assert.rejects(
      readRouteTables(IPV6_KIT, { interfaces: file('bad-vif', 'garbage\n 0 x\n'), cache }),
      /bad-proc-file|header/,
    );
  });
});
