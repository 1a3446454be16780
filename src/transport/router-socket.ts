/**
 * The kernel's multicast-routing socket of one address family, written once and given the
 * family's kit (src/protocol/mroute/family-kit.ts): a raw IGMP socket for IPv4, a raw
 * ICMPv6 one for IPv6 (the kernel refuses every MRT6_* option on any other). After the
 * family's INIT option (MRT_INIT, MRT6_INIT) it owns the routing interfaces (VIFs, MIFs)
 * and the forwarding cache of its network namespace, and receives the kernel's upcalls
 * (igmpmsg, mrt6msg) about packets with no entry (NOCACHE), on the wrong interface
 * (WRONGVIF, WRONGMIF) or whole (WHOLEPKT). Only one such socket per family may exist per
 * namespace (per table): INIT fails with EADDRINUSE while another holds it. Closing the
 * socket (or DONE) makes the kernel drop every interface and entry it added. Without INIT
 * the socket still joins groups, and with CAP_NET_ADMIN adds static interfaces and entries.
 *
 * The socket is the project's own raw socket (raw-socket.ts, on the native addon). It
 * offers setsockopt but no ioctl: per-interface and per-(S,G) counters come from /proc
 * (protocol/mroute/proc.ts).
 *
 * Every failure leaves as the project's typed errors:
 * - PermissionError (exit 77): EPERM/EACCES — a raw socket needs CAP_NET_RAW, the routing
 *   options CAP_NET_ADMIN.
 * - UnavailableError (exit 69, EX_UNAVAILABLE): INIT's EADDRINUSE. The namespace's one
 *   multicast-router slot is held by another process: a resource we need is unavailable
 *   and retrying once that router is stopped will work; nothing the user typed is wrong
 *   (so not 64), and it is not an internal failure (so not the generic 1).
 * - UsageError (exit 64): values out of range, checked before anything reaches the kernel.
 * - MrouteError 'io' (exit 1): any other errno, with its name and a hint where one helps.
 */
import { McastError, UnavailableError, UsageError } from '../errors.js';
import { checkThreshold } from '../protocol/mroute/arguments.js';
import { errnoOf } from '../protocol/mroute/errno.js';
import {
  boundSetting,
  checkFamilyAddress,
  checkIndex,
  checkInterfaceIfindex,
  type FamilyKit,
  type Membership,
  readUpcall,
  type RouterUpcall,
  type SourceFilterSetting,
  type SourceGroup,
  type SourceMembership,
  type UpcallIndexWidth,
} from '../protocol/mroute/family-kit.js';
import { type Hints, mrouteError } from '../protocol/mroute/mroute-error.js';
import { openRawSocket, type RawSocket } from './raw-socket.js';

export type { Membership, RouterUpcall, SourceFilterSetting, SourceGroup, SourceMembership };

export interface RouterSocketOpenOptions {
  /** The family's kit (IPV4_KIT, IPV6_KIT of protocol/mroute/family-kits.ts). */
  family: FamilyKit;
  /**
   * INIT: become this namespace's multicast router of the family (interfaces, entries,
   * upcalls; they go when the socket closes). Without it, a socket with CAP_NET_ADMIN may
   * still add interfaces and entries: the kernel marks them static, keeps them after close,
   * and forwards with them only while some socket holds INIT.
   */
  init: boolean;
  /** Width of the upcall's interface field: default from the running kernel (IPv4's is 8 bits before Linux 5.10). */
  upcallIndexWidth?: UpcallIndexWidth;
}

export interface AddInterfaceOptions {
  index: number;
  ifindex: number;
  /** Minimum TTL (hop limit) of packets forwarded out of this interface (default 1). */
  threshold?: number;
}

export interface AddEntryOptions extends SourceGroup {
  /** Incoming interface. */
  iif: number;
  /** Outgoing interfaces. */
  oifs: readonly number[];
  /** TTL threshold for every oif (default 1); IPv6's entries carry none, so there it may only be 1. */
  ttl?: number;
}

const RAW_SOCKET_HINT = 'a raw socket needs CAP_NET_RAW, multicast routing CAP_NET_ADMIN: run as root';

