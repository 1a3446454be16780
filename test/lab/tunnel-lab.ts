/**
 * The tunnel lab (docs/architecture.md, "The test lab"): three OVS nodes whose pods reach
 * each other only through a flow-based Geneve port on br-int, over an underlay that
 * carries no multicast at all (nftables bridge rules drop every IPv4 and IPv6 multicast
 * packet and count it).
 *
 * ```
 *   pods p<i>1 p<i>2 (10.20.<i>.11/.12) ─ br-int (netdev) ─ gw0 10.20.<i>.1
 *                                          └ tun0: geneve, options:remote_ip=flow
 *   node n<i>:  br-phy (netdev, standalone) ─ internal port br-phy 192.168.60.1<i>/24
 *                └ uplink veth mcl<id>n<i>u (its only other port)
 *                        │
 *   underlay ns: Linux bridge mcl<id>ul0, no address, snooping off;
 *                nftables "table bridge mcl_underlay": IPv4 and IPv6 multicast → counter drop
 * ```
 *
 * Why the node's underlay address sits on br-phy's internal port and not on the uplink
 * veth: the user-space datapath tunnels by OVS's own route and neighbour tables (read
 * from the node's kernel, `ovs-appctl ovs/route/show`), and with the address on the veth
 * the route picks the veth, which is the packet's input port: OVS logs "learned port is
 * input port" and drops. With the address on br-phy, the encapsulated packet leaves
 * through br-phy's NORMAL flow out of the uplink, and what arrives for that address is
 * decapsulated (tnl_pop) on its way to br-phy's LOCAL port.
 *
 * Options turn the lab toward an underlay that routes too: `underlayMulticast` makes the
 * nftables rule count IPv4 multicast and let it through (the nodes' kernels can then route
 * multicast between gw0 and br-phy, rp_filter being off there already: see buildNode),
 * `outsideHost` puts a host on ul0, `tunnelType: 'vxlan'` makes tun0 a VXLAN port, and
 * `dualStack` gives every pod an IPv6 address too (fd20:<k+1>::<11+j>/64).
 * buildTunnelNetwork builds the same with any number of nodes (the fleet lab's ten), and
 * addTunnelPod and removeTunnelPod change a node's pods afterwards.
 *
 * Nothing here programs br-int: its flows and groups are the test's (by hand with
 * ovs-ofctl, or by the daemon). Every name carries the lab's prefix or lives in a lab
 * namespace, and `lab.destroy()` removes it all.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sleep, waitUntil, type Host, type Lab, type LinuxBridge, type Tcpdump } from './lab.js';
import { type RunningDaemon, startDaemon } from './daemon.js';
import {
  OvsNode,
  sequences,
  udpEndpoint,
  type Datagram,
  type OvsGateway,
  type OvsPod,
  type UdpEndpoint,
} from './ovs.js';

/**
 * The lab's addressing. Node index k (0, 1, 2) is node `n<k+1>`; a lab of more nodes goes on the same way
 * (tunnelNodeAddressing).
 */
export const TUNNEL_LAB = {
  nodeNames: ['n1', 'n2', 'n3'],
  /** br-phy addresses (the nodes' `--node-address`). */
  underlayAddresses: ['192.168.60.11', '192.168.60.12', '192.168.60.13'],
  underlaySubnet: '192.168.60.0/24',
  podSubnets: ['10.20.1.0/24', '10.20.2.0/24', '10.20.3.0/24'],
  gateways: ['10.20.1.1', '10.20.2.1', '10.20.3.1'],
  /**
   * Pod j (0-based) of node k has `10.20.<k+1>.<11+j>`, and in a dual-stack lab `fd20:<k+1>::<11+j>` (hexadecimal) too.
   */
  firstPodHost: 11,
  physBridge: 'br-phy',
  tunnelPort: 'tun0',
  /** Geneve's IANA port: what tcpdump filters and tshark decodes as Geneve. */
  geneveUdpPort: 6081,
  /** VXLAN's IANA port (OVS's default for type=vxlan): what tshark decodes as VXLAN. */
  vxlanUdpPort: 4789,
  /** The outside host's address on the underlay (with `outsideHost`). */
  outsideHostAddress: '192.168.60.100',
  /** The nftables table in the underlay namespace. */
  nftTable: 'mcl_underlay',
  /** Geneve (or VXLAN) over IPv4: 14 inner Ethernet + 8 Geneve (or VXLAN) + 8 UDP + 20 IPv4. */
  encapsulationOverhead: 50,
} as const;

