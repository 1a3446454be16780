/**
 * Tunnel mode's layout of a group: multicast between nodes over one flow-based tunnel
 * port (options:remote_ip=flow). The group's chain keeps its one ALL group per link:
 *
 *   link 0   output:<gateway>                     when the group has any member, local or remote
 *            set_field:<peer>->tun_dst,output:<tunnel>   one per peer that wants it (sorted, once each)
 *            group:<link 1>                       when it has pod members
 *   link 1.. output:<pod> ...                     the pod ports only, chained as without a tunnel
 *
 * Flow 200 (every other in_port: the pods) goes to link 0. What comes in from the tunnel
 * or from the gateway takes a per-group ingress flow (priority ingress, 270) to link 1, so
 * it reaches the local pods only: never the tunnel again (no hop over a second node, no
 * loop, whatever the peer lists say) and never the gateway (each node's kernel routes
 * outside traffic itself). Without pod members there is no ingress flow, and the
 * catch-all drops (tunnelDrop 260, gatewayDrop 245) take that traffic.
 *
 * An (S,G) entry lays out the same way with its own ids: link 0 holds the gateway and every
 * peer that wants the group (peers announce groups, not sources, and filter at their own
 * pods), link 1.. the pods that want the source. Its ingress flows (sourceIngress, 275, above
 * the group's) go to its link 1, or drop when no pod wants the source, which the group's
 * ingress flow would otherwise deliver to the pods of every other source.
 *
 * The gateway stays in link 0 with remote members only: flow 200 then shadows the
 * unknown-group flow to the gateway (190), and receivers outside would otherwise lose
 * the group as soon as a peer joined it.
 */
import { UsageError } from '../../errors.js';
import { group as groupAction, output } from '../../protocol/openflow/action.js';
import { bucket, bucketLength } from '../../protocol/openflow/bucket.js';
import { GROUP_MOD_FIXED_LENGTH } from '../../protocol/openflow/group-mod.js';
import { MAX_MESSAGE_LENGTH } from '../../protocol/openflow/header.js';
import { TUNNEL_BUCKET_LENGTH } from '../../protocol/openflow/limits.js';
import { compareAddresses, type HostAddress } from '../../wire/ip-address.js';
import { type ForwardingTarget, forwardingKey } from './forwarding-key.js';
import type { Bucket, FlowEntry, GroupMembership, InstalledGroup, PipelineLimits } from './pipeline-entries.js';

/**
 * Octets of a bucket of one OUTPUT (the gateway's) and of one GROUP action (the jump to link 1), as the codec encodes
 * them.
 */
const OUTPUT_BUCKET_LENGTH = bucketLength(bucket([output(0)]));
const GROUP_BUCKET_LENGTH = bucketLength(bucket([groupAction(0)]));

/**
 * The most peers link 0 carries next to the gateway bucket and the jump to link 1: what
 * fits in one GROUP_MOD by their real sizes (1,363 of 48 octets), and within the
 * switch's bucket count. Link 0 is never chained: a packet would reach later links only
 * through earlier ones, and every peer is as urgent as the first.
 */
export function maxTunnelPeers(limits: PipelineLimits): number {
  const room = MAX_MESSAGE_LENGTH - GROUP_MOD_FIXED_LENGTH - OUTPUT_BUCKET_LENGTH - GROUP_BUCKET_LENGTH;
  return Math.max(0, Math.min(Math.floor(room / TUNNEL_BUCKET_LENGTH), limits.maxBucketsPerGroup - 2));
}

/** Peers by address, each once. */
function uniquePeers(peers: readonly HostAddress[]): HostAddress[] {
  return [...new Set(peers)].sort(compareAddresses);
}

export interface TunnelLayout {
  /** The pod ports, sorted, once each: what links 1.. output to. */
  pods: number[];
  /** The peers, sorted, once each: link 0's tunnel buckets. */
  peers: HostAddress[];
  /** The in_ports of the group's ingress flows: the tunnel, then the gateway (if any). */
  ingressPorts: number[];
  /** Link 0's buckets, given link 1's id (undefined: no pod member, no jump). */
  headBuckets(linkOne: number | undefined): Bucket[];
}

/** How a membership with `tunnel` lays out. Throws UsageError when more peers want the group than link 0 carries. */
export function tunnelLayout(membership: GroupMembership, limits: PipelineLimits): TunnelLayout {
  const tunnel = membership.tunnel;
  if (tunnel === undefined) throw new RangeError(`${membership.group} has no tunnel members`);
  const gateway = membership.gateway;
  const pods = [...new Set(membership.ports)]
    .filter((port) => port !== gateway && port !== tunnel.ofport)
    .sort((a, b) => a - b);
  const peers = uniquePeers(tunnel.peers);
  const maxPeers = maxTunnelPeers(limits);
  if (peers.length > maxPeers) {
    throw new UsageError(
      `${membership.group} is wanted by ${peers.length} peers; one OVS group carries at most ${maxPeers} tunnel buckets`,
      {
        hint: 'give fewer peers',
      },
    );
  }
  const hasMember = pods.length > 0 || peers.length > 0;
  return {
    pods,
    peers,
    ingressPorts: gateway === undefined ? [tunnel.ofport] : [tunnel.ofport, gateway],
    headBuckets: (linkOne) => [
      ...(gateway !== undefined && hasMember ? [{ type: 'output', port: gateway } as const] : []),
      ...peers.map((peer): Bucket => ({ type: 'output', port: tunnel.ofport, tunnelDestination: peer })),
      ...(linkOne === undefined ? [] : [{ type: 'group', groupId: linkOne } as const]),
    ],
  };
}

/**
 * Gives each installed entry, (*,G) or (S,G), the ingress flows that forward it
 * (`targetOf`: the entry a flow's match and cookie name, or undefined), in in_port
 * order. Returns the flows of no installed entry: ours, and to be removed.
 */
export function attachIngress(
  installed: InstalledGroup[],
  flows: readonly FlowEntry[],
  targetOf: (flow: FlowEntry) => ForwardingTarget | undefined,
): FlowEntry[] {
  const byKey = new Map(installed.map((entry) => [forwardingKey(entry), entry]));
  const strays: FlowEntry[] = [];
  for (const flow of flows) {
    const target = targetOf(flow);
    const owner = target === undefined ? undefined : byKey.get(forwardingKey(target));
    if (owner === undefined) strays.push(flow);
    else (owner.ingress ??= []).push(flow);
  }
  for (const entry of installed) entry.ingress?.sort((a, b) => (a.match.inPort ?? -1) - (b.match.inPort ?? -1));
  return strays;
}
