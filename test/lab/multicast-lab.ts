/**
 * The multi-node multicast lab (docs/architecture.md, "The test lab"): two OVS nodes, each with a gateway
 * port, pods and an uplink into one underlay Linux bridge (IGMP snooping on, an IGMPv3
 * querier), and an external host on that underlay. Unicast routes between the nodes' pod
 * subnets go through the underlay; multicast between nodes and to the outside is what the
 * daemon adds (kernel multicast routing between gateway and uplink).
 *
 * ```
 *   pods a1 a2 (10.10.1.0/24)                        pods b1 b2 (10.10.2.0/24)
 *        │  │                                              │  │
 *   node a: br-int ── gw0 10.10.1.1                  node b: br-int ── gw0 10.10.2.1
 *           kernel ── uplink 192.168.50.11                   kernel ── uplink 192.168.50.12
 *                          │                                          │
 *                          └──── underlay bridge 192.168.50.1 ────────┘
 *                                (snooping, IGMPv3 querier)
 *                                          │
 *                                external host 192.168.50.100
 * ```
 *
 * With `ipv6`, every interface above is dual-stack too (pods fd00:10:1::11, gateways
 * fd00:10:1::1, uplinks fd00:50::11 and ::12, the underlay bridge fd00:50::1 with an MLDv2
 * querier beside its IGMPv3 one, the external host fd00:50::100), with the same routes.
 *
 * Every name carries the lab's prefix (namespaces `mcl<id>-a`, `mcl<id>-a-a1`,
 * `mcl<id>-ul`, `mcl<id>-ext`; interfaces `mcl<id>au`, ...), so two labs never collide.
 */
import { LabCommandError, type Host, type Lab, type LinuxBridge, type LinuxBridgeOptions, waitUntil } from './lab.js';
import { enableIpv6, waitForDad } from './mld-hosts.js';
import { OvsNode, udpEndpoint, type OvsGateway, type OvsPod, type UdpEndpoint, type Uplink } from './ovs.js';

/** The lab's addressing. Node i (0, 1) is named NODE_NAMES[i]. */
export const MULTICAST_LAB = {
  nodeNames: ['a', 'b'],
  /** Pod subnets of node a and b. */
  podSubnets: ['10.10.1.0/24', '10.10.2.0/24'],
  /** Gateway (gw0) addresses of node a and b. */
  gateways: ['10.10.1.1', '10.10.2.1'],
  /** Pod j (0-based) of node i has `10.10.<i+1>.<11+j>`. */
  firstPodHost: 11,
  underlaySubnet: '192.168.50.0/24',
  /** The underlay bridge's own address (its querier's source). */
  underlayBridge: '192.168.50.1',
  /** Uplink addresses of node a and b. */
  uplinks: ['192.168.50.11', '192.168.50.12'],
  external: '192.168.50.100',
  /** The same places in IPv6 (the `ipv6` option): pod j of node i has `fd00:10:<i+1>::<11+j>`. */
  podSubnets6: ['fd00:10:1::/64', 'fd00:10:2::/64'],
  gateways6: ['fd00:10:1::1', 'fd00:10:2::1'],
  underlayBridge6: 'fd00:50::1',
  uplinks6: ['fd00:50::11', 'fd00:50::12'],
  external6: 'fd00:50::100',
} as const;

export interface MulticastLabOptions {
  /** Pods per node (default 2): `a1`, `a2`, ... on node a, `b1`, ... on node b. */
  podsPerNode?: number;
  /** An external host on the underlay (default true). */
  external?: boolean;
  /** The underlay bridge's IGMP querier (default true). */
  underlayQuerier?: boolean;
  /** Overrides of the underlay bridge's multicast settings. */
  underlay?: LinuxBridgeOptions;
  /** force_igmp_version of every pod (default: the kernel's, v3). */
  podIgmpVersion?: 1 | 2 | 3;
  /** Dual-stack: IPv6 addresses and routes beside the IPv4 ones, MLD on the underlay (default false). */
  ipv6?: boolean;
}

export interface MulticastLabNode {
  node: OvsNode;
  gateway: OvsGateway;
  uplink: Uplink;
  pods: OvsPod[];
  /** This node's pod subnet (CIDR). */
  podSubnet: string;
}

