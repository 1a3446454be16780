/**
 * What tunnel mode's exchange (./peer-exchange.ts) counts: the messages in and out, the
 * send errors, and the frames from the tunnel it dropped, by reason for the whole node and,
 * when a configured peer sent them, by peer too. A drop from a sender that is no configured
 * peer (or from a frame that names no sender) is counted apart, never by its address: a
 * hostile sender must not add keys, nor the metrics series made from them.
 */
import type { RemoteMembersView } from '../../../domain/peers/remote-members.js';
import type { PeerDropReason } from '../../../transport/control/daemon-view.js';
import type { HostAddress } from '../../../wire/ip-address.js';

/** What the exchange counts, for the status and the metrics. */
export interface PeerExchangeCounters {
  received: { reports: number; queries: number };
  /** Frames handed to the switch, one per peer they went to. */
  sent: { reports: number; queries: number };
  /** Every frame dropped, by reason, whoever sent it. */
  drops: Record<PeerDropReason, number>;
  /** Frames the switch refused or failed to send, one per peer. */
  sendErrors: number;
}

export function newCounters(): PeerExchangeCounters {
  return {
    received: { reports: 0, queries: 0 },
    sent: { reports: 0, queries: 0 },
    drops: {
      'unknown-peer': 0,
      self: 0,
      unsupported: 0,
      malformed: 0,
      rate: 0,
      refused: 0,
      unsealed: 0,
      'unknown-key': 0,
      'bad-seal': 0,
      replay: 0,
      stale: 0,
      'over-rate': 0,
    },
    sendErrors: 0,
  };
}

/**
 * The reasons a configured peer's frame can be dropped for (each peer's counts start with these at 0). A seal's
 * refusals count against the peer whose address the frame came from, a forger's or not: the peers bound the keys all
 * the same.
 */
export const PEER_DROP_REASONS = [
  'rate',
  'unsupported',
  'malformed',
  'refused',
  'unsealed',
  'unknown-key',
  'bad-seal',
  'replay',
  'stale',
] as const satisfies readonly PeerDropReason[];
/**
 * The reasons a frame of no configured peer can be dropped for: a frame is named by its outer source before it is
 * decoded; the tunnel's budget is all the peers' (its meter in the switch tells no sender).
 */
const UNATTRIBUTED_DROP_REASONS = ['unknown-peer', 'self', 'over-rate'] as const satisfies readonly PeerDropReason[];

type DropCounts = Partial<Record<PeerDropReason, number>>;

/** The remote members' view with each peer's drops, and the drops of no peer (what `status` shows of them). */
export interface RemoteMembersWithDrops extends RemoteMembersView {
  peers: (RemoteMembersView['peers'][number] & { drops: DropCounts })[];
  unattributedDrops: DropCounts;
}

const zeros = (reasons: readonly PeerDropReason[]): DropCounts =>
  Object.fromEntries(reasons.map((reason) => [reason, 0]));

/** The drops by peer and those of no peer, next to the node's totals (which it keeps up to date too). */
export class PeerDropCounts {
  private readonly byPeer = new Map<HostAddress, DropCounts>();
  private readonly unattributed = zeros(UNATTRIBUTED_DROP_REASONS);

  constructor(private readonly totals: Record<PeerDropReason, number>) {}

  /** One frame dropped; `peer`: the configured peer that sent it, undefined when it is none. */
  count(reason: PeerDropReason, peer: HostAddress | undefined): void {
    this.totals[reason]++;
    let counts = this.unattributed;
    if (peer !== undefined) {
      counts = this.byPeer.get(peer) ?? zeros(PEER_DROP_REASONS);
      this.byPeer.set(peer, counts);
    }
    counts[reason] = (counts[reason] ?? 0) + 1;
  }

  /** A peer left the list: its counts go (the totals keep them), and start again at 0 should it come back. */
  forget(peer: HostAddress): void {
    this.byPeer.delete(peer);
  }

  /** `view` with each peer's drops added (0 for every reason when it has none) and the drops of no peer. */
  annotate(view: RemoteMembersView): RemoteMembersWithDrops {
    return {
      ...view,
      peers: view.peers.map((peer) => ({
        ...peer,
        drops: { ...(this.byPeer.get(peer.address) ?? zeros(PEER_DROP_REASONS)) },
      })),
      unattributedDrops: { ...this.unattributed },
    };
  }
}
