/** The checks every user-given multicast group address goes through. */
import { quoteInput, UsageError } from '../../errors.js';
import { type GroupAddress, isLinkScopeGroup, parseGroupAddress, parseSourceAddress, type SourceAddress } from '../../wire/ip-address.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';

/**
 * Returns `text` if it is an IPv4 multicast group that can be forwarded to members;
 * otherwise a UsageError saying why, prefixed with `where` (a flag or file:line).
 */
export function checkGroupAddress(text: string, where: string): GroupAddress {
  if (parseIPv4(text) === undefined) throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv4 address`, { code: 'bad-address' });
  const group = parseGroupAddress(text);
  if (group === undefined) throw new UsageError(`${where}: ${text} is not a multicast address (224.0.0.0/4)`, { code: 'bad-address' });
  if (isLinkScopeGroup(group)) {
    throw new UsageError(`${where}: ${text} is link-local (224.0.0.0/24): it is flooded to every port, never forwarded by membership`, { code: 'bad-address' });
  }
  return group;
}

/** Returns `text` if it is a unicast host address (a multicast source); otherwise a UsageError prefixed with `where`. */
export function checkSourceAddress(text: string, where: string): SourceAddress {
  if (parseIPv4(text) === undefined) throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv4 address`, { code: 'bad-address' });
  const source = parseSourceAddress(text);
  if (source === undefined) throw new UsageError(`${where}: ${text} is not a unicast host address`, { code: 'bad-address' });
  return source;
}

/** A port as the user names it: an OpenFlow port number, or an interface name. */
export type PortRef = { ofport: number } | { name: string };

export function parsePortRef(text: string, where: string): PortRef {
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed)) {
    const ofport = Number(trimmed);
    if (ofport < 1 || ofport > 0xfeff) throw new UsageError(`${where}: port ${trimmed} is not an OpenFlow port number (1 to 65279)`);
    return { ofport };
  }
  if (trimmed === '' || trimmed.length > 255 || /[\s,]/.test(trimmed)) throw new UsageError(`${where}: ${quoteInput(text)} is not a port name or number`);
  return { name: trimmed };
}

export function describePortRef(port: PortRef): string {
  return 'ofport' in port ? `ofport ${port.ofport}` : port.name;
}
