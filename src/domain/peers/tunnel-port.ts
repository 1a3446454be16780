/**
 * Whether a bridge port can carry the frames to the peers. The daemon sends each peer's
 * copy with `set_field:PEER->tun_dst` in a group bucket; only a flow-based tunnel port
 * (Geneve or VXLAN with `options:remote_ip=flow`) takes its destination from that field.
 * Any other port (internal, a pod's veth, a tunnel with a fixed remote_ip) would send
 * the frames nowhere useful, or to one fixed node.
 */
import { quoteInput } from '../../errors.js';

/**
 * The tunnel types whose encapsulation over IPv4 adds the same 50 octets (an inner Ethernet header and an 8-octet
 * tunnel header).
 */
const TUNNEL_TYPES: ReadonlySet<string> = new Set(['geneve', 'vxlan']);

/** What the check reads of an OVSDB Interface row: its `type` and `options` columns. */
export interface TunnelPortFacts {
  readonly type: string;
  readonly options?: Readonly<Record<string, string>>;
}

/** Why `port` cannot be the tunnel port (e.g. `type internal, not geneve or vxlan`), or undefined when it can. */
export function tunnelPortProblem(port: TunnelPortFacts): string | undefined {
  if (!TUNNEL_TYPES.has(port.type))
    return `type ${port.type === '' ? 'system (empty)' : shown(port.type)}, not geneve or vxlan`;
  const remoteIp = port.options?.['remote_ip'];
  if (remoteIp === undefined) return 'options:remote_ip is not set, not flow';
  if (remoteIp !== 'flow') return `options:remote_ip is ${shown(remoteIp)}, not flow`;
  return undefined;
}

/**
 * A value read from OVSDB, as a message shows it: bare when it is a plain word or address, JSON-quoted and cut short
 * otherwise.
 */
function shown(value: string): string {
  return /^[\w.:-]{1,64}$/.test(value) ? value : quoteInput(value);
}
