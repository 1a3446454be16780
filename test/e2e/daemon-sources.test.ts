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
 * entries are back within 3 s). Then, on a daemon with short timers: a member whose IGMP is
 * blocked loses its (S,G) entry and its delivery within the Group Membership Interval of its
 * last report on the wire, and not much earlier. Last, the time from a member's ALLOW {S} on
 * its wire to the first datagram of S there, over 12 rounds, split by the daemon's events
 * into its packet-in, the end of its sync to OVS, and what OVS takes after that.
 *
 * Needs root, iproute2, ethtool, tcpdump, nft (nftables), python3, Open vSwitch and the
 * built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it, type TestContext } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { Lab, sleep, type Tcpdump, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import {
  type CapturedRecord,
  datagramTimes,
  groupFlows,
  ovsGroupCount,
  readCapture,
  recordsFrom,
  reportsFrom,
  SourceMember,
  wireSenders,
} from '../lab/source-members.js';
import { ControlClient } from '../../src/transport/control/control-client.js';
import type { DaemonEvent, DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

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

/** The expiry case's group and the daemon timers it runs with: a Group Membership Interval of 2 × 2 s + 1 s. */
const EXPIRY_GROUP = '239.7.1.2';
const SHORT_TIMERS = {
  queryIntervalMs: 2_000,
  queryResponseIntervalMs: 1_000,
  robustness: 2,
  args: ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'],
} as const;
/** Past the GMI: the timer's own lateness, the sync to OVS and the datapath's revalidation. */
const EXPIRY_SLACK_MS = 750;
const EXPIRY_SEND_INTERVAL_MS = 20;

/**
 * The latency case's group and its rounds; how long a round waits for the ALLOW and S3's first datagram after it to
 * show in the capture (a deadline, not the measure: under load tcpdump and the sender lag), and how long a's wire must
 * be free of S3 after a removal before the next round starts.
 */
const LATENCY_GROUP = '239.7.1.3';
const LATENCY_ROUNDS = 12;
const LATENCY_WAIT_MS = 3_000;
const LATENCY_QUIET_MS = 150;
/**
 * Sends `tag <n>` to group:port every `interval` ms, paced, until killed; prints "sending"
 * after its first datagram, so that a round starts only once S3 really sends (a sender
 * started for each round takes 100 ms and more to send its first datagram here).
 */
const STREAM_PY = `
import socket, sys, time
group, port, interval, tag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
n, nxt = 0, time.perf_counter()
while True:
    s.sendto(("%s %d" % (tag, n)).encode(), (group, port))
    if n == 0:
        print("sending", flush=True)
    n += 1
    nxt += interval
    delay = nxt - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    elif delay < -0.05:
        nxt = time.perf_counter()
`;

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
      captures.set(
        pod,
        await lab.startTcpdump(pod.ns, pod.iface, lab.file(`${pod.name}.pcap`), { filter: ['igmp', 'or', 'udp'] }),
      );
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

  /**
   * Each member pod's filter for `group` as the daemon shows it: { port: 'include S1,S3' | 'exclude S1' | 'exclude -'
   * }.
   */
  const filtersOf = async (group: string): Promise<{ filters: Record<string, string>; synced: boolean }> => {
    const view = (await control<GroupView[]>(daemon, ['groups'])).find((entry) => entry.group === group);
    const filters = Object.fromEntries(
      (view?.members ?? []).map((m) => [
        m.port.name,
        `${m.mode} ${m.sources.length === 0 ? '-' : [...m.sources].sort().join(',')}`,
      ]),
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
  const deliver = async (
    group: string,
    tag: string,
    from: readonly OvsPod[] = senders,
  ): Promise<Record<string, { socket: string[]; wire: string[] }>> => {
    await Promise.all(from.map((sender) => sender.send(group, PORT, COUNT, { intervalMs: 5, tag })));
    await sleep(400);
    const seen: Record<string, { socket: string[]; wire: string[] }> = {};
    for (const pod of [a, b, c, n]) {
      const got = member(pod).received.filter(
        (datagram) => datagram.group === group && datagram.payload.startsWith(`${tag} `),
      );
      const bySender = new Map<string, Set<string>>();
      for (const datagram of got)
        bySender.set(datagram.from, (bySender.get(datagram.from) ?? new Set()).add(datagram.payload));
      const socket = [...bySender]
        .map(([sender, payloads]) => (payloads.size === COUNT ? sender : `${sender}(${payloads.size}/${COUNT})`))
        .sort();
      seen[pod.name] = { socket, wire: wireSenders(readCapture(captures.get(pod)!.file), group, tag) };
    }
    return seen;
  };

  /**
   * What deliver() should see when `wanted` maps each pod to the senders it asked for (both at its socket and on its
   * wire).
   */
  const expected = (wanted: Record<string, readonly string[]>) =>
    Object.fromEntries(
      [a, b, c, n].map((pod) => [
        pod.name,
        { socket: [...(wanted[pod.name] ?? [])].sort(), wire: [...(wanted[pod.name] ?? [])].sort() },
      ]),
    );

  /** The sources of the (S,G) flows for `group` (each flow with nw_src), sorted. */
  const splitSources = async (group: string) =>
    [
      ...new Set((await groupFlows(node, group)).flatMap((flow) => (flow.source === undefined ? [] : [flow.source]))),
    ].sort();

  const flowDump = async (group: string) =>
    (await groupFlows(node, group)).map((flow) => `${flow.line} -> ports ${flow.ports.join(',')}`).join('\n');

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
    await waitUntil(
      `the members' IGMPv3 records for ${group} on their wires`,
      async () => pods.every((pod) => checks[pod.name]!(sent(pod))),
      5_000,
      100,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; records seen: ${seenRecords()}`);
    });
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
        records.some(
          (record) => (record.type === RECORD.block || record.type === RECORD.toEx) && record.sources.includes(s1),
        ),
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

  it('changes: a adds S3, c unblocks S1, b drops S2; no nw_src=S2 flow is left when nobody names S2', {
    timeout: CASE_TIMEOUT_MS,
  }, async (context) => {
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
        records.some(
          (record) =>
            (record.type === RECORD.block && record.sources.includes(s2)) ||
            (record.type === RECORD.toIn && record.sources.length === 0),
        ),
    });
    await waitForFilters(GROUP, { [a.port]: `include ${s1},${s3}`, [c.port]: 'exclude -' });
    const dropped = await deliver(GROUP, 'drop');
    soft.deepEqual(
      dropped,
      expected({ [a.name]: [s1, s3], [c.name]: [s1, s2, s3] }),
      `after b's BLOCK {S2}; flows of ${GROUP}:\n${await flowDump(GROUP)}`,
    );
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

  it('SSM: a join of any source to 232.1.1.1 is refused (ssm) and installs nothing; a source-specific join works', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    const [s1] = senderAddresses();
    const soft = new SoftAssert();
    const refusedOnN = async () =>
      (await control<DaemonStatus>(daemon, ['status'])).igmpRefused?.byPort.find((entry) => entry.port.name === n.port)
        ?.counts['ssm'] ?? 0;
    const groupsBefore = await ovsGroupCount(node);
    await member(n).join(SSM_GROUP);
    await waitUntil(`the plain join of ${SSM_GROUP} counted as ssm`, async () => (await refusedOnN()) >= 1, 5_000, 100);
    await sleep(300);
    const status = await control<DaemonStatus>(daemon, ['status']);
    soft.ok(
      (status.igmpRefused?.total['ssm'] ?? 0) >= 1,
      `status refused totals: ${JSON.stringify(status.igmpRefused?.total)}`,
    );
    soft.deepEqual((await filtersOf(SSM_GROUP)).filters, {}, `the daemon has members of ${SSM_GROUP}`);
    soft.deepEqual(await groupFlows(node, SSM_GROUP), [], `flows for ${SSM_GROUP} after a refused join`);
    soft.deepEqual(await ovsGroupCount(node), groupsBefore, `OVS groups were added for a refused join of ${SSM_GROUP}`);

    await member(a).joinSource(SSM_GROUP, s1);
    await waitForFilters(SSM_GROUP, { [a.port]: `include ${s1}` });
    const seen = await deliver(SSM_GROUP, 'ssm', [senders[0], senders[1]]);
    soft.deepEqual(
      seen,
      expected({ [a.name]: [s1] }),
      `delivery to ${SSM_GROUP}; flows:\n${await flowDump(SSM_GROUP)}`,
    );
    // Only (S1, G) reaches a pod; an entry for any other source may go to the gateway at most.
    const ssmFlows = await groupFlows(node, SSM_GROUP);
    soft.deepEqual(
      ssmFlows
        .filter((flow) => flow.source === s1)
        .flatMap((flow) => flow.ports.filter((port) => port !== node.gateway!.ofport)),
      [a.ofport],
      `(S1, ${SSM_GROUP}) must go to ${a.name} (ofport ${a.ofport}):\n${await flowDump(SSM_GROUP)}`,
    );
    soft.deepEqual(
      ssmFlows
        .filter((flow) => flow.source !== s1)
        .flatMap((flow) => flow.ports.filter((port) => port !== node.gateway!.ofport)),
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
    await waitUntil(
      'state.json with the filters',
      async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(SSM_GROUP),
      5_000,
      100,
    );
    // From here on no report of a member reaches the daemon: what it knows comes from its state.
    for (const pod of [a, b, c, n]) await blockIgmp(pod);
    try {
      await daemon.kill9();
      daemon = startDaemon(node, daemonOptions);
      await daemon.ready();
      await daemon.waitForLog((entry) => entry['msg'] === 'state restored', 5_000);
      await waitForFilters(GROUP, { [a.port]: `include ${s1},${s3}`, [c.port]: 'exclude -' });
      soft.deepEqual(
        await deliver(GROUP, 'kill'),
        wanted,
        `after kill -9; flows of ${GROUP}:\n${await flowDump(GROUP)}`,
      );
      soft.deepEqual(
        await deliver(SSM_GROUP, 'kssm', [senders[0], senders[1]]),
        expected({ [a.name]: [s1] }),
        `${SSM_GROUP} after kill -9`,
      );

      const splitBefore = await splitSources(GROUP);
      await node.restartVswitchd();
      const backAt = Date.now();
      const replayedAfter = await waitUntil(
        'the (S,G) entries back in OVS',
        async () => {
          const back =
            (await splitSources(GROUP)).join() === splitBefore.join() && (await splitSources(SSM_GROUP)).join() === s1;
          return back && splitBefore.length > 0 ? Date.now() - backAt : undefined;
        },
        6_000,
        20,
      ).catch(async (error: unknown) => {
        soft.fail(
          `${String(error)} (split sources before the restart: ${JSON.stringify(splitBefore)}); flows of ${GROUP}:\n${await flowDump(GROUP)}`,
        );
        return undefined;
      });
      if (replayedAfter !== undefined) {
        console.log(`ovs-vswitchd restart: (S,G) entries back ${replayedAfter} ms after it was`);
        soft.ok(
          replayedAfter <= 3_000,
          `the (S,G) entries came back ${replayedAfter} ms after the restart (limit 3 s)`,
        );
      }
      await sleep(300);
      soft.deepEqual(
        await deliver(GROUP, 'vsd'),
        wanted,
        `after the ovs-vswitchd restart; flows of ${GROUP}:\n${await flowDump(GROUP)}`,
      );
      soft.settle();
    } finally {
      for (const pod of [a, b, c, n]) await unblockIgmp(pod);
    }
  });

  it('expiry: when a member stops answering queries, its (S1, G) entry and delivery end within the Group Membership Interval of its last report', {
    timeout: CASE_TIMEOUT_MS,
  }, async (context) => {
    const [s1] = senderAddresses();
    const soft = new SoftAssert();
    // A daemon of this case's own, with short timers and a state of its own: the cases before keep the default timers.
    await daemon.stop();
    daemon = startDaemon(node, {
      ...daemonOptions,
      stateDir: lab.file('daemon-short-timers/state'),
      args: [...SHORT_TIMERS.args],
    });
    await daemon.ready();
    // The daemon's own events time the entry's end: a poll through its socket and ovs-ofctl would add its own delay.
    const watch = await watchEvents(daemon);
    const gmiMs = SHORT_TIMERS.robustness * SHORT_TIMERS.queryIntervalMs + SHORT_TIMERS.queryResponseIntervalMs;
    let sending: Promise<void> | undefined;
    try {
      await member(a).joinSource(EXPIRY_GROUP, s1);
      await waitForFilters(EXPIRY_GROUP, { [a.port]: `include ${s1}` });
      // S1 sends all along, so the last of its datagrams on a's wire says when delivery ended.
      sending = senders[0].send(EXPIRY_GROUP, PORT, Math.ceil((gmiMs + 4_000) / EXPIRY_SEND_INTERVAL_MS), {
        intervalMs: EXPIRY_SEND_INTERVAL_MS,
        tag: 'expiry',
      });
      await sleep(300);
      await blockIgmp(a);
      const blockedAt = Date.now();
      const toA = async () =>
        (await groupFlows(node, EXPIRY_GROUP)).some((flow) => flow.source === s1 && flow.ports.includes(a.ofport));
      await waitUntil(
        `the (S1, ${EXPIRY_GROUP}) entry of ${a.name} to expire`,
        async () => Object.keys((await filtersOf(EXPIRY_GROUP)).filters).length === 0 && !(await toA()),
        gmiMs + 3_000,
        50,
      );
      await sending;
      const expired = watch.events.find(
        (event) =>
          event.type === 'leave' &&
          event.group === EXPIRY_GROUP &&
          event.port.name === a.port &&
          Date.parse(event.time) >= blockedAt,
      );
      soft.ok(
        expired?.type === 'leave' && expired.reason === 'expired',
        `the daemon's leave of ${a.name}: ${JSON.stringify(expired)}`,
      );
      const synced = watch.events.find(
        (event) =>
          event.type === 'sync' &&
          event.group === EXPIRY_GROUP &&
          event.ok &&
          Date.parse(event.time) >= blockedAt &&
          !event.ports.includes(a.ofport) &&
          !(event.sources ?? []).some((entry) => entry.source === s1 && entry.ports.includes(a.ofport)),
      );
      assert.ok(synced !== undefined, `no sync of ${EXPIRY_GROUP} without ${a.name} among the daemon's events`);
      const goneAt = Date.parse(synced.time);
      const packets = readCapture(captures.get(a)!.file);
      const lastReportAt = reportsFrom(packets, a.address, EXPIRY_GROUP)
        .map((report) => report.ts)
        .filter((ts) => ts < blockedAt)
        .at(-1);
      const deliveredAt = datagramTimes(packets, s1, EXPIRY_GROUP, 'expiry');
      assert.ok(
        lastReportAt !== undefined,
        `no report of ${a.name} for ${EXPIRY_GROUP} on its wire before its IGMP was blocked`,
      );
      assert.ok(deliveredAt.length > 0, `no datagram of S1 to ${EXPIRY_GROUP} on ${a.name}'s wire`);
      const entryEnded = goneAt - lastReportAt;
      const deliveryEnded = deliveredAt.at(-1)! - lastReportAt;
      context.diagnostic(
        `GMI ${gmiMs} ms: after ${a.name}'s last report the daemon's sync without it ended ${Math.round(entryEnded)} ms and S1's last datagram reached it ` +
          `${Math.round(deliveryEnded)} ms after (IGMP blocked ${Math.round(blockedAt - lastReportAt)} ms after that report)`,
      );
      const latest = gmiMs + EXPIRY_SLACK_MS;
      const earliest = gmiMs - SHORT_TIMERS.queryIntervalMs;
      soft.ok(
        entryEnded >= earliest,
        `the entry ended ${Math.round(entryEnded)} ms after the last report: before GMI minus a query interval (${earliest} ms)`,
      );
      soft.ok(
        entryEnded <= latest,
        `the entry ended ${Math.round(entryEnded)} ms after the last report (GMI ${gmiMs} ms, limit ${latest} ms)`,
      );
      soft.ok(
        deliveryEnded <= latest,
        `delivery of S1 ended ${Math.round(deliveryEnded)} ms after the last report (GMI ${gmiMs} ms, limit ${latest} ms)`,
      );
      soft.ok(
        deliveryEnded >= earliest,
        `delivery of S1 ended ${Math.round(deliveryEnded)} ms after the last report: before GMI minus a query interval (${earliest} ms)`,
      );
      soft.settle();
    } finally {
      await watch.close();
      await sending?.catch(() => undefined);
      await unblockIgmp(a);
      await member(a)
        .dropSource(EXPIRY_GROUP, s1)
        .catch(() => undefined);
    }
  });

  it("latency: from a member's ALLOW {S3} on its wire to the first datagram of S3 there, 12 times", {
    timeout: CASE_TIMEOUT_MS,
  }, async (context) => {
    const [s1, , s3] = senderAddresses();
    const latencies: number[] = [];
    const problems: string[] = [];
    // The daemon's own times split each measure: the ALLOW on the wire to its packet-in, and the end of its sync to
    // OVS.
    const parts = { toDaemon: [] as number[], toSynced: [] as number[] };
    const watch = await watchEvents(daemon);
    const { events } = watch;
    // S3 sends all through the case, 1 ms apart: in each round the first datagram a's wire gets after the ALLOW is the
    // measure.
    const tag = 'lat';
    const stream = lab.spawn(senders[2].ns, ['python3', '-u', '-c', STREAM_PY, LATENCY_GROUP, String(PORT), '1', tag]);
    try {
      await new Promise<void>((resolve, reject) => {
        stream.stdout?.once('data', () => resolve());
        stream.once('exit', (code) => reject(new Error(`S3's sender exited (${code}) before sending`)));
      });
      await member(a).joinSource(LATENCY_GROUP, s1);
      await waitForFilters(LATENCY_GROUP, { [a.port]: `include ${s1}` });
      for (let round = 0; round < LATENCY_ROUNDS; round++) {
        const joinedAt = Date.now();
        await member(a).joinSource(LATENCY_GROUP, s3);
        const seen = await firstArrivalAfterAllow(captures.get(a)!.file, {
          member: a.address,
          source: s3,
          tag,
          since: joinedAt - 5,
        });
        if (seen.allowAt === undefined)
          problems.push(`round ${round}: no ALLOW {S3} of ${a.name} on its wire within ${LATENCY_WAIT_MS} ms`);
        else {
          const allowAt = seen.allowAt;
          if (seen.early > 0)
            problems.push(`round ${round}: ${seen.early} datagrams of S3 reached ${a.name} before its ALLOW {S3}`);
          if (seen.firstAt === undefined)
            problems.push(
              `round ${round}: no datagram of S3 reached ${a.name} within ${LATENCY_WAIT_MS} ms of its ALLOW {S3}`,
            );
          else latencies.push(seen.firstAt - allowAt);
          const heard = events.find(
            (event) =>
              event.type === 'igmp' &&
              Date.parse(event.time) >= joinedAt - 5 &&
              event.record.records?.some((record) => record.group === LATENCY_GROUP && record.sources.includes(s3)),
          );
          const synced = events.find(
            (event) =>
              event.type === 'sync' &&
              event.group === LATENCY_GROUP &&
              event.ok &&
              event.sources?.some((entry) => entry.source === s3 && entry.ports.includes(a.ofport)),
          );
          if (heard !== undefined) parts.toDaemon.push(Date.parse(heard.time) - allowAt);
          if (synced !== undefined) parts.toSynced.push(Date.parse(synced.time) - allowAt);
        }
        events.length = 0;
        await member(a).dropSource(LATENCY_GROUP, s3);
        // A datagram of S3 that reaches a before the next round's ALLOW is counted: the next round starts once the
        // removal is synced and in effect on the datapath (its flows revalidated), seen as a's wire quiet of S3.
        await waitUntil(
          `${a.name}'s filter of ${LATENCY_GROUP} without S3, synced`,
          async () => {
            const seen = await filtersOf(LATENCY_GROUP);
            return seen.synced && seen.filters[a.port] === `include ${s1}`;
          },
          10_000,
          20,
        );
        await waitUntil(
          `${a.name}'s wire without S3's datagrams for ${LATENCY_QUIET_MS} ms`,
          async () => {
            const last = datagramTimes(readCapture(captures.get(a)!.file), s3, LATENCY_GROUP, tag).at(-1);
            return last === undefined || Date.now() - last >= LATENCY_QUIET_MS;
          },
          10_000,
          20,
        );
      }
    } finally {
      stream.kill('SIGKILL');
      await watch.close();
      await member(a)
        .dropSource(LATENCY_GROUP, s1)
        .catch(() => undefined);
    }
    const sorted = [...latencies].sort((x, y) => x - y);
    const p50 = median(latencies);
    context.diagnostic(
      `the same from the ALLOW: the daemon's packet-in p50 ${median(parts.toDaemon)?.toFixed(1)} ms, its sync to OVS done p50 ` +
        `${median(parts.toSynced)?.toFixed(1)} ms (${parts.toSynced.length} rounds); every round: ${latencies.map((ms) => ms.toFixed(0)).join(' ')}`,
    );
    context.diagnostic(
      `ALLOW {S3} to the first datagram of S3 on ${a.name}'s wire, ${sorted.length} rounds: p50 ${p50?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`,
    );
    // What is asserted is that every round delivers, after the ALLOW and not before. How fast
    // is the benchmark's to say (`npm run bench -- sources`): a limit here would fail on a busy
    // machine, not on a slow daemon.
    assert.deepEqual(problems, [], 'rounds without a measure');
  });
});

/**
 * Polls a member's capture, up to LATENCY_WAIT_MS, for its first ALLOW carrying `source` since `since` and the first
 * datagram of `source` at or after it; counts the datagrams of `source` between `since` and that ALLOW.
 */
async function firstArrivalAfterAllow(
  file: string,
  options: { member: string; source: string; tag: string; since: number },
): Promise<{ allowAt?: number; firstAt?: number; early: number }> {
  const deadline = Date.now() + LATENCY_WAIT_MS;
  for (;;) {
    const packets = readCapture(file);
    // The first report that names the source as wanted: the ALLOW, or an answer to a query
    // still pending from the round before (IS_IN with it) that the host sent first.
    const allowAt = reportsFrom(packets, options.member, LATENCY_GROUP).find(
      (report) =>
        report.ts >= options.since &&
        report.records.some((record) => INCLUDING.has(record.type) && record.sources.includes(options.source)),
    )?.ts;
    const arrivals = datagramTimes(packets, options.source, LATENCY_GROUP, options.tag);
    const firstAt = allowAt === undefined ? undefined : arrivals.find((ts) => ts >= allowAt);
    if ((allowAt !== undefined && firstAt !== undefined) || Date.now() >= deadline) {
      const early = allowAt === undefined ? 0 : arrivals.filter((ts) => ts >= options.since && ts < allowAt).length;
      return { allowAt, firstAt, early };
    }
    await sleep(20);
  }
}

/** The daemon's event stream from now on, kept in `events` until close(). */
async function watchEvents(running: RunningDaemon): Promise<{ events: DaemonEvent[]; close: () => Promise<void> }> {
  const events: DaemonEvent[] = [];
  const client = await ControlClient.connect(running.controlSocket, { timeoutMs: 2_000 });
  // The subscription is in well before what the cases time: each first joins and waits for the sync.
  const ended = client.events((event) => events.push(event)).catch(() => undefined);
  return {
    events,
    close: async () => {
      client.close();
      await ended;
    },
  };
}

function median(values: readonly number[]): number | undefined {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

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
    this.record(() =>
      assert.deepEqual(
        actual,
        expected,
        `${message}\nactual:   ${JSON.stringify(actual)}\nexpected: ${JSON.stringify(expected)}`,
      ),
    );
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
    if (this.failures.length > 1)
      throw new Error(this.failures.map((failure, i) => `(${i + 1}) ${failure.message}`).join('\n\n'));
  }

  private record(check: () => void): void {
    try {
      check();
    } catch (error) {
      this.failures.push(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
