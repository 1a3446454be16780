/**
 * Which nodes are this node's peers in tunnel mode: the peer source, the daemon's one
 * way of learning them. The flags' list and the peers file are today's
 * (src/controllers/daemon/config/peers-loader.ts); another source (a Kubernetes watch of
 * the nodes, a service registry) is one more module that gives a PeerSet, and one line
 * in the composition root (src/cli/commands/daemon.ts).
 */
import type { HostAddress } from '../../wire/ip-address.js';
import type { PeerSet } from './peer-set.js';

export interface PeerSource {
  /** How a log line names it: `--peers`, `peers file /etc/mcastctl/peers`. */
  readonly label: string;
  /**
   * The peers now, normalised against this node's address (never among them). Throws a
   * UsageError for a source that cannot be read or is bad: the caller keeps the peers it has.
   */
  read(nodeAddress: HostAddress): Promise<PeerSet>;
  /**
   * Watches for changes the source makes by itself (a file written), calling `changed`
   * once a burst of them is over; absent for a source that never changes (a list given once).
   */
  watch?(changed: () => void, failed: (error: Error) => void): { close(): void };
}

/** A list given once (the --peers flag): the same peers at every read. */
export function fixedPeers(peers: readonly HostAddress[]): PeerSource {
  return {
    label: '--peers',
    read: async (nodeAddress) => ({
      peers: peers.filter((peer) => peer !== nodeAddress),
      duplicates: [],
      droppedSelf: [],
    }),
  };
}
