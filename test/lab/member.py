#!/usr/bin/env python3
"""A multicast group member for the lab: a long-running process in a host's network
namespace that joins and leaves groups with ordinary sockets, so that whatever IGMP
appears on the wire is what the real kernel sends.

Protocol: one command a line on stdin, one answer a line on stdout, in order.
  join G [IFACE]        IP_ADD_MEMBERSHIP (IFACE: interface name or local address)
  leave G               IP_DROP_MEMBERSHIP, then close that group's socket
  join-source G S       IP_ADD_SOURCE_MEMBERSHIP (include mode, SSM)
  drop-source G S       IP_DROP_SOURCE_MEMBERSHIP
  block G S             IP_BLOCK_SOURCE (exclude mode; needs a plain join first)
  unblock G S           IP_UNBLOCK_SOURCE
  send-igmp DST HEX [noRA]
                        send HEX (an IGMP message, checksum as given) to DST through a
                        raw IGMP socket, TTL 1, with the Router Alert option unless noRA
  count G [TAG]         (with --port) read what G's socket has received since the last
                        count (or the join): answers "ok count G [TAG] N", N the datagrams
                        read (those whose payload starts with "TAG " only, if given)
  quit                  close every socket (the kernel leaves every group) and exit
Answers: "ok <command>" or "err <command>: <ERRNO-NAME> <text>". "ready" is printed once
at start. The process exits when stdin closes, and (through PR_SET_PDEATHSIG) when its
parent dies.

One socket per group: a socket may join only net.ipv4.igmp_max_memberships groups (20),
and source filters are per socket and group.

With --port P, each group's socket is bound to (G, P), so it receives the datagrams sent
to G:P (a receiver that changes nothing on the wire: the join is the same).

Usage: member.py --addr LOCAL_IPV4 [--iface NAME] [--port P]
"""

import argparse
import ctypes
import errno
import signal
import socket
import struct
import sys

# Linux values (linux/in.h); Python's socket module lacks some of them.
IP_ADD_MEMBERSHIP = 35
IP_DROP_MEMBERSHIP = 36
IP_UNBLOCK_SOURCE = 37
IP_BLOCK_SOURCE = 38
IP_ADD_SOURCE_MEMBERSHIP = 39
IP_DROP_SOURCE_MEMBERSHIP = 40
IP_MULTICAST_IF = 32
IP_MULTICAST_TTL = 33
IP_MULTICAST_LOOP = 34
IP_OPTIONS = 4
IP_MULTICAST_ALL = 49
PR_SET_PDEATHSIG = 1

ROUTER_ALERT = b"\x94\x04\x00\x00"  # RFC 2113: type 148, length 4, value 0


class CommandError(Exception):
    pass


def die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass


def ipv4(text):
    """Four octets of a strict dotted quad (inet_aton alone also takes "10.1")."""
    if text.count(".") == 3:
        try:
            return socket.inet_aton(text)
        except OSError:
            pass
    raise CommandError(f"EINVAL not an IPv4 address: {text!r}")


