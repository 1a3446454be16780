/**
 * Where a service listens, in OVS's own syntax: `unix:<path>` or `tcp:<host>:<port>`
 * (an IPv6 host in brackets, `tcp:[::1]:6640`). A bare absolute path means unix:, as
 * `ovs-vsctl --db` accepts. Shared by the OVSDB and OpenFlow clients and the flags, as is
 * the mapping of a failed connect to an error (connectFailure): the same errno means the
 * same exit code whichever service it was.
 */
import { isIP } from 'node:net';
import { type McastError, PermissionError, UnavailableError, UsageError, quoteInput } from '../errors.js';

export type Endpoint =
  | { readonly kind: 'unix'; readonly path: string; readonly text: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number; readonly text: string };

/**
 * sockaddr_un holds 108 octets with the terminating NUL. Node does not shorten a longer
 * path the way OVS's own tools do (through /proc/self/fd), so such a path can never connect.
 */
const MAX_UNIX_SOCKET_PATH_OCTETS = 107;
/** RFC 1035 §2.3.4: a name of at most 253 octets as text, labels of at most 63. */
const MAX_HOST_NAME_OCTETS = 253;
const HOST_NAME_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** An IPv6 zone (`fe80::1%eth0`) is an interface name or index. */
const IPV6_ZONE = /^[A-Za-z0-9_.-]{1,15}$/;

/** Throws UsageError (`bad-address`) naming `service` (e.g. "OVSDB") for anything else. */
export function parseEndpoint(text: string, service: string): Endpoint {
  const bad = (reason: string) =>
    new UsageError(`bad ${service} address ${quoteInput(text)}: ${reason}`, {
      code: 'bad-address',
      hint: 'use unix:<path> or tcp:<host>:<port>',
    });
  if (text.startsWith('/')) return { kind: 'unix', path: checkSocketPath(text, bad), text: `unix:${text}` };
  if (text.startsWith('unix:')) return { kind: 'unix', path: checkSocketPath(text.slice('unix:'.length), bad), text };
  if (text.startsWith('tcp:')) {
    const { host, port } = parseHostPort(text.slice('tcp:'.length), {
      bad,
      malformed: 'expected tcp:<host>:<port> (tcp:[<IPv6>]:<port> for IPv6)',
    });
    return { kind: 'tcp', host: host!, port, text };
  }
  throw bad('expected unix:<path>, tcp:<host>:<port> or an absolute socket path');
}

export interface HostPortRules {
  /** Makes the error for a reason ("port \"0\" is not 1 to 65535"): the caller names the service or flag. */
  readonly bad: (reason: string) => UsageError;
  /** The reason when the text is not HOST:PORT at all. */
  readonly malformed: string;
  /** `:9100`, no host: a listener on every address. */
  readonly emptyHost?: boolean;
  /** Port 0: a listener on any free port. */
  readonly portZero?: boolean;
}

/**
 * `HOST:PORT`, `[IPv6]:PORT`, and `:PORT` when `emptyHost` is allowed (host undefined). The
 * host is checked as an endpoint's is: a dotted quad, a host name, or an IPv6 address in
 * brackets. Throws what `rules.bad` makes.
 */
export function parseHostPort(text: string, rules: HostPortRules): { host: string | undefined; port: number } {
  const { bad } = rules;
  const match = /^\[([^\]]+)\]:([0-9]+)$/.exec(text) ?? /^([^:[\]]*):([0-9]+)$/.exec(text);
  if (match === null || (match[1] === '' && rules.emptyHost !== true)) throw bad(rules.malformed);
  const host = match[1]!;
  const port = Number(match[2]);
  const lowest = rules.portZero === true ? 0 : 1;
  if (port < lowest || port > 65535) throw bad(`port ${quoteInput(match[2]!)} is not ${lowest} to 65535`);
  if (text.startsWith('[')) checkIPv6(host, bad);
  else if (host !== '') checkHost(host, bad);
  return { host: host === '' ? undefined : host, port };
}

function checkSocketPath(path: string, bad: (reason: string) => UsageError): string {
  if (path === '') throw bad('the socket path is empty');
  if (path.includes('\0')) throw bad('the socket path holds a NUL character');
  const octets = Buffer.byteLength(path);
  if (octets > MAX_UNIX_SOCKET_PATH_OCTETS) {
    throw bad(
      `the socket path is ${octets} octets long; a unix socket address holds at most ${MAX_UNIX_SOCKET_PATH_OCTETS}` +
        ' (use a shorter path, e.g. through a symlink to its directory)',
    );
  }
  return path;
}

function checkIPv6(host: string, bad: (reason: string) => UsageError): void {
  const zone = host.indexOf('%');
  if (isIP(host) !== 6 || (zone !== -1 && !IPV6_ZONE.test(host.slice(zone + 1))))
    throw bad(`${quoteInput(host)} is not an IPv6 address`);
}

/**
 * An IPv4 address in dotted-quad form, or a host name. Anything that looks like a number
 * must be a dotted quad: the resolver would otherwise take `1.2.3` or `0x7f.1` as an
 * address of its own reading, and `999.1.1.1` as a name to look up.
 */
function checkHost(host: string, bad: (reason: string) => UsageError): void {
  const labels = host.split('.');
  const last = labels[labels.length - 1]!;
  if (/^[0-9.]+$/.test(host) || /^(?:[0-9]+|0x[0-9a-f]*)$/i.test(last)) {
    if (isIP(host) !== 4)
      throw bad(`${quoteInput(host)} is not an IPv4 address (four numbers from 0 to 255, such as 192.0.2.1)`);
    return;
  }
  if (host.length > MAX_HOST_NAME_OCTETS || !labels.every((label) => HOST_NAME_LABEL.test(label))) {
    throw bad(
      `${quoteInput(host)} is neither an IPv4 address nor a host name` +
        ` (letters, digits and '-', in labels joined by '.', at most ${MAX_HOST_NAME_OCTETS} characters)`,
    );
  }
}

export interface ConnectFailureOptions {
  /** What to check when the service is not there (ENOENT, ECONNREFUSED, a timeout): the service's own words. */
  readonly unavailableHint: string;
  readonly cause?: unknown;
}

/**
 * The error for a connect to `service` at `endpoint` that failed with `reason` (an errno
 * code such as ECONNREFUSED, or a phrase such as "timed out after 10000 ms"):
 * - EACCES, EPERM: PermissionError (exit 77), the socket's permissions refuse this user
 *   (or, over TCP, a local firewall rule refuses the connection);
 * - ENOTFOUND: UsageError (`bad-address`, exit 64), the host name does not exist;
 * - anything else: UnavailableError (exit 69) with `unavailableHint`.
 */
export function connectFailure(
  endpoint: Endpoint,
  service: string,
  reason: string,
  options: ConnectFailureOptions,
): McastError {
  const message = `cannot connect to ${service} ${endpoint.text}: ${reason}`;
  const cause = options.cause === undefined ? {} : { cause: options.cause };
  if (reason === 'EACCES' || reason === 'EPERM') {
    const hint =
      endpoint.kind === 'unix'
        ? 'run as root, or as a user the socket lets in'
        : "this host's firewall refuses the connection: check its rules";
    return new PermissionError(message, { hint, ...cause });
  }
  if (reason === 'ENOTFOUND' && endpoint.kind === 'tcp') {
    return new UsageError(`${message} (no such host)`, {
      code: 'bad-address',
      hint: 'give an IP address, or a name this host can resolve',
      ...cause,
    });
  }
  return new UnavailableError(message, { hint: options.unavailableHint, ...cause });
}
