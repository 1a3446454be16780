/** The checks every user-given multicast group address goes through. */
import { quoteInput, UsageError } from '../../errors.js';
import {
  addressFamily,
  type GroupAddress,
  isLinkScopeGroup,
  parseGroupAddress,
  parseSourceAddress,
  type SourceAddress,
} from '../../wire/ip-address.js';

/**
 * Returns `text` as a multicast group that can be forwarded to members (canonical text:
 * "FF3E:0::1" comes out as "ff3e::1"); otherwise a UsageError saying why, prefixed with
 * `where` (a flag or file:line). Link-scope groups (224.0.0.0/24; IPv6 scope 0, 1 or 2,
 * e.g. ff02::/16) are refused: the switch floods them, membership never forwards them.
 */
export function checkGroupAddress(text: string, where: string): GroupAddress {
  const family = addressFamily(text);
  if (family === undefined)
    throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv4 or IPv6 address`, { code: 'bad-address' });
  const group = parseGroupAddress(text);
  if (group === undefined) {
    throw new UsageError(
      `${where}: ${text} is not a multicast address (${family === 'ipv4' ? '224.0.0.0/4' : 'ff00::/8'})`,
      { code: 'bad-address' },
    );
  }
  if (isLinkScopeGroup(group)) {
    const scope =
      family === 'ipv4'
        ? 'link-local (224.0.0.0/24)'
        : `of ${LINK_SCOPES[Number.parseInt(group.slice(3, 4), 16)]} scope (${group.slice(0, 4)}::/16; groups of site scope such as ff05::/16 or global scope such as ff3e::/16 are forwarded)`;
    throw new UsageError(`${where}: ${group} is ${scope}: it is flooded to every port, never forwarded by membership`, {
      code: 'bad-address',
    });
  }
  return group;
}

/** The IPv6 scopes isLinkScopeGroup takes, by scope nibble (RFC 4291 §2.7, RFC 7346). */
const LINK_SCOPES = ['reserved', 'interface-local', 'link-local'];

/**
 * Returns `text` if it is a unicast host address of either family (a multicast source), canonical; otherwise a
 * UsageError prefixed with `where`.
 */
export function checkSourceAddress(text: string, where: string): SourceAddress {
  const family = addressFamily(text);
  if (family === undefined)
    throw new UsageError(`${where}: ${quoteInput(text)} is not an IPv4 or IPv6 address`, { code: 'bad-address' });
  const source = parseSourceAddress(text);
  if (source === undefined)
    throw new UsageError(`${where}: ${text} is not a unicast host address`, { code: 'bad-address' });
  return source;
}

/**
 * Checks that an (S,G) entry's source and group are of one family: an IPv4 source never
 * sends to an IPv6 group. A UsageError prefixed with `where` otherwise.
 */
export function checkSourceGroupFamily(source: SourceAddress, group: GroupAddress, where: string): void {
  if (addressFamily(source) !== addressFamily(group)) {
    throw new UsageError(
      `${where}: source ${source} and group ${group} are of different families: an (S,G) entry needs both IPv4 or both IPv6`,
      {
        code: 'bad-address',
      },
    );
  }
}

/** A port as the user names it: an OpenFlow port number, or an interface name. */
export type PortRef = { ofport: number } | { name: string };

export function parsePortRef(text: string, where: string): PortRef {
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed)) {
    const ofport = Number(trimmed);
    if (ofport < 1 || ofport > 0xfeff)
      throw new UsageError(`${where}: port ${trimmed} is not an OpenFlow port number (1 to 65279)`);
    return { ofport };
  }
  if (trimmed === '' || trimmed.length > 255 || /[\s,]/.test(trimmed))
    throw new UsageError(`${where}: ${quoteInput(text)} is not a port name or number`);
  return { name: trimmed };
}

export function describePortRef(port: PortRef): string {
  return 'ofport' in port ? `ofport ${port.ofport}` : port.name;
}
