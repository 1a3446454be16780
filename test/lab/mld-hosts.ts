/**
 * MLD hosts for the end-to-end tests: IPv6 switched on for one interface of a lab
 * namespace (the lab keeps it off elsewhere) with its MLD version forced, its link-local
 * address once DAD has passed, and a listener that joins, leaves and filters groups
 * through the kernel's own socket options, so that the kernel sends the MLD.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { type Host, type Lab, sleep, waitUntil } from './lab.js';

/**
 * A listener in a host's namespace: one command a line on stdin ("join G", "leave G",
 * "join-source G S", "leave-source G S", "block G S", "unblock G S"), "ok" or
 * "err ERRNO text" a line on stdout, after the setsockopt returned. One socket per group
 * for any-source joins (blocks go on it) and one per group for source-specific joins, so
 * the kernel's per-interface filter is the union the RFC 3810 §4.2 rules make.
 *
 * The MCAST_* options take struct group_source_req, laid out for 64-bit Linux: a u32
 * interface index, 4 octets of padding (sockaddr_storage is 8-aligned), then two struct
 * sockaddr_storage (128 octets each) holding a struct sockaddr_in6 (family, port, flow
 * info, address, scope id: 28 octets).
 */
const LISTENER_PY = String.raw`
import errno, socket, struct, sys
IPPROTO_IPV6 = 41
IPV6_JOIN_GROUP = 20
IPV6_LEAVE_GROUP = 21
MCAST_BLOCK_SOURCE = 43
MCAST_UNBLOCK_SOURCE = 44
MCAST_JOIN_SOURCE_GROUP = 46
MCAST_LEAVE_SOURCE_GROUP = 47
ifindex = socket.if_nametoindex(sys.argv[1])

def address(text):
    return socket.inet_pton(socket.AF_INET6, text)

def sockaddr_in6(text):
    return struct.pack("=HHI16sI", socket.AF_INET6, 0, 0, address(text), 0).ljust(128, b"\0")

def group_source_req(group, source):
    return struct.pack("=I4x", ifindex) + sockaddr_in6(group) + sockaddr_in6(source)

any_source = {}
source_specific = {}

def run(words):
    command, args = words[0], words[1:]
    if command == "join":
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(IPPROTO_IPV6, IPV6_JOIN_GROUP, struct.pack("=16sI", address(args[0]), ifindex))
        any_source[args[0]] = s
    elif command == "leave":
        s = any_source.pop(args[0])
        s.setsockopt(IPPROTO_IPV6, IPV6_LEAVE_GROUP, struct.pack("=16sI", address(args[0]), ifindex))
        s.close()
    elif command == "join-source":
        s = source_specific.get(args[0]) or socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        source_specific[args[0]] = s
        s.setsockopt(IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP, group_source_req(args[0], args[1]))
    elif command == "leave-source":
        source_specific[args[0]].setsockopt(IPPROTO_IPV6, MCAST_LEAVE_SOURCE_GROUP, group_source_req(args[0], args[1]))
    elif command == "block":
        any_source[args[0]].setsockopt(IPPROTO_IPV6, MCAST_BLOCK_SOURCE, group_source_req(args[0], args[1]))
    elif command == "unblock":
        any_source[args[0]].setsockopt(IPPROTO_IPV6, MCAST_UNBLOCK_SOURCE, group_source_req(args[0], args[1]))
    else:
        raise OSError(errno.EINVAL, "unknown command " + command)

print("ready", flush=True)
for line in sys.stdin:
    try:
        run(line.split())
        print("ok", flush=True)
    except (OSError, KeyError) as error:
        code = errno.errorcode.get(getattr(error, "errno", None) or 0, "ERROR")
        print("err " + code + " " + str(error), flush=True)
`;

/** Where a listener runs: a host's or a pod's namespace and interface. */
export type ListenerHost = Pick<Host, 'name' | 'ns' | 'iface'>;

export class MldListener {
  private readonly waiting: ((line: string) => void)[] = [];

  private constructor(
    readonly host: ListenerHost,
    private readonly child: ChildProcess,
  ) {
    createInterface({ input: child.stdout! }).on('line', (line) => this.waiting.shift()?.(line));
    child.stdin!.on('error', () => undefined);
  }

  static async start(lab: Lab, host: ListenerHost): Promise<MldListener> {
    const child = lab.spawn(host.ns, ['python3', '-u', '-c', LISTENER_PY, host.iface]);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const listener = new MldListener(host, child);
    const ready = await Promise.race([listener.answer(), sleep(10_000).then(() => 'no answer in 10 s')]);
    if (ready !== 'ready') throw new Error(`the listener in ${host.ns} did not start: ${ready} ${stderr}`);
    return listener;
  }

