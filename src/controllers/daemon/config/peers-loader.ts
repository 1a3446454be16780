/**
 * Tunnel mode's peers file and peer key file, read from disk. The peers file: a regular file of at most
 * MAX_PEERS_FILE_BYTES (never a FIFO or a device), parsed by peer-set.ts. Every refusal
 * is a UsageError naming the path (and `FILE:LINE` for what is in the file).
 *
 * It is the daemon's peer source in tunnel mode when given (peersFileSource), read again
 * on SIGHUP and when it changes: watchPeersFile watches its
 * directory, not the file, so that a file replaced by a rename (editors, Kubernetes'
 * ConfigMap volumes, which swap a `..data` link) is still seen; a change is reported once
 * the file has been still for PEERS_FILE_SETTLE_MS, so that a file rewritten in place
 * (truncated, then written: what many configuration tools do) is read whole, never empty
 * in between, which would drop every peer until the write.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { FileRefusedError, readRegularFile, showBytes } from '../../../runtime/regular-file.js';
import { parsePeersFile, type PeerSet } from '../../../domain/peers/peer-set.js';
import { parsePeerKeyFile, type PeerKeyRing } from '../../../domain/peers/peer-keys.js';
import type { HostAddress } from '../../../wire/ip-address.js';
import type { PeerSource } from '../../../domain/peers/peer-source.js';

/** The largest peers file read: 1,000 peers (MAX_PEERS) with a comment each fit many times over. */
const MAX_PEERS_FILE_BYTES = 256 * 1024;
/** How long the file must be still (no change in its directory) before it is read again. */
const PEERS_FILE_SETTLE_MS = 1000;

/** A peers file's text, checked: its peers are normalised once this node's address is known. */
export interface PeersFileText {
  /** The first peer of the file (the lowest address), for finding this node's address; undefined: none. */
  firstPeer(): HostAddress | undefined;
  peersFor(nodeAddress: HostAddress): PeerSet;
}

/** Reads and checks a peers file; throws a UsageError naming FILE:LINE for a bad entry. */
export async function loadPeersFile(path: string): Promise<PeersFileText> {
  let text: string;
  try {
    text = await readRegularFile(path, { what: 'peers file', maxBytes: MAX_PEERS_FILE_BYTES });
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    const hint =
      error.reason === 'too-large'
        ? `a peers file holds at most ${showBytes(MAX_PEERS_FILE_BYTES)}: is ${path} the right file?`
        : 'give --peers-file the path of a readable file of one IPv4 address a line';
    throw new FileRefusedError(error.reason, error.path, error.message, hint);
  }
  // Parsed once now, so that every problem of the file shows before anything else is done.
  const asGiven = parsePeersFile(text, path, { localAddresses: new Set() });
  return {
    firstPeer: () => asGiven.peers[0],
    peersFor: (nodeAddress) => parsePeersFile(text, path, { localAddresses: new Set([nodeAddress]) }),
  };
}

/** A peer key file holds two keys and comments: a few hundred octets. */
const MAX_PEER_KEY_FILE_BYTES = 4096;

/**
 * Reads and checks a peer key file (peer-keys.ts): a regular file that neither its group nor others may read or write,
 * whatever the path's last link; throws a UsageError naming the file (and its line, never its content).
 */
export async function loadPeerKeyFile(path: string): Promise<PeerKeyRing> {
  let text: string;
  try {
    text = await readRegularFile(path, { what: 'peer key file', maxBytes: MAX_PEER_KEY_FILE_BYTES, secret: true });
  } catch (error) {
    if (!(error instanceof FileRefusedError) || error.reason === 'shared') throw error;
    const hint = 'give --peer-key-file the path of a file of one or two keys in hex, mode 0600';
    throw new FileRefusedError(error.reason, error.path, error.message, hint);
  }
  return parsePeerKeyFile(text, path);
}

/** The peers file as the daemon's peer source: read again at each reload, watched for changes. */
export function peersFileSource(path: string): PeerSource {
  return {
    label: `peers file ${path}`,
    read: async (nodeAddress) => (await loadPeersFile(path)).peersFor(nodeAddress),
    watch: (changed, failed) => watchPeersFile({ path, onChange: changed, onError: failed }),
  };
}

export interface PeersFileWatchOptions {
  path: string;
  /** Called once a burst of changes is over: read the file again (rereadPeers). */
  onChange(): void;
  /** The directory cannot be watched (gone, or no inotify watches left): SIGHUP still reads the file. */
  onError(error: Error): void;
  debounceMs?: number;
}

export interface PeersFileWatch {
  close(): void;
}

/** Watches the peers file's directory for changes to the file (module comment). */
export function watchPeersFile(options: PeersFileWatchOptions): PeersFileWatch {
  const name = basename(options.path);
  const debounceMs = options.debounceMs ?? PEERS_FILE_SETTLE_MS;
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  const close = (): void => {
    clearTimeout(timer);
    timer = undefined;
    watcher?.close();
    watcher = undefined;
  };
  const changed = (filename: string | null): void => {
    // Another file of the directory; `..data` and its kin are how a ConfigMap volume swaps its files.
    if (filename !== null && filename !== name && !filename.startsWith('..')) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      options.onChange();
    }, debounceMs);
  };
  try {
    watcher = watch(dirname(options.path), { persistent: false }, (_event, filename) => changed(filename));
    watcher.on('error', (error) => {
      close();
      options.onError(error);
    });
  } catch (error) {
    options.onError(error as Error);
  }
  return { close };
}
