/**
 * What one set of forwarding entries is for: a group from every source (its (*,G) entry)
 * or from one source (an (S,G) entry). The key names it in maps and in the group id
 * allocation.
 */
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';

export type ForwardingKey = string & { readonly forwardingKey: true };

export interface ForwardingTarget {
  group: GroupAddress;
  /** Absent: every source (the (*,G) entry). */
  source?: SourceAddress;
}

/** `G` for (*,G), `S>G` for (S,G). */
export function forwardingKey(target: ForwardingTarget): ForwardingKey {
  return (target.source === undefined ? target.group : `${target.source}>${target.group}`) as ForwardingKey;
}
