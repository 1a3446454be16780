/** Tunnel mode's peers as a peer source would give them (PeerSource), changed by the test. */
import type { PeerSet } from '../../src/domain/peers/peer-set.js';
import type { PeerSource } from '../../src/domain/peers/peer-source.js';
import { UsageError } from '../../src/errors.js';
import type { HostAddress } from '../../src/wire/ip-address.js';

export class FakePeerSource implements PeerSource {
  readonly label = 'fake peers';
  /** What the next read fails with (a bad file, say); undefined: it reads. */
  failure: string | undefined;
  reads = 0;
  watching = false;
  private changed: (() => void) | undefined;

  constructor(private peers: readonly HostAddress[]) {}

  async read(nodeAddress: HostAddress): Promise<PeerSet> {
    this.reads++;
    if (this.failure !== undefined) throw new UsageError(this.failure);
    const unique = [...new Set(this.peers)].sort();
    return {
      peers: unique.filter((peer) => peer !== nodeAddress),
      duplicates: [],
      droppedSelf: unique.filter((peer) => peer === nodeAddress),
    };
  }

  watch(changed: () => void): { close(): void } {
    this.changed = changed;
    this.watching = true;
    return {
      close: () => {
        this.watching = false;
        this.changed = undefined;
      },
    };
  }

  /** The source now gives `peers`, and says so as a watched file would. */
  set(peers: readonly HostAddress[]): void {
    this.peers = peers;
    this.changed?.();
  }
}
