/**
 * `mcastctl daemon` in tunnel mode on the fleet lab (test/lab/fleet.ts): ten nodes, each
 * its own OVS and daemon, five pods each, under membership churn (test/lab/churn.ts):
 *
 * 0. convergence: every pod holds 20 of the 200 groups before the daemons start; from the
 *    first general query on a pod's wire until every node's OVS holds exactly what the
 *    memberships need (per node and overall);
 * 1. churn: joins and leaves (real kernel IGMP from the pods) at 50 a second across the
 *    fleet for 3 minutes, pods added and deleted meanwhile, and some traffic; the changes
 *    a second sustained, the sync latency (a change → OVS showing it, polled for a sample
 *    of changes, on the pod's node and for a node's first join or last leave on another
 *    node), and each daemon's CPU seconds;
 * 2. the final check, once nothing changes: every node's OVS against the driver's record
 *    (missing and stray buckets and flows), and delivery for a sample of groups (members
 *    receive every datagram, non-member pod ports transmit nothing);
 * 3. each daemon's RSS after convergence and at the end (target: within 10 %).
 *
 *   node --import tsx bench/fleet.ts            (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_FLEET_NODES (10), BENCH_FLEET_PODS (pods per node, 5), BENCH_FLEET_S
 * (seconds of churn, 180), BENCH_FLEET_CHANGES (joins and leaves a second, 50),
 * BENCH_FLEET_POD_CHANGES (pods added or deleted a minute, 12), BENCH_FLEET_GROUPS_PER_POD
 * (20), BENCH_FLEET_DELIVERY_GROUPS (40), BENCH_FLEET_QUIET_S (seconds without changes
 * before each RSS reading, 20), BENCH_FLEET_SEED (default: from the clock).
 */
import { fleetReport, type FleetRun, type FleetRunOptions, runFleet } from '../test/lab/churn.js';
import { Lab } from '../test/lab/lab.js';

export async function benchFleet(options: FleetRunOptions): Promise<FleetRun> {
  const lab = Lab.create();
  try {
    return await runFleet(lab, options);
  } finally {
    await lab.destroy();
  }
}

export function fleetOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): FleetRunOptions {
  const number = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : Number(env[name]));
  return {
    nodes: number('BENCH_FLEET_NODES') ?? 10,
    podsPerNode: number('BENCH_FLEET_PODS') ?? 5,
    churnMs: (number('BENCH_FLEET_S') ?? 180) * 1000,
    changesPerSecond: number('BENCH_FLEET_CHANGES') ?? 50,
    podChangesPerMinute: number('BENCH_FLEET_POD_CHANGES'),
    groupsPerPod: number('BENCH_FLEET_GROUPS_PER_POD'),
    deliveryGroups: number('BENCH_FLEET_DELIVERY_GROUPS') ?? 40,
    quietMs: (number('BENCH_FLEET_QUIET_S') ?? 20) * 1000,
    seed: number('BENCH_FLEET_SEED'),
    progress: (line) => process.stderr.write(`  (${line})\n`),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(fleetReport(await benchFleet(fleetOptionsFromEnv())).join('\n'));
}