export class RouterSocket {
  readonly #socket: RawSocket;
  readonly #upcallListeners = new Set<(upcall: RouterUpcall) => void>();
  readonly #errorListeners = new Set<(error: McastError) => void>();
  #closed = false;
  readonly kit: FamilyKit;
  /** The width of the upcall's interface field this socket decodes with. */
  readonly upcallIndexWidth: UpcallIndexWidth;

  private constructor(socket: RawSocket, kit: FamilyKit, upcallIndexWidth: UpcallIndexWidth) {
    this.#socket = socket;
    this.kit = kit;
    this.upcallIndexWidth = upcallIndexWidth;
    socket.listen(
      (buffer) => {
        const upcall = readUpcall(kit, buffer, upcallIndexWidth);
        if (upcall === undefined) return; // the family's own IGMP or ICMPv6: not ours to handle here
        for (const listener of this.#upcallListeners) listener(upcall);
      },
      (error) => {
        // The socket is closed after a receive error.
        this.#closed = true;
        const typed = typedError(kit, `the ${kit.qualifier}multicast routing socket failed`, error);
        if (this.#errorListeners.size === 0) throw typed;
        for (const listener of this.#errorListeners) listener(typed);
      },
    );
  }

  /** Opens the family's raw socket; with `init`, makes it the namespace's multicast router of the family. */
  static open(options: RouterSocketOpenOptions): RouterSocket {
    const kit = options.family;
    let socket: RawSocket;
    try {
      socket = openRawSocket({ family: kit.socket.ipVersion, protocol: kit.socket.protocol });
    } catch (error) {
      throw typedError(kit, `cannot open a raw ${kit.socket.protocolName} socket`, error, {
        EPERM: RAW_SOCKET_HINT,
        EACCES: RAW_SOCKET_HINT,
        EAFNOSUPPORT: `this kernel has no ${kit.name}`,
      });
    }
    const { setup } = kit.socket;
    if (setup !== undefined) {
      try {
        socket.setOption(setup.level, setup.option, setup.value);
      } catch (error) {
        socket.close();
        throw typedError(kit, setup.what, error);
      }
    }
    if (options.init) {
      try {
        socket.setOption(kit.socket.level, kit.options.init, 1);
      } catch (error) {
        socket.close();
        throw initError(kit, error);
      }
    }
    return new RouterSocket(socket, kit, options.upcallIndexWidth ?? kit.upcall.kernelWidth());
  }

  get closed(): boolean {
    return this.#closed;
  }

  #set(what: string, option: number, value: Uint8Array | number, hints: Hints = {}): void {
    if (this.#closed)
      throw new McastError('internal', `${what}: the ${this.kit.qualifier}multicast routing socket is closed`);
    try {
      this.#socket.setOption(this.kit.socket.level, option, value);
    } catch (error) {
      throw typedError(this.kit, what, error, hints);
    }
  }

  get #word(): string {
    return this.kit.interfaceWord.toUpperCase();
  }

  /** ADD_VIF (ADD_MIF) for a physical interface, by ifindex. */
  addInterface(options: AddInterfaceOptions): void {
    const { kit } = this;
    const word = this.#word;
    checkIndex(kit, options.index);
    const threshold = options.threshold ?? 1;
    checkThreshold(threshold, `${word} threshold`);
    checkInterfaceIfindex(kit, options.ifindex);
    const { index, ifindex } = options;
    this.#set(
      `cannot add ${word} ${index} (ifindex ${ifindex})`,
      kit.options.addInterface,
      kit.interfaceArgument({ index, ifindex, threshold }),
      {
        EADDRINUSE: `${word} ${index} exists: delete it first, or pick a free index (${kit.proc.interfaces})`,
        EADDRNOTAVAIL: `no interface has ifindex ${ifindex} in this network namespace${kit.hints.unusableDevice} (ip link)`,
        ENFILE: `${word} indexes go from 0 to ${kit.maxInterfaces - 1}`,
        EACCES: `only the socket that did ${kit.optionPrefix}_INIT, or a process with CAP_NET_ADMIN, may change ${word}s`,
      },
    );
  }

  /** DEL_VIF (DEL_MIF). */
  delInterface(index: number): void {
    const word = this.#word;
    checkIndex(this.kit, index);
    this.#set(`cannot delete ${word} ${index}`, this.kit.options.delInterface, this.kit.interfaceKeyArgument(index), {
      EADDRNOTAVAIL: `there is no ${word} ${index} (${this.kit.proc.interfaces})`,
    });
  }

  /**
   * ADD_MFC: packets from `source` to `group` arriving on interface `iif` leave through `oifs`. Replaces an existing
   * entry.
   */
  addEntry(options: AddEntryOptions): void {
    const { kit } = this;
    const word = this.#word;
    checkFamilyAddress(kit, options.source, 'source', false);
    checkFamilyAddress(kit, options.group, 'group', true);
    checkIndex(kit, options.iif, `incoming ${word}`);
    const ttl = options.ttl ?? 1;
    checkThreshold(ttl, 'TTL threshold');
    if (!kit.entryThresholds && ttl !== 1) {
      throw new UsageError(
        `invalid TTL threshold ${ttl}: ${kit.name} entries carry none (each outgoing ${word} forwards what has a hop limit above 1)`,
      );
    }
    for (const oif of options.oifs) checkIndex(kit, oif, `outgoing ${word}`);
    const { source, group } = options;
    this.#set(
      `cannot add the route (${source}, ${group})`,
      kit.options.addEntry,
      kit.entryArgument({ ...options, ttl }),
      {
        ENFILE: `${word} indexes go from 0 to ${kit.maxInterfaces - 1}`,
        EINVAL: 'the group must be a multicast address',
      },
    );
  }

  /** DEL_MFC. */
  delEntry(key: SourceGroup): void {
    const { kit } = this;
    checkFamilyAddress(kit, key.source, 'source', false);
    checkFamilyAddress(kit, key.group, 'group', true);
    this.#set(
      `cannot delete the route (${key.source}, ${key.group})`,
      kit.options.delEntry,
      kit.entryKeyArgument(key),
      {
        ENOENT: `there is no route for (${key.source}, ${key.group}) (${kit.proc.cache})`,
      },
    );
  }

  /**
   * FLUSH: removes the (non-static) entries and interfaces; `flags` is the family's FLUSH_* (default: entries and
   * interfaces).
   */
  flush(flags: number = this.kit.flushAll): void {
    this.#set(`cannot flush the ${this.kit.qualifier}multicast routes`, this.kit.options.flush, flags, {
      ENOPROTOOPT: `${this.kit.optionPrefix}_FLUSH needs Linux 5.8 or later`,
    });
  }

  /** DONE: stop being the namespace's multicast router of the family (the kernel drops our interfaces and routes). */
  done(): void {
    const prefix = this.kit.optionPrefix;
    this.#set(
      `cannot stop being the ${this.kit.qualifier}multicast router (${prefix}_DONE)`,
      this.kit.options.done,
      0,
      {
        EACCES: `only the socket that did ${prefix}_INIT may do ${prefix}_DONE`,
      },
    );
  }

  /** IP_ADD_MEMBERSHIP (IPV6_ADD_MEMBERSHIP) on interface `ifindex`. */
  joinGroup(options: Membership): void {
    const { kit } = this;
    const { group, ifindex } = options;
    checkFamilyAddress(kit, group, 'group', true);
    this.#set(
      `cannot join ${group} on ifindex ${ifindex}`,
      kit.memberships.join,
      kit.membershipArgument({ group, ifindex }),
      {
        EADDRINUSE: `this socket is already a member of ${group} there`,
        ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
        ENOBUFS: `too many memberships on this socket (${boundSetting(kit.memberships.perSocket)})`,
      },
    );
  }

  /** IP_DROP_MEMBERSHIP (IPV6_DROP_MEMBERSHIP). */
  leaveGroup(options: Membership): void {
    const { kit } = this;
    const { group, ifindex } = options;
    checkFamilyAddress(kit, group, 'group', true);
    this.#set(
      `cannot leave ${group} on ifindex ${ifindex}`,
      kit.memberships.leave,
      kit.membershipArgument({ group, ifindex }),
      {
        EADDRNOTAVAIL: `this socket is not a member of ${group} there`,
        ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
      },
    );
  }

  /**
   * MCAST_JOIN_SOURCE_GROUP: joins `group` on `ifindex` in INCLUDE mode with `source`, or adds `source` to such a
   * membership.
   */
  joinSourceGroup(options: SourceMembership): void {
    const { kit } = this;
    checkFamilyAddress(kit, options.group, 'group', true);
    checkFamilyAddress(kit, options.source, 'source', false);
    const { group, source, ifindex } = options;
    const bytes = kit.structs.sourceMembership.encode({ group, source, ifindex });
    const { perSocket, maxSources } = kit.memberships;
    this.#set(`cannot join (${source}, ${group}) on ifindex ${ifindex}`, kit.memberships.joinSource, bytes, {
      EINVAL: `this socket is a member of ${group} there in EXCLUDE mode: change its filter (MCAST_MSFILTER) instead`,
      ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
      ENOBUFS: `too many memberships on this socket (${boundSetting(perSocket)}), or sources in its filter (${boundSetting(maxSources)})`,
    });
  }

  /**
   * MCAST_MSFILTER: replaces the socket's filter of `group` on `ifindex` (it must have joined it there); the kernel
   * reports the change.
   */
  setSourceFilter(options: SourceFilterSetting): void {
    const { kit } = this;
    checkFamilyAddress(kit, options.group, 'group', true);
    for (const source of options.sources) checkFamilyAddress(kit, source, 'source', false);
    const { group, ifindex, mode } = options;
    const bytes = kit.structs.filter.encode({ group, ifindex, mode, sources: [...options.sources] });
    this.#set(
      `cannot set the ${mode} filter of ${options.sources.length} sources for ${group} on ifindex ${ifindex}`,
      kit.memberships.filter,
      bytes,
      {
        ENOBUFS: `more sources than a filter may hold (${boundSetting(kit.memberships.maxSources)})`,
        EINVAL: `this socket has not joined ${group} there`,
        EADDRNOTAVAIL: `this socket has not joined ${group} there`,
        ENODEV: `no interface has ifindex ${ifindex} in this network namespace (ip link)`,
      },
    );
  }

  /**
   * Calls `listener` (synchronously, in the socket's receive callback) with every upcall the
   * kernel sends; the family's own IGMP or ICMPv6 the socket also receives is skipped.
   * Returns a function that removes the listener.
   */
  onUpcall(listener: (upcall: RouterUpcall) => void): () => void {
    this.#upcallListeners.add(listener);
    return () => this.#upcallListeners.delete(listener);
  }

  /** Receive failures (the socket is closed after one). Without a listener they are thrown. */
  onError(listener: (error: McastError) => void): () => void {
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  /**
   * Closes the socket (for an initialised one, the kernel does DONE: its interfaces and
   * entries go). Until then the socket keeps the event loop alive (it is polled). Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close();
  }
}

/** mrouteError, with the permission hint naming the family's raw socket. */
function typedError(kit: FamilyKit, what: string, error: unknown, hints: Hints = {}): McastError {
  const permissionHint = `${kit.qualifier}multicast routing needs CAP_NET_ADMIN (and CAP_NET_RAW for the raw ${kit.socket.protocolName} socket): run as root`;
  return mrouteError(what, error, { hints, permissionHint });
}

/** INIT refused: another router holds the namespace (UnavailableError), or the kernel cannot route the family. */
function initError(kit: FamilyKit, error: unknown): McastError {
  const router = `${kit.qualifier}multicast router`;
  const init = `${kit.optionPrefix}_INIT`;
  if (errnoOf(error) === 'EADDRINUSE') {
    return new UnavailableError(
      `cannot become the ${router} of this network namespace: another multicast router holds this network namespace (${kit.hints.knownRouters}) (${init}: EADDRINUSE)`,
      {
        hint: `stop that router, or use another network namespace; find it with ${kit.hints.findRouter}`,
        cause: error,
      },
    );
  }
  const missing = `the kernel has no ${kit.qualifier}multicast routing (${kit.kernelOption})`;
  return typedError(kit, `cannot become the ${router} of this network namespace (${init})`, error, {
    EOPNOTSUPP: missing,
    ENOPROTOOPT: missing,
  });
}