export type TunnelType = 'geneve' | 'vxlan';

/** At most this many nodes: their br-phy addresses stay below the outside host's on the underlay's /24. */
export const MAX_TUNNEL_NODES = 80;

/** What node index k (0-based) of a tunnel network is called and numbered: for k < 3 the same as TUNNEL_LAB's lists. */
export interface TunnelNodeAddressing {
  name: string;
  /** br-phy's address (the node's `--node-address`). */
  underlayAddress: string;
  /** The first three octets of the node's pod /24, e.g. `10.20.4`. */
  podNetwork: string;
  gateway: string;
}

export function tunnelNodeAddressing(index: number): TunnelNodeAddressing {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_TUNNEL_NODES)
    throw new RangeError(`bad node index ${index}`);
  return {
    name: `n${index + 1}`,
    underlayAddress: `192.168.60.${11 + index}`,
    podNetwork: `10.20.${index + 1}`,
    gateway: `10.20.${index + 1}.1`,
  };
}

export interface TunnelLabOptions {
  /**
   * Pods per node (default 2, at most MAX_PODS_PER_NODE): `p11`, `p12` on n1, `p21`, ... (`p<node>-<pod>` past 9 of
   * either).
   */
  podsPerNode?: number;
  /** MTU of every pod's eth0 and its node-side veth (default: the kernel's, 1,500). */
  podMtu?: number;
  /** MTU of the underlay path: ul0, the uplink veths (both ends) and br-phy (default: the kernel's, 1,500). */
  underlayMtu?: number;
  /**
   * The underlay carries IPv4 multicast: its nftables rule counts it and accepts it (default false: counted and
   * dropped).
   */
  underlayMulticast?: boolean;
  /** A host on ul0 at `TUNNEL_LAB.outsideHostAddress` that sends to and joins groups (default false). */
  outsideHost?: boolean;
  /** The type of tun0 (default geneve). */
  tunnelType?: TunnelType;
  /** Every pod has an IPv6 address too, its kernel sending MLDv2 (default false: IPv4 only). */
  dualStack?: boolean;
}

/** A host on the underlay with UDP sockets: `listen`/`receive`/`send` as pods have. */
export type OutsideHost = Host & UdpEndpoint;

/** buildTunnelNetwork's options: those of the three-node lab, and how many nodes. */
export interface TunnelNetworkOptions extends TunnelLabOptions {
  /** Nodes, each its own OVS on the underlay (default 3, at most MAX_TUNNEL_NODES). */
  nodeCount?: number;
}

/** Pods a node may have: their addresses are .11 to .254 of its /24. */
export const MAX_PODS_PER_NODE = 244;

export interface TunnelLabNode {
  /** 0-based: the node is `tunnelNodeAddressing(index)`. */
  index: number;
  node: OvsNode;
  /** The address on br-phy's internal port. */
  underlayAddress: string;
  /** Node-side uplink veth (a port of br-phy, in the node's namespace). */
  uplink: string;
  /** Underlay-side end of the uplink (a port of ul0, in the underlay namespace): where captures of "the wire" run. */
  uplinkPeer: string;
  gateway: OvsGateway;
  /** The flow-based tunnel port on br-int (Geneve unless the lab's `tunnelType` says otherwise). */
  tunnel: { name: string; ofport: number };
  pods: OvsPod[];
  /** Its pods have an IPv6 address too. */
  dualStack: boolean;
}

