/**
 * Tunnel mode's part of the views: the status's tunnel (the port, the peers with their
 * contact and drops) and the groups with their remote members. Apart from the status and
 * groups views, which know nothing of peers, so that tunnel mode's views change alone.
 */
import { compareAddresses } from '../../../wire/ip-address.js';
import type { RemoteMembersView } from '../../../domain/peers/remote-members.js';
import type {
  GroupView,
  PeerDropReason,
  RemoteMemberView,
  TunnelView,
} from '../../../transport/control/daemon-view.js';
import type { RemoteMembersWithDrops } from '../tunnel/peer-counters.js';
import type { TunnelConfig } from '../config/config.js';
import type { DaemonClock } from '../loop/ports.js';

/** Monotonic milliseconds as ISO 8601 wall-clock time. */
function wallTimeOf(clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>): (mono: number) => string {
  const monoNow = clock.monotonicMs();
  const wallNow = clock.wallMs();
  return (mono) => new Date(wallNow - (monoNow - mono)).toISOString();
}

const PEER_DROP_REASONS: readonly PeerDropReason[] = [
  'unknown-peer',
  'self',
  'rate',
  'unsupported',
  'malformed',
  'refused',
  'unsealed',
  'unknown-key',
  'bad-seal',
  'replay',
  'stale',
  'over-rate',
];

/** A peer of the remote members' view, with its drops when the exchange counts them. */
type RemotePeer = RemoteMembersView['peers'][number] & { drops?: Partial<Record<PeerDropReason, number>> };

export interface TunnelViewInput {
  tunnel: TunnelConfig;
  /** The tunnel port's OpenFlow port number; undefined until OVSDB has it. */
  ofport: number | undefined;
  /** Why the port of that name cannot be the tunnel (not a flow-based tunnel); undefined when it can, or is absent. */
  portProblem?: string | undefined;
  /**
   * The remote members' view (PeerExchange.view()): lastContact in monotonic milliseconds;
   * each peer's drops and those of no peer when the exchange counts them apart.
   */
  remote: RemoteMembersView | RemoteMembersWithDrops;
  /** Messages from the tunnel dropped since start, by reason; a reason left out is 0. */
  drops: Partial<Record<PeerDropReason, number>>;
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
}

/**
 * The status's tunnel part: the port, this node's address, every configured peer (with its drops), the drops in all and
 * of no peer.
 */
export function tunnelViewOf(input: TunnelViewInput): TunnelView {
  const unattributedDrops = 'unattributedDrops' in input.remote ? input.remote.unattributedDrops : undefined;
  const iso = wallTimeOf(input.clock);
  const drops = Object.fromEntries(PEER_DROP_REASONS.map((reason) => [reason, input.drops[reason] ?? 0])) as Record<
    PeerDropReason,
    number
  >;
  return {
    port: input.tunnel.port,
    ofport: input.ofport ?? null,
    ...(input.portProblem === undefined ? {} : { portProblem: input.portProblem }),
    nodeAddress: input.tunnel.nodeAddress,
    authentication:
      input.tunnel.peerKeys === undefined
        ? 'address'
        : { keyFile: input.tunnel.peerKeys.file, keys: input.tunnel.peerKeys.ids },
    peers: input.remote.peers.map((peer: RemotePeer) => ({
      address: peer.address,
      state: peer.state,
      lastContact: peer.lastContact === null ? null : iso(peer.lastContact),
      members: peer.members,
      ...(peer.drops === undefined ? {} : { drops: { ...peer.drops } }),
    })),
    drops,
    ...(unattributedDrops === undefined ? {} : { unattributedDrops: { ...unattributedDrops } }),
  };
}

export interface RemoteGroupsInput {
  /** The groups with local members (groupViewsOf). */
  local: readonly GroupView[];
  remote: RemoteMembersView;
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
  /** As groupViewsOf's, for the groups with remote members only. */
  dirty: ReadonlySet<string> | ReadonlyMap<string, unknown>;
  syncErrors: ReadonlyMap<string, string>;
}

/**
 * The groups of tunnel mode: each local group with its remote members, and every group
 * with remote members only (forwarded into the tunnel from local senders), by address.
 */
export function withRemoteMembers(input: RemoteGroupsInput): GroupView[] {
  const iso = wallTimeOf(input.clock);
  const remoteOf = new Map<string, RemoteMemberView[]>();
  for (const { group, members } of input.remote.groups) {
    remoteOf.set(
      group,
      members.map((member) => ({
        peer: member.peer,
        lastRefresh: member.lastRefresh === null ? null : iso(member.lastRefresh),
        expiresInMs: member.expiresInMs,
      })),
    );
  }
  const views = input.local.map((view): GroupView => ({ ...view, remoteMembers: remoteOf.get(view.group) ?? [] }));
  const local = new Set(input.local.map((view) => view.group));
  for (const [group, remoteMembers] of remoteOf) {
    if (local.has(group)) continue;
    const error = input.syncErrors.get(group);
    views.push({
      group,
      ports: [],
      members: [],
      synced: !input.dirty.has(group) && error === undefined,
      ...(error === undefined ? {} : { error }),
      remoteMembers,
    });
  }
  return views.sort((a, b) => compareAddresses(a.group, b.group));
}
