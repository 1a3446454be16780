/**
 * The demo: `mcastctl daemon` on a small lab of real OVS nodes and pods, delivering
 * multicast to members only.
 *
 *   sudo scripts/demo.sh            (sets up, builds, runs this)
 *   sudo node --import tsx scripts/demo.ts   (after `npm run build`)
 *
 * Two nodes, each a network namespace with its own ovs-vswitchd (user-space datapath),
 * a gateway port and three pods, joined by an underlay Linux bridge (IGMP snooping on)
 * with an external host. A daemon runs on each node. Pods join a group with ordinary
 * sockets; a pod sends; every pod's interface is watched, and the table shows who got
 * what: members on both nodes and the external host receive, the others see nothing,
 * not even on the wire. Then a member leaves and stops receiving. Everything lives in
 * namespaces named mcl* and is removed at the end, also on Ctrl-C.
 *
 * Environment: MCASTCTL_BIN (another build of the CLI), NO_COLOR.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Table from 'cli-table3';
import { mcastctl } from '../test/lab/cli.js';
import { startDaemon, type RunningDaemon } from '../test/lab/daemon.js';
import { Lab, type Tcpdump } from '../test/lab/lab.js';
import { buildMulticastLab } from '../test/lab/multicast-lab.js';
import type { Receiver, UdpEndpoint } from '../test/lab/ovs.js';
import { color, runDemo, say, sleep } from './demo-kit.js';

const GROUP = '239.1.2.3';
const PORT = 5000;
const COUNT = 20;
interface Station {
  label: string;
  ns: string;
  iface: string;
  udp: UdpEndpoint;
  capture?: Tcpdump;
  receiver?: Receiver;
}

async function main(): Promise<number> {
  const lab = Lab.create();
  const daemons: RunningDaemon[] = [];
  try {
    say(`building the lab: 2 OVS nodes × 3 pods, an underlay bridge, an external host (namespaces ${lab.prefix}-*)`);
    const { nodes, external } = await buildMulticastLab(lab, { podsPerNode: 3 });
    for (const { node } of nodes) {
      const daemon = startDaemon(node, { args: ['--query-interval', '10s', '--query-response-interval', '2s'] });
      daemons.push(daemon);
    }
    await Promise.all(daemons.map((daemon) => daemon.ready()));
    say(`mcastctl daemon runs on node a and node b: ${daemons[0]!.args.join(' ')}`);

    const stations: Station[] = [
      ...nodes.flatMap(({ node, pods }) => pods.map((pod): Station => ({ label: `pod ${pod.name} (node ${node.name}, ${pod.address})`, ns: pod.ns, iface: pod.iface, udp: pod }))),
      { label: `external host (${external!.address})`, ns: external!.ns, iface: external!.iface, udp: external! },
    ];
    const byName = (name: string): Station => stations.find((station) => station.label.startsWith(name))!;
    const members = [byName('pod a2'), byName('pod b1'), byName('pod b3'), byName('external')];
    const sender = byName('pod a1');

    for (const station of stations) {
      station.capture = await lab.startTcpdump(station.ns, station.iface, lab.file(`demo-${station.ns}.pcap`), { filter: ['udp', 'and', 'dst', GROUP] });
    }
    say(`${members.map((m) => m.label.split(' (')[0]).join(', ')} join ${GROUP} (IP_ADD_MEMBERSHIP: their kernels send IGMP reports)`);
    for (const member of members) member.receiver = await member.udp.listen(GROUP, PORT);
    await sleep(1_500);

    console.log(color.bold(`\n$ mcastctl groups        (on node a)`));
    console.log((await mcastctl(['groups', '--control-socket', daemons[0]!.controlSocket])).stdout.trimEnd());
    console.log(color.bold(`\n$ mcastctl groups        (on node b)`));
    console.log((await mcastctl(['groups', '--control-socket', daemons[1]!.controlSocket])).stdout.trimEnd());

    say(`${sender.label.split(' (')[0]} sends ${COUNT} datagrams to ${GROUP}:${PORT} (TTL 8, so the nodes may route them)`);
    await sender.udp.send(GROUP, PORT, COUNT, { ttl: 8, intervalMs: 20, tag: 'demo' });
    await sleep(800);
    const first = new Map<Station, number>();
    for (const station of stations) first.set(station, station.receiver?.received.length ?? 0);

    const leaver = byName('pod b3');
    say(`${leaver.label.split(' (')[0]} leaves ${GROUP} (its kernel sends a leave; fast leave drops it at once)`);
    await leaver.receiver!.stop();
    await sleep(500);
    say(`${sender.label.split(' (')[0]} sends ${COUNT} more`);
    await sender.udp.send(GROUP, PORT, COUNT, { ttl: 8, intervalMs: 20, tag: 'demo2' });
    await sleep(800);

    const frames = new Map<Station, number>();
    for (const station of stations) {
      await station.capture!.stop();
      frames.set(station, await countFrames(station.capture!.file));
    }
    // The leaver's socket is closed: what reached it after the leave is counted on the wire.
    const secondRound = (station: Station): number =>
      station === leaver ? frames.get(station)! - first.get(station)! : (station.receiver?.received.length ?? 0) - first.get(station)!;
    const table = new Table({ head: ['', 'member', `first ${COUNT}`, `after b3 left`, 'frames on its interface'], style: { head: [], border: [] } });
    for (const station of stations) {
      const isMember = members.includes(station);
      const firstRound = first.get(station)!;
      const mark = (n: number, expected: number) => (n === expected ? color.green(String(n)) : color.red(String(n)));
      const expectFirst = isMember ? COUNT : 0;
      const expectSecond = isMember && station !== leaver ? COUNT : 0;
      table.push([
        station.label,
        station === sender ? 'sender' : isMember ? (station === leaver ? 'left' : 'yes') : 'no',
        station === sender ? '' : mark(firstRound, expectFirst),
        station === sender ? '' : mark(secondRound(station), expectSecond),
        station === sender ? '' : String(frames.get(station)),
      ]);
    }
    console.log(color.bold(`\nWho received the datagrams sent to ${GROUP}:`));
    console.log(table.toString());
    for (const member of members) if (member !== leaver) await member.receiver!.stop();
    const ok = stations.every((station) => {
      if (station === sender) return true;
      const isMember = members.includes(station);
      const firstRound = first.get(station)!;
      return firstRound === (isMember ? COUNT : 0) && secondRound(station) === (isMember && station !== leaver ? COUNT : 0) && (isMember || frames.get(station) === 0);
    });
    console.log(ok ? color.green('\nMulticast reached the members, and only them.') : color.red('\nDelivery was not as expected: see the table.'));
    return ok ? 0 : 1;
  } finally {
    await Promise.all(daemons.map((daemon) => daemon.stop()));
    say('removing the lab');
    await lab.destroy();
  }
}

async function countFrames(file: string): Promise<number> {
  const { stdout } = await promisify(execFile)('tcpdump', ['-nr', file], { maxBuffer: 16 << 20 }).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter((line) => line.trim() !== '').length;
}

await runDemo('scripts/demo.sh', main);
