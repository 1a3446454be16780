/**
 * The cluster keys that seal the membership messages between peers (./peer-seal.ts), as a
 * peer key file gives them: one key a line, in hex (`openssl rand -hex 32`), blank lines
 * and `#` comments ignored. The first key seals what this node sends; every key of the
 * file (at most two) opens what it receives. Two keys are a rotation in progress: add the
 * new key second on every node, then move it first on every node, then remove the old.
 *
 * Each key is known by its id, the first four octets of a SHA-256 of the key under a label
 * of its own: a seal names the key that made it, so a receiver tells "a key I do not hold"
 * (a node left behind by a rotation) from "a forged code". The id tells nothing of the
 * key. The secrets never leave this module's objects: JSON and inspection show the file and
 * the ids only, and a refused line is named by its number, never quoted.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { UsageError } from '../../errors.js';
import { hex32 } from '../../wire/bytes.js';

/** Fewer octets than this are no key worth the name for HMAC-SHA-256 (RFC 2104 §3: at least the output's half). */
const MIN_PEER_KEY_OCTETS = 16;
/** HMAC-SHA-256 hashes a longer key down to 32 octets first (RFC 2104 §3): more adds nothing. */
const MAX_PEER_KEY_OCTETS = 64;
/** The old key and the new one, during a rotation. */
const MAX_PEER_KEYS = 2;
const KEY_ID_LABEL = 'mcastctl peer key id\0';

export interface PeerKey {
  /** The key's id, as a seal carries it (an unsigned 32-bit number). */
  readonly id: number;
  readonly secret: Uint8Array;
}

/** The id a seal made with `secret` carries. */
export function peerKeyIdOf(secret: Uint8Array): number {
  return createHash('sha256').update(KEY_ID_LABEL).update(secret).digest().readUInt32BE(0);
}

/** A peer key file's keys: the first seals, all open. */
export class PeerKeyRing {
  private readonly byId: ReadonlyMap<number, PeerKey>;

  constructor(
    /** The file they were read from. */
    readonly file: string,
    private readonly keys: readonly [PeerKey, ...PeerKey[]],
  ) {
    this.byId = new Map(keys.map((key) => [key.id, key]));
  }

  /** The key that seals what this node sends. */
  get sealing(): PeerKey {
    return this.keys[0];
  }

  /** The key a seal names, when this node holds it. */
  key(id: number): PeerKey | undefined {
    return this.byId.get(id);
  }

  /** The keys' ids in hex, the sealing key's first: what `status` and the log show. */
  get ids(): string[] {
    return this.keys.map((key) => hex32(key.id));
  }

  /** The same keys in the same order (a reload that changed nothing). */
  sameAs(other: PeerKeyRing | undefined): boolean {
    return other !== undefined && other.ids.join() === this.ids.join();
  }

  toJSON(): { file: string; keys: string[] } {
    return { file: this.file, keys: this.ids };
  }

  [inspect.custom](): string {
    return `PeerKeyRing(${this.file}: ${this.ids.join(', ')})`;
  }
}

/** The keys of a peer key file's text; a bad line is a UsageError naming FILE:LINE (never its content). */
export function parsePeerKeyFile(text: string, file: string): PeerKeyRing {
  const keys: PeerKey[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file}:${index + 1}`;
    const octets = line.length / 2;
    if (!/^[0-9a-fA-F]+$/.test(line) || !Number.isInteger(octets))
      throw keyError(`${where}: not a key: a key is hex digits, an even number of them`);
    if (octets < MIN_PEER_KEY_OCTETS || octets > MAX_PEER_KEY_OCTETS)
      throw keyError(
        `${where}: a key of ${octets} octets; a key has ${MIN_PEER_KEY_OCTETS} to ${MAX_PEER_KEY_OCTETS} (${2 * MIN_PEER_KEY_OCTETS} to ${2 * MAX_PEER_KEY_OCTETS} hex digits)`,
      );
    const secret = Buffer.from(line, 'hex');
    const id = peerKeyIdOf(secret);
    if (keys.some((key) => key.id === id)) throw keyError(`${where}: the same key as an earlier line`);
    keys.push({ id, secret });
  }
  const [first, ...rest] = keys;
  if (first === undefined) throw keyError(`${file}: no key in the file`);
  if (keys.length > MAX_PEER_KEYS)
    throw keyError(`${file}: ${keys.length} keys; at most ${MAX_PEER_KEYS} (the old and the new, during a rotation)`);
  return new PeerKeyRing(file, [first, ...rest]);
}

function keyError(message: string): UsageError {
  return new UsageError(message, {
    hint: 'a peer key file holds one or two keys, one a line, in hex: openssl rand -hex 32 makes one',
  });
}
