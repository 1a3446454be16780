/**
 * The kernel's IPv4 multicast-routing socket: a raw IPPROTO_IGMP socket that, after
 * MRT_INIT, owns the VIF table and the multicast forwarding cache (MFC) of its network
 * namespace, and receives the kernel's upcalls (igmpmsg) about packets with no MFC entry.
 * Only one such socket may exist per namespace (per table): MRT_INIT fails with EADDRINUSE
 * while another holds it. Closing the socket (or MRT_DONE) makes the kernel drop every VIF
 * and MFC entry it added.
 *
 * The socket is the project's own raw socket (raw-socket.ts, on the native addon). It
 * offers setsockopt but no ioctl: per-(S,G) and per-VIF counters come from /proc (see proc.ts).
 *
 * Every failure leaves as the project's typed errors:
 * - PermissionError (exit 77): EPERM/EACCES — a raw socket needs CAP_NET_RAW, the MRT_*
 *   options CAP_NET_ADMIN.
 * - UnavailableError (exit 69, EX_UNAVAILABLE): MRT_INIT's EADDRINUSE. The namespace's one
 *   multicast-router slot is held by another process: a resource we need is unavailable
 *   and retrying once that router is stopped will work; nothing the user typed is wrong
 *   (so not 64), and it is not an internal failure (so not the generic 1).
 * - UsageError (exit 64): an interface that does not exist, values out of range.
 * - McastError 'io' (exit 1): any other errno, with its name and a hint where one helps.
 */
import { readFileSync } from 'node:fs';

import { McastError, UnavailableError, UsageError, isSystemError, quoteInput } from '../errors.js';
import { checkAddress, checkTtl, checkVif } from '../protocol/mroute/arguments.js';
import {
  IPPROTO_IGMP,
  IPPROTO_IP,
  IP_ADD_MEMBERSHIP,
  IP_DROP_MEMBERSHIP,
  MAXVIFS,
  MCAST_JOIN_SOURCE_GROUP,
  MCAST_MSFILTER,
  MRT_ADD_MFC,
  MRT_ADD_VIF,
  MRT_DEL_MFC,
  MRT_DEL_VIF,
  MRT_DONE,
  MRT_FLUSH,
  MRT_FLUSH_MFC,
  MRT_FLUSH_VIFS,
  MRT_INIT,
  VIFF_USE_IFINDEX,
} from '../protocol/mroute/constants.js';
import { errnoOf } from '../protocol/mroute/errno.js';
import { type Hints, MrouteError, mrouteError } from '../protocol/mroute/mroute-error.js';
import { type FilterModeName, groupFilter, groupSourceReq } from '../protocol/mroute/group-req.js';
import { kernelVifWidth, parseUpcall, type Upcall, type VifWidth } from '../protocol/mroute/igmpmsg.js';
import * as ipMreqn from '../protocol/mroute/ip-mreqn.js';
import * as mfcctl from '../protocol/mroute/mfcctl.js';
import * as vifctl from '../protocol/mroute/vifctl.js';
import { openRawSocket, type RawSocket } from './raw-socket.js';

export interface MrouteOpenOptions {
  /**
   * MRT_INIT: become this namespace's multicast router (VIFs, MFC, upcalls; they go when
   * the socket closes). Without it, a socket with CAP_NET_ADMIN may still add VIFs and MFC
   * entries: the kernel marks them static, keeps them after close, and forwards with them
   * only while some socket holds MRT_INIT.
   */
  init: boolean;
  /** Width of igmpmsg.im_vif: default from the running kernel (16 on ≥ 5.10). */
  vifWidth?: VifWidth;
}

export interface AddVifOptions {
  vif: number;
  ifindex: number;
  /** Minimum TTL of packets forwarded out of this VIF (default 1). */
  threshold?: number;
}

export interface AddMfcOptions {
  source: string;
  group: string;
  /** Incoming VIF. */
  iif: number;
  /** Outgoing VIFs. */
  oifs: number[];
  /** TTL threshold for every oif (default 1). */
  ttl?: number;
}

export interface SourceGroup {
  source: string;
  group: string;
}

export interface Membership {
  group: string;
  ifindex: number;
}

