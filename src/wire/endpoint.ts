/**
 * Where a service listens, in OVS's own syntax: `unix:<path>` or `tcp:<host>:<port>`
 * (an IPv6 host in brackets, `tcp:[::1]:6640`). A bare absolute path means unix:, as
 * `ovs-vsctl --db` accepts. Shared by the OVSDB and OpenFlow clients and the flags.
 */
import { isIP } from 'node:net';
import { UsageError } from '../errors.js';

export type Endpoint =
  | { readonly kind: 'unix'; readonly path: string; readonly text: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number; readonly text: string };

/** Throws UsageError (`bad-address`) naming `service` (e.g. "OVSDB") for anything else. */
export function parseEndpoint(text: string, service: string): Endpoint {
  const bad = (reason: string) =>
    new UsageError(`bad ${service} address ${JSON.stringify(text)}: ${reason}`, { code: 'bad-address', hint: 'use unix:<path> or tcp:<host>:<port>' });
  if (text.startsWith('/')) return { kind: 'unix', path: text, text: `unix:${text}` };
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (path === '') throw bad('the socket path is empty');
    return { kind: 'unix', path, text };
  }
  if (text.startsWith('tcp:')) {
    const rest = text.slice('tcp:'.length);
    const match = /^\[([^\]]+)\]:(\d+)$/.exec(rest) ?? /^([^:[\]]+):(\d+)$/.exec(rest);
    if (match === null) throw bad('expected tcp:<host>:<port> (tcp:[<IPv6>]:<port> for IPv6)');
    const host = match[1]!;
    const port = Number(match[2]);
    if (port < 1 || port > 65535) throw bad(`port ${match[2]} is not 1 to 65535`);
    if (rest.startsWith('[') && isIP(host) !== 6) throw bad(`${host} is not an IPv6 address`);
    return { kind: 'tcp', host, port, text };
  }
  throw bad('expected unix:<path>, tcp:<host>:<port> or an absolute socket path');
}