/** A tunnel network of any number of nodes (buildTunnelNetwork); the three-node lab is one (TunnelLab). */
export interface TunnelNetwork<Nodes extends readonly TunnelLabNode[] = TunnelLabNode[]> {
  underlayNs: string;
  underlay: LinuxBridge;
  nodes: Nodes;
  tunnelType: TunnelType;
  /** The UDP port of tun0's encapsulation on the wire (Geneve's or VXLAN's): what captures filter on. */
  tunnelUdpPort: number;
  /** With `outsideHost`: the host on ul0. */
  outside: OutsideHost | undefined;
  /**
   * Packets the underlay's multicast drop rule has dropped so far (with `underlayMulticast`: counted and let through).
   */
  multicastDropped(): Promise<number>;
}

export type TunnelLab = TunnelNetwork<[TunnelLabNode, TunnelLabNode, TunnelLabNode]>;

/** Builds the three-node tunnel lab in `lab` (which destroys it all). */
export async function buildTunnelLab(lab: Lab, options: TunnelLabOptions = {}): Promise<TunnelLab> {
  return (await buildTunnelNetwork(lab, { ...options, nodeCount: TUNNEL_LAB.nodeNames.length })) as TunnelLab;
}

/**
 * Builds a tunnel network of `nodeCount` nodes in `lab` (which destroys it all): the
 * three-node lab's topology with more nodes on the same underlay, node k addressed by
 * tunnelNodeAddressing(k).
 */
export async function buildTunnelNetwork(lab: Lab, options: TunnelNetworkOptions = {}): Promise<TunnelNetwork> {
  const podsPerNode = options.podsPerNode ?? 2;
  const nodeCount = options.nodeCount ?? TUNNEL_LAB.nodeNames.length;
  if (!Number.isInteger(podsPerNode) || podsPerNode < 0 || podsPerNode > MAX_PODS_PER_NODE)
    throw new RangeError(`bad podsPerNode ${podsPerNode}`);
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > MAX_TUNNEL_NODES)
    throw new RangeError(`bad nodeCount ${nodeCount}`);
  const underlayNs = await lab.namespace('ul');
  const underlay = await lab.linuxBridge(underlayNs, 'ul0', { snooping: false });
  await countMulticast(lab, underlayNs, options.underlayMulticast ? 'accept' : 'drop');
  const tunnelType = options.tunnelType ?? 'geneve';
  const nodes = await Promise.all(
    Array.from({ length: nodeCount }, (_, index) =>
      buildNode({
        lab,
        underlay,
        index,
        podsPerNode,
        podMtu: options.podMtu,
        tunnelType,
        dualStack: options.dualStack ?? false,
      }),
    ),
  );
  if (options.underlayMtu !== undefined) await setUnderlayMtu({ nodes, underlay }, options.underlayMtu);
  const outside = options.outsideHost ? await addOutsideHost(lab, underlay) : undefined;
  const tunnelUdpPort = tunnelType === 'vxlan' ? TUNNEL_LAB.vxlanUdpPort : TUNNEL_LAB.geneveUdpPort;
  return {
    underlayNs,
    underlay,
    nodes,
    tunnelType,
    tunnelUdpPort,
    outside,
    multicastDropped: () => multicastDropped(lab, underlayNs),
  };
}

/** The outside host: on ul0 at `TUNNEL_LAB.outsideHostAddress`, its multicast routed out of its one interface. */
async function addOutsideHost(lab: Lab, underlay: LinuxBridge): Promise<OutsideHost> {
  const host = await lab.host('out', { bridge: underlay, address: `${TUNNEL_LAB.outsideHostAddress}/24` });
  return Object.assign(host, udpEndpoint(lab, host.ns, { name: host.name }));
}

interface NodeBuild {
  lab: Lab;
  underlay: LinuxBridge;
  /** Node `n<index+1>`, addressed by tunnelNodeAddressing(index). */
  index: number;
  podsPerNode: number;
  podMtu: number | undefined;
  tunnelType: TunnelType;
  dualStack: boolean;
}

