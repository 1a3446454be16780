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
import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl, parseNdjson } from '../lab/cli.js';
import { Lab, sleep, type Host, type IgmpSegment } from '../lab/lab.js';
import { enableIpv6, linkLocalAddress, MldListener } from '../lab/mld-hosts.js';
import {
  compareWithTshark,
  kindOf,
  MLD_FILTER,
  tsharkFrameCount,
  tsharkMembership,
  type ExpectedLine,
  type SnoopLine,
} from '../lab/tshark.js';

const G1 = 'ff05::101'; // h1 (MLDv1): joined and left in the v2 phase
const G1B = 'ff05::102'; // h1, joined and left in the v1 phase
const G2 = 'ff05::202'; // h2 (MLDv2): any-source join, then a source block
const SSM = 'ff3e::8000:1'; // h2: source-specific joins
const G3 = 'ff05::303'; // h3 (MLDv2): a source-specific and an any-source socket
const S1 = '2001:db8::5';
const S2 = '2001:db8::6';
const S3 = '2001:db8::7';

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
  const hosts = [
    await lab.host('h1', { bridge: segment.hub }),
    await lab.host('h2', { bridge: segment.hub }),
    await lab.host('h3', { bridge: segment.hub }),
  ];
  const versions = [1, 2, 2] as const;
  await enableIpv6(lab, ns, segment.querier.name, 0);
  await Promise.all(hosts.map((host, i) => enableIpv6(lab, host.ns, host.iface, versions[i]!)));
  const querierAddress = await linkLocalAddress(lab, ns, segment.querier.name);
  const hostAddresses = await Promise.all(hosts.map((host) => linkLocalAddress(lab, host.ns, host.iface)));
  const [l1, l2, l3] = await Promise.all(hosts.map((host) => MldListener.start(lab, host)));
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
    console.error(
      `# tshark: ${expected.length} IGMP and MLD frames: ${[...kinds].map(([k, n]) => `${k} ×${n}`).join(', ')}`,
    );
  });

  after(async () => {
    await lab?.destroy();
  });

  it('captured every kind of message the scenario makes (so the comparison is not vacuous)', () => {
    const [h1, h2, h3] = scenario.hostAddresses;
    const querier = scenario.querierAddress;
    const has = (what: string, predicate: (line: ExpectedLine) => boolean) =>
      assert.ok(expected.some(predicate), `the capture holds no ${what}`);

    has('MLDv2 general query from the querier', (l) => kindOf(l) === 'mld v2 query general' && l.src === querier);
    has('MLDv2 multicast-address-specific query', (l) => kindOf(l) === 'mld v2 query group' && l.src === querier);
    has(
      'MLDv2 multicast-address-and-source-specific query',
      (l) => kindOf(l) === 'mld v2 query group with sources' && l.src === querier,
    );
    has('MLDv1 general query', (l) => kindOf(l) === 'mld v1 query general' && l.src === querier);
    has(
      'MLDv1 multicast-address-specific query',
      (l) => kindOf(l) === 'mld v1 query group' && l.src === querier && l.group === G1B,
    );
    has('IGMP query from the querier (the other family)', (l) => l.protocol === 'igmp' && l.type === 'query');
    has('MLDv1 report from h1', (l) => kindOf(l) === 'mld v1 report' && l.src === h1 && l.group === G1);
    has('MLDv1 done from h1', (l) => kindOf(l) === 'mld v1 leave' && l.src === h1 && l.group === G1);
    has(
      'MLDv1 report from h1 in the v1 phase',
      (l) => kindOf(l) === 'mld v1 report' && l.src === h1 && l.group === G1B,
    );
    has('MLDv1 done from h1 in the v1 phase', (l) => kindOf(l) === 'mld v1 leave' && l.src === h1 && l.group === G1B);
    const records = expected
      .filter((l) => l.protocol === 'mld' && (l.src === h2 || l.src === h3))
      .flatMap((l) => l.records ?? []);
    const record = (type: string, group: string, sources: string[] | 'some') =>
      assert.ok(
        records.some(
          (r) =>
            r.type === type &&
            r.group === group &&
            (sources === 'some' ? r.sources.length > 0 : JSON.stringify(r.sources) === JSON.stringify(sources)),
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
    assert.equal(
      result.code,
      0,
      `snoop --read exited ${result.code} (${result.signal ?? 'no signal'}): ${result.stderr}`,
    );
    const lines = parseNdjson<SnoopLine>(result.stdout);
    const differences = compareWithTshark(lines, expected);
    if (differences !== '') {
      const kept = join(tmpdir(), `mcl-mld-conformance-${Date.now()}.pcap`);
      copyFileSync(scenario.file, kept);
      assert.fail(`snoop and tshark disagree on ${kept} (kept for inspection):\n${differences}`);
    }
    // Every IGMP frame and every MLD frame yields exactly one line: as many as tshark counts.
    const frames = await tsharkFrameCount(scenario.file, `igmp || ${MLD_FILTER}`);
    assert.equal(
      lines.length,
      frames,
      `snoop printed ${lines.length} lines for tshark's ${frames} IGMP and MLD frames`,
    );
    const mld = lines.filter((line) => line.protocol === 'mld').length;
    assert.ok(
      mld > 0 && mld < lines.length,
      `${mld} of ${lines.length} lines are MLD: the capture should hold both families`,
    );
    t.diagnostic(`${lines.length} lines (${mld} MLD) agree with tshark`);
  });
});
