/**
 * Real kernel conformance: real kernels speak IGMP in a lab (a Linux bridge querier in
 * IGMPv3 and then IGMPv2 mode; three hosts forced to IGMPv1, v2 and v3; joins, leaves,
 * source-specific joins, source blocks), tcpdump captures it, and `snoop --read --json`
 * of that capture must agree with tshark's dissection of the same file, message by
 * message and field by field. A few messages no kernel sends (a v1 query, a v3 query
 * with floating-point codes, mtrace, an unknown type, malformed ones) are injected at the
 * end from a raw socket.
 *
 * Needs root, iproute2, tcpdump, tshark, python3, and a built CLI (`npm run build`).
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { internetChecksum } from '../../src/wire/checksum.js';
import { writeIPv4 } from '../../src/wire/ipv4-address.js';
import { cliMissing, mcastctl, parseNdjson } from '../lab/cli.js';
import { Lab, sleep, type Host, type IgmpSegment } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import {
  compareWithTshark,
  kindOf,
  MLD_FILTER,
  tsharkFrameCount,
  tsharkMembership,
  type ExpectedLine,
  type SnoopLine,
} from '../lab/tshark.js';

const G1 = '239.1.1.1'; // h1 (IGMPv1)
const G2 = '239.2.2.2'; // h2 (IGMPv2), left in the v3 phase
const G2B = '239.2.2.4'; // h2, joined and left in the v2 phase
const G3 = '239.3.3.3'; // h3 (IGMPv3): any-source join, then a source block
const G3B = '239.3.3.4'; // h3, joined and left in the v2 phase (as v2: it heard v2 queries)
const SSM = '232.1.1.1'; // h3: source-specific joins
const S1 = '10.0.0.5';
const S2 = '10.0.0.6';
const S3 = '10.0.0.7';

/** An IGMP message with its checksum filled in (or spoiled). */
function igmp(bytes: number[], options: { badChecksum?: boolean } = {}): Uint8Array {
  const message = Uint8Array.from(bytes);
  message[2] = 0;
  message[3] = 0;
  let checksum = internetChecksum(message);
  if (options.badChecksum) checksum ^= 0x5a5a;
  message[2] = checksum >> 8;
  message[3] = checksum & 0xff;
  return message;
}

function ip(address: string): number[] {
  const bytes = new Uint8Array(4);
  writeIPv4(bytes, 0, address);
  return [...bytes];
}

interface Scenario {
  file: string;
  hosts: Host[];
  segment: IgmpSegment;
  captureMs: number;
}

