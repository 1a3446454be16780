/**
 * `mcastctl trace` with no sender named, on a node in tunnel mode: two nodes of the tunnel
 * lab (Geneve on br-int, an underlay without multicast), each with its daemon, neither
 * routing (no multicast interfaces, as every tunnel-mode node). Node 1 has a member, two
 * more pods (one the trace's local sender, one whose IGMP dies in its own firewall), node 2
 * one sender. Trace must follow every sender the node carries: the local pod and the tunnel
 * deliver, and are proven to by real datagrams; the outside is not applicable, with why;
 * the pod whose IGMP is dropped is blocked at its IGMP stage.
 *
 * Needs root, iproute2, nft, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import type { RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { missingSequences, type OvsPod, type Receiver, sequences } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';
import { podName, traceOn, type TraceRun } from '../lab/trace-checks.js';
import {
  addTunnelPod,
  buildTunnelNetwork,
  startTunnelDaemons,
  type TunnelLabNode,
  type TunnelNetwork,
  waitForTunnelDestinations,
} from '../lab/tunnel-lab.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the trace tests run the built CLI: ${missing}`);

const G = { received: '239.73.1.1', firewalled: '239.73.2.1' } as const;
const PORT = 5473;
/** Queries every 2 s, so that silence shows quickly; peers refreshed every 2 s. */
const TIMERS = [
  '--query-interval',
  '2s',
  '--query-response-interval',
  '1s',
  '--robustness',
  '2',
  '--peer-refresh-interval',
  '2s',
  '--peer-timeout',
  '5s',
];
const CASE_TIMEOUT_MS = 30_000;