/** A host on the underlay with UDP sockets: `listen`/`receive`/`send` as pods have. */
export type ExternalHost = Host & UdpEndpoint & { /** With the lab's `ipv6`. */ address6?: string };

export interface MulticastLab {
  underlay: LinuxBridge;
  nodes: [MulticastLabNode, MulticastLabNode];
  /** Undefined with `external: false`. */
  external: ExternalHost | undefined;
}

/**
 * The underlay bridge's defaults: snooping, an IGMPv3 querier (a v2 querier would turn the
 * nodes' kernels to v2 for 260 s) with a 2 s query interval and a 1 s response interval (a
 * Linux bridge whose querier just started floods for one response interval), membership
 * interval by RFC 3376's formula (2 × 2 s + 1 s).
 */
export const UNDERLAY_BRIDGE_DEFAULTS: LinuxBridgeOptions = {
  snooping: true,
  igmpVersion: 3,
  queryIntervalMs: 2000,
  queryResponseIntervalMs: 1000,
  startupQueryIntervalMs: 500,
  startupQueryCount: 2,
  lastMemberIntervalMs: 500,
  lastMemberCount: 2,
  membershipIntervalMs: 5000,
  mldVersion: 2,
};

/** Builds the two-node lab in `lab` (which destroys it all). Takes about 2-3 s. */
export async function buildMulticastLab(lab: Lab, options: MulticastLabOptions = {}): Promise<MulticastLab> {
  const podsPerNode = options.podsPerNode ?? 2;
  if (!Number.isInteger(podsPerNode) || podsPerNode < 0 || podsPerNode > 200)
    throw new RangeError(`bad podsPerNode ${podsPerNode}`);
  const A = MULTICAST_LAB;

  // The underlay: its querier is switched on last, so that every port hears its startup queries.
  const underlayNs = await lab.namespace('ul');
  await lab.sysctl(underlayNs, 'net.ipv4.igmp_link_local_mcast_reports', 0);
  const underlay = await lab.linuxBridge(underlayNs, 'ul', {
    ...UNDERLAY_BRIDGE_DEFAULTS,
    ...options.underlay,
    querier: false,
    address: `${A.underlayBridge}/24`,
  });
  const ipv6 = options.ipv6 ?? false;
  if (ipv6) {
    // The bridge's MLD queries come from its link-local address: IPv6 on for the device.
    await enableIpv6(lab, underlayNs, underlay.name, 0);
    await lab.ip(underlayNs, '-6', 'addr', 'add', `${A.underlayBridge6}/64`, 'dev', underlay.name);
    await waitForDad(lab, underlayNs, underlay.name, [A.underlayBridge6]);
  }

  const nodes = (await Promise.all(
    A.nodeNames.map(async (name, index): Promise<MulticastLabNode> => {
      const node = await OvsNode.start(lab, name);
      await lab.sysctl(node.ns, 'net.ipv4.igmp_link_local_mcast_reports', 0);
      const gateway = await node.addGateway({
        address: `${A.gateways[index]}/24`,
        ...(ipv6 ? { address6: `${A.gateways6[index]}/64` } : {}),
      });
      const uplink = await node.addUplink(underlay, {
        address: `${A.uplinks[index]}/24`,
        ...(ipv6 ? { address6: `${A.uplinks6[index]}/64` } : {}),
      });
      await node.addRoute(A.podSubnets[1 - index]!, A.uplinks[1 - index]!);
      if (ipv6) await node.addRoute(A.podSubnets6[1 - index]!, A.uplinks6[1 - index]!);
      const subnet = A.podSubnets[index]!.split('.').slice(0, 3).join('.');
      const subnet6 = A.podSubnets6[index]!.replace('::/64', '');
      const pods = await Promise.all(
        Array.from({ length: podsPerNode }, (_, j) =>
          node.addPod(`${name}${j + 1}`, {
            address: `${subnet}.${A.firstPodHost + j}/24`,
            ...(ipv6 ? { address6: `${subnet6}::${A.firstPodHost + j}/64` } : {}),
            gateway: gateway.address,
            ...(options.podIgmpVersion === undefined ? {} : { igmpVersion: options.podIgmpVersion }),
          }),
        ),
      );
      // addPod ran in parallel: keep node.pods in pod order too.
      node.pods.sort((x, y) => pods.indexOf(x) - pods.indexOf(y));
      return { node, gateway, uplink, pods, podSubnet: A.podSubnets[index]! };
    }),
  )) as [MulticastLabNode, MulticastLabNode];

  let external: ExternalHost | undefined;
  if (options.external ?? true) {
    const host = await lab.host('ext', { bridge: underlay, address: `${A.external}/24` });
    await lab.sysctl(host.ns, 'net.ipv4.igmp_link_local_mcast_reports', 0);
    for (const [index, subnet] of A.podSubnets.entries())
      await lab.ip(host.ns, 'route', 'add', subnet, 'via', A.uplinks[index]!);
    external = Object.assign(host, udpEndpoint(lab, host.ns, { name: host.name, interfaceName: host.iface }));
    if (ipv6) {
      await enableIpv6(lab, host.ns, host.iface, 0);
      await lab.ip(host.ns, '-6', 'addr', 'add', `${A.external6}/64`, 'dev', host.iface);
      await waitForDad(lab, host.ns, host.iface, [A.external6]);
      for (const [index, subnet] of A.podSubnets6.entries())
        await lab.ip(host.ns, '-6', 'route', 'add', subnet, 'via', A.uplinks6[index]!);
      external.address6 = A.external6;
    }
  }

  if (options.underlayQuerier ?? true) await underlay.set({ querier: true });
  return { underlay, nodes, external };
}

