/**
 * Acceptance of `mcastctl daemon` for IPv6 multicast on one lab node: real OVS
 * (user-space datapath), dual-stack pods whose kernels send the MLD (v2, and v1 where
 * forced), real IPv6 UDP multicast, the built CLI.
 *
 * First, before the daemon starts, the lab itself is checked on the bridge's default
 * NORMAL flow (DAD, Neighbor Discovery, IPv6 UDP between pods, the capture), so that a
 * failure with the daemon is the daemon's. Then, with the daemon (short timers: GMI 5 s):
 * delivery to members only, an MLDv1 member, fast leave, expiry, a dual-stack member,
 * Neighbor Discovery and DAD through the daemon's flows, kill -9 and ovs-vswitchd
 * restarts.
 *
 * Delivery is proved at two places, as in daemon.test.ts: what members' sockets got, and
 * tcpdump on a pod's eth0 for non-members and leave timing (read here with a small pcap
 * reader of its own: the tests do not trust the project's codecs).
 *
 * Needs root, iproute2, ethtool, tcpdump, nft (nftables), python3, Open vSwitch and the
 * built CLI (`npm run build`). No `ping`: echo requests go out of a raw ICMPv6 socket.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { cliMissing } from '../lab/cli.js';
import { control, startDaemon, type RunningDaemon } from '../lab/daemon.js';
import { Lab, sleep, waitUntil } from '../lab/lab.js';
import { ipv6Addresses } from '../lab/mld-hosts.js';
import { OvsNode, type Datagram, type OvsPod, type Receiver } from '../lab/ovs.js';
import type { GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** Group Membership Interval = robustness 2 × query interval 2 s + query response interval 1 s. */
const SHORT_TIMERS = ['--query-interval', '2s', '--query-response-interval', '1s', '--robustness', '2'];
const GMI_MS = 2 * 2000 + 1000;
const QUERY_INTERVAL_MS = 2000;

const NFT_TABLE = 'mcltest6';

// ---------------------------------------------------------------------------------------
// Helpers

/** Sequence numbers of datagrams tagged `tag` (payload `<tag> <n>`). */
function sequences(datagrams: readonly Datagram[], tag: string): number[] {
  return datagrams.flatMap((datagram) => {
    const [t, n] = datagram.payload.split(' ');
    return t === tag && n !== undefined ? [Number(n)] : [];
  });
}

/** Sequence numbers in 0..count-1 that are missing. */
function missingSequences(received: readonly number[], count: number): number[] {
  const got = new Set(received);
  return Array.from({ length: count }, (_, i) => i).filter((i) => !got.has(i));
}

const ms = (value: number) => `${Math.round(value)} ms`;

/** Member port names of every group, sorted: { group: [port names] }. */
function membership(groups: readonly GroupView[]): Record<string, string[]> {
  return Object.fromEntries(
    groups.filter((view) => view.members.length > 0).map((view) => [view.group, [...new Set(view.members.map((member) => member.port.name))].sort()]),
  );
}

/** The output ports of the OVS group that the (*,G) flow for IPv6 `group` (ipv6_dst=group, any source) points to; undefined without such a flow. */
async function ovsGroupPorts6(node: OvsNode, group: string): Promise<number[] | undefined> {
  const flows = await node.ofctl('dump-flows', node.bridge);
  const id = flows
    .split('\n')
    .find((line) => !line.includes('ipv6_src=') && (line.includes(`ipv6_dst=${group} `) || line.includes(`ipv6_dst=${group},`)))
    ?.match(/actions=group:(\d+)/)?.[1];
  if (id === undefined) return undefined;
  const groups = await node.ofctl('dump-groups', node.bridge);
  const line = groups.split('\n').find((entry) => entry.includes(`group_id=${id},`));
  if (line === undefined) return [];
  return [...line.matchAll(/bucket=actions=output:(\d+)/g)].map((match) => Number(match[1]));
}