/** Builds the lab, runs the script of joins and leaves under tcpdump, returns the capture. */
async function capture(lab: Lab, log: (line: string) => void): Promise<Scenario> {
  const started = Date.now();
  const ns = await lab.namespace('sw');
  const segment = await lab.igmpSegment(ns, {
    address: '10.60.0.1/24',
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
  const hosts = [
    await lab.host('h1', { bridge: segment.hub, igmpVersion: 1 }),
    await lab.host('h2', { bridge: segment.hub, igmpVersion: 2 }),
    await lab.host('h3', { bridge: segment.hub, igmpVersion: 3 }),
  ];
  const [m1, m2, m3] = await Promise.all(hosts.map((host) => Member.start(lab, host)));
  if (!m1 || !m2 || !m3) throw new Error('members did not start');
  log(`lab up in ${Date.now() - started} ms`);

  const file = lab.file('kernel.pcap');
  const tcpdump = await lab.startTcpdump(ns, segment.tap, file);
  const captureStart = Date.now();
  try {
    // Phase A: IGMPv3 querier (its startup queries go out now).
    await segment.querier.set({ querier: true });
    await sleep(300);
    await m1.join(G1); // v1 report
    await m2.join(G2); // v2 report
    await m3.join(G3); // v3 CHANGE_TO_EXCLUDE {}
    await m3.joinSource(SSM, S1); // v3 ALLOW_NEW_SOURCES {S1}
    await m3.joinSource(SSM, S2); // v3 ALLOW_NEW_SOURCES {S2}
    await sleep(800);
    await m3.block(G3, S3); // v3 BLOCK_OLD_SOURCES {S3}
    // General queries every 2 s: MODE_IS_EXCLUDE {S3}, MODE_IS_INCLUDE {S1, S2}; v1 and v2 reports.
    await sleep(3500);
    await m3.unblock(G3, S3); // v3 ALLOW_NEW_SOURCES {S3}
    await m3.dropSource(SSM, S2); // v3 BLOCK_OLD_SOURCES {S2}; group-and-source-specific query
    await sleep(800);
    await m2.leave(G2); // v2 leave; v3 group-specific queries
    await m3.leave(G3); // v3 CHANGE_TO_INCLUDE {}; v3 group-specific queries
    await sleep(1500);

    // Phase B: the querier speaks IGMPv2; h3 falls back to v2 once it hears a v2 query.
    await segment.querier.set({ igmpVersion: 2 });
    await sleep(2500);
    await m2.join(G2B); // v2 report
    await m3.join(G3B); // v2 report (compatibility mode)
    await sleep(1200);
    await m2.leave(G2B); // v2 leave; v2 group-specific queries
    await m3.leave(G3B);
    await sleep(1000);

    // Phase C: messages no kernel here sends, from a raw socket on h1.
    const routers = '224.0.0.2';
    // mtrace query (0x1f): hops, checksum, group, source, receiver, response address, TTL, id.
    await m1.sendIgmp(
      routers,
      igmp([0x1f, 8, 0, 0, ...ip(G1), ...ip(S1), ...ip('10.60.0.11'), ...ip('10.60.0.11'), 1, 0, 0, 42]),
    );
    await m1.sendIgmp(routers, igmp([0x50, 0, 0, 0, 1, 2, 3, 4])); // a type nobody defines
    await m1.sendIgmp(G1, igmp([0x16, 0, 0, 0, ...ip(G1)], { badChecksum: true })); // bad checksum
    await m1.sendIgmp(routers, igmp([0x16, 0, 0, 0, ...ip('10.1.2.3')])); // report for a unicast "group"
    // v3 report announcing two records and carrying one.
    await m1.sendIgmp('224.0.0.22', igmp([0x22, 0, 0, 0, 0, 0, 0, 2, 4, 0, 0, 0, ...ip(G1)]));
    // v3 group-and-source-specific query with floating-point codes: Max Resp Code 0x9a
    // (41.6 s), S set, QRV 7, QQIC 0x8c (224 s), two sources.
    await m1.sendIgmp(SSM, igmp([0x11, 0x9a, 0, 0, ...ip(SSM), 0x0f, 0x8c, 0, 2, ...ip(S1), ...ip('10.0.0.99')]));
    await m1.sendIgmp('224.0.0.1', igmp([0x11, 0, 0, 0, 0, 0, 0, 0])); // v1 general query
    await sleep(500);
  } finally {
    await tcpdump.stop();
  }
  log(`captured ${Date.now() - captureStart} ms: ${tcpdump.stderr().trim().split('\n').slice(-3).join('; ')}`);
  return { file, hosts, segment, captureMs: Date.now() - captureStart };
}

describe('kernel conformance: snoop --read vs tshark on a real capture', { timeout: 120_000 }, () => {
  let lab: Lab;
  let scenario: Scenario;
  let expected: ExpectedLine[];

  before(async () => {
    lab = Lab.create();
    scenario = await capture(lab, (line) => console.error(`# ${line}`));
    // Both families: should a host send MLD, snoop shows it, and tshark must agree on it too.
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
    const [h1, h2, h3] = scenario.hosts;
    const querier = scenario.segment.querier.address;
    const has = (what: string, predicate: (line: ExpectedLine) => boolean) =>
      assert.ok(expected.some(predicate), `the capture holds no ${what}`);
    const from = (host: Host | undefined) => (line: ExpectedLine) => line.src === host?.address;

    has('v3 general query from the querier', (l) => kindOf(l) === 'v3 query general' && l.src === querier);
    has('v3 group-specific query', (l) => kindOf(l) === 'v3 query group' && l.src === querier);
    has(
      'v3 group-and-source-specific query from the querier',
      (l) => kindOf(l) === 'v3 query group with sources' && l.src === querier,
    );
    has('v2 general query', (l) => kindOf(l) === 'v2 query general' && l.src === querier);
    has('v2 group-specific query', (l) => kindOf(l) === 'v2 query group' && l.src === querier);
    has('v1 general query', (l) => kindOf(l) === 'v1 query general');
    has(
      'v3 query with floating-point codes',
      (l) => l.type === 'query' && l.version === 3 && (l.maxRespTimeMs ?? 0) > 12_700 && (l.qqicSec ?? 0) > 127,
    );
    has('v1 report from h1', (l) => kindOf(l) === 'v1 report' && from(h1)(l) && l.group === G1);
    has('v2 report from h2', (l) => kindOf(l) === 'v2 report' && from(h2)(l) && l.group === G2);
    has('v2 leave from h2', (l) => kindOf(l) === 'v2 leave' && from(h2)(l) && l.group === G2);
    has('v2 report from h3 in compatibility mode', (l) => kindOf(l) === 'v2 report' && from(h3)(l) && l.group === G3B);
    has('v2 leave from h3 in compatibility mode', (l) => kindOf(l) === 'v2 leave' && from(h3)(l) && l.group === G3B);
    const records = expected.filter(from(h3)).flatMap((l) => l.records ?? []);
    const record = (type: string, group: string, sources: string[] | 'some') =>
      assert.ok(
        records.some(
          (r) =>
            r.type === type &&
            r.group === group &&
            (sources === 'some' ? r.sources.length > 0 : JSON.stringify(r.sources) === JSON.stringify(sources)),
        ),
        `no ${type} record for ${group} with sources ${JSON.stringify(sources)} from h3; h3 sent ${JSON.stringify(records)}`,
      );
    record('CHANGE_TO_EXCLUDE_MODE', G3, []);
    record('CHANGE_TO_INCLUDE_MODE', G3, []);
    record('ALLOW_NEW_SOURCES', SSM, 'some');
    record('ALLOW_NEW_SOURCES', G3, [S3]);
    record('BLOCK_OLD_SOURCES', G3, [S3]);
    record('BLOCK_OLD_SOURCES', SSM, [S2]);
    record('MODE_IS_EXCLUDE', G3, [S3]);
    record('MODE_IS_INCLUDE', SSM, 'some');
    has('mtrace message', (l) => kindOf(l) === 'other 0x1f');
    has('message of an unknown type', (l) => kindOf(l) === 'other 0x50');
    has('message with a bad checksum', (l) => l.error === 'bad-checksum');
    has('report for a group that is not multicast', (l) => l.error === 'invalid-group');
    has('malformed (truncated) message', (l) => l.error === '*');
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
      const kept = join(tmpdir(), `mcl-kernel-conformance-${Date.now()}.pcap`);
      copyFileSync(scenario.file, kept);
      assert.fail(`snoop and tshark disagree on ${kept} (kept for inspection):\n${differences}`);
    }
    // Every IPv4 frame carrying protocol 2 (and every MLD frame) yields exactly one line: as many as tshark's IGMP and
    // MLD frames.
    const membershipFrames = await tsharkFrameCount(scenario.file, `igmp || ${MLD_FILTER}`);
    assert.equal(
      lines.length,
      expected.length,
      `snoop printed ${lines.length} lines for ${expected.length} protocol-2 and MLD frames`,
    );
    assert.equal(
      lines.length,
      membershipFrames,
      `snoop printed ${lines.length} lines for tshark's ${membershipFrames} IGMP and MLD frames`,
    );
    t.diagnostic(`${lines.length} lines agree with tshark`);
  });
});