describe('mcastctl trace on a tunnel-mode node: every sender the node carries', { concurrency: 1 }, () => {
  let lab: Lab;
  let tl: TunnelNetwork;
  let n1: TunnelLabNode;
  let n2: TunnelLabNode;
  let member: OvsPod;
  let silent: OvsPod;
  let remote: OvsPod;
  const daemons: RunningDaemon[] = [];
  let trace: TraceRun;
  const receivers: Receiver[] = [];

  before(async () => {
    lab = Lab.create();
    tl = await buildTunnelNetwork(lab, { nodeCount: 2, podsPerNode: 0 });
    [n1, n2] = tl.nodes as [TunnelLabNode, TunnelLabNode];
    // One at a time: the ports are numbered in this order, the member's first.
    member = await addTunnelPod(n1);
    await addTunnelPod(n1);
    silent = await addTunnelPod(n1);
    remote = await addTunnelPod(n2);
    // The firewall goes in before anything in the pod joins, so that not one IGMP message leaves it.
    const nft = (...words: string[]) => lab.exec(silent.ns, ['nft', ...words]);
    await nft('add', 'table', 'inet', 'f');
    await nft('add', 'chain', 'inet', 'f', 'out', '{ type filter hook output priority 0; }');
    await nft('add', 'rule', 'inet', 'f', 'out', 'ip', 'protocol', 'igmp', 'counter', 'drop');
    daemons.push(...(await startTunnelDaemons(tl, TIMERS)));
    trace = traceOn(n1.node, daemons[0]!);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = daemons.flatMap((daemon) => daemon.entries().filter((entry) => entry['level'] === 'error'));
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  it('a member: exit 0 from a local pod; the tunnel followed too; the outside not applicable, with why', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    const receiver = await member.listen(G.received, PORT);
    receivers.push(receiver);
    await waitForOvsMembers(n1.node, G.received, [member]);
    // Node 2 has learned node 1's member from its peer: it sends the group into the tunnel.
    await waitForTunnelDestinations(n2.node, G.received, [n1.underlayAddress], 15_000);

    const result = await trace(G.received, member);
    const { report } = result;
    assert.equal(result.code, 0, result.context);
    assert.equal(report.verdict, 'delivered', result.context);
    assert.equal(report.senderNamed, false, result.context);
    assert.deepEqual(
      report.paths.map((path) => [path.from, path.verdict]),
      [
        ['pod', 'delivered'],
        ['tunnel', 'delivered'],
        ['outside', 'not-applicable'],
      ],
      result.context,
    );
    // The local sender: another pod of node 1, the first by port number.
    const local = report.paths[0]!.sender;
    assert.ok(local?.kind === 'pod', result.context);
    const sender = n1.pods.find((pod) => podName(pod) === local.pod);
    assert.ok(sender !== undefined && sender !== member, result.context);
    assert.equal(sender, n1.pods[1], `the pod after the member by port number; ${result.context}`);
    assert.equal(local.address, sender.address, result.context);
    assert.deepEqual(
      report.stages.map((stage) => [stage.stage, stage.name, stage.status]),
      [
        [1, 'pod-port', 'pass'],
        [2, 'igmp', 'pass'],
        [3, 'membership', 'pass'],
        [4, 'ovs', 'pass'],
        [6, 'sender', 'pass'],
      ],
      result.context,
    );
    // The tunnel: OVS's own trace from the tunnel port reaches the member.
    const tunnel = report.paths[1]!;
    assert.deepEqual(
      tunnel.sender,
      {
        kind: 'outside',
        address: null,
        via: 'tunnel',
        port: { ofport: n1.tunnel.ofport, name: n1.tunnel.name },
      },
      result.context,
    );
    const tunnelTrace = tunnel.stages[0]!.facts['trace'] as { inPort: number; reachesPod: boolean };
    assert.equal(tunnelTrace.inPort, n1.tunnel.ofport, result.context);
    assert.equal(tunnelTrace.reachesPod, true, result.context);
    // The outside: one stage, not applicable, saying why.
    const outside = report.paths[2]!;
    assert.equal(outside.sender, null, result.context);
    assert.deepEqual(
      outside.stages.map((stage) => [stage.stage, stage.name, stage.status]),
      [[5, 'outside', 'not-applicable']],
      result.context,
    );
    assert.match(
      outside.stages[0]!.summary,
      /^not applicable: the node routes no multicast in from outside \(no multicast interfaces\)$/,
      result.context,
    );

    // It is so: both senders' datagrams reach the member.
    await sender.send(G.received, PORT, 20, { intervalMs: 5, tag: 'local' });
    await remote.send(G.received, PORT, 20, { intervalMs: 5, tag: 'remote' });
    await sleep(300);
    assert.deepEqual(missingSequences(sequences(receiver.received, 'local'), 20), [], 'from the local pod');
    assert.deepEqual(
      missingSequences(sequences(receiver.received, 'remote'), 20),
      [],
      'from node 2 through the tunnel',
    );

    const text = await trace(G.received, member, [], { json: false });
    assert.equal(text.code, 0, text.context);
    const lines = text.stdout.split('\n');
    assert.match(lines[0]!, /\(from every sender the node carries\)$/, text.context);
    assert.ok(lines.includes(`  from other nodes through the tunnel ${n1.tunnel.name}:`), text.context);
    assert.ok(
      lines.some((line) =>
        /^· 5 from outside +not applicable: the node routes no multicast in from outside/.test(line),
      ),
      text.context,
    );
    assert.ok(
      lines.includes(`delivered: ${G.received} reaches ${podName(member)} (from pod ${local.pod})`),
      text.context,
    );
  });

  it('a pod whose IGMP its own firewall drops: exit 1, blocked at its IGMP stage, no sender followed', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    receivers.push(await silent.listen(G.firewalled, PORT));
    await waitUntil(
      "the firewall's counter to show the pod's reports dropped, past a query of the daemon",
      async () =>
        Number(
          /packets (\d+)/.exec((await lab.exec(silent.ns, ['nft', 'list', 'chain', 'inet', 'f', 'out'])).stdout)?.[1] ??
            0,
        ) >= 3,
      10_000,
      200,
    );
    const result = await trace(G.firewalled, silent);
    const { report } = result;
    assert.equal(result.code, 1, result.context);
    assert.equal(report.verdict, 'blocked', result.context);
    assert.equal(report.blockedAt, 'igmp', result.context);
    assert.deepEqual(
      report.stages.map((stage) => [stage.stage, stage.name, stage.status, stage.code]),
      [
        [1, 'pod-port', 'pass', undefined],
        [2, 'igmp', 'fail', 'no-igmp'],
      ],
      result.context,
    );
    assert.deepEqual(report.paths, [], result.context);

    const text = await trace(G.firewalled, silent, [], { json: false });
    assert.equal(text.code, 1, text.context);
    assert.ok(text.stdout.split('\n').includes('blocked at stage 2 (igmp): no-igmp'), text.context);
  });
});
