/**
 * The fleet lab: the tunnel lab (test/lab/tunnel-lab.ts) at the scale of a small cluster.
 * N nodes (default 10) on one underlay that carries no multicast, each its own
 * ovsdb-server and ovs-vswitchd (user-space datapath) with br-int, tun0 (flow-based
 * Geneve, or VXLAN) and br-phy, P pods each (default 5, real kernel hosts in namespaces),
 * and, once startDaemons() ran, an `mcastctl daemon` in tunnel mode on every node with
 * every other node as a peer, all sealing with one cluster key (--peer-key-file).
 *
 * Every pod runs one long-lived member.py (test/lab/member.ts) from the start: joins and
 * leaves are commands on its stdin, so a membership change costs a line, not a process,
 * and the pod's IGMP is its own kernel's. Its group sockets are bound to FLEET.udpPort, so
 * the same helper counts what a member received.
 *
 * Pods come and go while the fleet runs (addPod, removePod: a new veth, OVS port and
 * namespace; or the port, then the namespace, removed the way a CNI plugin deletes a pod).
 * Everything lives under the lab's prefix, and `lab.destroy()` removes it all, daemons
 * included, also when a test fails.
 */
import { randomBytes } from 'node:crypto';
import { startDaemon, type RunningDaemon } from './daemon.js';
import { writePeerKeyFile } from './tunnel-replay.js';
import type { Lab } from './lab.js';
import { Member } from './member.js';
import type { OvsPod } from './ovs.js';
import {
  addTunnelPod,
  buildTunnelNetwork,
  removeTunnelPod,
  type TunnelLabNode,
  type TunnelNetwork,
  type TunnelType,
} from './tunnel-lab.js';

export const FLEET = {
  nodes: 10,
  podsPerNode: 5,
  /** The UDP port every member's group sockets are bound to, and senders send to. */
  udpPort: 5400,
} as const;

export interface FleetOptions {
  /** Nodes (default 10). */
  nodes?: number;
  /** Pods each node starts with (default 5). */
  podsPerNode?: number;
  tunnelType?: TunnelType;
  /**
   * Extra daemon arguments, after the fleet's own (a repeated flag given here wins where the CLI takes the last one).
   */
  daemonArgs?: string[];
}

/** A pod of the fleet with its member helper. */
export interface FleetPod {
  readonly pod: OvsPod;
  readonly node: FleetNode;
  readonly member: Member;
}

export interface FleetNode {
  readonly tunnel: TunnelLabNode;
  /** The node's pods now (addPod and removePod keep it current). */
  readonly pods: FleetPod[];
  /** The node's daemon, once startDaemons() ran. */
  daemon: RunningDaemon | undefined;
}

export interface Fleet {
  readonly lab: Lab;
  readonly network: TunnelNetwork;
  readonly nodes: readonly FleetNode[];
  /** Every pod of every node now. */
  pods(): FleetPod[];
  /** Starts a daemon on every node (resolves once spawned; `ready()` each to wait for them). */
  startDaemons(): RunningDaemon[];
  /** A new pod on `node` with its member helper (in no group yet). */
  addPod(node: FleetNode): Promise<FleetPod>;
  /**
   * Deletes `pod` as a CNI plugin would: its OVS port first, then its namespace (the member helper dies with it,
   * leaving nothing behind on the wire).
   */
  removePod(pod: FleetPod): Promise<void>;
  /** Stops every daemon (SIGTERM). */
  stopDaemons(): Promise<void>;
}

/** The daemon's arguments on node `n` of `network`: tunnel mode with every other node as a peer. */
export function fleetDaemonArgs(network: TunnelNetwork, n: TunnelLabNode, extra: readonly string[] = []): string[] {
  return [
    ...[
      '--tunnel-port',
      n.tunnel.name,
      '--peers',
      network.nodes.map((node) => node.underlayAddress).join(','),
      '--node-address',
      n.underlayAddress,
    ],
    // The startup general query is the one the fleet's convergence is measured from; the next comes after any run (and
    // a pod's own state changes carry the churn).
    ...['--query-interval', '600s', '--query-response-interval', '1s'],
    ...extra,
  ];
}

/** Builds the fleet in `lab` (which destroys it all); the daemons start with startDaemons(). */
export async function buildFleet(lab: Lab, options: FleetOptions = {}): Promise<Fleet> {
  const network = await buildTunnelNetwork(lab, {
    nodeCount: options.nodes ?? FLEET.nodes,
    podsPerNode: options.podsPerNode ?? FLEET.podsPerNode,
    tunnelType: options.tunnelType ?? 'geneve',
  });
  const startMember = (pod: OvsPod) => Member.start(lab, pod, { port: FLEET.udpPort });
  // One cluster key for the fleet, as a fleet runs: every membership message between the nodes is sealed.
  const keyFile = lab.file('fleet-peer-keys');
  writePeerKeyFile(keyFile, [randomBytes(32).toString('hex')]);
  const nodes: FleetNode[] = network.nodes.map((tunnel) => ({ tunnel, pods: [], daemon: undefined }));
  await Promise.all(
    nodes.map(async (node) => {
      for (const pod of node.tunnel.pods) node.pods.push({ pod, node, member: await startMember(pod) });
    }),
  );
  return {
    lab,
    network,
    nodes,
    pods: () => nodes.flatMap((node) => node.pods),
    startDaemons: () =>
      nodes.map(
        (node) =>
          (node.daemon = startDaemon(node.tunnel.node, {
            gateway: node.tunnel.gateway.name,
            // The underlay carries no multicast: nothing to join upstream, nothing to route.
            multicastInterfaces: [],
            args: fleetDaemonArgs(network, node.tunnel, ['--peer-key-file', keyFile, ...(options.daemonArgs ?? [])]),
          })),
      ),
    async addPod(node) {
      const pod = await addTunnelPod(node.tunnel);
      const added: FleetPod = { pod, node, member: await startMember(pod) };
      node.pods.push(added);
      return added;
    },
    async removePod(fleetPod) {
      const { node } = fleetPod;
      const at = node.pods.indexOf(fleetPod);
      if (at < 0) throw new Error(`${fleetPod.pod.name} is no pod of ${node.tunnel.node.name}`);
      node.pods.splice(at, 1);
      await removeTunnelPod(node.tunnel, fleetPod.pod);
    },
    async stopDaemons() {
      await Promise.all(nodes.map((node) => node.daemon?.stop()));
    },
  };
}
