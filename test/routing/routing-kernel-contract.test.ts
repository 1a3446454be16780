/**
 * The routing-kernel contract (test/contracts/routing-kernel.ts) against the real kernel,
 * for both families: each case runs in a child process in a lab namespace with two
 * devices (a veth pair, both ends in the namespace, with IPv4 and IPv6 addresses), and its
 * outcomes must be the contract's. The same cases run against the fake in
 * test/unit/routing-kernel-contract.test.ts.
 *
 * Needs root, iproute2 and kernel multicast routing. Run: scripts/test.sh routing.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { MULTICAST_ROUTING } from '../../src/transport/multicast-routing.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import type { AddressFamily } from '../../src/wire/ip-address.js';
import { ROUTING_KERNEL_CONTRACT, runRoutingKernelContract, type Outcomes } from '../contracts/routing-kernel.js';
import { after, before, describe, it } from '../helpers/node-test.js';
import { requireMulticastRouting } from '../lab/kernel.js';
import { Lab } from '../lab/lab.js';
import { enableIpv6 } from '../lab/mld-hosts.js';

requireMulticastRouting();

const THIS_FILE = fileURLToPath(import.meta.url);
const ROLE_VARIABLE = 'MCL_CONTRACT_FAMILY';
/** An ifindex no device of a fresh namespace has. */
const MISSING_IFINDEX = 9999;

/** The child: every case for one family, on this namespace's real kernel; one JSON line of outcomes. */
async function contractRole(family: AddressFamily, names: readonly [string, string]): Promise<void> {
  const devices = names.map((name) => ({ name, ifindex: ifindexOf(name) })) as [
    { name: string; ifindex: number },
    { name: string; ifindex: number },
  ];
  const results = await runRoutingKernelContract(() => ({
    kernel: MULTICAST_ROUTING[family],
    devices,
    missingIfindex: MISSING_IFINDEX,
  }));
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

const role = process.env[ROLE_VARIABLE];
if (role !== undefined) {
  const [family, a, b] = role.split(',') as [AddressFamily, string, string];
  await contractRole(family, [a, b]);
} else {
  describe('the routing-kernel contract on the real kernel', { concurrency: 1 }, () => {
    let lab: Lab;
    const results: Partial<Record<AddressFamily, Record<string, Outcomes>>> = {};

    before(async () => {
      lab = Lab.create();
      const ns = await lab.namespace('contract');
      const [a, b] = [lab.ifname('a'), lab.ifname('b')];
      await lab.vethPair({ ns, name: a }, { ns, name: b });
      await lab.ip(ns, 'addr', 'add', '10.78.0.1/24', 'dev', a);
      await lab.ip(ns, 'addr', 'add', '10.78.1.1/24', 'dev', b);
      for (const device of [a, b]) await enableIpv6(lab, ns, device, 0);
      await lab.ip(ns, '-6', 'addr', 'add', '2001:db8:78::1/64', 'dev', a, 'nodad');
      await lab.ip(ns, '-6', 'addr', 'add', '2001:db8:78:1::1/64', 'dev', b, 'nodad');
      for (const family of ['ipv4', 'ipv6'] as const) {
        const output = await lab.exec(
          ns,
          ['env', `${ROLE_VARIABLE}=${family},${a},${b}`, process.execPath, '--import', 'tsx', THIS_FILE],
          {
            timeoutMs: 60_000,
          },
        );
        results[family] = JSON.parse(output.stdout.trim().split('\n').at(-1)!) as Record<string, Outcomes>;
      }
    });

    after(async () => {
      await lab?.destroy();
    });

    for (const family of ['ipv4', 'ipv6'] as const) {
      for (const contractCase of ROUTING_KERNEL_CONTRACT) {
        it(`${family}: ${contractCase.name}`, () => {
          assert.deepEqual(results[family]?.[contractCase.name], contractCase.expected[family]);
        });
      }
    }
  });
}