export interface SourceMembership extends Membership {
  source: string;
}

/** A socket's whole source filter for one group on one interface (INCLUDE with no sources is a leave, for the kernel too). */
export interface SourceFilterSetting extends Membership {
  mode: FilterModeName;
  sources: readonly string[];
}

export { MrouteError };

/** The ifindex of interface `name` in this process's network namespace (/sys/class/net/<name>/ifindex). */
export function ifindexOf(name: string): number {
  if (name.length === 0 || Buffer.byteLength(name) > 15 || /[/\s:]/.test(name) || name === '.' || name === '..') {
    throw new UsageError(`invalid interface name ${quoteInput(name)}: 1 to 15 characters, no '/', ':' or whitespace`);
  }
  try {
    return Number(readFileSync(`/sys/class/net/${name}/ifindex`, 'utf8').trim());
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') {
      throw new UsageError(`no interface ${name} in this network namespace (list them with \`ip link\`)`, { code: 'no-such-interface', cause: error });
    }
    throw new McastError('io', `cannot read the ifindex of ${name}: ${(error as Error).message}`, undefined, { cause: error });
  }
}

export class MrouteSocket {
  readonly #socket: RawSocket;
  readonly #upcallListeners = new Set<(upcall: Upcall) => void>();
  readonly #errorListeners = new Set<(error: McastError) => void>();
  #closed = false;
  /** igmpmsg.im_vif width this socket decodes upcalls with. */
  readonly vifWidth: VifWidth;

