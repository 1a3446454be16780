/**
 * The kernel's IPv6 multicast-routing socket, the twin of mroute-socket.ts: a raw ICMPv6
 * socket (the kernel refuses every MRT6_* option on any other) that, after MRT6_INIT, owns
 * the MIF table and the IPv6 multicast forwarding cache of its network namespace, and
 * receives the kernel's upcalls (mrt6msg) about packets with no MFC entry (NOCACHE), on
 * the wrong MIF (WRONGMIF, once MRT6_ASSERT is on) or whole (WHOLEPKT, PIM). One such
 * socket per namespace (per table): MRT6_INIT fails with EADDRINUSE while another holds it.
 * Closing the socket (or MRT6_DONE) makes the kernel drop every MIF and MFC entry it added.
 *
 * The socket is the project's own raw socket (raw-socket.ts), as the IPv4 one's: an AF_INET6
 * raw socket whose setsockopt goes through at any level, which is all MRT6_* needs.
 *
 * The socket blocks every ICMPv6 type (ICMP6_FILTER): the kernel queues upcalls on it
 * directly, past that filter, so what arrives is only upcalls, not the namespace's MLD and
 * Neighbor Discovery traffic, which would otherwise be copied to it for nothing.
 *
 * Failures leave as the same typed errors as the IPv4 socket's: PermissionError (exit 77)
 * for EPERM/EACCES, UnavailableError (exit 69) for MRT6_INIT's EADDRINUSE, UsageError
 * (exit 64) for values out of range, MrouteError 'io' (exit 1, with the errno name) for any
 * other kernel refusal.
 */
import { McastError, PermissionError, UnavailableError } from '../errors.js';
import { errnoOf } from '../protocol/mroute/errno.js';
import type { FilterModeName } from '../protocol/mroute/group-req.js';
import { type Hints, mrouteError } from '../protocol/mroute/mroute-error.js';
import { checkAddress6, checkHopLimit, checkMif, checkMifIfindex } from '../protocol/mroute6/arguments6.js';
import {
  IPPROTO_ICMPV6,
  IPPROTO_IPV6,
  IPV6_ADD_MEMBERSHIP,
  IPV6_DROP_MEMBERSHIP,
  MAXMIFS,
  MCAST_JOIN_SOURCE_GROUP,
  MCAST_MSFILTER,
  MRT6_ADD_MFC,
  MRT6_ADD_MIF,
  MRT6_DEL_MFC,
  MRT6_DEL_MIF,
  MRT6_DONE,
  MRT6_FLUSH,
  MRT6_FLUSH_MFC,
  MRT6_FLUSH_MIFS,
  MRT6_INIT,
} from '../protocol/mroute6/constants.js';
import { groupFilter6, groupSourceReq6, ipv6Mreq } from '../protocol/mroute6/group-req6.js';
import * as mf6cctl from '../protocol/mroute6/mf6cctl.js';
import * as mif6ctl from '../protocol/mroute6/mif6ctl.js';
import { parseUpcall6, type Upcall6 } from '../protocol/mroute6/mrt6msg.js';
import { openRawSocket, type RawSocket } from './raw-socket.js';

export { ifindexOf } from './mroute-socket.js';
export type { Upcall6 };

/** linux/icmpv6.h: setsockopt level IPPROTO_ICMPV6, struct icmp6_filter (256 bits, a set bit blocks that type). */
const ICMPV6_FILTER = 1;
const ICMP6_FILTER_BLOCK_ALL = new Uint8Array(32).fill(0xff);

const PERMISSION_HINT = 'IPv6 multicast routing needs CAP_NET_ADMIN (and CAP_NET_RAW for the raw ICMPv6 socket): run as root';

/** mrouteError, with the permission hint naming the ICMPv6 socket rather than the IGMP one. */
function mroute6Error(what: string, error: unknown, hints: Hints = {}): McastError {
  const typed = mrouteError(what, error, hints);
  if (!(typed instanceof PermissionError) || error instanceof McastError) return typed;
  const errno = errnoOf(error) ?? 'EPERM';
  return new PermissionError(`${what}: ${errno} (${hints[errno] ?? PERMISSION_HINT})`, { hint: PERMISSION_HINT, cause: error });
}

