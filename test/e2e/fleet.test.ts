/**
 * `mcastctl daemon` in tunnel mode on the fleet lab (test/lab/fleet.ts) under membership
 * churn (test/lab/churn.ts): ten nodes, each its own OVS and daemon, four pods each, 200
 * groups. The pods hold their first groups before the daemons start; after the daemons
 * converge, 20 s of churn at 50 joins and leaves a second across the fleet (real kernel
 * IGMP), pods added and deleted meanwhile, and some traffic. Then nothing changes, and:
 * - every node's OVS holds exactly what the driver's record of live memberships needs:
 *   0 missing and 0 stray buckets (pod ports, and tunnel destinations toward exactly the
 *   nodes with members), flows and OVS groups (ovs-ofctl, an independent reader);
 * - for 20 groups, datagrams from a non-member reach every member exactly once, and no
 *   non-member pod port of any node transmits any (OVS's tx counters);
 * - no daemon's RSS grew by more than 10 % from after convergence to the end.
 * The same run, longer, is `npm run bench -- fleet` (bench/fleet.ts).
 *
 * Needs root, iproute2, ethtool, nft, tcpdump, python3, Open vSwitch and the built CLI
 * (`npm run build`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { describeFaults, type FleetRun, fleetReport, rssGrowth, runFleet } from '../lab/churn.js';
import { Lab } from '../lab/lab.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the fleet test runs the built CLI: ${missing}`);

const CHANGES_PER_SECOND = 50;
/** RSS growth allowed from after convergence to the end. */
const MAX_RSS_GROWTH = 0.1;

describe('mcastctl daemon on a fleet of ten tunnel-mode nodes under membership churn', () => {
  let lab: Lab;
  let run: FleetRun;

  before(async () => {
    lab = Lab.create();
    run = await runFleet(lab, {
      nodes: 10,
      podsPerNode: 4,
      churnMs: 20_000,
      changesPerSecond: CHANGES_PER_SECOND,
      // Some pods come and go even in 20 s.
      podChangesPerMinute: 15,
      deliveryGroups: 20,
    });
    console.log(fleetReport(run).join('\n'));
  });

  after(async () => {
    await lab?.destroy();
  });

  it('every node converged after the first general query, and the churn ran at the asked rate', () => {
    assert.equal(run.convergence.problem, undefined);
    assert.ok(
      run.churn.changesPerSecond >= CHANGES_PER_SECOND * 0.95,
      `${run.churn.changesPerSecond.toFixed(1)} changes/s`,
    );
    assert.equal(run.churn.failedChanges, 0, 'member commands failed');
    assert.ok(run.churn.podsAdded + run.churn.podsRemoved > 0, 'no pod was added or deleted');
  });

  it('once nothing changes, every node’s OVS holds exactly the groups and buckets the live members need', () => {
    assert.notEqual(
      run.settleMs,
      undefined,
      `not every node matched the record in time:\n${describeFaults(run.check)}`,
    );
    assert.deepEqual(
      { missing: run.check.missing, stray: run.check.stray },
      { missing: 0, stray: 0 },
      describeFaults(run.check),
    );
  });

  it('members of 20 groups receive every datagram exactly once; non-member pod ports transmit none', () => {
    assert.equal(run.delivery.groups, 20);
    assert.deepEqual(run.delivery.memberFaults, [], 'members that did not get every datagram exactly once');
    assert.deepEqual(
      run.delivery.nonMemberFaults,
      [],
      'pod ports that transmitted datagrams of groups their pod is no member of',
    );
    assert.deepEqual(run.delivery.shortPorts, [], 'member ports that transmitted fewer than their groups’ datagrams');
  });

  it(`no daemon’s RSS grew by more than ${MAX_RSS_GROWTH * 100} % from after convergence to the end`, () => {
    const growth = rssGrowth(run);
    assert.ok(
      growth.every((value) => value <= MAX_RSS_GROWTH),
      `growth: ${growth.map((value, index) => `${run.nodes[index]} ${(value * 100).toFixed(1)} %`).join(', ')}`,
    );
  });

  it('no daemon logged an error or a warning (other than the pods’ MTU)', () => {
    assert.deepEqual(run.daemonComplaints, []);
  });
});