/** Waits until the underlay bridge's snooping table has `group` on bridge port `port`. */
export async function waitForUnderlayMember(
  ml: MulticastLab,
  lab: Lab,
  group: string,
  port: string,
  timeoutMs = 8000,
): Promise<void> {
  await waitUntil(
    `the underlay bridge to learn ${group} on ${port}`,
    async () => {
      const { stdout } = await lab.exec(ml.underlay.ns, ['bridge', '-j', 'mdb', 'show', 'dev', ml.underlay.name]);
      const tables = JSON.parse(stdout) as Array<{ mdb?: Array<{ port?: string; grp?: string }> }>;
      return tables.some((table) => (table.mdb ?? []).some((entry) => entry.port === port && entry.grp === group));
    },
    timeoutMs,
    100,
  );
}

/**
 * argv: address timeoutMs. ICMP echo over a raw socket (this machine has no `ping`): one
 * request a second until a reply from `address` comes (prints the round trip in ms, exit
 * 0) or the time is up (exit 1).
 */
const PING_PY = `
import os, select, socket, struct, sys, time
dst, timeout = sys.argv[1], float(sys.argv[2]) / 1000
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident = os.getpid() & 0xffff
def checksum(b):
    if len(b) % 2: b += b"\\0"
    total = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while total >> 16: total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff
start = time.monotonic()
seq = 0
next_send = start
while True:
    now = time.monotonic()
    if now - start > timeout: sys.exit(1)
    if now >= next_send:
        seq += 1
        body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"mcl-lab-ping"
        s.sendto(body[:2] + struct.pack("!H", checksum(body)) + body[4:], (dst, 0))
        sent = now
        next_send = now + 1
    readable, _, _ = select.select([s], [], [], max(0, min(next_send, start + timeout) - time.monotonic()))
    if not readable: continue
    data, (src, _) = s.recvfrom(65535)
    ihl = (data[0] & 15) * 4
    if len(data) < ihl + 8: continue
    kind, _, _, rid, _ = struct.unpack("!BBHHH", data[ihl:ihl + 8])
    if kind == 0 and rid == ident and src == dst:
        print(f"{(time.monotonic() - sent) * 1000:.3f}", flush=True)
        sys.exit(0)
`;

/**
 * ICMP echo from namespace `ns` to `address`: resolves with the round trip (ms), rejects
 * if no reply came within `timeoutMs` (default 3 s).
 */
export async function ping(lab: Lab, ns: string, address: string, timeoutMs = 3000): Promise<number> {
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(address)) throw new RangeError(`not an IPv4 address: ${JSON.stringify(address)}`);
  try {
    const { stdout } = await lab.exec(ns, ['python3', '-c', PING_PY, address, String(timeoutMs)], {
      timeoutMs: timeoutMs + 5000,
    });
    return Number(stdout.trim());
  } catch (error) {
    if (error instanceof LabCommandError && error.exitCode === 1)
      throw new Error(`no ICMP echo reply from ${address} to ${ns} within ${timeoutMs} ms`);
    throw error;
  }
}