export interface Mroute6OpenOptions {
  /**
   * MRT6_INIT: become this namespace's IPv6 multicast router (MIFs, MFC, upcalls; they go
   * when the socket closes). Without it, a socket with CAP_NET_ADMIN may still add MIFs
   * and MFC entries: the kernel marks them static and keeps them after close.
   */
  init: boolean;
}

export interface AddMifOptions {
  mif: number;
  /** The interface's ifindex (at most 65535: mif6c_pifi is 16 bits). */
  ifindex: number;
  /** vifc_threshold, the MIF's minimum hop limit (default 1). */
  threshold?: number;
}

export interface AddMfc6Options {
  source: string;
  group: string;
  /** Incoming MIF. */
  iif: number;
  /** Outgoing MIFs (mf6cctl has no per-MIF TTL: each forwards packets whose hop limit is above 1). */
  oifs: number[];
}

export interface SourceGroup6 {
  source: string;
  group: string;
}

export interface Membership6 {
  group: string;
  ifindex: number;
}

export interface SourceMembership6 extends Membership6 {
  source: string;
}

/** A socket's whole source filter for one group on one interface (INCLUDE with no sources is a leave). */
export interface SourceFilterSetting6 extends Membership6 {
  mode: FilterModeName;
  sources: readonly string[];
}

export class Mroute6Socket {
  readonly #socket: RawSocket;
  readonly #upcallListeners = new Set<(upcall: Upcall6) => void>();
  readonly #errorListeners = new Set<(error: McastError) => void>();
  #closed = false;

