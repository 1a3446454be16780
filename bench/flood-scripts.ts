/** The Python programs bench/flood.ts runs in its pods (raw IGMP through a packet socket is simplest there). */

/**
 * The attacker: Ethernet / IPv4 (TTL 1, Router Alert) / IGMPv3 report to 224.0.0.22 with
 * `records` CHANGE_TO_EXCLUDE records of groups never used before (from `base` on, wrapping
 * after `span` groups), `rate` a second, out of eth0 through an AF_PACKET socket. Prints how
 * many reports it sent.
 *
 * Cheap on purpose: the attackers share the machine's cores with what is measured, so
 * their own CPU must not be what slows the daemon and ovs-vswitchd. The IPv4 header is
 * the same in every report, the IGMP checksum is summed from the groups alone (the rest
 * of the words never change; the first report is checked against a full sum), and the
 * reports go in bursts of one 200th of the rate (a wakeup every 5 ms, not every report),
 * far inside the meter's burst.
 */
export const FLOOD_PY = `
import socket, struct, sys, time
iface, src, mac, rate, records, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
base, span = int(sys.argv[7]), int(sys.argv[8])
def fold(t):
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return t
def csum(b):
    if len(b) % 2: b += b"\\0"
    return (~fold(sum(struct.unpack("!%dH" % (len(b) // 2), b)))) & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
eth = bytes.fromhex("01005e000016") + bytes.fromhex(mac.replace(":", "")) + b"\\x08\\x00"
total = 24 + 8 + 8 * records
ip = struct.pack("!BBHHHBBH4s4s", 0x46, 0xc0, total, 0, 0x4000, 1, 2, 0, socket.inet_aton(src), socket.inet_aton("224.0.0.22")) + b"\\x94\\x04\\x00\\x00"
head = eth + ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
body = struct.Struct("!" + "BBHI" * records)
# Type 0x22 and the record count, and each record's type 4 (CHANGE_TO_EXCLUDE): the words that never change.
fixed = 0x2200 + records + 0x0400 * records
burst = max(1, rate // 200)
n = 0
sent = 0
start = time.monotonic()
interval = 1.0 / rate
while time.monotonic() - start < seconds:
    for _ in range(burst):
        t = fixed
        fields = []
        for _ in range(records):
            g = base + (n % span)  # fresh groups
            n += 1
            t += (g >> 16) + (g & 0xffff)
            fields += (4, 0, 0, g)
        igmp = struct.pack("!BBHHH", 0x22, 0, (~fold(t)) & 0xffff, 0, records) + body.pack(*fields)
        if sent == 0 and csum(igmp) != 0: sys.exit("bad IGMP checksum")
        s.send(head + igmp)
        sent += 1
    delay = start + sent * interval - time.monotonic()
    if delay > 0: time.sleep(delay)
print(sent)
`;

/** The sender: numbered datagrams `data <i>` to group:port every `interval` ms, for `seconds`. */
export const SEND_PY = `
import socket, sys, time
group, port, interval, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000, float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
start = time.monotonic()
i = 0
while time.monotonic() - start < seconds:
    s.sendto(("data %d" % i).encode(), (group, port))
    i += 1
    delay = start + i * interval - time.monotonic()
    if delay > 0: time.sleep(delay)
print(i)
`;

/**
 * The victim: joins `group` (IP_ADD_MEMBERSHIP; the kernel sends its report a few ticks
 * later), reads for `joined` ms, leaves, waits `left` ms, again until `seconds` passed.
 * Per join cycle it prints one JSON line: the ms from its report on the wire (the kernel's
 * own timestamp of the frame leaving eth0, seen by a packet socket) to the first datagram
 * (the kernel's timestamp of its arrival), the ms from the join call to that datagram, and
 * the datagrams' numbers read from `settle` ms after the join on. One process, kernel
 * timestamps on one clock, no process start inside a measurement.
 */
export const VICTIM_PY = `
import json, select, socket, struct, sys, time
iface, group, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
joined, left, settle, seconds = float(sys.argv[4]) / 1000, float(sys.argv[5]) / 1000, float(sys.argv[6]) / 1000, float(sys.argv[7])
SO_TIMESTAMPNS = 35
def stamped(sock):
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return sock
def receive(sock):
    data, ancillary, _, address = sock.recvmsg(2048, 64)
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", value[:16])
            return data, address, sec + nsec / 1e9
    return data, address, time.time()
s = stamped(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((group, port))
wire = stamped(socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003)))  # ETH_P_ALL: only it sees outgoing frames
wire.bind((iface, 0))
mreq = struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("0.0.0.0"))
end = time.monotonic() + seconds
while time.monotonic() + joined < end:
    for sock in (s, wire):
        while select.select([sock], [], [], 0)[0]: sock.recv(2048)  # left over from the last cycle
    t0 = time.time()
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    reported, first, numbers = None, None, []
    while True:
        remaining = t0 + joined - time.time()
        if remaining <= 0: break
        for sock in select.select([s, wire], [], [], remaining)[0]:
            data, address, at = receive(sock)
            if sock is wire:
                # Outgoing (PACKET_OUTGOING) IGMP (IPv4 protocol 2): the report on the wire.
                if reported is None and address[1] == 0x0800 and address[2] == 4 and len(data) > 9 and data[9] == 2: reported = at
                continue
            if first is None: first = at
            if at - t0 >= settle: numbers.append(int(data.split()[-1]))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, mreq)
    ms = lambda since: None if first is None or since is None else (first - since) * 1000
    print(json.dumps({"joinMs": ms(reported), "joinCallMs": ms(t0), "numbers": numbers}), flush=True)
    time.sleep(left)
`;
