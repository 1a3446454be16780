/**
 * What the routed per-source tests need beyond the multicast lab: more senders on the
 * underlay (each its own host, so that every source address is a separate port of the
 * underlay bridge), and independent readers of the kernel state a node and the underlay
 * hold for a group: a namespace's /proc/net/mcfilter and /proc/net/igmp rows of one
 * interface, and the sources the underlay bridge's snooping table keeps for a group on a port.
 */
import type { Lab } from './lab.js';
import type { ExternalHost, MulticastLab } from './multicast-lab.js';
import { MULTICAST_LAB } from './multicast-lab.js';
import { udpEndpoint } from './ovs.js';

export interface UnderlaySenderOptions {
  /** Lab-local host name (namespace `mcl<id>-<name>`); short, it names interfaces too. */
  name: string;
  /** Its address on the underlay, without prefix length (the underlay is a /24). */
  address: string;
}

/**
 * A host on the lab's underlay bridge like the lab's external host: routes to both pod subnets through the nodes'
 * uplinks.
 */
export async function addUnderlaySender(
  lab: Lab,
  ml: MulticastLab,
  options: UnderlaySenderOptions,
): Promise<ExternalHost> {
  const host = await lab.host(options.name, { bridge: ml.underlay, address: `${options.address}/24` });
  await lab.sysctl(host.ns, 'net.ipv4.igmp_link_local_mcast_reports', 0);
  for (const [index, subnet] of MULTICAST_LAB.podSubnets.entries())
    await lab.ip(host.ns, 'route', 'add', subnet, 'via', MULTICAST_LAB.uplinks[index]!);
  return Object.assign(host, udpEndpoint(lab, host.ns, { name: host.name }));
}

/** `a.b.c.d` from 8 hex digits printed most significant octet first. */
function dottedBigEndian(hex: string): string {
  const value = Number.parseInt(hex, 16);
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

/** `a.b.c.d` from 8 hex digits of an address printed as a raw (network order) 32-bit word on a little-endian host. */
function dottedRawWord(hex: string): string {
  const value = Number.parseInt(hex, 16);
  return [0, 8, 16, 24].map((shift) => (value >>> shift) & 0xff).join('.');
}

/** One row of /proc/net/mcfilter: a source of a socket's filter for a group. */
export interface McfilterRow {
  group: string;
  source: string;
  mode: 'include' | 'exclude';
}

/**
 * The /proc/net/mcfilter rows of interface `ifindex` in namespace `ns`. The file prints at
 * most 6 characters of the device name, so rows are matched by ifindex.
 */
export async function mcfilterRows(lab: Lab, ns: string, ifindex: number): Promise<McfilterRow[]> {
  const { stdout } = await lab.exec(ns, ['cat', '/proc/net/mcfilter']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[0] === String(ifindex) && fields.length >= 5)
    .map(
      ([, , group, source, include]): McfilterRow => ({
        group: dottedBigEndian(group!),
        source: dottedBigEndian(source!),
        mode: include === '1' ? 'include' : 'exclude',
      }),
    );
}

/**
 * The groups /proc/net/igmp lists on interface `ifindex` in namespace `ns` (the kernel's
 * memberships of that interface, whatever their filter). The file prints each group as the
 * raw 32-bit word: read on a little-endian machine, as this lab's are.
 */
export async function igmpGroups(lab: Lab, ns: string, ifindex: number): Promise<string[]> {
  const { stdout } = await lab.exec(ns, ['cat', '/proc/net/igmp']);
  const groups: string[] = [];
  let current: number | undefined;
  for (const line of stdout.split('\n')) {
    const device = line.match(/^(\d+)\s+\S+\s*:/);
    if (device !== null) current = Number(device[1]);
    else if (current === ifindex) {
      const group = line.trim().split(/\s+/)[0];
      if (group !== undefined && /^[0-9A-Fa-f]{8}$/.test(group)) groups.push(dottedRawWord(group));
    }
  }
  return groups;
}

interface MdbEntry {
  port?: string;
  grp?: string;
  src?: string;
  source_list?: Array<{ address?: string }>;
}

/**
 * The sources the underlay bridge's snooping table holds for `group` on bridge port `port`:
 * its (S,G) entries and the source list of its (*,G) entry (a Linux bridge tracks IGMPv3
 * sources when its mcast_igmp_version is 3). `present` says whether any entry for the
 * group is there at all.
 */
export async function underlaySources(
  lab: Lab,
  ml: MulticastLab,
  group: string,
  port: string,
): Promise<{ present: boolean; sources: string[] }> {
  const { stdout } = await lab.exec(ml.underlay.ns, ['bridge', '-d', '-j', 'mdb', 'show', 'dev', ml.underlay.name]);
  const tables = JSON.parse(stdout) as Array<{ mdb?: MdbEntry[] }>;
  const entries = tables
    .flatMap((table) => table.mdb ?? [])
    .filter((entry) => entry.grp === group && entry.port === port);
  const sources = new Set<string>();
  for (const entry of entries) {
    if (entry.src !== undefined) sources.add(entry.src);
    for (const source of entry.source_list ?? []) if (source.address !== undefined) sources.add(source.address);
  }
  return { present: entries.length > 0, sources: [...sources].sort() };
}