  private constructor(socket: RawSocket) {
    this.#socket = socket;
    socket.listen(
      (buffer) => {
        const upcall = parseUpcall6(buffer);
        if (upcall === undefined) return; // ICMPv6 that got past the filter: not ours to handle here
        for (const listener of this.#upcallListeners) listener(upcall);
      },
      (error) => {
        // The socket is closed after a receive error.
        this.#closed = true;
        const typed = mroute6Error('the IPv6 multicast routing socket failed', error);
        if (this.#errorListeners.size === 0) throw typed;
        for (const listener of this.#errorListeners) listener(typed);
      },
    );
  }

  /** Opens a raw ICMPv6 socket; with `init`, makes it the namespace's IPv6 multicast router (MRT6_INIT). */
  static open(options: Mroute6OpenOptions): Mroute6Socket {
    let socket: RawSocket;
    try {
      socket = openRawSocket({ family: 6, protocol: IPPROTO_ICMPV6 });
    } catch (error) {
      throw mroute6Error('cannot open a raw ICMPv6 socket', error, {
        EPERM: 'a raw socket needs CAP_NET_RAW, multicast routing CAP_NET_ADMIN: run as root',
        EACCES: 'a raw socket needs CAP_NET_RAW, multicast routing CAP_NET_ADMIN: run as root',
        EAFNOSUPPORT: 'this kernel has no IPv6',
      });
    }
    try {
      socket.setOption(IPPROTO_ICMPV6, ICMPV6_FILTER, ICMP6_FILTER_BLOCK_ALL);
    } catch (error) {
      socket.close();
      throw mroute6Error('cannot set the ICMPv6 filter of the multicast routing socket', error);
    }
    if (options.init) {
      try {
        socket.setOption(IPPROTO_IPV6, MRT6_INIT, 1);
      } catch (error) {
        socket.close();
        if (errnoOf(error) === 'EADDRINUSE') {
          throw new UnavailableError(
            'cannot become the IPv6 multicast router of this network namespace: another multicast router holds this network namespace (smcroute, pimd, pim6sd, the mcastctl daemon?) (MRT6_INIT: EADDRINUSE)',
            {
              hint: 'stop that router, or use another network namespace; find it with `ss -awp -A raw` (a raw socket on [::]:ipv6-icmp, with its process)',
              cause: error,
            },
          );
        }
        throw mroute6Error('cannot become the IPv6 multicast router of this network namespace (MRT6_INIT)', error, {
          EOPNOTSUPP: 'the kernel has no IPv6 multicast routing (CONFIG_IPV6_MROUTE)',
          ENOPROTOOPT: 'the kernel has no IPv6 multicast routing (CONFIG_IPV6_MROUTE)',
        });
      }
    }
    return new Mroute6Socket(socket);
  }

  get closed(): boolean {
    return this.#closed;
  }

  #set(what: string, option: number, value: Uint8Array | number, hints: Hints = {}): void {
    if (this.#closed) throw new McastError('internal', `${what}: the IPv6 multicast routing socket is closed`);
    try {
      this.#socket.setOption(IPPROTO_IPV6, option, value);
    } catch (error) {
      throw mroute6Error(what, error, hints);
    }
  }

  /** MRT6_ADD_MIF for a physical interface, by ifindex. */
  addMif(options: AddMifOptions): void {
    checkMif(options.mif);
    const threshold = options.threshold ?? 1;
    checkHopLimit(threshold, 'MIF threshold');
    checkMifIfindex(options.ifindex);
    const bytes = mif6ctl.encode({ mif: options.mif, flags: 0, threshold, ifindex: options.ifindex, rateLimit: 0 });
    this.#set(`cannot add MIF ${options.mif} (ifindex ${options.ifindex})`, MRT6_ADD_MIF, bytes, {
      EADDRINUSE: `MIF ${options.mif} exists: delete it first, or pick a free index (/proc/net/ip6_mr_vif)`,
      EADDRNOTAVAIL: `no interface has ifindex ${options.ifindex} in this network namespace (ip link)`,
      ENFILE: `MIF indexes go from 0 to ${MAXMIFS - 1}`,
      EACCES: 'only the socket that did MRT6_INIT, or a process with CAP_NET_ADMIN, may change MIFs',
    });
  }

  /** MRT6_DEL_MIF (its argument is a bare mifi_t, a u16). */
  delMif(mif: number): void {
    checkMif(mif);
    const bytes = new Uint8Array(2);
    new DataView(bytes.buffer).setUint16(0, mif, true);
    this.#set(`cannot delete MIF ${mif}`, MRT6_DEL_MIF, bytes, {
      EADDRNOTAVAIL: `there is no MIF ${mif} (/proc/net/ip6_mr_vif)`,
    });
  }

  /** MRT6_ADD_MFC: packets from `source` to `group` arriving on MIF `iif` leave through `oifs`. Replaces an existing entry. */
  addMfc(options: AddMfc6Options): void {
    checkAddress6(options.source, 'source', false);
    checkAddress6(options.group, 'group', true);
    checkMif(options.iif, 'incoming MIF');
    for (const oif of options.oifs) checkMif(oif, 'outgoing MIF');
    const bytes = mf6cctl.encode({ origin: options.source, group: options.group, parent: options.iif, oifs: options.oifs });
    this.#set(`cannot add the route (${options.source}, ${options.group})`, MRT6_ADD_MFC, bytes, {
      ENFILE: `MIF indexes go from 0 to ${MAXMIFS - 1}`,
      EINVAL: 'the group must be a multicast address',
    });
  }

  /** MRT6_DEL_MFC. */
  delMfc(options: SourceGroup6): void {
    checkAddress6(options.source, 'source', false);
    checkAddress6(options.group, 'group', true);
    const bytes = mf6cctl.encode({ origin: options.source, group: options.group, parent: 0, oifs: [] });
    this.#set(`cannot delete the route (${options.source}, ${options.group})`, MRT6_DEL_MFC, bytes, {
      ENOENT: `there is no route for (${options.source}, ${options.group}) (/proc/net/ip6_mr_cache)`,
    });
  }

  /** MRT6_FLUSH: removes the (non-static) MFC entries and MIFs; `flags` is MRT6_FLUSH_* (default MFC | MIFS). */
  flush(flags: number = MRT6_FLUSH_MFC | MRT6_FLUSH_MIFS): void {
    this.#set('cannot flush the IPv6 multicast routes', MRT6_FLUSH, flags, {
      ENOPROTOOPT: 'MRT6_FLUSH needs Linux 5.8 or later',
    });
  }

  /** MRT6_DONE: stop being the namespace's IPv6 multicast router (the kernel drops our MIFs and routes). */
  done(): void {
    this.#set('cannot stop being the IPv6 multicast router (MRT6_DONE)', MRT6_DONE, 0, {
      EACCES: 'only the socket that did MRT6_INIT may do MRT6_DONE',
    });
  }

  /** IPV6_ADD_MEMBERSHIP on interface `ifindex` (ipv6_mreq). */
  joinGroup(options: Membership6): void {
    checkAddress6(options.group, 'group', true);
    this.#set(`cannot join ${options.group} on ifindex ${options.ifindex}`, IPV6_ADD_MEMBERSHIP, ipv6Mreq.encode(options), {
      EADDRINUSE: `this socket is already a member of ${options.group} there`,
      ENODEV: `no interface has ifindex ${options.ifindex} in this network namespace (ip link)`,
      ENOBUFS: 'too many memberships on this socket (net.core.optmem_max)',
    });
  }

  /** IPV6_DROP_MEMBERSHIP. */
  leaveGroup(options: Membership6): void {
    checkAddress6(options.group, 'group', true);
    this.#set(`cannot leave ${options.group} on ifindex ${options.ifindex}`, IPV6_DROP_MEMBERSHIP, ipv6Mreq.encode(options), {
      EADDRNOTAVAIL: `this socket is not a member of ${options.group} there`,
      ENODEV: `no interface has ifindex ${options.ifindex} in this network namespace (ip link)`,
    });
  }

  /** MCAST_JOIN_SOURCE_GROUP: joins `group` on `ifindex` in INCLUDE mode with `source`, or adds `source` to such a membership. */
  joinSourceGroup(options: SourceMembership6): void {
    checkAddress6(options.group, 'group', true);
    checkAddress6(options.source, 'source', false);
    const { group, source, ifindex } = options;
    this.#set(`cannot join (${source}, ${group}) on ifindex ${ifindex}`, MCAST_JOIN_SOURCE_GROUP, groupSourceReq6.encode({ group, source, ifindex }), {
      EINVAL: `this socket is a member of ${group} there in EXCLUDE mode: change its filter (MCAST_MSFILTER) instead`,
      ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
      ENOBUFS: 'too many memberships on this socket (net.core.optmem_max), or sources in its filter (net.ipv6.mld_max_msf)',
    });
  }

  /** MCAST_MSFILTER: replaces the socket's filter of `group` on `ifindex` (it must have joined it there); the kernel reports the change. */
  setSourceFilter(options: SourceFilterSetting6): void {
    checkAddress6(options.group, 'group', true);
    for (const source of options.sources) checkAddress6(source, 'source', false);
    const { group, ifindex, mode } = options;
    const bytes = groupFilter6.encode({ group, ifindex, mode, sources: [...options.sources] });
    this.#set(`cannot set the ${mode} filter of ${options.sources.length} sources for ${group} on ifindex ${ifindex}`, MCAST_MSFILTER, bytes, {
      ENOBUFS: 'more sources than a filter may hold (net.ipv6.mld_max_msf)',
      EINVAL: `this socket has not joined ${group} there`,
      EADDRNOTAVAIL: `this socket has not joined ${group} there`,
      ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
    });
  }

  /**
   * Calls `listener` (synchronously, in the socket's receive callback) with every upcall
   * (mrt6msg) the kernel sends. Returns a function that removes the listener.
   */
  onUpcall(listener: (upcall: Upcall6) => void): () => void {
    this.#upcallListeners.add(listener);
    return () => this.#upcallListeners.delete(listener);
  }

  /** Receive failures (the socket is closed after one). Without a listener they are thrown. */
  onError(listener: (error: McastError) => void): () => void {
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  /**
   * Closes the socket (for an initialised one, the kernel does MRT6_DONE: its MIFs and MFC
   * entries go). Until then the socket keeps the event loop alive (it is polled). Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close();
  }
}