  private constructor(socket: RawSocket, vifWidth: VifWidth) {
    this.#socket = socket;
    this.vifWidth = vifWidth;
    socket.listen(
      (buffer) => {
        const upcall = parseUpcall(buffer, this.vifWidth);
        if (upcall === undefined) return; // real IGMP: not ours to handle here
        for (const listener of this.#upcallListeners) listener(upcall);
      },
      (error) => {
        // The socket is closed after a receive error.
        this.#closed = true;
        const typed = mrouteError('the multicast routing socket failed', error);
        if (this.#errorListeners.size === 0) throw typed;
        for (const listener of this.#errorListeners) listener(typed);
      },
    );
  }

  /** Opens a raw IGMP socket; with `init`, makes it the namespace's multicast router (MRT_INIT). */
  static open(options: MrouteOpenOptions): MrouteSocket {
    let socket: RawSocket;
    try {
      socket = openRawSocket({ family: 4, protocol: IPPROTO_IGMP });
    } catch (error) {
      throw mrouteError('cannot open a raw IGMP socket', error, {
        EPERM: 'a raw socket needs CAP_NET_RAW, multicast routing CAP_NET_ADMIN: run as root',
        EACCES: 'a raw socket needs CAP_NET_RAW, multicast routing CAP_NET_ADMIN: run as root',
      });
    }
    if (options.init) {
      try {
        socket.setOption(IPPROTO_IP, MRT_INIT, 1);
      } catch (error) {
        socket.close();
        if (errnoOf(error) === 'EADDRINUSE') {
          throw new UnavailableError(
            'cannot become the multicast router of this network namespace: another multicast router holds this network namespace (smcroute, pimd, the mcastctl daemon?) (MRT_INIT: EADDRINUSE)',
            {
              hint: 'stop that router, or use another network namespace; find it with `ss -awp` (a raw socket on 0.0.0.0:igmp, with its process)',
              cause: error,
            },
          );
        }
        throw mrouteError('cannot become the multicast router of this network namespace (MRT_INIT)', error, {
          EOPNOTSUPP: 'the kernel has no multicast routing (CONFIG_IP_MROUTE)',
          ENOPROTOOPT: 'the kernel has no multicast routing (CONFIG_IP_MROUTE)',
        });
      }
    }
    return new MrouteSocket(socket, options.vifWidth ?? kernelVifWidth());
  }

  get closed(): boolean {
    return this.#closed;
  }

  #set(what: string, option: number, value: Uint8Array | number, hints: Hints = {}): void {
    if (this.#closed) throw new McastError('internal', `${what}: the multicast routing socket is closed`);
    try {
      this.#socket.setOption(IPPROTO_IP, option, value);
    } catch (error) {
      throw mrouteError(what, error, hints);
    }
  }

  /** MRT_ADD_VIF for a physical interface, by ifindex (VIFF_USE_IFINDEX). */
  addVif(options: AddVifOptions): void {
    checkVif(options.vif);
    const threshold = options.threshold ?? 1;
    checkTtl(threshold, 'VIF threshold');
    if (!Number.isInteger(options.ifindex) || options.ifindex < 1) throw new UsageError(`invalid ifindex ${options.ifindex}`);
    const bytes = vifctl.encode({
      vif: options.vif,
      flags: VIFF_USE_IFINDEX,
      threshold,
      rateLimit: 0,
      local: { kind: 'ifindex', ifindex: options.ifindex },
      remoteAddress: '0.0.0.0',
    });
    this.#set(`cannot add VIF ${options.vif} (ifindex ${options.ifindex})`, MRT_ADD_VIF, bytes, {
      EADDRINUSE: `VIF ${options.vif} exists: delete it first, or pick a free index (/proc/net/ip_mr_vif)`,
      EADDRNOTAVAIL: `no interface has ifindex ${options.ifindex} in this network namespace, or it cannot carry multicast (ip link)`,
      ENFILE: `VIF indexes go from 0 to ${MAXVIFS - 1}`,
      EACCES: 'only the socket that did MRT_INIT, or a process with CAP_NET_ADMIN, may change VIFs',
    });
  }

  /** MRT_DEL_VIF. */
  delVif(vif: number): void {
    checkVif(vif);
    const bytes = vifctl.encode({ vif, flags: VIFF_USE_IFINDEX, threshold: 0, rateLimit: 0, local: { kind: 'ifindex', ifindex: 0 }, remoteAddress: '0.0.0.0' });
    this.#set(`cannot delete VIF ${vif}`, MRT_DEL_VIF, bytes, {
      EADDRNOTAVAIL: `there is no VIF ${vif} (/proc/net/ip_mr_vif)`,
    });
  }

  /** MRT_ADD_MFC: packets from `source` to `group` arriving on VIF `iif` leave through `oifs`. Replaces an existing entry. */
  addMfc(options: AddMfcOptions): void {
    checkAddress(options.source, 'source', false);
    checkAddress(options.group, 'group', true);
    checkVif(options.iif, 'incoming VIF');
    const ttl = options.ttl ?? 1;
    checkTtl(ttl, 'TTL threshold');
    const ttls = new Array<number>(MAXVIFS).fill(0);
    for (const oif of options.oifs) {
      checkVif(oif, 'outgoing VIF');
      ttls[oif] = ttl;
    }
    const bytes = mfcctl.encode({ origin: options.source, group: options.group, parent: options.iif, ttls, packets: 0, bytes: 0, wrongIf: 0, expire: 0 });
    this.#set(`cannot add the route (${options.source}, ${options.group})`, MRT_ADD_MFC, bytes, {
      ENFILE: `VIF indexes go from 0 to ${MAXVIFS - 1}`,
      EINVAL: 'the group must be a multicast address',
    });
  }

  /** MRT_DEL_MFC. */
  delMfc(options: SourceGroup): void {
    checkAddress(options.source, 'source', false);
    checkAddress(options.group, 'group', true);
    const bytes = mfcctl.encode({ origin: options.source, group: options.group, parent: 0, ttls: [], packets: 0, bytes: 0, wrongIf: 0, expire: 0 });
    this.#set(`cannot delete the route (${options.source}, ${options.group})`, MRT_DEL_MFC, bytes, {
      ENOENT: `there is no route for (${options.source}, ${options.group}) (/proc/net/ip_mr_cache)`,
    });
  }

  /** MRT_FLUSH: removes the (non-static) MFC entries and VIFs; `flags` is MRT_FLUSH_* (default MFC | VIFS). */
  flush(flags: number = MRT_FLUSH_MFC | MRT_FLUSH_VIFS): void {
    this.#set('cannot flush the multicast routes', MRT_FLUSH, flags, {
      ENOPROTOOPT: 'MRT_FLUSH needs Linux 5.8 or later',
    });
  }

  /** MRT_DONE: stop being the namespace's multicast router (the kernel drops our VIFs and routes). */
  done(): void {
    this.#set('cannot stop being the multicast router (MRT_DONE)', MRT_DONE, 0, {
      EACCES: 'only the socket that did MRT_INIT may do MRT_DONE',
    });
  }

  /** IP_ADD_MEMBERSHIP on interface `ifindex` (ip_mreqn). */
  joinGroup(options: Membership): void {
    checkAddress(options.group, 'group', true);
    this.#set(
      `cannot join ${options.group} on ifindex ${options.ifindex}`,
      IP_ADD_MEMBERSHIP,
      ipMreqn.encode({ group: options.group, address: '0.0.0.0', ifindex: options.ifindex }),
      {
        EADDRINUSE: `this socket is already a member of ${options.group} there`,
        ENODEV: `no interface has ifindex ${options.ifindex} in this network namespace (ip link)`,
        ENOBUFS: 'too many memberships on this socket (net.ipv4.igmp_max_memberships)',
      },
    );
  }

  /** IP_DROP_MEMBERSHIP. */
  leaveGroup(options: Membership): void {
    checkAddress(options.group, 'group', true);
    this.#set(
      `cannot leave ${options.group} on ifindex ${options.ifindex}`,
      IP_DROP_MEMBERSHIP,
      ipMreqn.encode({ group: options.group, address: '0.0.0.0', ifindex: options.ifindex }),
      {
        EADDRNOTAVAIL: `this socket is not a member of ${options.group} there`,
        ENODEV: `no interface has ifindex ${options.ifindex} in this network namespace (ip link)`,
      },
    );
  }

  /** MCAST_JOIN_SOURCE_GROUP: joins `group` on `ifindex` in INCLUDE mode with `source`, or adds `source` to such a membership. */
  joinSourceGroup(options: SourceMembership): void {
    checkAddress(options.group, 'group', true);
    checkAddress(options.source, 'source', false);
    const { group, source, ifindex } = options;
    this.#set(`cannot join (${source}, ${group}) on ifindex ${ifindex}`, MCAST_JOIN_SOURCE_GROUP, groupSourceReq.encode({ group, source, ifindex }), {
      EINVAL: `this socket is a member of ${group} there in EXCLUDE mode: change its filter (MCAST_MSFILTER) instead`,
      ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
      ENOBUFS: 'too many memberships on this socket (net.ipv4.igmp_max_memberships), or sources in its filter (net.ipv4.igmp_max_msf)',
    });
  }

  /** MCAST_MSFILTER: replaces the socket's filter of `group` on `ifindex` (it must have joined it there); the kernel reports the change. */
  setSourceFilter(options: SourceFilterSetting): void {
    checkAddress(options.group, 'group', true);
    for (const source of options.sources) checkAddress(source, 'source', false);
    const { group, ifindex, mode } = options;
    const bytes = groupFilter.encode({ group, ifindex, mode, sources: [...options.sources] });
    this.#set(`cannot set the ${mode} filter of ${options.sources.length} sources for ${group} on ifindex ${ifindex}`, MCAST_MSFILTER, bytes, {
      ENOBUFS: 'more sources than a filter may hold (net.ipv4.igmp_max_msf)',
      EINVAL: `this socket has not joined ${group} there`,
      EADDRNOTAVAIL: `this socket has not joined ${group} there`,
      ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
    });
  }

  /**
   * Calls `listener` (synchronously, in the socket's receive callback) with every upcall
   * (igmpmsg) the kernel sends; real IGMP the socket also receives is skipped. Returns a
   * function that removes the listener.
   */
  onUpcall(listener: (upcall: Upcall) => void): () => void {
    this.#upcallListeners.add(listener);
    return () => this.#upcallListeners.delete(listener);
  }

  /** Receive failures (the socket is closed after one). Without a listener they are thrown. */
  onError(listener: (error: McastError) => void): () => void {
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  /**
   * Closes the socket (for an initialised one, the kernel does MRT_DONE: its VIFs and MFC
   * entries go). Until then the socket keeps the event loop alive (it is polled). Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close();
  }
}
