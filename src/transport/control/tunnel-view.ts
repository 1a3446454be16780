/** Tunnel mode's part of the daemon's status (DaemonStatus.tunnel, ./daemon-view.ts): the port, peers, drops. */

/**
 * Why a message from the tunnel was dropped: a sender not in the peer list, this node itself, past the answer rate,
 * IGMP v1/v2, undecodable, or refused past maxGroupsPerPeer or the node's maxGroups; with a peer key file, a message
 * without a seal, sealed with a key this node does not hold, with a code that is not the peer's (forged or altered),
 * seen already (a replay), or sealed too far from this node's clock; or past the tunnel's budget (its meter in the
 * switch, then the daemon's own: over-rate).
 */
export type PeerDropReason =
  | 'unknown-peer'
  | 'self'
  | 'rate'
  | 'unsupported'
  | 'malformed'
  | 'refused'
  | 'unsealed'
  | 'unknown-key'
  | 'bad-seal'
  | 'replay'
  | 'stale'
  | 'over-rate';

export interface TunnelView {
  /** The tunnel port's name, and its OpenFlow port number (null until OVSDB has it). */
  port: string;
  ofport: number | null;
  /**
   * Why the port of that name on the bridge cannot carry frames to the peers (then ofport is null); absent when it can
   * or is not there.
   */
  portProblem?: string;
  nodeAddress: string;
  /**
   * How a peer's messages are believed: sealed with the keys of the peer key file (their ids, the sealing key's
   * first), or by their outer source address alone (absent from older daemons: by address).
   */
  authentication?: { keyFile: string; keys: string[] } | 'address';
  peers: PeerView[];
  /** Messages from the tunnel dropped since start, by reason. */
  drops: Record<PeerDropReason, number>;
  /** Of those, the ones from a sender that is no configured peer, or that names none (absent from older daemons). */
  unattributedDrops?: Partial<Record<PeerDropReason, number>>;
}

export interface PeerView {
  address: string;
  /** unknown: not heard from since the daemon started; up: heard within the peer timeout; down: silent longer. */
  state: 'unknown' | 'up' | 'down';
  /** ISO 8601 of its last message; null: none yet. */
  lastContact: string | null;
  /** Groups it is a member of on this node. */
  members: number;
  /** Its messages dropped since it joined the peer list, by reason (absent from older daemons). */
  drops?: Partial<Record<PeerDropReason, number>>;
}
