/**
 * The fleet demo: `mcastctl daemon` in tunnel mode on ten real OVS nodes (test/lab/fleet.ts),
 * five pods each, whose underlay carries no multicast at all.
 *
 *   sudo scripts/demo.sh fleet                  (sets up, builds, runs this)
 *   sudo node --import tsx scripts/demo-fleet.ts   (after `npm run build`)
 *
 * Every pod joins a few random groups of 200 with ordinary sockets before the daemons
 * start; the daemons' first general query is answered, and the table shows how long each
 * node took until its OVS held exactly what its pods and the other nodes' members need
 * (ovs-ofctl, compared with the demo's own record of who joined what). Then a few groups
 * get datagrams from a pod that is no member: every member's socket counts what it got,
 * and every pod port's OVS tx counter shows that no non-member was sent any. Everything
 * lives in namespaces named mcl* and is removed at the end, also on Ctrl-C.
 *
 * Environment: MCASTCTL_BIN (another build of the CLI), NO_COLOR, DEMO_FLEET_NODES (10),
 * DEMO_FLEET_PODS (5).
 */
import Table from 'cli-table3';
import { checkDelivery, checkFleet, joinInitialGroups, MembershipRecord, seededRandom, startAndConverge } from '../test/lab/churn.js';
import { mcastctl } from '../test/lab/cli.js';
import { buildFleet, type Fleet } from '../test/lab/fleet.js';
import { Lab } from '../test/lab/lab.js';
import { color, runDemo, say, sleep } from './demo-kit.js';

const GROUPS_PER_POD = 8;
const DELIVERY_GROUPS = 6;
const DATAGRAMS = 10;
async function main(): Promise<number> {
  const nodes = Number(process.env.DEMO_FLEET_NODES ?? 10);
  const podsPerNode = Number(process.env.DEMO_FLEET_PODS ?? 5);
  const lab = Lab.create();
  let fleet: Fleet | undefined;
  try {
    say(`building the fleet: ${nodes} OVS nodes × ${podsPerNode} pods, Geneve port tun0 on each br-int, an underlay that drops multicast (namespaces ${lab.prefix}-*)`);
    fleet = await buildFleet(lab, { nodes, podsPerNode });
    const record = new MembershipRecord();
    await joinInitialGroups(fleet, record, { groupsPerPod: GROUPS_PER_POD, random: seededRandom(Date.now() % 2 ** 31) });
    await sleep(1500);
    say(`every pod joined ${GROUPS_PER_POD} random groups of 200 (${record.membersByGroup().size} groups with members); starting mcastctl daemon on every node`);
    const convergence = await startAndConverge(fleet, record);
    say(`mcastctl daemon runs on every node, e.g. node 1: ${fleet.nodes[0]!.daemon!.args.join(' ')}`);

    const check = await checkFleet(fleet, record);
    const ok0 = convergence.problem === undefined && check.missing + check.stray === 0;
    const convergenceTable = new Table({ head: ['node', 'complete after its first query', 'groups in OVS', 'missing', 'stray'], style: { head: [], border: [] } });
    for (const [index, node] of fleet.nodes.entries()) {
      const nodeCheck = check.nodes[index]!;
      const groups = [...record.membersByGroup().keys()].length;
      const mark = (n: number) => (n === 0 ? color.green('0') : color.red(String(n)));
      const took = convergence.perNodeMs[index];
      convergenceTable.push([
        `${node.tunnel.node.name} (${node.tunnel.underlayAddress})`,
        took === undefined ? color.red('not in time') : `${took.toFixed(0)} ms`,
        String(groups),
        mark(nodeCheck.missing.length),
        mark(nodeCheck.stray.length),
      ]);
    }
    console.log(color.bold("\nEach node's OVS against who joined what (ovs-ofctl dump-flows and dump-groups on br-int):"));
    console.log(convergenceTable.toString());
    console.log(
      `Every group has a flow on every node: its member pods there, and a tunnel bucket toward each other node with members (${convergence.overallMs?.toFixed(0) ?? '-'} ms after the first query for the whole fleet).`,
    );

    console.log(color.bold('\n$ mcastctl status        (on node 1)'));
    console.log((await mcastctl(['status', '--control-socket', fleet.nodes[0]!.daemon!.controlSocket])).stdout.trimEnd());

    say(`${DELIVERY_GROUPS} groups get ${DATAGRAMS} datagrams each from a pod that is no member`);
    const delivery = await checkDelivery(fleet, record, { groups: DELIVERY_GROUPS, datagrams: DATAGRAMS, random: seededRandom(7) });
    const deliveryTable = new Table({ head: ['group', 'sender', 'members (node): datagrams received'], style: { head: [], border: [] } });
    for (const entry of delivery.perGroup) {
      deliveryTable.push([
        entry.group,
        entry.sender,
        entry.members
          .map((member) => `${member.pod} (${member.node}): ${member.received === DATAGRAMS ? color.green(String(member.received)) : color.red(String(member.received))}`)
          .join(', '),
      ]);
    }
    console.log(color.bold('\nWho received the datagrams:'));
    console.log(deliveryTable.toString());
    const ok1 = delivery.memberFaults.length === 0 && delivery.nonMemberFaults.length === 0 && delivery.shortPorts.length === 0;
    const nonMembers = delivery.nonMemberDatagrams === 0 ? color.green('0') : color.red(String(delivery.nonMemberDatagrams));
    console.log(`Datagrams that non-member pod ports of all ${nodes} nodes transmitted meanwhile (OVS tx counters): ${nonMembers}`);
    const verdict = 'Every node converged to exactly its members, and multicast reached the members on every node through the tunnel, and only them.';
    console.log(ok0 && ok1 ? color.green(`\n${verdict}`) : color.red('\nThe fleet was not as expected: see the tables.'));
    return ok0 && ok1 ? 0 : 1;
  } finally {
    await fleet?.stopDaemons();
    say('removing the lab');
    await lab.destroy();
  }
}

await runDemo('scripts/demo.sh fleet', main);
