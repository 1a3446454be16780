/**
 * A kernel without multicast routing: its missing /proc tables are a clear, typed error (exit 69), not a bare ENOENT.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { UnavailableError } from '../../src/errors.js';
import { routingTable } from '../../src/transport/multicast-routing.js';

const enoent = () =>
  Promise.reject(
    Object.assign(new Error("ENOENT: no such file or directory, open '/proc/net/ip_mr_vif'"), {
      code: 'ENOENT',
      syscall: 'open',
    }),
  );

describe('the kernel routing tables', () => {
  it('a missing IPv4 table names CONFIG_IP_MROUTE, exit 69, with a hint', async () => {
    await assert.rejects(routingTable(enoent, 'ipv4', '/proc/net/ip_mr_vif'), (error: unknown) => {
      assert.ok(error instanceof UnavailableError);
      assert.equal(error.exitCode, 69);
      assert.equal(error.code, 'no-multicast-routing');
      assert.equal(
        error.message,
        'this kernel has no IPv4 multicast routing (/proc/net/ip_mr_vif is missing: it was built without CONFIG_IP_MROUTE)',
      );
      assert.match(
        error.hint ?? '',
        /needs a kernel with CONFIG_IP_MROUTE; without multicastInterfaces .* none is needed/,
      );
      return true;
    });
  });

  it('a missing IPv6 table names CONFIG_IPV6_MROUTE', async () => {
    await assert.rejects(
      routingTable(enoent, 'ipv6', '/proc/net/ip6_mr_cache'),
      /no IPv6 multicast routing \(\/proc\/net\/ip6_mr_cache is missing: it was built without CONFIG_IPV6_MROUTE\)/,
    );
  });

  it('other failures pass through unchanged, and a table that reads is returned', async () => {
    const eacces = Object.assign(new Error('EACCES'), { code: 'EACCES' });
    await assert.rejects(
      routingTable(() => Promise.reject(eacces), 'ipv4', '/proc/net/ip_mr_vif'),
      (error: unknown) => error === eacces,
    );
    assert.deepEqual(await routingTable(() => Promise.resolve([1, 2]), 'ipv4', '/proc/net/ip_mr_vif'), [1, 2]);
  });
});
