/**
 * The seal a node puts on each membership message to its peers when a cluster key is
 * configured (./peer-keys.ts), so that a peer believes a message only from a holder of the
 * key, and only once. It is 32 octets at the end of the inner IP packet, after the IGMPv3
 * or MLDv2 message, the IP length grown to hold them:
 *
 *   magic "MCS1" (4) | key id (4) | counter (8) | code (16)
 *
 * - The message's own checksum covers the message alone: a peer checks the seal, strips
 *   it and decodes what is left as any IGMP or MLD.
 * - key id: which key made the code; a receiver holds at most two during a rotation.
 * - counter: the sender's, strictly increasing (SealCounter): its wall clock in
 *   milliseconds × 1000, or one more than the last, whichever is greater, so that it goes
 *   on increasing across a restart. A receiver (ReplayGuard) refuses a counter not above the
 *   last one it took from that peer (a replay), and one whose time is more than
 *   MAX_SEAL_SKEW_MS from its own clock (a replay after the receiver forgot: its restart).
 * - code: HMAC-SHA-256 (RFC 2104) truncated to 16 octets (RFC 2104 §5 allows it: 128 bits
 *   leave a forger one chance in 2^128), over a label, the sender's node address as the
 *   receiver names it (the tunnel's outer source: a message sealed by node 2 and sent again
 *   under node 3's address fails), the IP payload before the seal, and the seal's first 16
 *   octets. The inner IP header is left out: the peer never reads it (a peer is named by
 *   the outer source, and an MLDv2 report's inner source is a link-local address).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { EtherType, payloadOffsetOf } from '../../packet/ethernet.js';
import {
  copyBytes,
  outputBuffer,
  readU16BE,
  readU32BE,
  readU64BE,
  writeU32Field,
  writeU64Field,
} from '../../wire/bytes.js';
import { internetChecksum } from '../../wire/checksum.js';
import type { HostAddress } from '../../wire/ip-address.js';
import type { PeerKey, PeerKeyRing } from './peer-keys.js';

/** "MCS1": mcastctl's seal, version 1. */
const SEAL_MAGIC = 0x4d435331;
export const SEAL_LENGTH = 32;
const CODE_OFFSET = 16;
const CODE_LENGTH = 16;
const CODE_LABEL = 'mcastctl peer seal v1\0';
/** How far a seal's time may be from the receiver's clock: NTP keeps nodes far closer; 5 minutes, as Kerberos. */
export const MAX_SEAL_SKEW_MS = 5 * 60_000;
/** Counter units a millisecond: a thousand messages a millisecond before the counter runs ahead of the clock. */
const COUNTER_PER_MS = 1000n;

export interface PeerSeal {
  keyId: number;
  counter: bigint;
  /** The 16 octets of the code. */
  code: Uint8Array;
}

export function encodingLength(): number {
  return SEAL_LENGTH;
}

export function encode(seal: PeerSeal, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(SEAL_LENGTH, buf, offset, 'peer seal');
  writeU32Field(out, offset, SEAL_MAGIC, 'seal magic');
  writeU32Field(out, offset + 4, seal.keyId, 'key id');
  writeU64Field(out, offset + 8, seal.counter, 'seal counter');
  if (seal.code.length !== CODE_LENGTH) throw new RangeError(`a seal's code is ${CODE_LENGTH} octets`);
  out.set(seal.code, offset + CODE_OFFSET);
  return out;
}

/** The seal in [start, end), undefined when those 32 octets are no seal (no magic, or too few of them). */
export function decode(bytes: Uint8Array, start = 0, end = bytes.length): PeerSeal | undefined {
  if (end - start < SEAL_LENGTH || readU32BE(bytes, start) !== SEAL_MAGIC) return undefined;
  return {
    keyId: readU32BE(bytes, start + 4),
    counter: readU64BE(bytes, start + 8),
    code: copyBytes(bytes, start + CODE_OFFSET, start + SEAL_LENGTH),
  };
}

/** Where an Ethernet frame's IP packet is: its start, where its payload starts, its end (from its own length). */
interface IpPlace {
  family: 4 | 6;
  start: number;
  payloadStart: number;
  end: number;
}

function ipPlaceOf(frame: Uint8Array): IpPlace | undefined {
  const v4 = payloadOffsetOf(frame, EtherType.IPv4);
  if (v4 >= 0 && v4 + 20 <= frame.length) {
    const headerLength = (frame[v4]! & 0x0f) * 4;
    const end = v4 + readU16BE(frame, v4 + 2);
    if (headerLength < 20 || end < v4 + headerLength || end > frame.length) return undefined;
    return { family: 4, start: v4, payloadStart: v4 + headerLength, end };
  }
  const v6 = payloadOffsetOf(frame, EtherType.IPv6);
  if (v6 < 0 || v6 + 40 > frame.length) return undefined;
  const end = v6 + 40 + readU16BE(frame, v6 + 4);
  return end > frame.length ? undefined : { family: 6, start: v6, payloadStart: v6 + 40, end };
}

