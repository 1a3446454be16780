/**
 * The routing-kernel contract (test/contracts/routing-kernel.ts) against the shared fake,
 * for both families: the fake must answer every call as the real kernel does
 * (test/routing/routing-kernel-contract.test.ts runs the same cases there), so that the
 * daemon's router, tested on the fake, meets no surprise on a real node.
 */
import assert from 'node:assert/strict';
import { ROUTING_KERNEL_CONTRACT, type ContractWorld } from '../contracts/routing-kernel.js';
import { FakeRoutingKernel } from '../fakes/fake-routing-kernel.js';
import { describe, it } from '../helpers/node-test.js';

/** A fresh namespace of the fake's: two devices, as the real test's veth pair. */
function world(family: 'ipv4' | 'ipv6'): ContractWorld {
  const kernel = new FakeRoutingKernel(family, { devices: { 1: 'lo', 7: 'eth-a', 8: 'eth-b' } });
  return {
    kernel,
    devices: [
      { name: 'eth-a', ifindex: 7 },
      { name: 'eth-b', ifindex: 8 },
    ],
    missingIfindex: 9999,
  };
}

describe('the routing-kernel contract on the fake', () => {
  for (const family of ['ipv4', 'ipv6'] as const) {
    for (const contractCase of ROUTING_KERNEL_CONTRACT) {
      it(`${family}: ${contractCase.name}`, async () => {
        assert.deepEqual(await contractCase.run(world(family)), contractCase.expected[family]);
      });
    }
  }
});