/** Waits until the OVS group of IPv6 `group` forwards to every pod in `pods` and to none of `not`; its ports. */
function waitForOvsMembers6(node: OvsNode, group: string, pods: readonly OvsPod[], not: readonly OvsPod[] = [], timeoutMs = 10_000): Promise<number[]> {
  return waitUntil(
    `OVS group of ${group} on ${node.name} to forward to ${pods.map((pod) => pod.name).join(',') || 'nobody'}${not.length > 0 ? ` and not to ${not.map((pod) => pod.name).join(',')}` : ''}`,
    async () => {
      const ports = (await ovsGroupPorts6(node, group)) ?? [];
      return pods.every((pod) => ports.includes(pod.ofport)) && !not.some((pod) => ports.includes(pod.ofport)) ? ports : undefined;
    },
    timeoutMs,
  ).catch(async (error: unknown) => {
    // Say what OVS does hold for the group, so that "no flow at all" and "wrong ports" read apart.
    const flows = (await node.ofctl('dump-flows', node.bridge).catch(() => ''))
      .split('\n')
      .filter((line) => line.includes(`ipv6_dst=${group}`))
      .map((line) => line.trim().replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,/g, ''));
    throw new Error(
      `${String(error)}; OVS flows for ${group}: ${flows.length > 0 ? flows.join(' | ') : 'none'}; its group's ports: ${JSON.stringify(await ovsGroupPorts6(node, group).catch(() => undefined))}`,
    );
  });
}

/** Drops every MLD message (reports and dones, v1 and v2) the pod's kernel sends (nft, inet output hook). */
async function blockMld(lab: Lab, pod: OvsPod): Promise<void> {
  const rules = `table inet ${NFT_TABLE} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    icmpv6 type { mld-listener-report, mld-listener-done, mld2-listener-report } counter drop\n  }\n}\n`;
  await lab.exec(pod.ns, ['nft', '-f', '-'], { input: rules });
}

async function unblockMld(lab: Lab, pod: OvsPod): Promise<void> {
  await lab.exec(pod.ns, ['nft', 'delete', 'table', 'inet', NFT_TABLE]);
}

/** How many MLD messages the pod's nft rule dropped. */
async function mldDropped(lab: Lab, pod: OvsPod): Promise<number> {
  const { stdout } = await lab.exec(pod.ns, ['nft', 'list', 'table', 'inet', NFT_TABLE]);
  return Number(stdout.match(/counter packets (\d+)/)?.[1] ?? NaN);
}

/**
 * argv: address[%iface] count. ICMPv6 echo over a raw socket (this machine has no
 * `ping`; the kernel fills in the ICMPv6 checksum): `count` requests 200 ms apart, each
 * waiting up to 1 s for its reply. Prints "<replies>/<count>"; exit 0 when every one came.
 */
const PING6_PY = `
import os, select, socket, struct, sys, time
target, count = sys.argv[1], int(sys.argv[2])
host, _, scope = target.partition("%")
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
ident = os.getpid() & 0xFFFF
destination = (host, 0, 0, socket.if_nametoindex(scope) if scope else 0)
replies = 0
for seq in range(count):
    s.sendto(struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"mcl-ping", destination)
    deadline = time.time() + 1
    while True:
        left = deadline - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            break
        data, peer = s.recvfrom(2048)
        if len(data) >= 8 and data[0] == 129 and struct.unpack("!HH", data[4:8]) == (ident, seq):
            replies += 1
            break
    if seq + 1 < count:
        time.sleep(0.2)
print(f"{replies}/{count}", flush=True)
sys.exit(0 if replies == count else 1)
`;

/** `ping -6 -c <count> <target>` from `pod`: resolves with "<replies>/<count>"; rejects unless every echo was answered. */
async function ping6(lab: Lab, pod: OvsPod, target: string, count = 3): Promise<string> {
  const { stdout } = await lab.exec(pod.ns, ['python3', '-c', PING6_PY, target, String(count)], { timeoutMs: 15_000 });
  return stdout.trim();
}

// --- pcap (an independent reader) -------------------------------------------------------

interface Packet6 {
  /** Epoch milliseconds. */
  ts: number;
  src: string;
  dst: string;
  /** ICMPv6 (past any extension headers): type; MLD: the group of a v1 message, the records of a v2 report. */
  icmp6?: { type: number; group?: string; records: Array<{ type: number; group: string; sources: number }> };
  /** UDP: destination port and payload as text. */
  udp?: { dstPort: number; payload: string };
}

