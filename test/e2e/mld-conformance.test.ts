/**
 * Real kernel conformance for MLD: real kernels speak MLD in a lab (a Linux bridge
 * querier in MLDv2 and then MLDv1 mode, beside its IGMP querier; hosts forced to MLDv1
 * and to MLDv2; joins, leaves, source-specific joins, source blocks), tcpdump captures
 * it, and `snoop --read --json` of that capture must agree with tshark's dissection of
 * the same file, message by message and field by field, for both families (the capture
 * holds the bridge's IGMP queries too).
 *
 * The lab's namespaces start with IPv6 off (lab.ts: no MLD or ND noise elsewhere); here it
 * is switched on for the querier bridge and each host's interface alone, after
 * force_mld_version, and every link-local address is waited for past DAD before the
 * capture starts.
 *
 * Needs root, iproute2, tcpdump, tshark, python3, and a built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { cliMissing, mcastctl, parseNdjson } from '../lab/cli.js';
import { Lab, sleep, waitUntil, type Host, type IgmpSegment } from '../lab/lab.js';
import { compareWithTshark, kindOf, MLD_FILTER, tsharkFrameCount, tsharkMembership, type ExpectedLine, type SnoopLine } from '../lab/tshark.js';

const G1 = 'ff05::101'; // h1 (MLDv1): joined and left in the v2 phase
const G1B = 'ff05::102'; // h1, joined and left in the v1 phase
const G2 = 'ff05::202'; // h2 (MLDv2): any-source join, then a source block
const SSM = 'ff3e::8000:1'; // h2: source-specific joins
const G3 = 'ff05::303'; // h3 (MLDv2): a source-specific and an any-source socket
const S1 = '2001:db8::5';
const S2 = '2001:db8::6';
const S3 = '2001:db8::7';

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

class Listener {
  private readonly waiting: ((line: string) => void)[] = [];

  private constructor(
    readonly host: Host,
    private readonly child: ChildProcess,
  ) {
    createInterface({ input: child.stdout! }).on('line', (line) => this.waiting.shift()?.(line));
    child.stdin!.on('error', () => undefined);
  }

  static async start(lab: Lab, host: Host): Promise<Listener> {
    const child = lab.spawn(host.ns, ['python3', '-u', '-c', LISTENER_PY, host.iface]);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const listener = new Listener(host, child);
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

/** The interface's link-local address once DAD has passed (no longer "tentative"). */
function linkLocal(lab: Lab, ns: string, iface: string): Promise<string> {
  return waitUntil(
    `a link-local address on ${iface} past DAD`,
    async () => {
      const { stdout } = await lab.ip(ns, '-6', '-o', 'addr', 'show', 'dev', iface, 'scope', 'link');
      const line = stdout.split('\n').find((l) => l.includes('inet6 fe80:') && !l.includes('tentative'));
      return line?.match(/inet6 (fe80:[0-9a-f:]+)\//)?.[1];
    },
    15_000,
    100,
  );
}

/** IPv6 on for this one interface (lab namespaces have it off), MLD forced to `mldVersion` first (0: follow the queriers). */
async function enableIpv6(lab: Lab, ns: string, iface: string, mldVersion: 0 | 1 | 2): Promise<void> {
  await lab.sysctl(ns, `net.ipv6.conf.${iface}.force_mld_version`, mldVersion);
  await lab.sysctl(ns, `net.ipv6.conf.${iface}.disable_ipv6`, 0);
}

interface Scenario {
  file: string;
  hosts: Host[];
  /** Link-local addresses: the sources of MLD. */
  hostAddresses: string[];
  querierAddress: string;
  segment: IgmpSegment;
}

/** Builds the lab, runs the script of joins and leaves under tcpdump, returns the capture. */
async function capture(lab: Lab, log: (line: string) => void): Promise<Scenario> {
  const started = Date.now();
  const ns = await lab.namespace('sw');
  const segment = await lab.igmpSegment(ns, {
    address: '10.62.0.1/24',
    querier: {
      igmpVersion: 3,
      queryIntervalMs: 2000,
      queryResponseIntervalMs: 1000,
      startupQueryIntervalMs: 1000,
      startupQueryCount: 2,
      lastMemberIntervalMs: 500,
      lastMemberCount: 2,
    },
  });
  await lab.ip(ns, 'link', 'set', segment.querier.name, 'type', 'bridge', 'mcast_mld_version', '2');
  const hosts = [await lab.host('h1', { bridge: segment.hub }), await lab.host('h2', { bridge: segment.hub }), await lab.host('h3', { bridge: segment.hub })];
  const versions = [1, 2, 2] as const;
  await enableIpv6(lab, ns, segment.querier.name, 0);
  await Promise.all(hosts.map((host, i) => enableIpv6(lab, host.ns, host.iface, versions[i]!)));
  const querierAddress = await linkLocal(lab, ns, segment.querier.name);
  const hostAddresses = await Promise.all(hosts.map((host) => linkLocal(lab, host.ns, host.iface)));
  const [l1, l2, l3] = await Promise.all(hosts.map((host) => Listener.start(lab, host)));
  if (!l1 || !l2 || !l3) throw new Error('listeners did not start');
  log(`lab up in ${Date.now() - started} ms: querier ${querierAddress}, hosts ${hostAddresses.join(', ')}`);

  const file = lab.file('mld.pcap');
  const tcpdump = await lab.startTcpdump(ns, segment.tap, file);
  const captureStart = Date.now();
  try {
    // Phase A: an MLDv2 (and IGMPv3) querier; its startup queries go out now.
    await segment.querier.set({ querier: true });
    await sleep(300);
    await l1.do('join', G1); // v1 report
    await l2.do('join', G2); // v2 CHANGE_TO_EXCLUDE {}
    await l2.do('join-source', SSM, S1); // v2 ALLOW_NEW_SOURCES {S1}
    await l2.do('join-source', SSM, S2); // v2 ALLOW_NEW_SOURCES {S2}
    await l3.do('join-source', G3, S1); // v2 ALLOW_NEW_SOURCES {S1}
    // Sent before the next change, which would otherwise merge into it (RFC 3810 §6.1).
    await sleep(300);
    await l3.do('join', G3); // v2 CHANGE_TO_EXCLUDE {}
    await sleep(800);
    await l2.do('block', G2, S3); // v2 BLOCK_OLD_SOURCES {S3}
    // General queries every 2 s: MODE_IS_EXCLUDE {S3}, MODE_IS_INCLUDE {S1, S2}; v1 reports.
    await sleep(3500);
    await l2.do('unblock', G2, S3); // v2 ALLOW_NEW_SOURCES {S3}
    await l2.do('leave-source', SSM, S2); // v2 BLOCK_OLD_SOURCES {S2}; group-and-source-specific query
    await sleep(800);
    await l1.do('leave', G1); // v1 done; v2 group-specific queries
    await l2.do('leave', G2); // v2 CHANGE_TO_INCLUDE {}
    await l3.do('leave', G3); // v2 CHANGE_TO_INCLUDE {S1}: the source-specific socket stays
    await sleep(1500);

    // Phase B: the querier speaks MLDv1 (the v2 hosts are forced to stay v2).
    await lab.ip(ns, 'link', 'set', segment.querier.name, 'type', 'bridge', 'mcast_mld_version', '1');
    await sleep(2500);
    await l1.do('join', G1B); // v1 report
    await sleep(1200);
    await l1.do('leave', G1B); // v1 done; v1 group-specific queries
    await sleep(1000);
  } finally {
    await tcpdump.stop();
  }
  log(`captured ${Date.now() - captureStart} ms: ${tcpdump.stderr().trim().split('\n').slice(-3).join('; ')}`);
  return { file, hosts, hostAddresses, querierAddress, segment };
}

describe('MLD kernel conformance: snoop --read vs tshark on a real capture', { timeout: 120_000 }, () => {
  let lab: Lab;
  let scenario: Scenario;
  let expected: ExpectedLine[];

  before(async () => {
    lab = Lab.create();
    scenario = await capture(lab, (line) => console.error(`# ${line}`));
    expected = await tsharkMembership(scenario.file);
    const kinds = new Map<string, number>();
    for (const line of expected) kinds.set(kindOf(line), (kinds.get(kindOf(line)) ?? 0) + 1);
    console.error(`# tshark: ${expected.length} IGMP and MLD frames: ${[...kinds].map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('captured every kind of message the scenario makes (so the comparison is not vacuous)', () => {
    const [h1, h2, h3] = scenario.hostAddresses;
    const querier = scenario.querierAddress;
    const has = (what: string, predicate: (line: ExpectedLine) => boolean) => assert.ok(expected.some(predicate), `the capture holds no ${what}`);

    has('MLDv2 general query from the querier', (l) => kindOf(l) === 'mld v2 query general' && l.src === querier);
    has('MLDv2 multicast-address-specific query', (l) => kindOf(l) === 'mld v2 query group' && l.src === querier);
    has('MLDv2 multicast-address-and-source-specific query', (l) => kindOf(l) === 'mld v2 query group with sources' && l.src === querier);
    has('MLDv1 general query', (l) => kindOf(l) === 'mld v1 query general' && l.src === querier);
    has('MLDv1 multicast-address-specific query', (l) => kindOf(l) === 'mld v1 query group' && l.src === querier && l.group === G1B);
    has('IGMP query from the querier (the other family)', (l) => l.protocol === 'igmp' && l.type === 'query');
    has('MLDv1 report from h1', (l) => kindOf(l) === 'mld v1 report' && l.src === h1 && l.group === G1);
    has('MLDv1 done from h1', (l) => kindOf(l) === 'mld v1 leave' && l.src === h1 && l.group === G1);
    has('MLDv1 report from h1 in the v1 phase', (l) => kindOf(l) === 'mld v1 report' && l.src === h1 && l.group === G1B);
    has('MLDv1 done from h1 in the v1 phase', (l) => kindOf(l) === 'mld v1 leave' && l.src === h1 && l.group === G1B);
    const records = expected.filter((l) => l.protocol === 'mld' && (l.src === h2 || l.src === h3)).flatMap((l) => l.records ?? []);
    const record = (type: string, group: string, sources: string[] | 'some') =>
      assert.ok(
        records.some(
          (r) => r.type === type && r.group === group && (sources === 'some' ? r.sources.length > 0 : JSON.stringify(r.sources) === JSON.stringify(sources)),
        ),
        `no ${type} record for ${group} with sources ${JSON.stringify(sources)} from h2 or h3; they sent ${JSON.stringify(records)}`,
      );
    record('CHANGE_TO_EXCLUDE_MODE', G2, []);
    record('CHANGE_TO_INCLUDE_MODE', G2, []);
    record('ALLOW_NEW_SOURCES', SSM, 'some');
    record('ALLOW_NEW_SOURCES', G2, [S3]);
    record('BLOCK_OLD_SOURCES', G2, [S3]);
    record('BLOCK_OLD_SOURCES', SSM, [S2]);
    record('MODE_IS_EXCLUDE', G2, [S3]);
    record('MODE_IS_INCLUDE', SSM, 'some');
    record('ALLOW_NEW_SOURCES', G3, [S1]);
    record('CHANGE_TO_EXCLUDE_MODE', G3, []);
    record('CHANGE_TO_INCLUDE_MODE', G3, [S1]);
    // Every MLD message comes from a link-local address (or ::, a host before its address): RFC 3810 §5.1.14, §5.2.13.
    for (const line of expected.filter((l) => l.protocol === 'mld')) {
      assert.ok(line.src === '::' || line.src?.startsWith('fe80:'), `MLD from ${line.src}: ${JSON.stringify(line)}`);
    }
  });

  it('snoop --read --json agrees with tshark, message by message and field by field', async (t) => {
    const missing = cliMissing();
    if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
    const result = await mcastctl(['snoop', '--read', scenario.file, '--json']);
    t.diagnostic(`snoop --read took ${result.elapsedMs} ms`);
    assert.equal(result.code, 0, `snoop --read exited ${result.code} (${result.signal ?? 'no signal'}): ${result.stderr}`);
    const lines = parseNdjson<SnoopLine>(result.stdout);
    const differences = compareWithTshark(lines, expected);
    if (differences !== '') {
      const kept = join(tmpdir(), `mcl-mld-conformance-${Date.now()}.pcap`);
      copyFileSync(scenario.file, kept);
      assert.fail(`snoop and tshark disagree on ${kept} (kept for inspection):\n${differences}`);
    }
    // Every IGMP frame and every MLD frame yields exactly one line: as many as tshark counts.
    const frames = await tsharkFrameCount(scenario.file, `igmp || ${MLD_FILTER}`);
    assert.equal(lines.length, frames, `snoop printed ${lines.length} lines for tshark's ${frames} IGMP and MLD frames`);
    const mld = lines.filter((line) => line.protocol === 'mld').length;
    assert.ok(mld > 0 && mld < lines.length, `${mld} of ${lines.length} lines are MLD: the capture should hold both families`);
    t.diagnostic(`${lines.length} lines (${mld} MLD) agree with tshark`);
  });
});
