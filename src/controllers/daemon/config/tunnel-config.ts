/**
 * Tunnel mode's configuration, from its settings (tunnel-settings.ts) checked one by one
 * and against each other (config-checks.ts): the peers file read, this node's address
 * found, the peer list normalised against it (peer-set.ts), and the peer key file read. Until then the tunnel is
 * a draft: reading the file and asking the kernel for a route are not the table's job.
 */
import { createSocket } from 'node:dgram';
import { messageOf, UsageError } from '../../../errors.js';
import { parsePeerList } from '../../../domain/peers/peer-set.js';
import { hostAddress, type HostAddress } from '../../../wire/ip-address.js';
import type { IpPrefix } from '../../../domain/policy/ip-prefix.js';
import type { TunnelConfig } from './daemon-config.js';
import { loadPeerKeyFile, loadPeersFile } from './peers-loader.js';
import { PEER_TIMEOUT_MARGIN_MS } from './tunnel-settings.js';

/** The tunnel's settings as given, before the file is read and this node's address found. */
export interface TunnelDraft {
  port: string;
  /** The peers of --peers (or the file's `peers` key), duplicates and this node's address kept. */
  listedPeers: readonly HostAddress[];
  peersFile?: string;
  peerKeyFile?: string;
  nodeAddress?: HostAddress;
  clusterCidrs: readonly IpPrefix[];
  refreshIntervalMs: number;
  peerTimeoutMs?: number;
  maxGroupsPerPeer?: number;
}

/** What a tunnel draft needs from the rest of the configuration for its defaults. */
export interface TunnelDefaults {
  robustness: number;
  maxGroups: number;
}

/** How this node's address is found when none is given: the kernel's choice of source toward a peer. */
export interface NodeAddressFinder {
  sourceAddressToward(peer: HostAddress): Promise<string>;
}

/**
 * The source address the kernel picks toward `peer`: a UDP socket connect()ed to it (a
 * route lookup, nothing sent), its local address read, and closed.
 */
export const KERNEL_ROUTE: NodeAddressFinder = {
  sourceAddressToward: (peer) =>
    new Promise((resolve, reject) => {
      const socket = createSocket('udp4');
      socket.once('error', (error) => {
        socket.close();
        reject(error);
      });
      // Port 9 (discard): any port will do, as nothing is sent.
      socket.connect(9, peer, () => {
        const { address } = socket.address();
        socket.close();
        resolve(address);
      });
    }),
};

/** The tunnel configuration of a draft; every problem is a UsageError (exit 64). */
export async function resolveTunnel(
  draft: TunnelDraft,
  defaults: TunnelDefaults,
  finder: NodeAddressFinder = KERNEL_ROUTE,
): Promise<TunnelConfig> {
  const fileText = draft.peersFile === undefined ? undefined : await loadPeersFile(draft.peersFile);
  const peerKeys = draft.peerKeyFile === undefined ? undefined : await loadPeerKeyFile(draft.peerKeyFile);
  const firstPeer = draft.listedPeers[0] ?? fileText?.firstPeer();
  const nodeAddress = draft.nodeAddress ?? (await nodeAddressToward(firstPeer, finder));
  const peers =
    fileText === undefined
      ? parsePeerList(draft.listedPeers.join(','), 'peers', { localAddresses: new Set([nodeAddress]) }).peers
      : fileText.peersFor(nodeAddress).peers;
  return {
    port: draft.port,
    peers,
    ...(draft.peersFile === undefined ? {} : { peersFile: draft.peersFile }),
    ...(peerKeys === undefined ? {} : { peerKeys }),
    nodeAddress,
    ...(draft.clusterCidrs.length === 0 ? {} : { clusterCidrs: draft.clusterCidrs }),
    refreshIntervalMs: draft.refreshIntervalMs,
    peerTimeoutMs: draft.peerTimeoutMs ?? defaults.robustness * draft.refreshIntervalMs + PEER_TIMEOUT_MARGIN_MS,
    maxGroupsPerPeer: draft.maxGroupsPerPeer ?? defaults.maxGroups,
  };
}

async function nodeAddressToward(peer: HostAddress | undefined, finder: NodeAddressFinder): Promise<HostAddress> {
  if (peer === undefined) {
    throw new UsageError('--node-address is needed: with no peers there is no route to take it from', {
      hint: "give --node-address ADDR (nodeAddress in the file), this node's underlay address",
    });
  }
  let source: string;
  try {
    source = await finder.sourceAddressToward(peer);
  } catch (error) {
    throw new UsageError(
      `--node-address: no route to the first peer, ${peer}, to take this node's address from (${messageOf(error)})`,
      {
        hint: "give --node-address ADDR (nodeAddress in the file), this node's underlay address",
      },
    );
  }
  return hostAddress(source);
}