/** 16 octets as text in RFC 5952 form (the WHATWG URL parser's serialiser, not the project's). */
function ip6(b: Buffer, o: number): string {
  const words = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(o + 2 * i).toString(16));
  return new URL(`http://[${words.join(':')}]/`).hostname.slice(1, -1);
}

/** Reads an Ethernet pcap file's IPv6 frames (the file may still be written: a partial last record is ignored). */
function readPcap6(file: string): Packet6[] {
  const data = readFileSync(file);
  if (data.length < 24) return [];
  const magicLE = data.readUInt32LE(0);
  const le = magicLE === 0xa1b2c3d4 || magicLE === 0xa1b23c4d;
  const u32 = (o: number) => (le ? data.readUInt32LE(o) : data.readUInt32BE(o));
  const nanos = (le ? magicLE : data.readUInt32BE(0)) === 0xa1b23c4d;
  const packets: Packet6[] = [];
  for (let o = 24; o + 16 <= data.length; ) {
    const sec = u32(o);
    const frac = u32(o + 4);
    const caplen = u32(o + 8);
    if (o + 16 + caplen > data.length) break;
    const frame = data.subarray(o + 16, o + 16 + caplen);
    o += 16 + caplen;
    if (frame.length < 54 || frame.readUInt16BE(12) !== 0x86dd) continue;
    const end = Math.min(frame.length, 54 + frame.readUInt16BE(18));
    const packet: Packet6 = { ts: sec * 1000 + (nanos ? frac / 1e6 : frac / 1e3), src: ip6(frame, 22), dst: ip6(frame, 38) };
    let next = frame[20]!;
    let l4 = 54;
    // Hop-by-hop (MLD's Router Alert), routing and destination options: skip to the upper layer.
    while ((next === 0 || next === 43 || next === 60) && l4 + 8 <= end) {
      next = frame[l4]!;
      l4 += (frame[l4 + 1]! + 1) * 8;
    }
    if (next === 58 && end - l4 >= 4) {
      const type = frame[l4]!;
      const records: NonNullable<Packet6['icmp6']>['records'] = [];
      let group: string | undefined;
      if ((type === 130 || type === 131 || type === 132) && end - l4 >= 24) group = ip6(frame, l4 + 8);
      if (type === 143 && end - l4 >= 8) {
        let r = l4 + 8;
        for (let n = frame.readUInt16BE(l4 + 6); n > 0 && r + 20 <= end; n--) {
          const sources = frame.readUInt16BE(r + 2);
          records.push({ type: frame[r]!, group: ip6(frame, r + 4), sources });
          r += 20 + sources * 16 + frame[r + 1]! * 4;
        }
      }
      packet.icmp6 = { type, records, ...(group === undefined ? {} : { group }) };
    } else if (next === 17 && end - l4 >= 8) {
      packet.udp = { dstPort: frame.readUInt16BE(l4 + 2), payload: frame.subarray(l4 + 8, end).toString('latin1') };
    }
    packets.push(packet);
  }
  return packets;
}

/** An MLD message from `host` that leaves `group`: a v1 done, or a v2 record CHANGE_TO_INCLUDE({}). */
const isLeave = (packet: Packet6, host: string, group: string) =>
  packet.src === host &&
  packet.icmp6 !== undefined &&
  ((packet.icmp6.type === 132 && packet.icmp6.group === group) ||
    (packet.icmp6.type === 143 && packet.icmp6.records.some((record) => record.type === 3 && record.group === group && record.sources === 0)));

const isData = (packet: Packet6, group: string, port: number) => packet.dst === group && packet.udp?.dstPort === port;

// ---------------------------------------------------------------------------------------