/** A copy of the frame up to `newEnd` (its IP packet's end, moved), the IP length (and IPv4 checksum) to match. */
function resized(frame: Uint8Array, place: IpPlace, newEnd: number): Uint8Array {
  const out = Buffer.alloc(newEnd);
  out.set(frame.subarray(0, Math.min(place.end, newEnd)));
  const grownBy = newEnd - place.end;
  if (place.family === 6) {
    out.writeUInt16BE(readU16BE(frame, place.start + 4) + grownBy, place.start + 4);
    return out;
  }
  out.writeUInt16BE(readU16BE(frame, place.start + 2) + grownBy, place.start + 2);
  out.writeUInt16BE(0, place.start + 10);
  out.writeUInt16BE(internetChecksum(out, place.start, place.payloadStart), place.start + 10);
  return out;
}

function codeOf(
  key: PeerKey,
  sender: HostAddress,
  frame: Uint8Array,
  payloadStart: number,
  sealAt: number,
): Uint8Array {
  return createHmac('sha256', key.secret)
    .update(CODE_LABEL)
    .update(`${sender}\0`)
    .update(frame.subarray(payloadStart, sealAt))
    .update(frame.subarray(sealAt, sealAt + CODE_OFFSET))
    .digest()
    .subarray(0, CODE_LENGTH);
}

export interface SealOptions {
  key: PeerKey;
  /** This node's address: who the peers know the message from. */
  sender: HostAddress;
  counter: bigint;
}

/** The frame with its IP packet sealed (a new frame); throws RangeError when it holds no IP packet or no room. */
export function sealFrame(frame: Uint8Array, options: SealOptions): Uint8Array {
  const place = ipPlaceOf(frame);
  if (place === undefined) throw new RangeError('a peer message to seal holds no whole IP packet');
  if (place.end - place.start + SEAL_LENGTH > 0xffff) throw new RangeError('no room for a seal in the IP packet');
  const out = resized(frame, place, place.end + SEAL_LENGTH);
  encode({ keyId: options.key.id, counter: options.counter, code: new Uint8Array(CODE_LENGTH) }, out, place.end);
  out.set(codeOf(options.key, options.sender, out, place.payloadStart, place.end), place.end + CODE_OFFSET);
  return out;
}

/** Why a sealed message was not believed. */
export type SealRefusal = 'unsealed' | 'unknown-key' | 'bad-seal';

export type OpenedFrame = { frame: Uint8Array; counter: bigint } | { refused: SealRefusal };

/**
 * The frame without its seal (a new frame, ready to decode) and the seal's counter, when the seal is one of `keys`
 * and its code is `sender`'s; otherwise why not. The counter is not judged here (ReplayGuard).
 */
export function openFrame(frame: Uint8Array, keys: PeerKeyRing, sender: HostAddress): OpenedFrame {
  const place = ipPlaceOf(frame);
  if (place === undefined || place.end - place.payloadStart < SEAL_LENGTH) return { refused: 'unsealed' };
  const sealAt = place.end - SEAL_LENGTH;
  const seal = decode(frame, sealAt, place.end);
  if (seal === undefined) return { refused: 'unsealed' };
  const key = keys.key(seal.keyId);
  if (key === undefined) return { refused: 'unknown-key' };
  if (!timingSafeEqual(codeOf(key, sender, frame, place.payloadStart, sealAt), seal.code))
    return { refused: 'bad-seal' };
  return { frame: resized(frame, place, sealAt), counter: seal.counter };
}

/** The counter of the seals a node makes: strictly increasing, across restarts too (module comment). */
export class SealCounter {
  private last = 0n;

  next(wallMs: number): bigint {
    const now = BigInt(Math.floor(wallMs)) * COUNTER_PER_MS;
    this.last = now > this.last ? now : this.last + 1n;
    return this.last;
  }
}

/** The wall-clock time (epoch milliseconds) a counter was made at. */
export function sealTimeMs(counter: bigint): number {
  return Number(counter / COUNTER_PER_MS);
}

/** Why a seal's counter was refused: seen already (or older), or too far from this node's clock. */
export type CounterRefusal = 'replay' | 'stale';

/** The highest counter taken from each peer: a seal must go above it, and be near this node's clock. */
export class ReplayGuard {
  private readonly highest = new Map<HostAddress, bigint>();

  /** Why `counter` cannot be taken from `peer` now; undefined when it can (then `take` it). */
  judge(peer: HostAddress, counter: bigint, wallMs: number): CounterRefusal | undefined {
    if (counter <= (this.highest.get(peer) ?? 0n)) return 'replay';
    return Math.abs(sealTimeMs(counter) - wallMs) > MAX_SEAL_SKEW_MS ? 'stale' : undefined;
  }

  take(peer: HostAddress, counter: bigint): void {
    this.highest.set(peer, counter);
  }

  /** A peer left the list. */
  forget(peer: HostAddress): void {
    this.highest.delete(peer);
  }
}
