/**
 * `mcastctl query --mld` against real kernels: MLD queries (general, multicast-address-
 * specific, multicast-address-and-source-specific; MLDv2 and MLDv1) into a Linux-bridge
 * lab, and into the pod ports of an OVS bridge, and the list of who answered.
 *
 * The bridge (snooping off: it floods, so every report reaches the querier host `q`) has
 * `q`, where `mcastctl query --iface` runs, and three listener hosts whose kernels are
 * forced to MLDv1 (h1) and MLDv2 (h2, h3), and join groups with real sockets, any-source
 * and source-specific. The lab's namespaces start with IPv6 off: it is switched on for
 * each host's interface alone, after force_mld_version, and every link-local address is
 * waited for past DAD. The expected responders are computed from those joins (plus each
 * host's solicited-node group, which Linux reports as any link-scope group but ff02::1),
 * and each run's list must equal them exactly.
 *
 * Order matters: a host that hears an MLDv1 query answers in MLDv1 for minutes after
 * (RFC 3810 §8.2.1), so the MLDv2 queries come first and the MLDv1 query last.
 *
 * On OVS (`query --mld --bridge`), a private node with three pods, made alike (p1 MLDv1,
 * p2 and p3 MLDv2): every answer comes with the pod's port and name, from a bridge that
 * has no address of its own, so its queries come from the link-local address its MAC
 * forms; the probe flows are the four MLD types only, and gone after each run.
 *
 * Needs root, iproute2, tcpdump, python3, Open vSwitch, and a built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { decodeFlowCookie, FlowKind } from '../../src/domain/pipeline/flow-cookie.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { canonicalIPv6, eui64LinkLocal, parseIPv6 } from '../../src/wire/ipv6-address.js';
import { cliMissing, mcastctl, type CliResult } from '../lab/cli.js';
import { Lab, sleep, type Host } from '../lab/lab.js';
import { enableIpv6, linkLocalAddress, MldListener } from '../lab/mld-hosts.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const G1 = 'ff05::101'; // h1 (MLDv1), any-source
const G2 = 'ff05::202'; // h2 and h3 (MLDv2), any-source
const SSM = 'ff3e::8000:1'; // h2 (S1, S2) and h3 (S2), source-specific
const NOBODY = 'ff05::999';
const S1 = '2001:db8::5';
const S2 = '2001:db8::6';
const S3 = '2001:db8::7'; // queried, joined by nobody
const ALL_NODES = 'ff02::1';

// ---------------------------------------------------------------------------------------
// The output contract

interface Responder {
  host: string;
  group: string;
  protocol: string;
  version: number;
  mode: 'include' | 'exclude';
  sources: string[];
  delayMs: number;
  port?: string;
  pod?: string;
}

interface Querier {
  address: string;
  protocol: string;
  version: number;
  self: boolean;
  elected: boolean;
  queries: number;
}

interface QueryDocument {
  link: { iface?: string; bridge?: string };
  queries: {
    protocol: string;
    version: number;
    kind: string;
    group: string | null;
    sources: string[];
    src: string;
    dst: string;
    maxRespMs: number;
  }[];
  responders: Responder[];
  queriers: Querier[];
  ignored: { reports: number };
}

type Answer = Omit<Responder, 'delayMs'>;

function answer(
  host: string,
  group: string,
  version: 1 | 2,
  filter: { mode: 'include' | 'exclude'; sources: string[] } = { mode: 'exclude', sources: [] },
): Answer {
  return { host, group, protocol: 'mld', version, mode: filter.mode, sources: [...filter.sources].sort() };
}

function sortAnswers(answers: readonly Answer[]): Answer[] {
  return [...answers].sort((a, b) => `${a.group} ${a.host}`.localeCompare(`${b.group} ${b.host}`));
}

function predictable({ host, group, protocol, version, mode, sources }: Responder): Answer {
  return { host, group, protocol, version, mode, sources };
}

/** The solicited-node group of `address` (RFC 4291 §2.7.1): ff02::1:ff and its low 24 bits. */
function solicitedNode(address: string): string {
  const bytes = parseIPv6(address)!;
  const hex = (n: number) => bytes[n]!.toString(16).padStart(2, '0');
  return canonicalIPv6(`ff02::1:ff${hex(13)}:${hex(14)}${hex(15)}`)!;
}