describe('mcastctl daemon: IPv6 multicast on one node', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  /** A, B: members (kernel MLDv2); C: the sender; D: a non-member first, then an MLDv1 member. */
  let a: OvsPod;
  let b: OvsPod;
  let c: OvsPod;
  let d: OvsPod;
  let daemon: RunningDaemon | undefined;
  const receivers: Receiver[] = [];

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.36.1.1/24', address6: 'fd00:36::1/64' });
    // In parallel: each waits for its own DAD (a second or two).
    [a, b, c, d] = await Promise.all([
      node.addPod('pa', { address: '10.36.1.11/24', address6: 'fd00:36::11/64' }),
      node.addPod('pb', { address: '10.36.1.12/24', address6: 'fd00:36::12/64' }),
      node.addPod('pc', { address: '10.36.1.13/24', address6: 'fd00:36::13/64' }),
      node.addPod('pd', { address: '10.36.1.14/24', address6: 'fd00:36::14/64', mldVersion: 1 }),
    ]);
  });

  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.stop().catch(() => undefined)));
    const errors = daemon?.entries().filter((entry) => entry['level'] === 'error') ?? [];
    if (errors.length > 0) console.log('daemon errors:', errors);
    await lab?.destroy();
  });

  /** A receiver stopped in after() even when a test fails half-way. */
  async function listen(pod: OvsPod, group: string, port: number): Promise<Receiver> {
    const receiver = await pod.listen(group, port);
    receivers.push(receiver);
    return receiver;
  }

  it('the lab without the daemon (NORMAL bridge): DAD passed, ping -6, IPv6 multicast and unicast UDP, the capture', async () => {
    for (const pod of [a, b, c, d]) {
      const states = await ipv6Addresses(lab, pod.ns, pod.iface);
      assert.ok(pod.address6 !== undefined && pod.linkLocal6 !== undefined, `${pod.name} has no IPv6 addresses`);
      assert.deepEqual(
        states.filter((state) => state.tentative || state.dadfailed),
        [],
        `${pod.name}: addresses still tentative or DAD failed`,
      );
      assert.ok(states.some((state) => state.address === pod.address6));
    }
    assert.equal(await ping6(lab, a, b.address6!), '3/3');
    assert.equal(await ping6(lab, a, `${b.linkLocal6!}%eth0`), '3/3');
    const group = 'ff15::8000:99';
    const port = 7000;
    const capture = await lab.startTcpdump(d.ns, d.iface, lab.file('lab-flood.pcap'), { filter: ['ip6', 'and', 'udp'] });
    const r = await listen(a, group, port);
    const unicast = await listen(b, b.address6!, port);
    await sleep(100);
    await c.send(group, port, 10, { intervalMs: 5, tag: 'n' });
    await c.send(b.address6!, port, 3, { intervalMs: 5, tag: 'u' });
    await sleep(300);
    const [got, gotUnicast] = await Promise.all([r.stop(), unicast.stop()]);
    await capture.stop();
    assert.deepEqual(missingSequences(sequences(got, 'n'), 10), [], 'IPv6 multicast between pods on the NORMAL bridge lost datagrams');
    assert.ok(got.every((datagram) => datagram.from === c.address6));
    assert.deepEqual(missingSequences(sequences(gotUnicast, 'u'), 3), [], 'IPv6 unicast UDP lost datagrams');
    // NORMAL floods the group: the capture on a non-member sees it all (so it can see a leak later).
    const flooded = readPcap6(capture.file).filter((packet) => isData(packet, group, port));
    assert.equal(flooded.length, 10, `the capture on ${d.name} saw ${flooded.length} of 10 flooded datagrams`);
  });

  describe('with the daemon', { concurrency: 1 }, () => {
    const group = 'ff15::8000:1';
    const port = 7001;
    let ra: Receiver;
    let rb: Receiver;

    before(async () => {
      daemon = startDaemon(node, { multicastInterfaces: [], args: SHORT_TIMERS });
      await daemon.ready();
    });

    it('delivery to members only: A and B get every datagram, the non-member D nothing on its wire; the OVS flow, group and groups view', async () => {
      const capture = await lab.startTcpdump(d.ns, d.iface, lab.file('a-nonmember.pcap'), { filter: ['ip6', 'and', 'udp'] });
      ra = await listen(a, group, port);
      rb = await listen(b, group, port);
      const ports = await waitForOvsMembers6(node, group, [a, b], [c, d]);
      await sleep(200);
      await c.send(group, port, 20, { intervalMs: 5, tag: 'a' });
      await sleep(300);
      await capture.stop();
      assert.deepEqual(missingSequences(sequences(ra.received, 'a'), 20), [], `${a.name} missed datagrams`);
      assert.deepEqual(missingSequences(sequences(rb.received, 'a'), 20), [], `${b.name} missed datagrams`);
      const leaked = readPcap6(capture.file).filter((packet) => isData(packet, group, port));
      assert.equal(leaked.length, 0, `${leaked.length} datagrams of ${group} reached the non-member's eth0`);
      // Exactly A's and B's pod ports (the gateway port may be there too: it is no pod).
      const podPorts = new Set(node.pods.map((pod) => pod.ofport));
      assert.deepEqual(
        ports.filter((p) => podPorts.has(p)).sort((x, y) => x - y),
        [a.ofport, b.ofport].sort((x, y) => x - y),
        `OVS group of ${group}: ${ports.join(',')}`,
      );
      const view = await control<GroupView[]>(daemon!, ['groups']);
      assert.deepEqual(membership(view)[group], [a.port, b.port].sort(), `groups --json: ${JSON.stringify(membership(view))}`);
    });

    it('an MLDv1 member joins and receives; fast leave of A stops its traffic within 1 s; B, its MLD blocked, expires after about the GMI', async () => {
      const rd = await listen(d, group, port);
      await waitForOvsMembers6(node, group, [a, b, d]);
      await sleep(200);
      await c.send(group, port, 20, { intervalMs: 5, tag: 'v1' });
      await sleep(300);
      assert.deepEqual(missingSequences(sequences(rd.received, 'v1'), 20), [], `${d.name} (MLDv1) missed datagrams`);

      // Fast leave: C sends every 20 ms; A leaves; its wire shows the leave and the last datagram.
      const capture = await lab.startTcpdump(a.ns, a.iface, lab.file('b-leaver.pcap'), { filter: ['ip6'] });
      const count = 150; // 3 s at 20 ms
      const sending = c.send(group, port, count, { intervalMs: 20, tag: 'fl' });
      await waitUntil(`${a.name} to receive`, async () => sequences(ra.received, 'fl').length >= 10, 3000);
      const closedAt = Date.now();
      await ra.stop();
      await sending;
      await sleep(200);
      await capture.stop();
      const packets = readPcap6(capture.file);
      const leave = packets.find((packet) => packet.ts >= closedAt - 50 && isLeave(packet, a.linkLocal6!, group));
      assert.ok(leave, `no MLD leave of ${group} from ${a.name} on its eth0`);
      const lastData = packets.filter((packet) => isData(packet, group, port)).at(-1)!;
      const latency = lastData.ts - leave.ts;
      console.log(`fast leave (IPv6): last datagram at ${a.name}'s eth0 ${ms(latency)} from its leave (one is sent every 20 ms)`);
      assert.ok(latency <= 1000, `traffic went on for ${ms(latency)} after the leave (limit 1 s)`);
      assert.deepEqual(missingSequences(sequences(rb.received, 'fl'), count), [], `${b.name} (still a member) missed datagrams`);
      await waitForOvsMembers6(node, group, [b, d], [a]);

      // Expiry: B's reports (and its leave) never get out; its port goes after the GMI.
      await blockMld(lab, b);
      try {
        const blockedAt = Date.now();
        await rb.stop();
        const goneAfter = await waitUntil(
          `OVS to drop ${b.name} from ${group}`,
          async () => (((await ovsGroupPorts6(node, group)) ?? []).includes(b.ofport) ? undefined : Date.now() - blockedAt),
          GMI_MS + 5000,
          100,
        );
        console.log(
          `expiry (IPv6): ${b.name} dropped ${ms(goneAfter)} after its MLD was blocked (GMI ${GMI_MS} ms; its last report came up to one query interval before)`,
        );
        assert.ok((await mldDropped(lab, b)) >= 1, 'nft dropped nothing: closing the socket should have sent a leave');
        assert.ok(goneAfter >= GMI_MS - QUERY_INTERVAL_MS - 1000, `dropped ${ms(goneAfter)} after the block: too early for an expiry`);
        assert.ok(goneAfter <= GMI_MS + 1500, `dropped ${ms(goneAfter)} after the block: later than GMI + 1.5 s`);
        const view = await control<GroupView[]>(daemon!, ['groups']);
        assert.deepEqual(membership(view)[group], [d.port], `groups --json after the expiry: ${JSON.stringify(membership(view))}`);
      } finally {
        await unblockMld(lab, b).catch(() => undefined);
        await rd.stop();
      }
    });

    it('dual-stack: one pod in an IPv4 group and an IPv6 group gets both streams', async () => {
      const [group4, group6, dsPort] = ['239.36.3.1', 'ff15::8000:3', 7003];
      const r4 = await listen(a, group4, dsPort);
      const r6 = await listen(a, group6, dsPort);
      await waitForOvsMembers6(node, group6, [a]);
      await sleep(200);
      await Promise.all([c.send(group4, dsPort, 20, { intervalMs: 5, tag: 'v4' }), c.send(group6, dsPort, 20, { intervalMs: 5, tag: 'v6' })]);
      await sleep(300);
      const [got4, got6] = await Promise.all([r4.stop(), r6.stop()]);
      assert.deepEqual(missingSequences(sequences(got4, 'v4'), 20), [], `${a.name} missed IPv4 datagrams`);
      assert.deepEqual(missingSequences(sequences(got6, 'v6'), 20), [], `${a.name} missed IPv6 datagrams`);
      assert.ok(got4.every((datagram) => datagram.from === c.address) && got6.every((datagram) => datagram.from === c.address6));
    });

    it('Neighbor Discovery with the daemon: ping -6 to a global and a link-local address; a pod added now passes DAD and answers', async () => {
      assert.equal(await ping6(lab, a, b.address6!), '3/3');
      assert.equal(await ping6(lab, a, `${b.linkLocal6!}%eth0`), '3/3');
      const startedAt = Date.now();
      // addPod waits until neither address is tentative, and fails on dadfailed.
      const e = await node.addPod('pe', { address: '10.36.1.15/24', address6: 'fd00:36::15/64' });
      console.log(`DAD (IPv6): a pod added while the daemon runs was ready ${ms(Date.now() - startedAt)} after addPod began`);
      const states = await ipv6Addresses(lab, e.ns, e.iface);
      assert.deepEqual(
        states.filter((state) => state.tentative || state.dadfailed),
        [],
      );
      assert.equal(await ping6(lab, a, e.address6!), '3/3');
      assert.equal(await ping6(lab, e, `${a.linkLocal6!}%eth0`), '3/3');
    });

    it('restarts: kill -9 of the daemon loses no datagram; after an ovs-vswitchd restart the IPv6 group is back within 3 s', async () => {
      const [rgroup, rport] = ['ff15::8000:5', 7005];
      const r = await listen(b, rgroup, rport);
      await waitForOvsMembers6(node, rgroup, [b]);
      // Saved about 1 s after the change.
      const stateFile = `${daemon!.stateDir}/state.json`;
      await waitUntil('state.json with the group', async () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(rgroup), 5000, 100);
      const count = 300; // 3 s at 10 ms
      const sending = c.send(rgroup, rport, count, { intervalMs: 10, tag: 'rs' });
      await waitUntil('traffic to flow', async () => r.received.length >= 20, 3000, 10);
      await daemon!.kill9();
      const killedAt = Date.now();
      daemon = startDaemon(node, { multicastInterfaces: [], args: SHORT_TIMERS });
      await daemon.ready();
      const readyMs = Date.now() - killedAt;
      await sending;
      await sleep(300);
      const lost = missingSequences(sequences(r.received, 'rs'), count);
      console.log(`restart (IPv6): new daemon listening ${ms(readyMs)} after kill -9; ${lost.length} of ${count} datagrams lost`);
      assert.deepEqual(lost, [], 'datagrams lost across the restart');
      const view = await control<GroupView[]>(daemon, ['groups']);
      assert.deepEqual(membership(view)[rgroup], [b.port], `after the restart groups --json shows ${JSON.stringify(membership(view))}`);

      await node.restartVswitchd();
      const backAt = Date.now();
      await waitForOvsMembers6(node, rgroup, [b], [], 5000);
      const flowsMs = Date.now() - backAt;
      console.log(`OVS restart (IPv6): the daemon's ipv6_dst flow and group back ${ms(flowsMs)} after ovs-vswitchd was`);
      assert.ok(flowsMs <= 3000, `the IPv6 group came back ${ms(flowsMs)} after the restart (limit 3 s)`);
      const before = r.received.length;
      await c.send(rgroup, rport, 20, { intervalMs: 5, tag: 'ov' });
      await sleep(300);
      assert.deepEqual(missingSequences(sequences(r.received.slice(before), 'ov'), 20), [], `${b.name} missed datagrams after the OVS restart`);
      await r.stop();
    });
  });
});
