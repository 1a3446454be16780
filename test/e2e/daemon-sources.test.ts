/**
 * Per-source forwarding by the daemon on one real OVS node (user-space datapath): each
 * (S,G) reaches exactly the member pods whose IGMPv3 filter admits S.
 *
 * Members join with ordinary sockets and source filters (test/lab/source_member.py), so
 * the IGMPv3 records are the pods' kernels' own: pod a includes S1, pod b includes S2,
 * pod c joins G for any source and blocks S1, pod n is in no group. Three sender pods
 * (S1, S2, S3) send numbered datagrams to G. Delivery is checked at two places: each
 * member's socket, and a capture on each pod's eth0. The socket alone proves little (a
 * host's kernel drops what its own filter refuses before any socket), so the wire is what
 * shows that OVS sent a source only where it was asked for.
 *
 * Then: filter changes (a adds S3, c unblocks S1, b drops S2: no nw_src=S2 flow is left),
 * the SSM range (a join of any source to 232.1.1.1 is refused and installs nothing; a
 * source-specific join works), a kill -9 of the daemon (the filters hold from its saved
 * state, with the members' IGMP blocked), and an ovs-vswitchd restart (the per-source
 * entries are back within 3 s).
 *
 * Needs root, iproute2, ethtool, tcpdump, nft (nftables), python3, Open vSwitch and the
 * built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it, type TestContext } from 'node:test';
import { cliMissing } from '../lab/cli.js';
import { control, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { Lab, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import { type CapturedRecord, groupFlows, ovsGroupCount, readCapture, recordsFrom, SourceMember, wireSenders } from '../lab/source-members.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const GROUP = '239.7.1.1';
/** In the daemon's default SSM range, 232.0.0.0/8. */
const SSM_GROUP = '232.1.1.1';
const PORT = 5301;
/** Datagrams each sender sends per check. */
const COUNT = 20;
const CASE_TIMEOUT_MS = 60_000;

/** IGMPv3 record types (RFC 3376 §4.2.12). */
const RECORD = { isIn: 1, isEx: 2, toIn: 3, toEx: 4, allow: 5, block: 6 } as const;
/** Records that put a source into an include-mode filter. */
const INCLUDING: ReadonlySet<number> = new Set([RECORD.isIn, RECORD.toIn, RECORD.allow]);

const NFT_TABLE = 'mclsrc';

// ---------------------------------------------------------------------------------------

