/**
 * The mroute6 socket's argument checks (UsageError before any struct is encoded) and
 * readRoute6Tables, the IPv6 half of `mcastctl routes`: absent /proc files mean "no IPv6
 * multicast routing here" (undefined, no error), present ones are parsed with the router
 * state from mc_forwarding. Files are written to a temporary directory in the kernel's
 * own formats (net/ipv6/ip6mr.c).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from '../helpers/node-test.js';

import { UsageError } from '../../src/errors.js';
import { checkAddress6, checkHopLimit, checkMif, checkMifIfindex } from '../../src/protocol/mroute6/arguments6.js';
import { readRoute6Tables } from '../../src/protocol/mroute6/proc6.js';

describe('mroute6 argument checks', () => {
  test('MIF indexes 0..31', () => {
    checkMif(0);
    checkMif(31);
    for (const bad of [-1, 32, 1.5, Number.NaN]) assert.throws(() => checkMif(bad), UsageError);
  });

  test('hop-limit thresholds 1..254', () => {
    checkHopLimit(1, 'threshold');
    checkHopLimit(254, 'threshold');
    for (const bad of [0, 255, 2.5]) assert.throws(() => checkHopLimit(bad, 'threshold'), UsageError);
  });

  test('a MIF ifindex fits mif6c_pifi (16 bits)', () => {
    checkMifIfindex(1);
    checkMifIfindex(0xffff);
    for (const bad of [0, 0x10000, -3]) assert.throws(() => checkMifIfindex(bad), /mif6c_pifi is 16 bits/);
  });

  test('addresses: IPv6 only, groups multicast, with code bad-address', () => {
    checkAddress6('fd00::1', 'source', false);
    checkAddress6('ff1e::1', 'group', true);
    const refused = (address: string, multicast: boolean) =>
      assert.throws(
        () => checkAddress6(address, 'x', multicast),
        (error: unknown) => error instanceof UsageError && error.code === 'bad-address',
      );
    refused('10.0.0.1', false);
    refused('239.1.1.1', true);
    refused('fd00::1', true);
    refused('not an address', false);
  });
});

describe('readRoute6Tables', () => {
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
    assert.equal(await readRoute6Tables({ mifs: join(dir, 'absent-vif'), cache: join(dir, 'absent-cache') }), undefined);
    assert.equal(await readRoute6Tables({ mifs, cache: join(dir, 'absent-cache') }), undefined);
  });

  test('present files: MIFs, routes and the router state', async () => {
    const tables = await readRoute6Tables({ mifs, cache, mcForwarding: file('mc_forwarding', '1\n') });
    assert.equal(tables?.routerActive, true);
    assert.deepEqual(
      tables?.mifs.map((m) => [m.mif, m.name, m.packetsIn, m.packetsOut]),
      [
        [0, 'veth0', 10, 0],
        [1, 'veth1', 0, 10],
      ],
    );
    assert.deepEqual(tables?.routes, [{ group: 'ff1e::61:1', origin: 'fd61:1::2', iif: 0, packets: 10, bytes: 1000, wrong: 0, oifs: [{ mif: 1, ttl: 1 }] }]);
  });

  test('mc_forwarding 0 or absent: no router', async () => {
    assert.equal((await readRoute6Tables({ mifs, cache, mcForwarding: file('mc_forwarding0', '0\n') }))?.routerActive, false);
    assert.equal((await readRoute6Tables({ mifs, cache, mcForwarding: join(dir, 'absent-sysctl') }))?.routerActive, false);
  });

  test('a malformed file is still an error', async () => {
    await assert.rejects(readRoute6Tables({ mifs: file('bad-vif', 'garbage\n 0 x\n'), cache }), /bad-proc-file|header/);
  });
});
