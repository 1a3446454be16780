#!/usr/bin/env python3
"""A source-filtering multicast member for the lab: a long-running process in a pod's
network namespace that joins groups with IGMPv3 source filters through ordinary sockets
(so the IGMP on the wire is what the real kernel sends) and reports every datagram its
sockets receive, with the sender's address.

Protocol: one command a line on stdin, one answer a line on stdout, in order.
  join G                IP_ADD_MEMBERSHIP (any source; IGMPv3: TO_EX {})
  leave G               IP_DROP_MEMBERSHIP (also ends a source-specific membership)
  join-source G S       IP_ADD_SOURCE_MEMBERSHIP (include mode: ALLOW {S})
  drop-source G S       IP_DROP_SOURCE_MEMBERSHIP (BLOCK {S}; the last one leaves G)
  block G S             IP_BLOCK_SOURCE (exclude mode, after join: BLOCK {S})
  unblock G S           IP_UNBLOCK_SOURCE (ALLOW {S})
  quit                  close every socket (the kernel leaves every group) and exit
Answers: "ok <command>" or "err <command>: <ERRNO-NAME> <text>"; "ready" once at start.
Between answers, at any time: "rx <json>" for each datagram received, the JSON being
{"group", "from", "fromPort", "payload"}. The process exits when stdin closes, and
(through PR_SET_PDEATHSIG) when its parent dies.

Each group has its own socket bound to (G, PORT) with IP_MULTICAST_ALL off, so a socket
gets only what its own filter admits. A socket whose last membership went stays open and
silent, so that the same group can be joined again.

Usage: source_member.py --addr LOCAL_IPV4 --port UDP_PORT
"""

import argparse
import ctypes
import errno
import json
import os
import select
import signal
import socket
import sys

# Linux values (linux/in.h); Python's socket module lacks some of them.
IP_ADD_MEMBERSHIP = 35
IP_DROP_MEMBERSHIP = 36
IP_UNBLOCK_SOURCE = 37
IP_BLOCK_SOURCE = 38
IP_ADD_SOURCE_MEMBERSHIP = 39
IP_DROP_SOURCE_MEMBERSHIP = 40
IP_MULTICAST_ALL = 49
PR_SET_PDEATHSIG = 1


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


def answer(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class SourceMember:
    def __init__(self, addr, port):
        self.addr = addr
        self.port = port
        self.sockets = {}  # group -> socket bound to (group, port)

    def socket_of(self, group):
        ipv4(group)
        sock = self.sockets.get(group)
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Deliver to this socket only what its own memberships admit.
            sock.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)
            sock.bind((group, self.port))
            sock.setblocking(False)
            self.sockets[group] = sock
        return sock

    def mreq(self, group):
        return ipv4(group) + ipv4(self.addr)

    def mreq_source(self, group, source):
        # Linux's struct ip_mreq_source is { imr_multiaddr; imr_interface; imr_sourceaddr; }.
        return ipv4(group) + ipv4(self.addr) + ipv4(source)

    def join(self, group):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_ADD_MEMBERSHIP, self.mreq(group))

    def leave(self, group):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_DROP_MEMBERSHIP, self.mreq(group))

    def join_source(self, group, source):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, self.mreq_source(group, source))

    def drop_source(self, group, source):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_DROP_SOURCE_MEMBERSHIP, self.mreq_source(group, source))

    def block(self, group, source):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_BLOCK_SOURCE, self.mreq_source(group, source))

    def unblock(self, group, source):
        self.socket_of(group).setsockopt(socket.IPPROTO_IP, IP_UNBLOCK_SOURCE, self.mreq_source(group, source))

    def drain(self, sock):
        group = next(g for g, s in self.sockets.items() if s is sock)
        while True:
            try:
                data, (host, sport) = sock.recvfrom(65535)
            except BlockingIOError:
                return
            record = {"group": group, "from": host, "fromPort": sport, "payload": data.decode("latin-1")}
            answer("rx " + json.dumps(record))

    def close(self):
        for sock in self.sockets.values():
            sock.close()
        self.sockets.clear()


COMMANDS = {
    "join": ("join", 1),
    "leave": ("leave", 1),
    "join-source": ("join_source", 2),
    "drop-source": ("drop_source", 2),
    "block": ("block", 2),
    "unblock": ("unblock", 2),
}


def run_command(member, line):
    """Runs one command line; returns False after quit."""
    words = line.split()
    if not words:
        return True
    command = " ".join(words)
    if words[0] == "quit":
        member.close()
        answer(f"ok {command}")
        return False
    spec = COMMANDS.get(words[0])
    try:
        if spec is None:
            raise CommandError(f"EINVAL unknown command {words[0]!r}")
        method, arity = spec
        if len(words) - 1 != arity:
            raise CommandError(f"EINVAL {words[0]} takes {arity} arguments")
        getattr(member, method)(*words[1:])
        answer(f"ok {command}")
    except CommandError as e:
        answer(f"err {command}: {e}")
    except OSError as e:
        name = errno.errorcode.get(e.errno or 0, "EIO")
        answer(f"err {command}: {name} {e.strerror or e}")
    return True


def main():
    parser = argparse.ArgumentParser(description="lab source-filtering multicast member")
    parser.add_argument("--addr", required=True, help="this pod's IPv4 address (the interface joins happen on)")
    parser.add_argument("--port", required=True, type=int, help="the UDP port every group's socket binds")
    args = parser.parse_args()
    try:
        ipv4(args.addr)
    except CommandError as e:
        parser.error(str(e))
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    member = SourceMember(args.addr, args.port)
    answer("ready")
    pending = b""
    try:
        while True:
            readable, _, _ = select.select([0, *member.sockets.values()], [], [])
            for sock in readable:
                if sock != 0:
                    member.drain(sock)
            if 0 not in readable:
                continue
            chunk = os.read(0, 4096)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not run_command(member, line.decode("utf-8", "replace")):
                    return
    finally:
        member.close()


if __name__ == "__main__":
    main()
