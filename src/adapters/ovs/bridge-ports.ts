/**
 * The ports of a bridge, one model for the commands (a snapshot the bridge client reads
 * when it opens, ./bridge-client.ts) and the daemon (kept in step with an OVSDB monitor,
 * ./pod-ports.ts). An Interface row
 * with an OpenFlow port number is a port; one a CNI plugin registered (external_ids
 * pod-name, and pod-namespace) is a pod's; the bridge's own internal port (LOCAL) is a
 * port but never a group member.
 */
import type { InterfaceRow } from './vswitch.js';
import { isIP, isIPv4 } from 'node:net';
import { formatMac, parseMac } from '../../wire/mac-address.js';
import { type BridgePort, type DirectoryPort, podName } from '../../domain/pods/pod-directory.js';
import {
  OVSDB_LOCAL_OFPORT,
  POD_IP_ADDRESS_KEY,
  POD_MAC_KEY,
  POD_NAME_KEY,
  POD_NAMESPACE_KEY,
} from './ovs-constants.js';

export type { BridgePort };

/** The pod an Interface row names in its external_ids, where a CNI plugin set them. */
function podOf(row: InterfaceRow): Pick<BridgePort, 'pod'> {
  const pod = row.external_ids[POD_NAME_KEY];
  return pod === undefined ? {} : { pod: podName(row.external_ids[POD_NAMESPACE_KEY], pod) };
}

/** The port of an Interface row, or undefined while it has no OpenFlow port number. */
function bridgePortOf(row: InterfaceRow): BridgePort | undefined {
  if (row.ofport === undefined || row.ofport <= 0) return undefined;
  return { ofport: row.ofport, name: row.name, ...podOf(row) };
}

/**
 * An Interface row as the pod directory tells it (src/domain/pods/pod-directory.ts), or
 * undefined for the bridge's own LOCAL port, which is never a pod's nor a member.
 */
export function directoryPortOf(row: InterfaceRow): DirectoryPort | undefined {
  if (row.ofport === OVSDB_LOCAL_OFPORT) return undefined;
  const addresses = addressesOf(row.external_ids[POD_IP_ADDRESS_KEY], (item) => isIP(item) !== 0);
  const mac = macOf(row.external_ids[POD_MAC_KEY]);
  return {
    name: row.name,
    ofport: row.ofport === undefined || row.ofport <= 0 ? undefined : row.ofport,
    ...podOf(row),
    ...(addresses === undefined ? {} : { addresses }),
    ...(mac === undefined ? {} : { mac }),
    type: row.type,
    ...(row.options === undefined ? {} : { options: row.options }),
  };
}

/**
 * `10.1.0.2`, `10.1.0.2/24`, `10.1.0.2,fd00::2`: the addresses `keep` takes (IPv4 ones by default: IPv6 ones are no
 * IGMP sources).
 */
function addressesOf(
  value: string | undefined,
  keep: (address: string) => boolean = (item) => isIPv4(item),
): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return value
    .split(',')
    .map((item) => item.trim().replace(/\/\d+$/, ''))
    .filter(keep);
}

/** An external_ids MAC in lower case, or undefined for none or for text that is no MAC. */
function macOf(value: string | undefined): string | undefined {
  const octets = value === undefined ? undefined : parseMac(value.trim());
  return octets === undefined ? undefined : formatMac(octets);
}

export function isLocalPort(port: Pick<BridgePort, 'ofport'>): boolean {
  return port.ofport === OVSDB_LOCAL_OFPORT;
}

/** A bridge's ports at one moment, from its Interface rows. */
export class BridgePorts {
  /** Every numbered port, LOCAL included, by port number. */
  readonly all: readonly BridgePort[];
  /** The MAC of the bridge's own (LOCAL) interface, the source of frames it sends. */
  readonly localMac: string | undefined;
  /**
   * The IPv4 addresses of each port whose external_ids have ip-address, by port number,
   * without prefix lengths: the only sources (with 0.0.0.0) a pod's IGMP may come from.
   * Kept apart from BridgePort, which the commands print as it is.
   */
  readonly addresses: ReadonlyMap<number, readonly string[]>;
  /** The pod's MAC (external_ids attached-mac) of each port that has one, by port number. */
  readonly macs: ReadonlyMap<number, string>;

  constructor(rows: Iterable<InterfaceRow>) {
    const all: BridgePort[] = [];
    const addresses = new Map<number, readonly string[]>();
    const macs = new Map<number, string>();
    let localMac: string | undefined;
    for (const row of rows) {
      const port = bridgePortOf(row);
      if (port === undefined) continue;
      all.push(port);
      if (isLocalPort(port)) localMac = row.mac_in_use;
      const known = addressesOf(row.external_ids[POD_IP_ADDRESS_KEY]);
      if (known !== undefined) addresses.set(port.ofport, known);
      const mac = macOf(row.external_ids[POD_MAC_KEY]);
      if (mac !== undefined) macs.set(port.ofport, mac);
    }
    this.addresses = addresses;
    this.macs = macs;
    this.all = all.sort((a, b) => a.ofport - b.ofport);
    this.localMac = localMac;
  }

  byNumber(ofport: number): BridgePort | undefined {
    return this.all.find((port) => port.ofport === ofport);
  }

  byName(name: string): BridgePort | undefined {
    return this.all.find((port) => port.name === name);
  }

  /** Every port but the bridge's own LOCAL one: where pods and other hosts attach. */
  get members(): BridgePort[] {
    return this.all.filter((port) => !isLocalPort(port));
  }

  /** The member port named `name` (the gateway's lookup): undefined for none, or for LOCAL. */
  member(name: string | undefined): BridgePort | undefined {
    return name === undefined ? undefined : this.members.find((port) => port.name === name);
  }
}
