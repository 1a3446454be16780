/**
 * One group across the nodes of a tunnel-mode cluster, as one node sees it: the peers
 * (other nodes) with members of each group, from the reports they send each other
 * through the tunnel, and this node's own member pods. Put together from the daemon's
 * status and groups views: what `mcastctl groups --cluster` prints.
 */
import { compareAddresses } from '../../wire/ip-address.js';
import type { DaemonStatus, GroupView, PeerView } from './daemon-view.js';

/** This node, when it has members of the group. */
interface LocalNodeMembers {
  node: string;
  self: true;
  /** Its member pods ("namespace/name"; a port's name where it names no pod), sorted. */
  pods: string[];
}

/** A peer with members of the group. */
interface PeerNodeMembers {
  node: string;
  self: false;
  /** up: heard within the peer timeout; down: silent longer (its memberships end then); unknown: never heard. */
  state: PeerView['state'];
  /** ISO 8601: its last report of the group; null for one restored from the saved state, not yet confirmed. */
  lastReport: string | null;
  /** Until the membership ends unless the peer reports it again. */
  expiresInMs: number;
}

interface ClusterGroupView {
  group: string;
  /** This node first (when it has members), then the peers by address. */
  nodes: Array<LocalNodeMembers | PeerNodeMembers>;
}

export interface ClusterView {
  /** This node's underlay address. */
  node: string;
  /** Every configured peer, by address, with its state and last contact. */
  peers: PeerView[];
  /** Groups with members on some node, by address. */
  groups: ClusterGroupView[];
}

/** The cluster as `status` (its tunnel part) and `groups` tell it; undefined when the daemon is not in tunnel mode. */
export function clusterViewOf(status: DaemonStatus, groups: readonly GroupView[]): ClusterView | undefined {
  const tunnel = status.tunnel;
  if (tunnel === undefined) return undefined;
  const peers = [...tunnel.peers].sort((a, b) => compareAddresses(a.address, b.address));
  const stateOf = new Map(peers.map((peer) => [peer.address, peer.state]));
  const rows: ClusterGroupView[] = [];
  for (const view of groups) {
    const nodes: ClusterGroupView['nodes'] = [];
    if (view.members.length > 0) {
      const pods = [...new Set(view.members.map((member) => member.port.pod ?? member.port.name))].sort();
      nodes.push({ node: tunnel.nodeAddress, self: true, pods });
    }
    const remote = [...(view.remoteMembers ?? [])].sort((a, b) => compareAddresses(a.peer, b.peer));
    for (const member of remote) {
      nodes.push({
        node: member.peer,
        self: false,
        state: stateOf.get(member.peer) ?? 'unknown',
        lastReport: member.lastRefresh,
        expiresInMs: member.expiresInMs,
      });
    }
    if (nodes.length > 0) rows.push({ group: view.group, nodes });
  }
  rows.sort((a, b) => compareAddresses(a.group, b.group));
  return { node: tunnel.nodeAddress, peers, groups: rows };
}