  private answer(): Promise<string> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Sends one command; resolves once the kernel took it, rejects with its errno. */
  async do(...words: string[]): Promise<void> {
    const answer = this.answer();
    this.child.stdin!.write(`${words.join(' ')}\n`);
    const line = await Promise.race([answer, sleep(10_000).then(() => 'err TIMEOUT no answer in 10 s')]);
    if (line !== 'ok') throw new Error(`${this.host.name}: ${words.join(' ')}: ${line}`);
  }
}

/** One IPv6 address of an interface, as `ip -6 -j addr show` lists it. */
export interface Ipv6AddressState {
  address: string;
  prefixLength: number;
  scope: string;
  /** DAD still running. */
  tentative: boolean;
  /** DAD found a duplicate: the kernel will not use it. */
  dadfailed: boolean;
}

/** The interface's IPv6 addresses and their DAD state. */
export async function ipv6Addresses(lab: Lab, ns: string, iface: string): Promise<Ipv6AddressState[]> {
  const { stdout } = await lab.ip(ns, '-6', '-j', 'addr', 'show', 'dev', iface);
  const links = JSON.parse(stdout) as {
    addr_info?: {
      family?: string;
      local?: string;
      prefixlen?: number;
      scope?: string;
      tentative?: boolean;
      dadfailed?: boolean;
    }[];
  }[];
  return links.flatMap((link) =>
    (link.addr_info ?? [])
      .filter((info) => info.family === 'inet6' && info.local !== undefined)
      .map((info) => ({
        address: info.local!,
        prefixLength: info.prefixlen ?? 128,
        scope: info.scope ?? '',
        tentative: info.tentative === true,
        dadfailed: info.dadfailed === true,
      })),
  );
}

/**
 * Waits until DAD has finished for the interface's link-local address and for every one
 * of `addresses` (none tentative); fails at once on a `dadfailed` one. Resolves with the
 * link-local address.
 */
export async function waitForDad(
  lab: Lab,
  ns: string,
  iface: string,
  addresses: readonly string[] = [],
): Promise<string> {
  const outcome = await waitUntil(
    `DAD to finish on ${ns}/${iface} for the link-local address${addresses.length > 0 ? ` and ${addresses.join(', ')}` : ''}`,
    async () => {
      const states = await ipv6Addresses(lab, ns, iface);
      const failed = states.filter((state) => state.dadfailed).map((state) => state.address);
      if (failed.length > 0) return { failed, linkLocal: undefined };
      const linkLocal = states.find(
        (state) => state.scope === 'link' && state.address.startsWith('fe80:') && !state.tentative,
      );
      const done = addresses.every((address) => states.some((state) => state.address === address && !state.tentative));
      return done && linkLocal !== undefined ? { failed: [], linkLocal: linkLocal.address } : undefined;
    },
    15_000,
    100,
  );
  if (outcome.linkLocal === undefined)
    throw new Error(`${ns}/${iface}: DAD failed (a duplicate answered) for ${outcome.failed.join(', ')}`);
  return outcome.linkLocal;
}

/** The interface's link-local address once DAD has passed (no longer "tentative"). */
export function linkLocalAddress(lab: Lab, ns: string, iface: string): Promise<string> {
  return waitForDad(lab, ns, iface);
}

/**
 * IPv6 on for this one interface (lab namespaces have it off), MLD forced to `mldVersion`
 * first (0: follow the queriers). `quickUnsolicitedReports`: the repeats of the host's
 * unsolicited reports 100 ms apart, so that they are over before a first query and cannot
 * pass for answers to it.
 */
export async function enableIpv6(
  lab: Lab,
  ns: string,
  iface: string,
  mldVersion: 0 | 1 | 2,
  options: { quickUnsolicitedReports?: boolean } = {},
): Promise<void> {
  const conf = `net.ipv6.conf.${iface}`;
  await lab.sysctl(ns, `${conf}.force_mld_version`, mldVersion);
  if (options.quickUnsolicitedReports === true) {
    await lab.sysctl(ns, `${conf}.mldv1_unsolicited_report_interval`, 100);
    await lab.sysctl(ns, `${conf}.mldv2_unsolicited_report_interval`, 100);
  }
  await lab.sysctl(ns, `${conf}.disable_ipv6`, 0);
}
