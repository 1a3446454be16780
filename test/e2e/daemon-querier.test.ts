/**
 * Acceptance of the daemon's querier election (RFC 3376 §6.6.2) on a lab node: real OVS,
 * a pod that is an IGMP querier with a lower address than the daemon's (the gateway's),
 * the daemon with short timers (Query Interval 2 s, Query Response Interval 1 s,
 * Robustness 2: Other Querier Present Interval 4.5 s), and what reaches the pods' wires,
 * read with tcpdump's own decoder.
 *
 * While the pod queries, none of the daemon's general queries reach that pod for well
 * over two query intervals, while another pod still gets them, and membership still works
 * on the silenced port; once the pod stops, the daemon queries it again after the Other
 * Querier Present Interval.
 *
 * Needs root, iproute2, ethtool, tcpdump, python3, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const QUERY_INTERVAL_MS = 2000;
/** Robustness × Query Interval + Query Response Interval / 2. */
const OTHER_QUERIER_PRESENT_MS = 2 * 2000 + 1000 / 2;
const GATEWAY = '10.37.1.1';
/** The pod querier's source: below the gateway's address, so it wins the election. */
const POD_QUERIER = '10.0.0.9';

/** argv: source, interval ms, count. IGMPv2 general queries to 224.0.0.1 from `source` (an address of the pod's). */
const QUERIER_PY = `
import socket, struct, sys, time
source, interval, count = sys.argv[1], float(sys.argv[2]) / 1000, int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_IGMP)
s.bind((source, 0))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
def checksum(b):
    total = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while total >> 16: total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff
body = struct.pack("!BBH4s", 0x11, 100, 0, socket.inet_aton("0.0.0.0"))
query = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
for i in range(count):
    s.sendto(query, ("224.0.0.1", 0))
    print(time.time(), flush=True)
    time.sleep(interval)
`;

/** The epoch-ms times of the IGMP general queries from `source` in a capture, as tcpdump decodes them. */
async function queriesFrom(lab: Lab, pod: OvsPod, file: string, source: string): Promise<number[]> {
  const { stdout } = await lab.exec(pod.ns, ['tcpdump', '-r', file, '-n', '-tt']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(`IP ${source} > 224.0.0.1: igmp query`))
    .map((line) => Number(line.split(' ')[0]) * 1000);
}

describe('mcastctl daemon: querier election on the pod ports', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let querierPod: OvsPod;
  let other: OvsPod;
  let daemon: RunningDaemon;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: `${GATEWAY}/24` });
    querierPod = await node.addPod('pq', { address: '10.37.1.11/24' });
    other = await node.addPod('po', { address: '10.37.1.12/24' });
    await lab.ip(querierPod.ns, 'addr', 'add', `${POD_QUERIER}/32`, 'dev', querierPod.iface);
    daemon = startDaemon(node, { args: SHORT_TIMERS });
    await daemon.ready();
  });

  after(async () => {
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  it('a pod querying from a lower address silences the daemon there (not elsewhere), membership goes on, and the daemon resumes after the Other Querier Present Interval', async () => {
    const captures = await Promise.all(
      [querierPod, other].map((pod) =>
        lab.startTcpdump(pod.ns, pod.iface, lab.file(`querier-${pod.name}.pcap`), { filter: ['igmp'] }),
      ),
    );
    // Past the startup queries, so that only the periodic ones are counted.
    await sleep(2 * QUERY_INTERVAL_MS);
    const podQuerier = lab.spawn(querierPod.ns, ['python3', '-u', '-c', QUERIER_PY, POD_QUERIER, '1000', '8']);
    const sent: number[] = [];
    podQuerier.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim() !== '') sent.push(Number(line) * 1000);
    });
    await waitUntil('the daemon to see the other querier', async () => {
      const status = await control<DaemonStatus>(daemon, ['status']);
      return (
        status.querier?.otherQueriers.some(
          (entry) => entry.port.name === querierPod.port && entry.address === POD_QUERIER,
        ) === true
      );
    });
    const silenced = daemon
      .entries()
      .find((entry) => entry['msg'] === 'another querier present: no general queries on the port while it queries');
    assert.ok(silenced !== undefined, 'the daemon says it stopped querying the port');
    // Membership on the silenced port still works.
    const receiver = await querierPod.listen('239.37.1.1', 5370);
    await waitUntil('the pod querier to be a member', async () => {
      const groups = await control<GroupView[]>(daemon, ['groups']);
      return groups.some(
        (view) => view.group === '239.37.1.1' && view.members.some((member) => member.port.name === querierPod.port),
      );
    });
    await receiver.stop();
    await new Promise<void>((resolve) => podQuerier.once('exit', () => resolve()));
    const lastSent = sent.at(-1)!;
    // Resumed within the interval and the next query tick (one Query Interval) after it, and some.
    await sleep(OTHER_QUERIER_PRESENT_MS + QUERY_INTERVAL_MS + 1500);
    await Promise.all(captures.map((capture) => capture.stop()));
    const firstSent = sent[0]!;
    const onQuerierPod = await queriesFrom(lab, querierPod, captures[0]!.file, GATEWAY);
    const onOther = await queriesFrom(lab, other, captures[1]!.file, GATEWAY);
    assert.equal(sent.length, 8, 'the pod sent its eight queries');
    // A query the daemon had on its way as the first pod query arrived may still land: 200 ms of grace.
    const during = onQuerierPod.filter((ts) => ts > firstSent + 200 && ts <= lastSent);
    assert.deepEqual(
      during,
      [],
      `the daemon queried the silenced pod ${during.length} times in ${Math.round(lastSent - firstSent)} ms`,
    );
    assert.ok(lastSent - firstSent >= 2 * QUERY_INTERVAL_MS, 'silenced for at least two query intervals');
    const toOther = onOther.filter((ts) => ts > firstSent && ts <= lastSent);
    assert.ok(toOther.length >= 3, `the other pod kept getting general queries (${toOther.length})`);
    const resumed = onQuerierPod.find((ts) => ts > lastSent);
    assert.ok(resumed !== undefined, 'the daemon queried the pod again after it stopped');
    const gap = resumed - lastSent;
    assert.ok(
      gap >= OTHER_QUERIER_PRESENT_MS - 300 && gap <= OTHER_QUERIER_PRESENT_MS + QUERY_INTERVAL_MS + 500,
      `resumed ${Math.round(gap)} ms after the last query of the pod (Other Querier Present Interval ${OTHER_QUERIER_PRESENT_MS} ms)`,
    );
    console.log(
      `querier election: silenced ${Math.round(lastSent - firstSent)} ms; resumed ${Math.round(gap)} ms after the other querier's last query`,
    );
    const status = await control<DaemonStatus>(daemon, ['status']);
    assert.deepEqual(status.querier, { election: 'auto', otherQueriers: [] });
  });
});
