/**
 * The exchange's seals (../../../domain/peers/peer-seal.ts): with the cluster keys of
 * --peer-key-file, every frame to the peers is sealed with the first key, and a frame
 * from a peer is believed only once its seal opens with one of the keys, names that peer
 * and carries a counter above the last one taken from it. Without keys, frames go out as
 * they are and come in believed by their outer source alone.
 *
 * The keys change on SIGHUP (a rotation); the counters do not: what a peer sent before
 * stays refused as a replay under any key.
 */
import type { PeerKeyRing } from '../../../domain/peers/peer-keys.js';
import {
  type CounterRefusal,
  openFrame,
  ReplayGuard,
  SealCounter,
  type SealRefusal,
  sealFrame,
  sealTimeMs,
} from '../../../domain/peers/peer-seal.js';
import type { HostAddress } from '../../../wire/ip-address.js';

/** A frame from a peer: ready to decode (unsealed), or refused and why. */
export type PeerFrameOpened =
  | { frame: Uint8Array }
  | { refused: SealRefusal | CounterRefusal; fields: Record<string, unknown> };

export class PeerSealing {
  private readonly counter = new SealCounter();
  private readonly replays = new ReplayGuard();

  constructor(
    private keys: PeerKeyRing | undefined,
    private readonly wallMs: () => number,
  ) {}

  /** The keys of a reload (undefined: none, frames believed by address). */
  setKeys(keys: PeerKeyRing | undefined): void {
    this.keys = keys;
  }

  /** `frame` sealed by `sender` (this node) with the first key; as it is without keys. */
  seal(frame: Uint8Array, sender: HostAddress): Uint8Array {
    const keys = this.keys;
    if (keys === undefined) return frame;
    return sealFrame(frame, { key: keys.sealing, sender, counter: this.counter.next(this.wallMs()) });
  }

  /** `frame` from `peer` (its outer source) unsealed, or why it is not believed (module comment). */
  open(frame: Uint8Array, peer: HostAddress): PeerFrameOpened {
    const keys = this.keys;
    if (keys === undefined) return { frame };
    const opened = openFrame(frame, keys, peer);
    if ('refused' in opened) return { refused: opened.refused, fields: { peer, keys: keys.ids.join(',') } };
    const wallMs = this.wallMs();
    const late = this.replays.judge(peer, opened.counter, wallMs);
    if (late !== undefined) {
      const sealedAt = new Date(sealTimeMs(opened.counter)).toISOString();
      return { refused: late, fields: { peer, sealedAt } };
    }
    this.replays.take(peer, opened.counter);
    return { frame: opened.frame };
  }

  /** A peer left the list: its last counter goes with it. */
  forget(peer: HostAddress): void {
    this.replays.forget(peer);
  }
}