async function buildNode({
  lab,
  underlay,
  index,
  podsPerNode,
  podMtu,
  tunnelType,
  dualStack,
}: NodeBuild): Promise<TunnelLabNode> {
  const addressing = tunnelNodeAddressing(index);
  const node = await OvsNode.start(lab, addressing.name);
  // A pod may otherwise learn its gateway's address at the node-side end of its veth.
  await lab.sysctl(node.ns, 'net.ipv4.conf.all.arp_ignore', 1);
  // addGateway makes the node a router (rp_filter 0 for all and default): br-phy, made after, inherits 0, so the kernel
  // may route multicast in from it.
  const gateway = await node.addGateway({ address: `${addressing.gateway}/24` });
  const underlayAddress = addressing.underlayAddress;
  const { uplink, uplinkPeer } = await addPhysBridge(node, underlay, {
    address: underlayAddress,
  });
  const tunnel = await addTunnelPort(node, tunnelType);
  const n: TunnelLabNode = { index, node, underlayAddress, uplink, uplinkPeer, gateway, tunnel, pods: [], dualStack };
  // One at a time: pods' ofports then follow pod order.
  for (let j = 0; j < podsPerNode; j++) {
    const pod = await addTunnelPod(n);
    if (podMtu !== undefined) await setPodMtu(pod, podMtu);
  }
  return n;
}

/** The number of the next pod each node gets (0-based; never reused, so neither are names and addresses). */
const nextPodNumbers = new WeakMap<TunnelLabNode, number>();

/**
 * Adds a pod to node `n` (at the end of `n.pods`): pod j (0-based, counted over the node's
 * life) is `p<node><j+1>` (`p<node>-<j+1>` when either number passes 9) at
 * `<pod network>.<11+j>`, its gateway the node's.
 */
export async function addTunnelPod(n: TunnelLabNode): Promise<OvsPod> {
  const j = nextPodNumbers.get(n) ?? n.pods.length;
  if (j >= MAX_PODS_PER_NODE) throw new RangeError(`node ${n.node.name} has had ${j} pods: no address left`);
  nextPodNumbers.set(n, j + 1);
  const { podNetwork } = tunnelNodeAddressing(n.index);
  const name = n.index < 9 && j < 9 ? `p${n.index + 1}${j + 1}` : `p${n.index + 1}-${j + 1}`;
  const host = TUNNEL_LAB.firstPodHost + j;
  const address6 = n.dualStack ? { address6: `fd20:${n.index + 1}::${host.toString(16)}/64` } : {};
  const pod = await n.node.addPod(name, {
    address: `${podNetwork}.${host}/24`,
    gateway: n.gateway.address,
    ...address6,
  });
  n.pods.push(pod);
  return pod;
}

/** Removes pod from node `n` (and `n.pods`) the way a CNI plugin deletes one: its OVS port, then its namespace. */
export async function removeTunnelPod(n: TunnelLabNode, pod: OvsPod): Promise<void> {
  const at = n.pods.indexOf(pod);
  if (at < 0) throw new Error(`${pod.name} is no pod of ${n.node.name}`);
  n.pods.splice(at, 1);
  await n.node.removePod(pod);
}

interface PhysBridgeOptions {
  /** Without prefix length: the bridge is on the underlay's /24. */
  address: string;
}

/**
 * br-phy (netdev, fail-mode standalone, so its NORMAL flow switches), the uplink veth as
 * its port, the underlay address on its internal port. Resolves once OVS's own route
 * table has the underlay subnet on br-phy, which is what tunnelling looks up.
 */