// ---------------------------------------------------------------------------------------
// The lab

/** The MLD queries in a classic pcap file (Ethernet), as the snoop decoder reads them. */
function mldQueriesIn(
  file: string,
): { src: string; dst: string; hopLimit: number; routerAlert: boolean; version: number; group: string }[] {
  const bytes = readFileSync(file);
  if (bytes.length < 24) return [];
  const little = bytes.readUInt32LE(0) === 0xa1b2c3d4 || bytes.readUInt32LE(0) === 0xa1b23c4d;
  const locate = ipLocator(1);
  const out = [];
  for (let offset = 24, n = 1; offset + 16 <= bytes.length; n++) {
    const length = little ? bytes.readUInt32LE(offset + 8) : bytes.readUInt32BE(offset + 8);
    const event = decodeFrame(locate, bytes.subarray(offset + 16, offset + 16 + length), { frame: n, ts: 0 });
    offset += 16 + length;
    if (event?.kind !== 'mld' || event.message.kind !== 'query') continue;
    out.push({
      src: event.src,
      dst: event.dst,
      hopLimit: event.ip.hopLimit,
      routerAlert: (event.ip.hopByHop ?? []).some(
        (option) => option.type === 5 && option.data[0] === 0 && option.data[1] === 0,
      ),
      version: event.message.version,
      group: event.message.group,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------

describe('mcastctl query --mld on a Linux bridge: h1 MLDv1, h2 and h3 MLDv2', {
  timeout: 120_000,
  concurrency: 1,
}, () => {
  let lab: Lab;
  let q: Host;
  let h1: Host;
  let h2: Host;
  let h3: Host;
  /** Link-local addresses. */
  let qAddress: string;
  let a1: string;
  let a2: string;
  let a3: string;
  const iface = () => ['--iface', q.iface, '--mld'];

  before(async () => {
    const missing = cliMissing();
    if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
    lab = Lab.create();
    const started = Date.now();
    const ns = await lab.namespace('sw');
    const bridge = await lab.linuxBridge(ns, 'br', { snooping: false, network: '10.78.0.0/24' });
    q = await lab.host('q', { bridge });
    h1 = await lab.host('h1', { bridge });
    h2 = await lab.host('h2', { bridge });
    h3 = await lab.host('h3', { bridge });
    const quick = { quickUnsolicitedReports: true };
    await Promise.all([
      enableIpv6(lab, q.ns, q.iface, 0, quick),
      enableIpv6(lab, h1.ns, h1.iface, 1, quick),
      enableIpv6(lab, h2.ns, h2.iface, 2, quick),
      enableIpv6(lab, h3.ns, h3.iface, 2, quick),
    ]);
    [qAddress, a1, a2, a3] = (await Promise.all(
      [q, h1, h2, h3].map((host) => linkLocalAddress(lab, host.ns, host.iface)),
    )) as [string, string, string, string];
    const [l1, l2, l3] = await Promise.all([h1, h2, h3].map((host) => MldListener.start(lab, host)));
    await l1!.do('join', G1);
    await l2!.do('join', G2);
    await l2!.do('join-source', SSM, S1);
    await l2!.do('join-source', SSM, S2);
    await l3!.do('join', G2);
    await l3!.do('join-source', SSM, S2);
    await sleep(600);
    console.error(`# MLD lab up in ${Date.now() - started} ms: q ${qAddress}, h1 ${a1}, h2 ${a2}, h3 ${a3}`);
  });

  after(async () => {
    await lab?.destroy();
  });

  async function query(args: string[], json = true): Promise<{ result: CliResult; doc?: QueryDocument }> {
    const argv = ['query', ...iface(), ...args, ...(json ? ['--json'] : [])];
    const result = await mcastctl(argv, { ns: q.ns, timeoutMs: 30_000 });
    assert.equal(result.code, 0, `mcastctl ${argv.join(' ')} exited ${result.code}:\n${result.stderr}`);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    if (!json) return { result };
    const doc = JSON.parse(result.stdout) as QueryDocument;
    assert.deepEqual(doc.link, { iface: q.iface });
    return { result, doc };
  }

  function assertResponders(doc: QueryDocument, expected: readonly Answer[], boundMs: number): void {
    assert.deepEqual(sortAnswers(doc.responders.map(predictable)), sortAnswers(expected), 'responders (exactly these)');
    for (const responder of doc.responders) {
      assert.ok(
        responder.delayMs >= 0 && responder.delayMs <= boundMs + 1000,
        `${responder.host} answered for ${responder.group} after ${responder.delayMs} ms`,
      );
    }
  }

  function assertOnlyUs(doc: QueryDocument, version: 1 | 2): void {
    assert.deepEqual(
      doc.queriers.map(({ address, protocol, version, self, elected, queries }) => ({
        address,
        protocol,
        version,
        self,
        elected,
        queries,
      })),
      [{ address: qAddress, protocol: 'mld', version, self: true, elected: true, queries: 1 }],
      'queriers: only us, elected',
    );
  }

  describe('bad input: exit 64, a message, nothing on stdout, no query sent', () => {
    const cases: [name: string, args: () => string[], message: RegExp][] = [
      ['an IPv4 group with --mld', () => [...iface(), '--group', '239.1.1.1'], /239\.1\.1\.1.*IPv6/],
      ['an IPv6 group without --mld', () => ['--iface', q.iface, '--group', G2], /--mld/],
      ['--source with MLDv1', () => [...iface(), '--version', '1', '--group', SSM, '--source', S1], /MLDv2/],
      ['--version 3 with --mld', () => [...iface(), '--version', '3'], /1 or 2/],
      ['--mld with both --iface and --bridge', () => [...iface(), '--bridge', 'br-int'], /--bridge/],
      ['--from a global address', () => [...iface(), '--from', '2001:db8::1'], /link-local/],
      ['--from an IPv4 address', () => [...iface(), '--from', '10.78.0.2'], /IPv6/],
      ['--max-resp 65.536 with MLDv1', () => [...iface(), '--version', '1', '--max-resp', '65.536'], /65\.535/],
      ['--max-resp 0', () => [...iface(), '--max-resp', '0'], /out of range/],
      ['--max-resp finer than a millisecond', () => [...iface(), '--max-resp', '0.0001'], /millisecond/],
      ['the all-nodes group', () => [...iface(), '--group', ALL_NODES], /all-nodes/],
      ['a unicast group', () => [...iface(), '--group', '2001:db8::1'], /multicast/],
      ['an IPv4 --source with --mld', () => [...iface(), '--group', SSM, '--source', '10.9.9.1'], /10\.9\.9\.1/],
      ['--source without --group', () => [...iface(), '--source', S1], /--group/],
    ];
    const results = new Map<string, CliResult>();
    let captured: ReturnType<typeof mldQueriesIn> = [];

    before(async () => {
      const file = lab.file('bad-input.pcap');
      const tcpdump = await lab.startTcpdump(q.ns, q.iface, file, { filter: ['ip6'] });
      try {
        await Promise.all(
          cases.map(async ([name, args]) =>
            results.set(name, await mcastctl(['query', ...args()], { ns: q.ns, timeoutMs: 30_000 })),
          ),
        );
        // A control: one good query, which the capture must see (and only it).
        await query(['--group', NOBODY, '--max-resp', '0.2', '--wait', '0.3']);
        await sleep(200);
      } finally {
        await tcpdump.stop();
      }
      captured = mldQueriesIn(file);
    });

    for (const [name, , message] of cases) {
      it(name, () => {
        const result = results.get(name);
        assert.ok(result, 'the command ran');
        assert.equal(result.code, 64, `exit ${result.code}; stderr: ${result.stderr}`);
        assert.match(result.stderr, message, 'stderr names what is wrong');
        assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
        assert.equal(result.stdout, '', 'nothing on stdout');
      });
    }

    it('none of them sent a query (the capture holds the control query alone, well-formed)', () => {
      assert.deepEqual(captured, [
        { src: qAddress, dst: NOBODY, hopLimit: 1, routerAlert: true, version: 2, group: NOBODY },
      ]);
    });
  });

  describe('queries: MLDv2 first, then MLDv1', () => {
    it('MLDv2 general query: every listener with the version it answered in and its filter', async () => {
      const { doc } = await query(['--max-resp', '1']);
      assert.deepEqual(
        doc!.queries.map(({ protocol, version, kind, group, sources, src, dst, maxRespMs }) => ({
          protocol,
          version,
          kind,
          group,
          sources,
          src,
          dst,
          maxRespMs,
        })),
        [
          {
            protocol: 'mld',
            version: 2,
            kind: 'general',
            group: null,
            sources: [],
            src: qAddress,
            dst: ALL_NODES,
            maxRespMs: 1000,
          },
        ],
      );
      assertResponders(
        doc!,
        [
          answer(a1, G1, 1),
          answer(a1, solicitedNode(a1), 1),
          answer(a2, G2, 2),
          answer(a2, SSM, 2, { mode: 'include', sources: [S1, S2] }),
          answer(a2, solicitedNode(a2), 2),
          answer(a3, G2, 2),
          answer(a3, SSM, 2, { mode: 'include', sources: [S2] }),
          answer(a3, solicitedNode(a3), 2),
        ],
        1000,
      );
      assertOnlyUs(doc!, 2);
      assert.equal(doc!.ignored.reports, 0);
    });

    it('MLDv2 multicast-address-specific query: only that group’s listeners (h2, h3)', async () => {
      const { doc } = await query(['--group', G2, '--max-resp', '1']);
      assert.equal(doc!.queries[0]?.dst, G2);
      assertResponders(doc!, [answer(a2, G2, 2), answer(a3, G2, 2)], 1000);
      assertOnlyUs(doc!, 2);
      assert.equal(doc!.ignored.reports, 0);
    });

    it('MLDv2 address-and-source-specific query: each listener answers IS_IN with the queried sources it joined', async () => {
      // RFC 3810 §6.3: the intersection of the queried sources and the listener's; S3 was joined by nobody.
      const { doc } = await query(['--group', SSM, '--source', `${S1},${S2},${S3}`, '--max-resp', '1']);
      assert.deepEqual(doc!.queries[0]?.sources, [S1, S2, S3]);
      assert.equal(doc!.queries[0]?.kind, 'group-and-source');
      assertResponders(
        doc!,
        [
          answer(a2, SSM, 2, { mode: 'include', sources: [S1, S2] }),
          answer(a3, SSM, 2, { mode: 'include', sources: [S2] }),
        ],
        1000,
      );
      assertOnlyUs(doc!, 2);
    });

    it('--from :: warns that listeners drop such queries; nobody answers, no querier listed', async () => {
      const { result, doc } = await query(['--group', G2, '--from', '::', '--max-resp', '0.3']);
      assert.match(result.stderr, /RFC 3810 §5\.1\.14/);
      assert.equal(doc!.queries[0]?.src, '::');
      assert.deepEqual(doc!.responders, []);
      assert.deepEqual(doc!.queriers, []);
    });

    it('MLDv1 multicast-address-specific query, human output: h1 in MLDv1', async () => {
      const { result } = await query(['--version', '1', '--group', G1, '--max-resp', '0.5'], false);
      const rows = result.stdout.split('\n').filter((line) => line.includes('│'));
      const answerRow = rows.find((line) => line.includes(a1));
      assert.ok(answerRow, `h1 (${a1}) in the table:\n${result.stdout}`);
      assert.match(answerRow, new RegExp(`${G1.replace(/\./g, '\\.')}.*MLDv1`));
      assert.ok(
        rows.some((line) => line.includes(`${qAddress} (this query)`) && line.includes('elected')),
        `our querier, elected:\n${result.stdout}`,
      );
      assert.match(result.stderr, /MLDv1 query for ff05::101, max response 0\.5 s/);
    });

    it('another querier with a lower address (an MLDv1 one, from h3) is listed and elected (RFC 3810 §7.6.2)', async () => {
      // Last: an MLDv1 query would put MLDv2 listeners in v1 compatibility mode, but this
      // one is for a group nobody joined, which the listeners' IPv6 layer drops.
      // Room for the other command's start-up on a loaded machine: ours listens 6 s.
      const ours = query(['--group', NOBODY, '--max-resp', '0.5', '--wait', '6']);
      await sleep(1000);
      const other = await mcastctl(
        [
          'query',
          '--iface',
          h3.iface,
          '--mld',
          '--version',
          '1',
          '--from',
          'fe80::1',
          '--group',
          NOBODY,
          '--max-resp',
          '0.1',
          '--json',
        ],
        {
          ns: h3.ns,
          timeoutMs: 30_000,
        },
      );
      assert.equal(other.code, 0, other.stderr);
      const { doc } = await ours;
      assert.deepEqual(doc!.responders, []);
      assert.deepEqual(
        doc!.queriers.map(({ address, protocol, version, self, elected, queries }) => ({
          address,
          protocol,
          version,
          self,
          elected,
          queries,
        })),
        [
          { address: 'fe80::1', protocol: 'mld', version: 1, self: false, elected: true, queries: 1 },
          { address: qAddress, protocol: 'mld', version: 2, self: true, elected: false, queries: 1 },
        ],
      );
    });
  });
});

describe('mcastctl query --mld --bridge on OVS: pods p1 MLDv1, p2 and p3 MLDv2, with their ports and names', {
  timeout: 120_000,
  concurrency: 1,
}, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: OvsPod[];
  /** Each pod's link-local address, by pod name. */
  const linkLocal = new Map<string, string>();
  /**
   * The queries' source: the link-local address of the bridge's MAC (its internal interface is in the node's namespace,
   * not ours).
   */
  let bridgeSource: string;
  const VERSIONS: Record<string, 1 | 2> = { p1: 1, p2: 2, p3: 2 };
  const bridge = () => ['--mld', '--bridge', node.bridge, '--ovs-rundir', node.rundir];
  const probeFlows = (flows: readonly string[]) =>
    flows.filter((line) => {
      const cookie = /cookie=(0x[0-9a-f]+)/.exec(line)?.[1];
      return (
        cookie !== undefined &&
        decodeFlowCookie(BigInt(cookie), DEFAULT_PIPELINE_CONFIG.cookiePrefix)?.kind === FlowKind.IgmpQueryProbe
      );
    });
  const flows = async () =>
    (await node.ofctl('dump-flows', node.bridge))
      .split('\n')
      .filter((line) => line.includes('cookie='))
      .map((line) =>
        line.trim().replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,/g, ''),
      )
      .sort();

  before(async () => {
    const missing = cliMissing();
    if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
    lab = Lab.create();
    const started = Date.now();
    // A bridge name of its own: no interface of this namespace may lend it a link-local address.
    node = await OvsNode.start(lab, 'm1', { bridge: 'br-mldq' });
    pods = [];
    for (const [i, name] of ['p1', 'p2', 'p3'].entries())
      pods.push(await node.addPod(name, { address: `10.79.0.${11 + i}/24` }));
    // IPv6 on once each pod is on the bridge, so its DAD and unsolicited reports go through OVS.
    await Promise.all(
      pods.map((pod) => enableIpv6(lab, pod.ns, pod.iface, VERSIONS[pod.name]!, { quickUnsolicitedReports: true })),
    );
    for (const pod of pods) linkLocal.set(pod.name, await linkLocalAddress(lab, pod.ns, pod.iface));
    const mac = (await node.vsctl('get', 'interface', node.bridge, 'mac_in_use')).trim().replace(/"/g, '');
    bridgeSource = eui64LinkLocal(mac);
    // MldListener needs a name, a namespace and an interface: all a pod has of a Host.
    const [l1, l2, l3] = await Promise.all(
      pods.map((pod) => MldListener.start(lab, { name: pod.name, ns: pod.ns, iface: pod.iface } as Host)),
    );
    await l1!.do('join', G1);
    await l2!.do('join', G2);
    await l2!.do('join-source', SSM, S1);
    await l2!.do('join-source', SSM, S2);
    await l3!.do('join', G2);
    await l3!.do('join-source', SSM, S2);
    await sleep(600);
    console.error(
      `# OVS MLD node up in ${Date.now() - started} ms: bridge ${node.bridge} (${mac}, ${bridgeSource}), ${[...linkLocal].map(([n, a]) => `${n} ${a}`).join(', ')}`,
    );
  });

  after(async () => {
    await lab?.destroy();
  });

  async function query(args: string[]): Promise<QueryDocument> {
    const argv = ['query', ...bridge(), ...args, '--json'];
    // As query.test.ts does: from this machine's namespace, OVS found through --ovs-rundir.
    const result = await mcastctl(argv, { timeoutMs: 30_000 });
    assert.equal(result.code, 0, `mcastctl ${argv.join(' ')} exited ${result.code}:\n${result.stderr}`);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    const doc = JSON.parse(result.stdout) as QueryDocument;
    assert.deepEqual(doc.link, { bridge: node.bridge });
    return doc;
  }

  type PodAnswer = Answer & { port: string; pod: string };
  function podAnswer(
    name: string,
    group: string,
    version: 1 | 2,
    filter?: { mode: 'include' | 'exclude'; sources: string[] },
  ): PodAnswer {
    const pod = pods.find((candidate) => candidate.name === name)!;
    return { ...answer(linkLocal.get(name)!, group, version, filter), port: pod.port, pod: `default/${name}` };
  }
  function assertPodResponders(doc: QueryDocument, expected: readonly PodAnswer[]): void {
    const got = doc.responders.map((responder) => ({
      ...predictable(responder),
      port: responder.port,
      pod: responder.pod,
    }));
    assert.deepEqual(sortAnswers(got), sortAnswers(expected), 'responders (exactly these, with port and pod)');
  }
  function assertOnlyUs(doc: QueryDocument, version: 1 | 2): void {
    assert.deepEqual(
      doc.queriers.map(({ address, protocol, version, self, elected, queries }) => ({
        address,
        protocol,
        version,
        self,
        elected,
        queries,
      })),
      [{ address: bridgeSource, protocol: 'mld', version, self: true, elected: true, queries: 1 }],
    );
  }

  it('MLDv2 general query: every pod listener with version, filter, port and pod; four MLD probe flows a pod port while it runs, none after', async () => {
    const before = await flows();
    assert.deepEqual(probeFlows(before), []);
    const running = query(['--max-resp', '1']);
    // The probe flows, as the switch holds them during the run.
    let during: string[] = [];
    let settled = false;
    void running.finally(() => (settled = true)).catch(() => undefined);
    while (!settled && during.length < 12) {
      during = probeFlows(await flows());
      if (during.length < 12) await sleep(100);
    }
    const doc = await running;
    assert.equal(during.length, 12, `four flows for each of three pod ports:\n${during.join('\n')}`);
    for (const pod of pods) {
      const types = during
        .filter(
          (line) =>
            line.includes(`in_port=${pod.ofport},`) ||
            line.includes(`in_port="${pod.port}"`) ||
            line.includes(`in_port=${pod.port},`),
        )
        .map((line) => Number(/icmp_type=(\d+)/.exec(line)?.[1]))
        .sort((a, b) => a - b);
      assert.deepEqual(types, [130, 131, 132, 143], `pod ${pod.name}'s probe flows:\n${during.join('\n')}`);
    }
    assert.ok(
      during.every(
        (line) => line.includes(`priority=${DEFAULT_PIPELINE_CONFIG.priorities.igmp + 2},`) && line.includes('icmp6'),
      ),
      'MLD only (no IGMP probe), at priority igmp+2',
    );
    assert.deepEqual(
      doc.queries.map(({ protocol, version, kind, group, src, dst }) => ({ protocol, version, kind, group, src, dst })),
      [{ protocol: 'mld', version: 2, kind: 'general', group: null, src: bridgeSource, dst: ALL_NODES }],
    );
    const sn = (name: string) => solicitedNode(linkLocal.get(name)!);
    assertPodResponders(doc, [
      podAnswer('p1', G1, 1),
      podAnswer('p1', sn('p1'), 1),
      podAnswer('p2', G2, 2),
      podAnswer('p2', SSM, 2, { mode: 'include', sources: [S1, S2] }),
      podAnswer('p2', sn('p2'), 2),
      podAnswer('p3', G2, 2),
      podAnswer('p3', SSM, 2, { mode: 'include', sources: [S2] }),
      podAnswer('p3', sn('p3'), 2),
    ]);
    assertOnlyUs(doc, 2);
    assert.equal(doc.ignored.reports, 0);
    assert.deepEqual(await flows(), before, 'the flow table is as it was before the run');
  });

  it('MLDv2 multicast-address-specific query: only that group’s listeners (p2, p3)', async () => {
    const doc = await query(['--group', G2, '--max-resp', '1']);
    assert.equal(doc.queries[0]?.dst, G2);
    assertPodResponders(doc, [podAnswer('p2', G2, 2), podAnswer('p3', G2, 2)]);
    assertOnlyUs(doc, 2);
  });

  it('MLDv1 general query: p1 answers in MLDv1 (p2 and p3, forced to MLDv2, ignore it), then no probe flow is left', async () => {
    const doc = await query(['--version', '1', '--max-resp', '0.5']);
    assert.deepEqual(
      doc.queries.map(({ version, kind, dst, maxRespMs }) => ({ version, kind, dst, maxRespMs })),
      [{ version: 1, kind: 'general', dst: ALL_NODES, maxRespMs: 500 }],
    );
    assertPodResponders(doc, [podAnswer('p1', G1, 1), podAnswer('p1', solicitedNode(linkLocal.get('p1')!), 1)]);
    assertOnlyUs(doc, 1);
    const left = await flows();
    assert.deepEqual(probeFlows(left), [], 'no flow of kind IgmpQueryProbe');
    assert.deepEqual(
      left.filter(
        (line) =>
          line.includes('icmp_type=') && line.includes(`priority=${DEFAULT_PIPELINE_CONFIG.priorities.igmp + 2},`),
      ),
      [],
      'no ICMPv6-type flow at priority igmp+2',
    );
  });

  it('bad input still exits 64 and changes nothing on the switch', async () => {
    const before = await flows();
    for (const [args, message] of [
      [['--version', '3'], /1 or 2/],
      [['--group', '239.1.1.1'], /239\.1\.1\.1.*IPv6/],
      [['--from', '2001:db8::1'], /link-local/],
    ] as const) {
      const result = await mcastctl(['query', ...bridge(), ...args], { timeoutMs: 30_000 });
      assert.equal(result.code, 64, `${args.join(' ')}: exit ${result.code}; stderr: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    }
    assert.deepEqual(await flows(), before);
  });
});
