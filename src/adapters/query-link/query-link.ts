/**
 * Where `query` asks: a Linux interface, or the ports of an OVS bridge. The narrow
 * interface between the query run and the two ways of putting a query on a link and
 * hearing the answers.
 */
import { networkInterfaces } from 'node:os';
import type { McastError } from '../../errors.js';
import type { AnyQueryPacket } from '../../packet/query-frame.js';
import type { IgmpMessage } from '../../packet/igmp/message.js';
import type { MldMessage } from '../../packet/mld/message.js';
import { canonicalIPv6 } from '../../wire/ipv6-address.js';

/** Where on a bridge a packet came in: the OVS interface, and the pod it belongs to. */
export interface LinkPort {
  name: string;
  /** `namespace/name` from the interface's external_ids. */
  pod?: string;
}

/** One IGMP message the link heard. */
export interface HeardIgmp {
  /** Milliseconds since the epoch. */
  at: number;
  src: string;
  /** The IPv4 identification: tells our own queries, should the link echo them, from another querier's. */
  ipId: number;
  message: IgmpMessage;
  port?: LinkPort;
}

/**
 * One MLD message the link heard. IPv6 has no identification: our own echoed queries are told apart by source and
 * content.
 */
export interface HeardMld {
  protocol: 'mld';
  /** Milliseconds since the epoch. */
  at: number;
  src: string;
  message: MldMessage;
  port?: LinkPort;
}

/** Either family's message: a link hears both, a run counts only its own. */
export type HeardMembership = HeardIgmp | HeardMld;

export interface QueryLink {
  /** For messages and the JSON `link` field: `{ iface }` or `{ bridge }`. */
  readonly name: { iface: string } | { bridge: string };
  /** The address queries come from unless the user chose one: the link's own IPv4 address, if it has one. */
  readonly ownAddress: string | undefined;
  /**
   * Where MLD queries come from unless the user chose: the link's IPv6 link-local address, if it has one (on a bridge,
   * else the one its MAC forms by itself).
   */
  readonly ownLinkLocal?: string | undefined;
  /**
   * Starts hearing IGMP and MLD (on a bridge, at least the queried family's from the queried ports); call before
   * the first `send`. `onError` gets failures while listening (the link went away); the run then stops with what it
   * has.
   */
  listen(onHeard: (event: HeardMembership) => void, onError: (error: McastError) => void): Promise<void>;
  /** Puts the query (IGMP or MLD) on the link. Throws McastError when the link refuses it. */
  send(packet: AnyQueryPacket): Promise<void>;
  /** Stops listening and undoes anything the link set up. Idempotent. */
  close(): Promise<void>;
}

/** Wall-clock milliseconds with sub-millisecond resolution: comparable with kernel receive timestamps. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => performance.timeOrigin + performance.now() };

/** An interface's first IPv4 address in this network namespace, if it has one. */
export function ownIPv4Address(iface: string): string | undefined {
  return networkInterfaces()[iface]?.find((address) => address.family === 'IPv4')?.address;
}

/**
 * An interface's IPv6 link-local address (fe80::/10) in this network namespace, if it has one, canonical and without
 * zone.
 */
export function ownIPv6LinkLocal(iface: string): string | undefined {
  for (const address of networkInterfaces()[iface] ?? []) {
    if (address.family !== 'IPv6') continue;
    const text = canonicalIPv6(address.address.split('%')[0]!);
    if (text !== undefined && /^fe[89ab]/.test(text)) return text;
  }
  return undefined;
}