async function addPhysBridge(
  node: OvsNode,
  underlay: LinuxBridge,
  options: PhysBridgeOptions,
): Promise<{ uplink: string; uplinkPeer: string }> {
  const { lab, ns } = node;
  const bridge = TUNNEL_LAB.physBridge;
  const uplink = lab.ifname(`${node.name}u`);
  const uplinkPeer = lab.ifname(`${node.name}up`);
  await lab.vethPair({ ns, name: uplink }, { ns: underlay.ns, name: uplinkPeer });
  await underlay.attach(uplinkPeer);
  const { stdout } = await lab.ip(ns, '-j', 'link', 'show', uplink);
  const mac = (JSON.parse(stdout) as { address: string }[])[0]!.address;
  await node.vsctl(
    'add-br',
    bridge,
    '--',
    'set',
    'bridge',
    bridge,
    'datapath_type=netdev',
    'fail_mode=standalone',
    `other_config:hwaddr="${mac}"`,
  );
  const mgmt = join(node.rundir, `${bridge}.mgmt`);
  await waitUntil(`${bridge}.mgmt in ${node.rundir}`, async () => existsSync(mgmt), 20_000, 20);
  await node.vsctl('add-port', bridge, uplink);
  await lab.ip(ns, 'link', 'set', uplink, 'up');
  await waitUntil(
    `the ${bridge} internal port in ${ns}`,
    async () => {
      await lab.ip(ns, 'link', 'show', bridge);
      return true;
    },
    20_000,
  );
  await lab.ip(ns, 'addr', 'add', `${options.address}/24`, 'dev', bridge);
  await lab.ip(ns, 'link', 'set', bridge, 'up');
  // Devices that send into the user-space datapath must fill their checksums (docs/architecture.md, "Open vSwitch").
  await lab.exec(ns, ['ethtool', '-K', bridge, 'tx', 'off']);
  await lab.exec(ns, ['ethtool', '-K', uplink, 'tx', 'off']);
  await lab.exec(underlay.ns, ['ethtool', '-K', uplinkPeer, 'tx', 'off']);
  const subnet = TUNNEL_LAB.underlaySubnet.replace(/[./]/g, (c) => `\\${c}`);
  const route = new RegExp(`${subnet} dev ${bridge}\\b`);
  await waitUntil(
    `OVS's route to ${TUNNEL_LAB.underlaySubnet} on ${bridge} in ${ns}`,
    async () => route.test(await node.appctl('ovs/route/show')),
    20_000,
    100,
  );
  return { uplink, uplinkPeer };
}

/** The flow-based tunnel port on br-int: every packet sent into it names its destination in tun_dst. */
async function addTunnelPort(node: OvsNode, type: TunnelType): Promise<{ name: string; ofport: number }> {
  const name = TUNNEL_LAB.tunnelPort;
  await node.vsctl(
    'add-port',
    node.bridge,
    name,
    '--',
    'set',
    'interface',
    name,
    `type=${type}`,
    'options:remote_ip=flow',
  );
  return { name, ofport: await node.ofportOf(name) };
}

/**
 * Sets the MTU of the whole underlay path: each node's br-phy and uplink veth, their
 * underlay ends, then ul0 (last: a bridge refuses an MTU above its ports' when raised).
 */
export async function setUnderlayMtu(tl: Pick<TunnelNetwork, 'nodes' | 'underlay'>, mtu: number): Promise<void> {
  checkMtu(mtu);
  const { lab, ns: underlayNs, name: bridge } = tl.underlay;
  for (const n of tl.nodes) {
    for (const device of [n.uplink, TUNNEL_LAB.physBridge])
      await lab.ip(n.node.ns, 'link', 'set', device, 'mtu', String(mtu));
    await lab.ip(underlayNs, 'link', 'set', n.uplinkPeer, 'mtu', String(mtu));
  }
  await lab.ip(underlayNs, 'link', 'set', bridge, 'mtu', String(mtu));
}

function checkMtu(mtu: number): void {
  if (!Number.isInteger(mtu) || mtu < 68 || mtu > 9000) throw new RangeError(`bad MTU ${mtu}`);
}

/** Sets the MTU of a pod's eth0 and of its node-side veth (e.g. 1,450, leaving room for the encapsulation). */
export async function setPodMtu(pod: OvsPod, mtu: number): Promise<void> {
  checkMtu(mtu);
  await pod.node.lab.ip(pod.ns, 'link', 'set', pod.iface, 'mtu', String(mtu));
  await pod.node.lab.ip(pod.node.ns, 'link', 'set', pod.port, 'mtu', String(mtu));
}

/**
 * Installs the underlay's rules: every bridged IPv4 packet to 224.0.0.0/4 and IPv6 packet
 * to ff00::/8 is counted, then dropped (or accepted). In the forward hook, so they hold for
 * frames between ports whatever their MAC address, and the bridge device itself is not
 * involved; a flooded frame is counted once for each port it leaves by.
 */