class Member:
    def __init__(self, addr, iface, port=None):
        self.addr = addr
        self.iface = iface
        self.port = port
        self.sockets = {}  # group -> socket
        self.sources = {}  # group -> set of included sources (source-specific joins)
        self.joins = {}  # group -> the ip_mreq(n) of its plain join, reused to leave
        self.raw = None

    def _socket(self, group, create):
        sock = self.sockets.get(group)
        if sock is None and create:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            # Deliver to this socket only what it joined itself.
            sock.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)
            if self.port is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((group, self.port))
                sock.setblocking(False)
            self.sockets[group] = sock
        if sock is None:
            raise CommandError(f"ENOENT no socket for group {group} (join it first)")
        return sock

    def _close(self, group):
        sock = self.sockets.pop(group, None)
        self.sources.pop(group, None)
        self.joins.pop(group, None)
        if sock is not None:
            sock.close()

    def _local(self, iface):
        if iface is None:
            iface = self.iface
        if iface is None:
            return self.addr
        return iface

    def join(self, group, iface=None):
        g = ipv4(group)
        where = self._local(iface)
        sock = self._socket(group, create=True)
        try:
            if where.count(".") == 3:
                mreq = g + ipv4(where)
            else:
                # struct ip_mreqn { imr_multiaddr; imr_address; int imr_ifindex; }
                mreq = g + socket.inet_aton("0.0.0.0") + struct.pack("@i", socket.if_nametoindex(where))
            sock.setsockopt(socket.IPPROTO_IP, IP_ADD_MEMBERSHIP, mreq)
        except OSError:
            if group not in self.sources and group not in self.joins:
                self._close(group)
            raise
        self.joins[group] = mreq

    def leave(self, group):
        ipv4(group)
        sock = self._socket(group, create=False)
        mreq = self.joins.get(group)
        if mreq is None:
            raise CommandError(f"ENOENT {group} was not joined with join (use drop-source)")
        try:
            sock.setsockopt(socket.IPPROTO_IP, IP_DROP_MEMBERSHIP, mreq)
        finally:
            self._close(group)

    def _mreq_source(self, group, source):
        # Linux's struct ip_mreq_source is { imr_multiaddr; imr_interface; imr_sourceaddr; }
        # (BSD puts the source second).
        return ipv4(group) + ipv4(self.addr) + ipv4(source)

    def join_source(self, group, source):
        mreq = self._mreq_source(group, source)
        fresh = group not in self.sockets
        sock = self._socket(group, create=True)
        try:
            sock.setsockopt(socket.IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, mreq)
        except OSError:
            if fresh:
                self._close(group)
            raise
        self.sources.setdefault(group, set()).add(source)

    def drop_source(self, group, source):
        mreq = self._mreq_source(group, source)
        sock = self._socket(group, create=False)
        sock.setsockopt(socket.IPPROTO_IP, IP_DROP_SOURCE_MEMBERSHIP, mreq)
        included = self.sources.get(group, set())
        included.discard(source)
        if not included:
            # The kernel left the group with its last source; forget the socket too.
            self._close(group)

    def block(self, group, source):
        self._socket(group, create=False).setsockopt(
            socket.IPPROTO_IP, IP_BLOCK_SOURCE, self._mreq_source(group, source))

    def unblock(self, group, source):
        self._socket(group, create=False).setsockopt(
            socket.IPPROTO_IP, IP_UNBLOCK_SOURCE, self._mreq_source(group, source))

    def count(self, group, tag=None):
        if self.port is None:
            raise CommandError("EINVAL count needs --port")
        sock = self._socket(group, create=False)
        prefix = None if tag is None else (tag + " ").encode()
        n = 0
        while True:
            try:
                data = sock.recv(65535)
            except BlockingIOError:
                return str(n)
            if prefix is None or data.startswith(prefix):
                n += 1

    def send_igmp(self, dst, hex_payload, *flags):
        for flag in flags:
            if flag != "noRA":
                raise CommandError(f"EINVAL unknown flag {flag!r}")
        try:
            payload = bytes.fromhex(hex_payload)
        except ValueError:
            raise CommandError("EINVAL payload is not hex")
        d = ipv4(dst)
        if self.raw is None:
            self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_IGMP)
            self.raw.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_TTL, 1)
            self.raw.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_LOOP, 0)
            self.raw.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_IF, ipv4(self.addr))
        self.raw.setsockopt(socket.IPPROTO_IP, IP_OPTIONS, b"" if "noRA" in flags else ROUTER_ALERT)
        self.raw.sendto(payload, (socket.inet_ntoa(d), 0))

    def close(self):
        for group in list(self.sockets):
            self._close(group)
        if self.raw is not None:
            self.raw.close()
            self.raw = None


COMMANDS = {
    "join": ("join", 1, 2),
    "leave": ("leave", 1, 1),
    "join-source": ("join_source", 2, 2),
    "drop-source": ("drop_source", 2, 2),
    "block": ("block", 2, 2),
    "unblock": ("unblock", 2, 2),
    "send-igmp": ("send_igmp", 2, 3),
    "count": ("count", 1, 2),
}


def answer(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description="lab multicast group member")
    parser.add_argument("--addr", required=True, help="this host's IPv4 address")
    parser.add_argument("--iface", help="interface name for plain joins (default: by address)")
    parser.add_argument("--port", type=int, help="bind each group's socket to this UDP port (for count)")
    args = parser.parse_args()
    try:
        ipv4(args.addr)
    except CommandError as e:
        parser.error(str(e))
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Ctrl-C at a terminal reaches the whole process group: the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    member = Member(args.addr, args.iface, args.port)
    answer("ready")
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            command = " ".join(words)
            if words[0] == "quit":
                member.close()
                answer(f"ok {command}")
                return
            spec = COMMANDS.get(words[0])
            try:
                if spec is None:
                    raise CommandError(f"EINVAL unknown command {words[0]!r}")
                method, least, most = spec
                if not least <= len(words) - 1 <= most:
                    raise CommandError(f"EINVAL {words[0]} takes {least}..{most} arguments")
                result = getattr(member, method)(*words[1:])
                answer(f"ok {command}" if result is None else f"ok {command} {result}")
            except CommandError as e:
                answer(f"err {command}: {e}")
            except OSError as e:
                name = errno.errorcode.get(e.errno or 0, "EIO")
                answer(f"err {command}: {name} {e.strerror or e}")
    finally:
        member.close()


if __name__ == "__main__":
    main()
