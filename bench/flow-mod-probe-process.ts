/**
 * The FLOW_MOD probe's loop (flood-probes.ts, startFlowModProbe) in a process of its own:
 * in the bench's process, the bench's own work (its samplers, the pods' output, its
 * garbage collection) delayed some probes by milliseconds, and the figure is meant to be
 * ovs-vswitchd's alone. Started by fork() with the endpoint and the interval as
 * arguments; says `ready` once probing, and sends its figures when told to stop.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { flowMod } from '../src/protocol/openflow/flow-mod.js';
import { OpenFlowConnection } from '../src/transport/openflow/connection.js';

/** A table the daemon never programs (it uses --table, 0 by default) and a match no frame of the bench has. */
const PROBE_TABLE = 200;
const PROBE_MATCH = [
  { field: 'ETH_TYPE' as const, value: 0x0800 },
  { field: 'IPV4_DST' as const, value: '192.0.2.200' },
];

const [endpoint, interval] = process.argv.slice(2);
const intervalMs = Number(interval);
let stopped = false;
process.once('message', () => {
  stopped = true;
});
const connection = await OpenFlowConnection.connect({ endpoint: endpoint!, timeoutMs: 5_000 });
const roundTripsMs: number[] = [];
let failures = 0;
const mod = flowMod({ tableId: PROBE_TABLE, cookie: 0n, priority: 1, match: PROBE_MATCH, instructions: [] });
process.send!('ready');
// One FLOW_MOD ADD of the same flow (after the first, OVS replaces it) and a barrier, every intervalMs, until told to
// stop.
while (!stopped) {
  const started = performance.now();
  try {
    await connection.sendFlowMod(mod);
    roundTripsMs.push(performance.now() - started);
  } catch {
    failures++;
  }
  await sleep(Math.max(0, started + intervalMs - performance.now()));
}
await connection.close();
process.send!({ roundTripsMs, failures }, () => process.disconnect());