async function countMulticast(lab: Lab, ns: string, verdict: 'drop' | 'accept'): Promise<void> {
  const rules = `table bridge ${TUNNEL_LAB.nftTable} {
  chain multicast_filter {
    type filter hook forward priority 0; policy accept;
    ether type ip ip daddr 224.0.0.0/4 counter ${verdict}
    ether type ip6 ip6 daddr ff00::/8 counter ${verdict}
  }
}
`;
  await lab.exec(ns, ['nft', '-f', '-'], { input: rules });
}

interface NftRuleset {
  nftables: { rule?: { expr?: { counter?: { packets: number } }[] } }[];
}

async function multicastDropped(lab: Lab, ns: string): Promise<number> {
  const { stdout } = await lab.exec(ns, ['nft', '-j', 'list', 'table', 'bridge', TUNNEL_LAB.nftTable]);
  const ruleset = JSON.parse(stdout) as NftRuleset;
  const counters = ruleset.nftables
    .flatMap((entry) => entry.rule?.expr ?? [])
    .flatMap((expr) => (expr.counter ? [expr.counter.packets] : []));
  if (counters.length === 0)
    throw new Error(`no counter in nftables table bridge ${TUNNEL_LAB.nftTable} of ${ns}: ${stdout}`);
  return counters.reduce((sum, packets) => sum + packets, 0);
}

/**
 * argv: address port count intervalMs size tag. Datagram i is `<tag> <i> ` padded with `x` to exactly `size` octets.
 */
const SIZED_SENDER_PY = `
import socket, sys, time
address, port, count, interval, size, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) / 1000, int(sys.argv[5]), sys.argv[6]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
for i in range(count):
    if i: time.sleep(interval)
    s.sendto(f"{tag} {i} ".ljust(size, "x").encode(), (address, port))
print(f"sent {count}", flush=True)
`;

export interface SizedSendOptions {
  group: string;
  port: number;
  count: number;
  /** UDP payload octets (the datagram's IPv4 packet is 28 more). */
  size: number;
  /** Payload prefix (default: the pod's name). */
  tag?: string;
  /** Pause between datagrams (default 10 ms). */
  intervalMs?: number;
}

/**
 * Sends `count` UDP datagrams of exactly `size` payload octets from a pod (the lab's own
 * sender sends short ones). The pod's kernel fragments what exceeds eth0's MTU.
 */
export async function sendSized(pod: OvsPod, options: SizedSendOptions): Promise<void> {
  const tag = options.tag ?? pod.name;
  if (!/^[\w.-]+$/.test(tag)) throw new RangeError(`bad tag ${JSON.stringify(tag)}`);
  if (!Number.isInteger(options.size) || options.size < tag.length + 8 || options.size > 65_507)
    throw new RangeError(`bad size ${options.size}`);
  const argv = [
    options.group,
    String(options.port),
    String(options.count),
    String(options.intervalMs ?? 10),
    String(options.size),
    tag,
  ];
  await pod.node.lab.exec(pod.ns, ['python3', '-c', SIZED_SENDER_PY, ...argv]);
  // Let the last datagram cross three namespaces before anyone looks.
  await sleep(50);
}

/** Sequence numbers of datagrams tagged `tag` (payload `<tag> <n>`), in arrival order, duplicates kept. */
/**
 * Of datagrams 0..count-1 tagged `tag`: those that never came, and those that came more than once (both empty: exactly
 * once each).
 */
export function deliveryFaults(
  datagrams: readonly Datagram[],
  tag: string,
  count: number,
): { lost: number[]; duplicated: number[] } {
  const seen = new Map<number, number>();
  for (const n of sequences(datagrams, tag)) seen.set(n, (seen.get(n) ?? 0) + 1);
  const lost = Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  const duplicated = [...seen].filter(([, times]) => times > 1).map(([n]) => n);
  return { lost, duplicated };
}

/**
 * A tunnel-mode daemon on every node of `tl`, each given the network's own nodes as its
 * peers and routing nothing (no multicast interfaces, as on an underlay without
 * multicast), `args` after those; resolves once every one is ready.
 */
