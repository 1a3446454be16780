/**
 * The node's upstream memberships with source filters, against a real kernel: the
 * UpstreamMemberships the daemon's KernelRouter uses, on raw IGMP sockets in a lab
 * namespace, joined on one end of a veth pair (the uplink). After each step the
 * namespace's /proc/net/mcfilter (the kernel's per-socket source filters) must show
 * exactly the filter asked for, widened past net.ipv4.igmp_max_msf (10 by default).
 *
 * The KernelRouter that uses them, as a node's multicast router, is tested in
 * test/routing/kernel-router-upstream.test.ts (it needs kernel multicast routing).
 *
 * The daemon end to end (pods join (S1,G) only → the uplink's filter shows S1 for G) also
 * needs the daemon to hand the merged filter to the router; this file checks the kernel
 * side that it relies on.
 *
 * Needs root, iproute2, ethtool and python3. Run: node --import tsx --test test/e2e/daemon-sources-upstream.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { UpstreamMemberships } from '../../src/adapters/upstream-memberships.js';
import { MULTICAST_ROUTING } from '../../src/transport/multicast-routing.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { sourceAddress } from '../../src/wire/ip-address.js';
import { Lab } from '../lab/lab.js';
import { mcfilterRows } from '../lab/kernel.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const ROLE_VARIABLE = 'MCL_UPSTREAM_ROLE';

const SSM_GROUP = '232.1.1.1';
const ASM_GROUP = '239.7.1.1';
const S = ['10.0.0.1', '10.0.0.2', '10.0.0.3'] as const;
/** One more than the kernel's default net.ipv4.igmp_max_msf. */
const MANY = Array.from({ length: 11 }, (_, index) => `10.1.0.${index + 1}`);

interface Step {
  name: string;
  /** `${group} ${source} include|exclude` per /proc/net/mcfilter row of the uplink, sorted. */
  rows: string[];
  notices: string[];
}

// ---------------------------------------------------------------------------------------
// The role, run in the lab namespace: a fixed sequence of joins, the filters after each.

function roleMain(iface: string): void {
  const ifindex = ifindexOf(iface);
  const notices: string[] = [];
  const memberships = new UpstreamMemberships({
    perSocket: 20,
    maxSources: 10,
    openSocket: () => MULTICAST_ROUTING.ipv4.openMembershipSocket(),
    onFailure: (error) => notices.push(`failure: ${error.message}`),
    onError: (error) => notices.push((error as { reason?: string }).reason ?? error.message),
  });
  const filter = (mode: 'include' | 'exclude', sources: readonly string[]): SourceFilter => ({
    mode,
    sources: new Set(sources.map(sourceAddress)),
  });
  const steps: Array<[string, () => void]> = [
    ['include S1', () => memberships.join(SSM_GROUP, ifindex, filter('include', [S[0]]))],
    ['include S1,S3', () => memberships.join(SSM_GROUP, ifindex, filter('include', [S[0], S[2]]))],
    ['asm exclude S2', () => memberships.join(ASM_GROUP, ifindex, filter('exclude', [S[1]]))],
    ['asm include S2', () => memberships.join(ASM_GROUP, ifindex, filter('include', [S[1]]))],
    ['include 11', () => memberships.join(SSM_GROUP, ifindex, filter('include', MANY))],
    ['exclude 11', () => memberships.join(SSM_GROUP, ifindex, filter('exclude', MANY))],
    ['leave', () => [SSM_GROUP, ASM_GROUP].forEach((group) => memberships.leave(group, ifindex))],
  ];
  for (const [name, action] of steps) {
    action();
    const step: Step = { name, rows: mcfilterRows(ifindex), notices: notices.splice(0) };
    process.stdout.write(`${JSON.stringify(step)}\n`);
  }
  memberships.close();
}

const role = process.env[ROLE_VARIABLE];
if (role !== undefined) roleMain(role);
else {
  describe('upstream memberships with source filters on a real kernel', { concurrency: 1 }, () => {
    let lab: Lab;
    let steps: Map<string, Step>;

    before(async () => {
      lab = Lab.create();
      const node = await lab.namespace('node');
      const net = await lab.namespace('net');
      const uplink = lab.ifname('up');
      await lab.vethPair({ ns: node, name: uplink }, { ns: net, name: lab.ifname('net') });
      await lab.ip(node, 'addr', 'add', '10.250.0.1/24', 'dev', uplink);
      const output = await lab.exec(
        node,
        ['env', `${ROLE_VARIABLE}=${uplink}`, process.execPath, '--import', 'tsx', THIS_FILE],
        { timeoutMs: 60_000 },
      );
      steps = new Map(
        output.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Step)
          .map((step) => [step.name, step]),
      );
    });

    after(async () => {
      await lab?.destroy();
    });

    test('INCLUDE(S1): only S1 for the group, in include mode', () => {
      assert.deepEqual(steps.get('include S1')?.rows, [`${SSM_GROUP} ${S[0]} include`]);
    });

    test('a source added: the whole new filter', () => {
      assert.deepEqual(steps.get('include S1,S3')?.rows, [
        `${SSM_GROUP} ${S[0]} include`,
        `${SSM_GROUP} ${S[2]} include`,
      ]);
    });

    test('EXCLUDE(S2) of another group, then its mode changed to INCLUDE(S2)', () => {
      assert.ok(steps.get('asm exclude S2')?.rows.includes(`${ASM_GROUP} ${S[1]} exclude`));
      assert.ok(steps.get('asm include S2')?.rows.includes(`${ASM_GROUP} ${S[1]} include`));
    });

    test('past igmp_max_msf: INCLUDE widens to any source, EXCLUDE keeps the first 10; told once', () => {
      const widened = steps.get('include 11')!;
      assert.deepEqual(
        widened.rows.filter((row) => row.startsWith(SSM_GROUP)),
        [],
      );
      assert.deepEqual(widened.notices, ['upstream-filter-widened']);
      const excluded = steps.get('exclude 11')!;
      assert.deepEqual(
        excluded.rows.filter((row) => row.startsWith(SSM_GROUP)),
        MANY.slice(0, 10)
          .map((source) => `${SSM_GROUP} ${source} exclude`)
          .sort(),
      );
      assert.deepEqual(excluded.notices, []);
    });

    test('leave: no filter is left', () => {
      assert.deepEqual(steps.get('leave')?.rows, []);
    });
  });
}