describe('daemon: per-source forwarding (IGMPv3 source filters in OVS) on real OVS', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let a: OvsPod;
  let b: OvsPod;
  let c: OvsPod;
  let n: OvsPod;
  let senders: [OvsPod, OvsPod, OvsPod];
  let daemon: RunningDaemon;
  const members = new Map<OvsPod, SourceMember>();
  const captures = new Map<OvsPod, Tcpdump>();
  const daemonOptions = { multicastInterfaces: [] };

  const senderAddresses = () => senders.map((sender) => sender.address) as [string, string, string];
  const member = (pod: OvsPod) => members.get(pod)!;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.44.1.1/24' });
    a = await node.addPod('pa', { address: '10.44.1.11/24' });
    b = await node.addPod('pb', { address: '10.44.1.12/24' });
    c = await node.addPod('pc', { address: '10.44.1.13/24' });
    n = await node.addPod('pn', { address: '10.44.1.14/24' });
    senders = [
      await node.addPod('s1', { address: '10.44.1.21/24' }),
      await node.addPod('s2', { address: '10.44.1.22/24' }),
      await node.addPod('s3', { address: '10.44.1.23/24' }),
    ];
    // One capture per pod for the whole file: each check reads it by its own tag.
    for (const pod of [a, b, c, n]) {
      captures.set(pod, await lab.startTcpdump(pod.ns, pod.iface, lab.file(`${pod.name}.pcap`), { filter: ['igmp', 'or', 'udp'] }));
    }
    daemon = startDaemon(node, daemonOptions);
    await daemon.ready();
    for (const pod of [a, b, c, n]) members.set(pod, await SourceMember.start(lab, pod, PORT));
  });

  after(async () => {
    for (const pod of [a, b, c, n]) if (pod !== undefined) await unblockIgmp(pod);
    await Promise.all([...members.values()].map((m) => m.quit().catch(() => undefined)));
    await Promise.all([...captures.values()].map((capture) => capture.stop()));
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await daemon?.stop();
    await lab?.destroy();
  });

  // --- helpers ---------------------------------------------------------------------------

  /** Each member pod's filter for `group` as the daemon shows it: { port: 'include S1,S3' | 'exclude S1' | 'exclude -' }. */
  const filtersOf = async (group: string): Promise<{ filters: Record<string, string>; synced: boolean }> => {
    const view = (await control<GroupView[]>(daemon, ['groups'])).find((entry) => entry.group === group);
    const filters = Object.fromEntries(
      (view?.members ?? []).map((m) => [m.port.name, `${m.mode} ${m.sources.length === 0 ? '-' : [...m.sources].sort().join(',')}`]),
    );
    return { filters, synced: view?.synced ?? true };
  };

  /** Waits until the daemon shows exactly these filters for `group`, synced to OVS. */
  const waitForFilters = async (group: string, wanted: Record<string, string>): Promise<void> => {
    let last: unknown;
    try {
      await waitUntil(
        `the daemon's filters of ${group} to be ${JSON.stringify(wanted)}`,
        async () => {
          const seen = await filtersOf(group);
          last = seen;
          return seen.synced && JSON.stringify(sortKeys(seen.filters)) === JSON.stringify(sortKeys(wanted));
        },
        10_000,
        100,
      );
    } catch (error) {
      throw new Error(`${String(error)}; last seen ${JSON.stringify(last)}`);
    }
    // The sync closes with a barrier before `synced`; a little more for the datapath to revalidate.
    await sleep(200);
  };

  /**
   * Every sender sends COUNT numbered datagrams tagged `tag` to `group` at once; returns, per
   * watched pod, the senders its socket got (each only when all COUNT came, else `S(k/COUNT)`)
   * and the senders whose datagrams reached its eth0.
   */
  const deliver = async (group: string, tag: string, from: readonly OvsPod[] = senders): Promise<Record<string, { socket: string[]; wire: string[] }>> => {
    await Promise.all(from.map((sender) => sender.send(group, PORT, COUNT, { intervalMs: 5, tag })));
    await sleep(400);
    const seen: Record<string, { socket: string[]; wire: string[] }> = {};
    for (const pod of [a, b, c, n]) {
      const got = member(pod).received.filter((datagram) => datagram.group === group && datagram.payload.startsWith(`${tag} `));
      const bySender = new Map<string, Set<string>>();
      for (const datagram of got) bySender.set(datagram.from, (bySender.get(datagram.from) ?? new Set()).add(datagram.payload));
      const socket = [...bySender].map(([sender, payloads]) => (payloads.size === COUNT ? sender : `${sender}(${payloads.size}/${COUNT})`)).sort();
      seen[pod.name] = { socket, wire: wireSenders(readCapture(captures.get(pod)!.file), group, tag) };
    }
    return seen;
  };

  /** What deliver() should see when `wanted` maps each pod to the senders it asked for (both at its socket and on its wire). */
  const expected = (wanted: Record<string, readonly string[]>) =>
    Object.fromEntries([a, b, c, n].map((pod) => [pod.name, { socket: [...(wanted[pod.name] ?? [])].sort(), wire: [...(wanted[pod.name] ?? [])].sort() }]));

  /** The sources of the (S,G) flows for `group` (each flow with nw_src), sorted. */
  const splitSources = async (group: string) =>
    [...new Set((await groupFlows(node, group)).flatMap((flow) => (flow.source === undefined ? [] : [flow.source])))].sort();

  const flowDump = async (group: string) => (await groupFlows(node, group)).map((flow) => `${flow.line} -> ports ${flow.ports.join(',')}`).join('\n');

  async function blockIgmp(pod: OvsPod): Promise<void> {
    const rules = `table ip ${NFT_TABLE} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    ip protocol igmp drop\n  }\n}\n`;
    await lab.exec(pod.ns, ['nft', '-f', '-'], { input: rules });
  }

  async function unblockIgmp(pod: OvsPod): Promise<void> {
    await lab.exec(pod.ns, ['nft', 'delete', 'table', 'ip', NFT_TABLE]).catch(() => undefined);
  }

  /**
   * Waits until each named pod's capture holds IGMPv3 records for `group`, sent by the pod
   * since `since`, that satisfy its check: the harness's proof that the kernel said what
   * the test means. Logs the records seen.
   */
  const waitForRecords = async (
    context: TestContext,
    group: string,
    since: number,
    checks: Record<string, (records: CapturedRecord[]) => boolean>,
  ): Promise<void> => {
    const sent = (pod: OvsPod) =>
      recordsFrom(
        readCapture(captures.get(pod)!.file).filter((packet) => packet.ts >= since),
        pod.address,
        group,
      );
    const pods = [a, b, c, n].filter((pod) => checks[pod.name] !== undefined);
    const seenRecords = () =>
      pods
        .map(
          (pod) =>
            `${pod.name}: ${sent(pod)
              .map((record) => `type ${record.type} {${record.sources.join(',')}}`)
              .join(' ')}`,
        )
        .join('; ');
    await waitUntil(`the members' IGMPv3 records for ${group} on their wires`, async () => pods.every((pod) => checks[pod.name]!(sent(pod))), 5_000, 100).catch(
      (error: unknown) => {
        throw new Error(`${String(error)}; records seen: ${seenRecords()}`);
      },
    );
    context.diagnostic(`IGMPv3 records for ${group}: ${seenRecords()}`);
  };

  // --- cases -----------------------------------------------------------------------------

  it('filters: a gets only S1, b only S2, c (exclude S1) S2 and S3, a pod in no group nothing; at the socket and on the wire', {
    timeout: CASE_TIMEOUT_MS,
  }, async (context) => {
    const [s1, s2, s3] = senderAddresses();
    const soft = new SoftAssert();
    const startedAt = Date.now() - 50;
    await member(a).joinSource(GROUP, s1);
    await member(b).joinSource(GROUP, s2);
    await member(c).join(GROUP);
    await member(c).block(GROUP, s1);

    // The harness: the pods' kernels sent the IGMPv3 records of these filters.
    await waitForRecords(context, GROUP, startedAt, {
      [a.name]: (records) => records.some((record) => INCLUDING.has(record.type) && record.sources.includes(s1)),
      [b.name]: (records) => records.some((record) => INCLUDING.has(record.type) && record.sources.includes(s2)),
      [c.name]: (records) =>
        records.some((record) => record.type === RECORD.toEx || record.type === RECORD.isEx) &&
        records.some((record) => (record.type === RECORD.block || record.type === RECORD.toEx) && record.sources.includes(s1)),
    });
    await waitForFilters(GROUP, { [a.port]: `include ${s1}`, [b.port]: `include ${s2}`, [c.port]: `exclude ${s1}` });

    const seen = await deliver(GROUP, 'base');
    soft.deepEqual(
      seen,
      expected({ [a.name]: [s1], [b.name]: [s2], [c.name]: [s2, s3] }),
      `delivery by source differs; flows of ${GROUP}:\n${await flowDump(GROUP)}`,
    );
    soft.settle();
  });

  it('changes: a adds S3, c unblocks S1, b drops S2; no nw_src=S2 flow is left when nobody names S2', { timeout: CASE_TIMEOUT_MS }, async (context) => {
    const [s1, s2, s3] = senderAddresses();
    const soft = new SoftAssert();
    const changedAt = Date.now() - 50;
    await member(a).joinSource(GROUP, s3);
    await member(c).unblock(GROUP, s1);
    await waitForRecords(context, GROUP, changedAt, {
      [a.name]: (records) => records.some((record) => record.type === RECORD.allow && record.sources.includes(s3)),
      [c.name]: (records) => records.some((record) => record.type === RECORD.allow && record.sources.includes(s1)),
    });
    await waitForFilters(GROUP, { [a.port]: `include ${s1},${s3}`, [b.port]: `include ${s2}`, [c.port]: 'exclude -' });
    const changed = await deliver(GROUP, 'add');
    soft.deepEqual(
      changed,
      expected({ [a.name]: [s1, s3], [b.name]: [s2], [c.name]: [s1, s2, s3] }),
      `after a's ALLOW {S3} and c's ALLOW {S1}; flows of ${GROUP}:\n${await flowDump(GROUP)}`,
    );

    // The last source of b goes: b leaves G (INCLUDE {}).
    const droppedAt = Date.now() - 50;
    await member(b).dropSource(GROUP, s2);
    await waitForRecords(context, GROUP, droppedAt, {
      [b.name]: (records) =>
        records.some((record) => (record.type === RECORD.block && record.sources.includes(s2)) || (record.type === RECORD.toIn && record.sources.length === 0)),
    });
    await waitForFilters(GROUP, { [a.port]: `include ${s1},${s3}`, [c.port]: 'exclude -' });
    const dropped = await deliver(GROUP, 'drop');
    soft.deepEqual(dropped, expected({ [a.name]: [s1, s3], [c.name]: [s1, s2, s3] }), `after b's BLOCK {S2}; flows of ${GROUP}:\n${await flowDump(GROUP)}`);
    const flows = await groupFlows(node, GROUP);
    soft.deepEqual(
      flows.filter((flow) => flow.source === s2).map((flow) => flow.line),
      [],
      'an nw_src=S2 flow is left although nobody names S2',
    );
    // Nobody names S2, so the split that is left is a's: S1 and S3 (c, exclude {}, takes every source).
    soft.deepEqual(await splitSources(GROUP), [s1, s3].sort(), `flows of ${GROUP}:\n${await flowDump(GROUP)}`);
    soft.settle();
  });

  it('SSM: a join of any source to 232.1.1.1 is refused (ssm) and installs nothing; a source-specific join works', { timeout: CASE_TIMEOUT_MS }, async () => {
    const [s1] = senderAddresses();
    const soft = new SoftAssert();
    const refusedOnN = async () =>
      (await control<DaemonStatus>(daemon, ['status'])).igmpRefused?.byPort.find((entry) => entry.port.name === n.port)?.counts['ssm'] ?? 0;
    const groupsBefore = await ovsGroupCount(node);
    await member(n).join(SSM_GROUP);
    await waitUntil(`the plain join of ${SSM_GROUP} counted as ssm`, async () => (await refusedOnN()) >= 1, 5_000, 100);
    await sleep(300);
    const status = await control<DaemonStatus>(daemon, ['status']);
    soft.ok((status.igmpRefused?.total['ssm'] ?? 0) >= 1, `status refused totals: ${JSON.stringify(status.igmpRefused?.total)}`);
    soft.deepEqual((await filtersOf(SSM_GROUP)).filters, {}, `the daemon has members of ${SSM_GROUP}`);
    soft.deepEqual(await groupFlows(node, SSM_GROUP), [], `flows for ${SSM_GROUP} after a refused join`);
    soft.deepEqual(await ovsGroupCount(node), groupsBefore, `OVS groups were added for a refused join of ${SSM_GROUP}`);

    await member(a).joinSource(SSM_GROUP, s1);
    await waitForFilters(SSM_GROUP, { [a.port]: `include ${s1}` });
    const seen = await deliver(SSM_GROUP, 'ssm', [senders[0], senders[1]]);
    soft.deepEqual(seen, expected({ [a.name]: [s1] }), `delivery to ${SSM_GROUP}; flows:\n${await flowDump(SSM_GROUP)}`);
    // Only (S1, G) reaches a pod; an entry for any other source may go to the gateway at most.
    const ssmFlows = await groupFlows(node, SSM_GROUP);
    soft.deepEqual(
      ssmFlows.filter((flow) => flow.source === s1).flatMap((flow) => flow.ports.filter((port) => port !== node.gateway!.ofport)),
      [a.ofport],
      `(S1, ${SSM_GROUP}) must go to ${a.name} (ofport ${a.ofport}):\n${await flowDump(SSM_GROUP)}`,
    );
    soft.deepEqual(
      ssmFlows.filter((flow) => flow.source !== s1).flatMap((flow) => flow.ports.filter((port) => port !== node.gateway!.ofport)),
      [],
      `only (S1, ${SSM_GROUP}) may reach a pod:\n${await flowDump(SSM_GROUP)}`,
    );
    soft.settle();
  });

  it('restarts: after kill -9 the filters hold from the saved state; after an ovs-vswitchd restart the (S,G) entries are back within 3 s', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    const [s1, , s3] = senderAddresses();
    const soft = new SoftAssert();
    const wanted = expected({ [a.name]: [s1, s3], [c.name]: [...senderAddresses()] });
    const stateFile = `${daemon.stateDir}/state.json`;
    await waitUntil('state.json with the filters', async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(SSM_GROUP), 5_000, 100);
    // From here on no report of a member reaches the daemon: what it knows comes from its state.
    for (const pod of [a, b, c, n]) await blockIgmp(pod);
    try {
      await daemon.kill9();
      daemon = startDaemon(node, daemonOptions);
      await daemon.ready();
      await daemon.waitForLog((entry) => entry['msg'] === 'state restored', 5_000);
      await waitForFilters(GROUP, { [a.port]: `include ${s1},${s3}`, [c.port]: 'exclude -' });
      soft.deepEqual(await deliver(GROUP, 'kill'), wanted, `after kill -9; flows of ${GROUP}:\n${await flowDump(GROUP)}`);
      soft.deepEqual(await deliver(SSM_GROUP, 'kssm', [senders[0], senders[1]]), expected({ [a.name]: [s1] }), `${SSM_GROUP} after kill -9`);

      const splitBefore = await splitSources(GROUP);
      await node.restartVswitchd();
      const backAt = Date.now();
      const replayedAfter = await waitUntil(
        'the (S,G) entries back in OVS',
        async () => {
          const back = (await splitSources(GROUP)).join() === splitBefore.join() && (await splitSources(SSM_GROUP)).join() === s1;
          return back && splitBefore.length > 0 ? Date.now() - backAt : undefined;
        },
        6_000,
        20,
      ).catch(async (error: unknown) => {
        soft.fail(`${String(error)} (split sources before the restart: ${JSON.stringify(splitBefore)}); flows of ${GROUP}:\n${await flowDump(GROUP)}`);
        return undefined;
      });
      if (replayedAfter !== undefined) {
        console.log(`ovs-vswitchd restart: (S,G) entries back ${replayedAfter} ms after it was`);
        soft.ok(replayedAfter <= 3_000, `the (S,G) entries came back ${replayedAfter} ms after the restart (limit 3 s)`);
      }
      await sleep(300);
      soft.deepEqual(await deliver(GROUP, 'vsd'), wanted, `after the ovs-vswitchd restart; flows of ${GROUP}:\n${await flowDump(GROUP)}`);
      soft.settle();
    } finally {
      for (const pod of [a, b, c, n]) await unblockIgmp(pod);
    }
  });
});

function sortKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([x], [y]) => x.localeCompare(y)));
}

/**
 * Assertions that record a failure and let the case go on: the cases build on each other's
 * joins and leaves, so every step of a case happens even when an early check fails.
 */
class SoftAssert {
  private readonly failures: Error[] = [];

  deepEqual(actual: unknown, expected: unknown, message: string): void {
    // Both in full: the assertion's own diff skips lines.
    this.record(() => assert.deepEqual(actual, expected, `${message}\nactual:   ${JSON.stringify(actual)}\nexpected: ${JSON.stringify(expected)}`));
  }

  ok(value: unknown, message: string): void {
    this.record(() => assert.ok(value, message));
  }

  fail(message: string): void {
    this.record(() => assert.fail(message));
  }

  /** Throws what failed: the one failure as it is, several as one error listing them all. */
  settle(): void {
    if (this.failures.length === 1) throw this.failures[0];
    if (this.failures.length > 1) throw new Error(this.failures.map((failure, i) => `(${i + 1}) ${failure.message}`).join('\n\n'));
  }

  private record(check: () => void): void {
    try {
      check();
    } catch (error) {
      this.failures.push(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