export async function startTunnelDaemons(
  tl: Pick<TunnelNetwork, 'nodes'>,
  args: readonly string[] = [],
): Promise<RunningDaemon[]> {
  const peers = tl.nodes.map((n) => n.underlayAddress).join(',');
  const daemons = tl.nodes.map((n) =>
    startDaemon(n.node, {
      gateway: n.gateway.name,
      multicastInterfaces: [],
      args: ['--tunnel-port', n.tunnel.name, '--peers', peers, '--node-address', n.underlayAddress, ...args],
    }),
  );
  await Promise.all(daemons.map((daemon) => daemon.ready()));
  return daemons;
}

/**
 * The tunnel-mode flags of a daemon on node `n` of the lab: every node is named a peer (its own address is no peer to
 * it).
 */
export function tunnelDaemonArgs(n: Pick<TunnelLabNode, 'tunnel' | 'underlayAddress'>): string[] {
  return [
    '--tunnel-port',
    n.tunnel.name,
    '--peers',
    TUNNEL_LAB.underlayAddresses.join(','),
    '--node-address',
    n.underlayAddress,
  ];
}

/**
 * tshark display filter of the encapsulated frames toward `node` (outer IPv4 destination) whose inner
 * destination is `group`, for the lab's tunnel type: ip.dst matches either IPv4 header, ipv6.dst the inner IPv6 one.
 */
export function encapsulatedFor(
  tl: Pick<TunnelNetwork, 'tunnelType'>,
  group: string,
  node: Pick<TunnelLabNode, 'underlayAddress'>,
): string {
  const inner = group.includes(':') ? `ipv6.dst == ${group}` : `ip.dst == ${group}`;
  return `${tl.tunnelType} && ip.dst == ${node.underlayAddress} && ${inner}`;
}

/** Starts a capture of the lab's tunnel traffic on the wire at each of `nodes` (the underlay end of its uplink). */
export function captureTunnelFrames(
  lab: Lab,
  tl: Pick<TunnelNetwork, 'underlayNs' | 'tunnelUdpPort'>,
  nodes: readonly TunnelLabNode[],
  label: string,
): Promise<Tcpdump[]> {
  return Promise.all(
    nodes.map((n) =>
      lab.startTcpdump(tl.underlayNs, n.uplinkPeer, lab.file(`${label}-${n.node.name}.pcap`), {
        filter: ['udp', 'port', String(tl.tunnelUdpPort)],
      }),
    ),
  );
}

/**
 * The peers node's OVS sends `group` toward: the tun_dst of every bucket of every OVS group a flow for `group`
 * points to (read with ovs-ofctl, an independent reader), sorted, once each.
 */
export async function tunnelDestinations(node: OvsNode, group: string): Promise<string[]> {
  const flows = (await node.ofctl('dump-flows', node.bridge)).split('\n');
  const ids = new Set(
    flows
      .filter((line) =>
        ['nw_dst', 'ipv6_dst'].some(
          (field) => line.includes(`${field}=${group} `) || line.includes(`${field}=${group},`),
        ),
      )
      .flatMap((line) => [...line.matchAll(/group:(\d+)/g)].map((match) => match[1]!)),
  );
  if (ids.size === 0) return [];
  const groups = (await node.ofctl('dump-groups', node.bridge)).split('\n');
  const destinations = groups
    .filter((line) => [...ids].some((id) => line.includes(`group_id=${id},`)))
    .flatMap((line) => [...line.matchAll(/set_field:(\d+\.\d+\.\d+\.\d+)->tun_dst/g)].map((match) => match[1]!));
  return [...new Set(destinations)].sort();
}

/** Waits until node's OVS sends `group` toward exactly `peers` (any order); resolves with the ms it took. */
export async function waitForTunnelDestinations(
  node: OvsNode,
  group: string,
  peers: readonly string[],
  timeoutMs = 5000,
): Promise<number> {
  const started = Date.now();
  const wanted = [...peers].sort().join(',');
  await waitUntil(
    `OVS of ${node.name} to send ${group} toward [${wanted}]`,
    async () => (await tunnelDestinations(node, group)).join(',') === wanted,
    timeoutMs,
    20,
  );
  return Date.now() - started;
}
