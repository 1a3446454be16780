/**
 * `mcastctl query` against real kernels: it sends IGMP queries (v1, v2, v3; general,
 * group-specific, group-and-source-specific) into a lab link and lists who answered.
 *
 * Three networks, tested side by side (they share nothing, so their suites run at once):
 *
 * 1. A Linux bridge (IGMP snooping on, no querier of its own) with a querier host `q`,
 *    where `mcastctl query --iface` runs, and four member hosts whose kernels are forced to
 *    IGMPv1 (h1), v2 (h2) and v3 (h3, h4) and join groups with real sockets (any-source and
 *    source-specific joins). The expected responders are computed from those joins, and
 *    each run's list must equal them exactly (nothing missing, nothing extra). tcpdump
 *    records every frame on q's link, and tshark checks afterwards that every frame q sent
 *    is a well-formed query (checksums, Router Alert, TTL 1, addresses, versions) and that
 *    the reported delays are those on the wire.
 *    Order matters: a host that hears a v2 (v1) query answers in v2 (v1) for minutes after
 *    (RFC 3376 §7.2.1), so the v3 queries come first, then v2, then v1, and each expected
 *    version is min(host's forced version, lowest query version it has heard).
 *    Cost: an IGMPv1 host answers any v1 or v3 query within a random 0-10 s, so the runs
 *    that must hear h1 answering such a query wait 11 s; there are four of them.
 * 2. A second Linux bridge whose own querier (IGMPv2, lower address) runs: `queriers` must
 *    list it as elected and us as not.
 * 3. An OVS node with three pods: `mcastctl query --bridge br-int` sends the query out of
 *    every pod port (never LOCAL) and names each answer's port and pod.
 *
 * Needs root, iproute2, ethtool, tcpdump, tshark, python3, Open vSwitch, and a built CLI
 * (`npm run build`).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { internetChecksum } from '../../src/wire/checksum.js';
import { cliMissing, mcastctl, type CliResult } from '../lab/cli.js';
import { Lab, run, sleep, type Host, type LinuxBridge, type Tcpdump } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import { expectedFromTshark, type ExpectedLine } from '../lab/tshark.js';

// Groups and sources of the Linux-bridge segment. h1 and h2 (v1/v2 hosts suppress their
// report when they hear another host's for the same group) have groups of their own.
const G1 = '239.1.1.1'; // h1 (IGMPv1)
const G2 = '239.2.2.2'; // h2 (IGMPv2)
const G3 = '239.3.3.3'; // h3 and h4 (IGMPv3), any-source joins
const SSM = '232.1.1.1'; // h3 and h4, source-specific joins
const S1 = '10.9.9.1';
const S2 = '10.9.9.2';
const S7 = '10.9.9.7'; // queried, joined by nobody
const NOBODY = '239.99.99.99'; // a group nobody joined
const ALL_HOSTS = '224.0.0.1';

/**
 * How much later than its nominal end a run may finish, counted from its first query
 * (it collects for the window, then stops): what it prints and closing its sockets.
 */
const WINDOW_SLACK_MS = 3000;
/**
 * The same from the command's start: Node's start-up and the socket set-up come before
 * the first query and take what a loaded machine gives them (5 s more than alone seen
 * here), so this only catches a run that hangs.
 */
const RUN_SLACK_MS = 15_000;
/** How far `delayMs` may be from the delay tcpdump saw between query and report. */
const DELAY_TOLERANCE_MS = 250;

// ---------------------------------------------------------------------------------------
// The output contract

type Version = 1 | 2 | 3;

interface QueryOut {
  version: Version;
  kind: 'general' | 'group' | 'group-and-source';
  group: string | null;
  sources: string[];
  src: string;
  dst: string;
  maxRespMs: number;
  sentAt: string;
}

interface Responder {
  host: string;
  group: string;
  version: Version;
  mode: 'include' | 'exclude';
  sources: string[];
  delayMs: number;
  port?: string;
  pod?: string;
}

interface Querier {
  address: string;
  version: Version;
  self: boolean;
  elected: boolean;
  queries: number;
}

interface QueryDocument {
  link: { iface?: string; bridge?: string };
  queries: QueryOut[];
  responders: Responder[];
  queriers: Querier[];
  ignored: { reports: number };
}

/** A responder without its delay: what the test can predict. */
type Answer = Omit<Responder, 'delayMs'>;

/** What a query on the wire must be, derived from the command line (not from the command's output). */
interface SentQuery {
  version: Version;
  kind: QueryOut['kind'];
  group: string | null;
  sources: string[];
  dst: string;
  /** Undefined for v1 (no such field). */
  maxRespMs: number | undefined;
  src: string;
}

interface Run {
  label: string;
  args: string[];
  result: CliResult;
  startedAt: number;
  endedAt: number;
  /** Parsed stdout of a --json run. */
  doc?: QueryDocument;
}

function flag(args: readonly string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index < 0 ? undefined : args[index + 1];
}

/** The queries `args` must put on the wire, in order. */
function sentQueries(args: readonly string[], ownAddress: string): SentQuery[] {
  const version = Number(flag(args, '--version') ?? 3) as Version;
  const group = flag(args, '--group') ?? null;
  const sources = flag(args, '--source')?.split(',') ?? [];
  const maxResp = flag(args, '--max-resp');
  const query: SentQuery = {
    version,
    kind: group === null ? 'general' : sources.length > 0 ? 'group-and-source' : 'group',
    group,
    sources,
    dst: group ?? ALL_HOSTS,
    maxRespMs: version === 1 ? undefined : Math.round(Number(maxResp ?? 10) * 1000),
    src: flag(args, '--from') ?? ownAddress,
  };
  return Array.from({ length: Number(flag(args, '--repeat') ?? 1) }, () => ({ ...query }));
}

/** The run's nominal duration: the queries, then --wait (default max-resp + 1 s; 11 s for v1). */
function nominalMs(args: readonly string[]): number {
  const version = Number(flag(args, '--version') ?? 3);
  const repeat = Number(flag(args, '--repeat') ?? 1);
  const interval = Number(flag(args, '--interval') ?? 0);
  const wait = flag(args, '--wait');
  const waitS = wait !== undefined ? Number(wait) : version === 1 ? 11 : Number(flag(args, '--max-resp') ?? 10) + 1;
  return ((repeat - 1) * interval + waitS) * 1000;
}

async function runQuery(label: string, args: string[], options: { ns?: string; json?: boolean } = {}): Promise<Run> {
  const argv = ['query', ...args, ...(options.json === false ? [] : ['--json'])];
  const startedAt = Date.now();
  const result = await mcastctl(argv, {
    ...(options.ns === undefined ? {} : { ns: options.ns }),
    timeoutMs: nominalMs(args) + 30_000,
  });
  const endedAt = Date.now();
  const outcome: Run = { label, args, result, startedAt, endedAt };
  assert.equal(
    result.code,
    0,
    `mcastctl ${argv.join(' ')} exited ${result.code} (${result.signal ?? 'no signal'}):\n${result.stderr}`,
  );
  assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  if (options.json !== false) {
    try {
      outcome.doc = JSON.parse(result.stdout) as QueryDocument;
    } catch {
      assert.fail(`stdout of mcastctl ${argv.join(' ')} is not one JSON document:\n${result.stdout.slice(0, 2000)}`);
    }
  }
  return outcome;
}

function answer(
  host: string,
  group: string,
  version: Version,
  filter: { mode: 'include' | 'exclude'; sources: string[] } = { mode: 'exclude', sources: [] },
): Answer {
  // v1/v2 reports carry no filter: "any source".
  return version === 3
    ? { host, group, version, mode: filter.mode, sources: [...filter.sources].sort() }
    : { host, group, version, mode: 'exclude', sources: [] };
}

function sortAnswers(answers: readonly Answer[]): Answer[] {
  return [...answers].sort((a, b) =>
    `${a.group} ${a.host} ${a.port ?? ''}`.localeCompare(`${b.group} ${b.host} ${b.port ?? ''}`),
  );
}

/** The predictable part of each responder: the contract's fields, port and pod only where present. */
function predictable(responder: Responder): Answer {
  const picked: Answer = {
    host: responder.host,
    group: responder.group,
    version: responder.version,
    mode: responder.mode,
    sources: responder.sources,
  };
  if ('port' in responder) picked.port = responder.port;
  if ('pod' in responder) picked.pod = responder.pod;
  return picked;
}

function assertResponders(doc: QueryDocument, expected: readonly Answer[]): void {
  assert.ok(Array.isArray(doc.responders), 'responders is a list');
  assert.deepEqual(
    sortAnswers(doc.responders.map(predictable)),
    sortAnswers(expected),
    'responders (exactly these, one per group and host)',
  );
}

/** Each delay is a number of milliseconds within the time the host had to answer. */
function assertDelays(doc: QueryDocument, boundMs: (responder: Responder) => number): void {
  for (const responder of doc.responders) {
    assert.equal(typeof responder.delayMs, 'number', `delayMs of ${responder.host} for ${responder.group}`);
    const bound = boundMs(responder);
    assert.ok(
      responder.delayMs >= 0 && responder.delayMs <= bound + 1000,
      `${responder.host} answered for ${responder.group} after ${responder.delayMs} ms; it had ${bound} ms`,
    );
  }
}

function assertQueries(run: Run, ownAddress: string): void {
  const doc = run.doc!;
  const expected = sentQueries(run.args, ownAddress);
  assert.equal(doc.queries.length, expected.length, `queries: ${JSON.stringify(doc.queries)}`);
  for (const [i, query] of doc.queries.entries()) {
    const want = expected[i]!;
    const { version, kind, group, sources, src, dst, maxRespMs, sentAt } = query;
    assert.deepEqual(
      { version, kind, group, sources, src, dst },
      {
        version: want.version,
        kind: want.kind,
        group: want.group,
        sources: want.sources,
        src: want.src,
        dst: want.dst,
      },
      `query ${i + 1}`,
    );
    // IGMPv1 has no Max Resp field; what the command prints for it is not specified.
    if (want.maxRespMs !== undefined) assert.equal(maxRespMs, want.maxRespMs, `maxRespMs of query ${i + 1}`);
    assert.match(
      sentAt,
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/,
      `sentAt of query ${i + 1} is an ISO time`,
    );
    const at = Date.parse(sentAt);
    assert.ok(at >= run.startedAt - 1000 && at <= run.endedAt + 1000, `sentAt ${sentAt} is outside the run`);
  }
}

/** The contract's fields of a querier entry (others, if any, are not the test's business). */
function querierFields({ address, version, self, elected, queries }: Querier): Querier {
  return { address, version, self, elected, queries };
}

function assertElapsed(run: Run): void {
  const nominal = nominalMs(run.args);
  assert.ok(run.result.elapsedMs >= nominal - 50, `ran ${run.result.elapsedMs} ms; it must collect for ${nominal} ms`);
  assert.ok(
    run.result.elapsedMs <= nominal + RUN_SLACK_MS,
    `ran ${run.result.elapsedMs} ms for a nominal ${nominal} ms`,
  );
  const firstQuery = run.doc?.queries[0];
  if (firstQuery === undefined) return;
  const collected = run.endedAt - Date.parse(firstQuery.sentAt);
  assert.ok(
    collected <= nominal + WINDOW_SLACK_MS,
    `ended ${collected} ms after its first query, for a nominal ${nominal} ms`,
  );
}

// ---------------------------------------------------------------------------------------
// Human output: cli-table3 tables

type Table = string[][];

/** Every box-drawn table of `text`: rows of trimmed cells, the header first. */
function tables(text: string): Table[] {
  const found: Table[] = [];
  let current: Table | undefined;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('┌')) found.push((current = []));
    else if (trimmed.startsWith('└')) current = undefined;
    else if (current && trimmed.startsWith('│'))
      current.push(
        trimmed
          .split('│')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
  }
  return found;
}

function column(table: Table, name: string): number {
  const index = (table[0] ?? []).findIndex((cell) => cell.toLowerCase().startsWith(name.toLowerCase()));
  assert.ok(index >= 0, `no ${name} column in ${JSON.stringify(table[0])}`);
  return index;
}

// ---------------------------------------------------------------------------------------
// The wire, as tshark reads it

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type Tree = { [key: string]: Json };

interface WireFrame {
  number: number;
  ts: number;
  ethSrc: string | undefined;
  ipProto: string | undefined;
  ttl: string | undefined;
  routerAlert: boolean;
  /** Expert infos of severity warning (0x600000) or error (0x800000). */
  alarms: string[];
  /** tshark's IGMP dissection in the shape of test/lab/tshark.ts (undefined: not IGMP). */
  igmp: ExpectedLine | undefined;
}

function isTree(value: Json | undefined): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function firstOf(value: Json | undefined): Json | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Every value stored under `key` anywhere in `tree`. */
function findAll(tree: Json | undefined, key: string, out: Json[] = []): Json[] {
  if (Array.isArray(tree)) for (const item of tree) findAll(item, key, out);
  else if (isTree(tree)) {
    for (const [k, v] of Object.entries(tree)) {
      if (k === key) out.push(...(Array.isArray(v) ? v : [v]));
      findAll(v, key, out);
    }
  }
  return out;
}

const PI_WARN = 0x00600000;

async function readWire(file: string): Promise<WireFrame[]> {
  const { stdout } = await run(
    [
      'tshark',
      '-n',
      '-r',
      file,
      '-o',
      'ip.check_checksum:TRUE',
      '-o',
      'ip.defragment:FALSE',
      '-T',
      'json',
      '--no-duplicate-keys',
    ],
    {
      timeoutMs: 60_000,
    },
  );
  const packets = JSON.parse(stdout.trim() === '' ? '[]' : stdout) as { _source: { layers: Tree } }[];
  return packets.map(({ _source: { layers } }) => {
    const frame = firstOf(layers.frame);
    const eth = firstOf(layers.eth);
    const ip = firstOf(layers.ip);
    const text = (tree: Json | undefined, key: string) => {
      const value = isTree(tree) ? firstOf(tree[key]) : undefined;
      return typeof value === 'string' ? value : undefined;
    };
    const alarms = findAll(layers, '_ws.expert')
      .filter(isTree)
      .filter((expert) => Number(text(expert, '_ws.expert.severity')) >= PI_WARN)
      .map((expert) => text(expert, '_ws.expert.message') ?? JSON.stringify(expert));
    if ('_ws.malformed' in layers) alarms.push('malformed packet');
    return {
      number: Number(text(frame, 'frame.number')),
      ts: Number(text(frame, 'frame.time_epoch')),
      ethSrc: text(eth, 'eth.src'),
      ipProto: text(ip, 'ip.proto'),
      ttl: text(ip, 'ip.ttl'),
      routerAlert: findAll(ip, 'ip.opt.ra').length > 0,
      alarms,
      igmp: expectedFromTshark(layers),
    };
  });
}

/** What is wrong with a frame that should be `want` (empty: nothing). */
function queryProblems(frame: WireFrame, want: SentQuery): string[] {
  const problems: string[] = [];
  const line = frame.igmp;
  if (frame.ipProto !== '2' || !line) return [`not IGMP (IP protocol ${frame.ipProto})`];
  if (line.error !== undefined) problems.push(`tshark: ${line.error}`);
  if (line.type !== 'query') problems.push(`a ${line.type ?? '?'}, not a query`);
  if (line.version !== want.version) problems.push(`IGMPv${line.version}, not v${want.version}`);
  if (line.src !== want.src) problems.push(`from ${line.src}, not ${want.src}`);
  if (line.dst !== want.dst) problems.push(`to ${line.dst}, not ${want.dst}`);
  // A v1 query has no group-specific form (RFC 1112): its group field is only checked for a general query.
  if ((want.version !== 1 || want.group === null) && line.group !== (want.group ?? '0.0.0.0'))
    problems.push(`group field ${line.group}, not ${want.group ?? '0.0.0.0'}`);
  if (want.version === 3 && JSON.stringify(line.sources ?? []) !== JSON.stringify(want.sources))
    problems.push(`sources ${JSON.stringify(line.sources)}, not ${JSON.stringify(want.sources)}`);
  if (want.maxRespMs !== undefined && line.maxRespTimeMs !== want.maxRespMs)
    problems.push(`max resp ${line.maxRespTimeMs} ms, not ${want.maxRespMs}`);
  // S (suppress router-side processing) on v3 group and group-and-source queries only: we ask, we do not prune.
  if (want.version === 3 && line.sFlag !== (want.group !== null))
    problems.push(`S flag ${line.sFlag}, not ${want.group !== null}`);
  if (frame.ttl !== '1') problems.push(`TTL ${frame.ttl}`);
  if (!frame.routerAlert) problems.push('no Router Alert option');
  problems.push(...frame.alarms.map((alarm) => `tshark expert: ${alarm}`));
  return problems;
}

/** Compares the query frames with what the runs asked for, in order; returns every difference. */
function compareQueries(frames: readonly WireFrame[], wanted: readonly SentQuery[]): string[] {
  const out: string[] = [];
  if (frames.length !== wanted.length) out.push(`${frames.length} frames for ${wanted.length} queries asked for`);
  for (let i = 0; i < Math.min(frames.length, wanted.length); i++) {
    const problems = queryProblems(frames[i]!, wanted[i]!);
    if (problems.length > 0)
      out.push(
        `frame ${frames[i]!.number} (v${wanted[i]!.version} ${wanted[i]!.kind} query ${i + 1}): ${problems.join('; ')}`,
      );
  }
  return out;
}

/** Whether a report frame carries `group` (a v1/v2 report's group, or one of a v3 report's records). */
function reportsGroup(line: ExpectedLine | undefined, group: string): boolean {
  if (line?.type !== 'report') return false;
  return line.group === group || (line.records ?? []).some((record) => record.group === group);
}

/**
 * A copy of the pcap `file` with frame `number` changed by `mutate(frame bytes, offset of
 * the IP header)`. Classic pcap (what tcpdump -w writes), Ethernet link type.
 */
function spoiledCopy(
  file: string,
  copy: string,
  number: number,
  mutate: (bytes: Buffer, ipOffset: number) => void,
): void {
  const bytes = readFileSync(file);
  const magic = bytes.readUInt32LE(0);
  const little = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  assert.ok(
    little || bytes.readUInt32BE(0) === 0xa1b2c3d4 || bytes.readUInt32BE(0) === 0xa1b23c4d,
    `${file} is not a classic pcap file`,
  );
  let offset = 24;
  for (let n = 1; offset + 16 <= bytes.length; n++) {
    const length = little ? bytes.readUInt32LE(offset + 8) : bytes.readUInt32BE(offset + 8);
    if (n === number) {
      mutate(bytes, offset + 16 + 14);
      writeFileSync(copy, bytes);
      return;
    }
    offset += 16 + length;
  }
  assert.fail(`no frame ${number} in ${file}`);
}

function resealIpHeader(bytes: Buffer, ip: number): void {
  const length = (bytes[ip]! & 0x0f) * 4;
  bytes.writeUInt16BE(0, ip + 10);
  bytes.writeUInt16BE(internetChecksum(bytes.subarray(ip, ip + length)), ip + 10);
}

/**
 * A v3 group-specific query for `group` (Max Resp 1 s, QRV 2, QQIC 125), checksum filled in: the test's own control.
 */
function v3GroupQuery(group: string): Uint8Array {
  const message = Uint8Array.from([0x11, 10, 0, 0, ...group.split('.').map(Number), 0x02, 125, 0, 0]);
  const checksum = internetChecksum(message);
  message[2] = checksum >> 8;
  message[3] = checksum & 0xff;
  return message;
}

async function macOf(lab: Lab, ns: string, iface: string): Promise<string> {
  const [link] = JSON.parse((await lab.ip(ns, '-j', 'link', 'show', iface)).stdout) as { address?: string }[];
  assert.ok(link?.address, `no MAC for ${iface}`);
  return link.address;
}

// ---------------------------------------------------------------------------------------

describe('mcastctl query', { timeout: 240_000, concurrency: true }, () => {
  let lab: Lab;

  before(() => {
    lab = Lab.create();
    const missing = cliMissing();
    if (missing) assert.fail(`cannot run mcastctl: ${missing}`);
  });

  after(async () => {
    await lab?.destroy();
  });

  describe('on a Linux bridge (--iface): h1 v1, h2 v2, h3 and h4 v3', { concurrency: 1 }, () => {
    let q: Host;
    let h1: Host;
    let h2: Host;
    let h3: Host;
    let h4: Host;
    let qMember: Member;
    let qMac: string;
    const iface = () => ['--iface', q.iface];
    /** Every successful run, in order: what went on the wire. */
    const runs: Run[] = [];

    before(async () => {
      const started = Date.now();
      const ns = await lab.namespace('sw');
      // A snooping bridge joins 224.0.0.106 (all-snoopers, RFC 4286) and, like any Linux
      // host, reports link-local groups: not a member the test made, so keep it quiet.
      await lab.sysctl(ns, 'net.ipv4.igmp_link_local_mcast_reports', 0);
      const bridge = await lab.linuxBridge(ns, 'br', { snooping: true, querier: false, network: '10.77.0.0/24' });
      q = await lab.host('q', { bridge, address: '10.77.0.2/24' });
      h1 = await lab.host('h1', { bridge, igmpVersion: 1 });
      h2 = await lab.host('h2', { bridge, igmpVersion: 2 });
      h3 = await lab.host('h3', { bridge, igmpVersion: 3 });
      h4 = await lab.host('h4', { bridge, igmpVersion: 3 });
      for (const host of [h1, h2, h3, h4]) {
        // The repeats of the unsolicited reports (up to 10 s later for v1/v2) must be over
        // before the first query, or they would pass for answers.
        await lab.sysctl(host.ns, `net.ipv4.conf.${host.iface}.igmpv2_unsolicited_report_interval`, 100);
        await lab.sysctl(host.ns, `net.ipv4.conf.${host.iface}.igmpv3_unsolicited_report_interval`, 100);
      }
      qMac = await macOf(lab, q.ns, q.iface);
      const [m1, m2, m3, m4, mq] = await Promise.all([h1, h2, h3, h4, q].map((host) => Member.start(lab, host)));
      qMember = mq!;
      await m1!.join(G1);
      await m2!.join(G2);
      await m3!.join(G3);
      await m3!.joinSource(SSM, S1);
      await m3!.joinSource(SSM, S2);
      await m4!.join(G3);
      await m4!.joinSource(SSM, S2);
      await sleep(600);
      console.error(`# Linux bridge segment up in ${Date.now() - started} ms`);
    });

    describe('bad input: exit 64, a message, nothing on stdout, no query sent', () => {
      const cases: [name: string, args: () => string[], message: RegExp][] = [
        ['a unicast --group', () => [...iface(), '--group', '10.1.1.1'], /10\.1\.1\.1/],
        ['a link-local --group (224.0.0.1)', () => [...iface(), '--group', '224.0.0.1'], /224\.0\.0\.1/],
        ['a link-local --group (224.0.0.251)', () => [...iface(), '--group', '224.0.0.251'], /224\.0\.0\.251/],
        ['--source with --version 2', () => [...iface(), '--version', '2', '--group', SSM, '--source', S1], /source/i],
        [
          '--source with --version 1',
          () => [...iface(), '--version', '1', '--group', SSM, '--source', S1],
          /source|group/i,
        ],
        ['--source without --group', () => [...iface(), '--version', '3', '--source', S1], /group|source/i],
        ['--max-resp 0', () => [...iface(), '--max-resp', '0'], /max.?resp/i],
        ['--max-resp 25.6 with --version 2', () => [...iface(), '--version', '2', '--max-resp', '25.6'], /25\.6/],
        ['--max-resp 3174.5 with --version 3', () => [...iface(), '--version', '3', '--max-resp', '3174.5'], /3174\.5/],
        ['--max-resp -1', () => [...iface(), '--max-resp', '-1'], /max.?resp|-1/i],
        ['--max-resp abc', () => [...iface(), '--max-resp', 'abc'], /abc/],
        ['--max-resp with --version 1', () => [...iface(), '--version', '1', '--max-resp', '5'], /max.?resp/i],
        ['--version 4', () => [...iface(), '--version', '4'], /version/i],
        [
          'both --iface and --bridge',
          () => [...iface(), '--bridge', 'br-int'],
          /iface[\s\S]*bridge|bridge[\s\S]*iface/,
        ],
        ['neither --iface nor --bridge', () => ['--group', G1], /iface[\s\S]*bridge|bridge[\s\S]*iface/],
        ['--from 239.1.1.1 (multicast)', () => [...iface(), '--from', '239.1.1.1'], /239\.1\.1\.1/],
        ['--repeat 0', () => [...iface(), '--repeat', '0'], /repeat/],
        // The contract leaves a v1 query with --group open; IGMPv1 has only general queries (RFC 1112).
        ['--group with --version 1', () => [...iface(), '--version', '1', '--group', G3], /version 1|v1|general/i],
        ['an unknown interface', () => ['--iface', lab.ifname('nx'), '--json'], /mcl[0-9a-z]+nx/],
        ['--max-resp in hundredths (1.25)', () => [...iface(), '--max-resp', '1.25'], /tenth/],
        ['a multicast --source', () => [...iface(), '--group', SSM, '--source', '239.9.9.9'], /239\.9\.9\.9/],
        ['OVS options with --iface', () => [...iface(), '--ovs-rundir', '/nonexistent'], /--bridge/],
        ['--all-ports with --iface', () => [...iface(), '--all-ports'], /--bridge/],
      ];
      const results = new Map<string, CliResult>();
      let captured: WireFrame[] = [];
      const marker = { dst: NOBODY };

      before(async () => {
        const file = lab.file('bad-input.pcap');
        const tcpdump = await lab.startTcpdump(q.ns, q.iface, file, { filter: ['igmp'] });
        try {
          // All at once: nothing may be sent by any of them, whichever way they fail.
          await Promise.all(
            cases.map(async ([name, args]) =>
              results.set(name, await mcastctl(['query', ...args()], { ns: q.ns, timeoutMs: 30_000 })),
            ),
          );
          // A control, sent by the test itself: the capture must see exactly this query.
          await qMember.sendIgmp(marker.dst, v3GroupQuery(marker.dst));
          await sleep(300);
        } finally {
          await tcpdump.stop();
        }
        captured = (await readWire(file)).filter((frame) => frame.igmp?.type === 'query');
      });

      for (const [name, , message] of cases) {
        it(name, () => {
          const result = results.get(name);
          assert.ok(result, 'the command ran');
          assert.equal(result.code, 64, `exit ${result.code}; stderr: ${result.stderr}`);
          assert.doesNotMatch(result.stderr, /unknown command/, 'mcastctl knows the query command');
          assert.match(result.stderr, message, 'stderr names what is wrong');
          assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
          assert.equal(result.stdout, '', 'nothing on stdout');
        });
      }

      it('none of them sent a query (tcpdump on the querier saw only the test’s own control query)', () => {
        const shown = captured.map((frame) => `${frame.igmp?.src} > ${frame.igmp?.dst} v${frame.igmp?.version} query`);
        assert.deepEqual(
          captured.map((frame) => [frame.igmp?.src, frame.igmp?.dst, frame.igmp?.version]),
          [[q.address, marker.dst, 3]],
          `queries captured: ${shown.join(', ') || 'none (so the capture saw nothing at all)'}`,
        );
      });
    });

    describe('queries of every version, v3 first, then v2, then v1', () => {
      let tcpdump: Tcpdump | undefined;
      const file = () => lab.file('queries.pcap');

      before(async () => {
        tcpdump = await lab.startTcpdump(q.ns, q.iface, file());
      });
      after(async () => {
        await tcpdump?.stop();
      });

      async function query(label: string, args: string[], json = true): Promise<Run> {
        const outcome = await runQuery(label, [...iface(), ...args], { ns: q.ns, json });
        runs.push(outcome);
        if (outcome.doc) {
          assert.deepEqual(outcome.doc.link, { iface: q.iface }, 'link');
          assertQueries(outcome, q.address);
        }
        assertElapsed(outcome);
        return outcome;
      }

      /**
       * Only ourselves (nobody else queries on this link); elected, except in IGMPv1, which has no election (RFC 2236
       * §4).
       */
      function assertOnlyUs(doc: QueryDocument, version: Version, queries = 1): void {
        assert.deepEqual(
          doc.queriers.map(querierFields),
          [{ address: q.address, version, self: true, elected: version !== 1, queries }],
          'queriers',
        );
      }

      it('v3 general query (--max-resp 10): every membership, h1 in v1, h2 in v2, h3/h4 in v3 with their filters', async () => {
        // --max-resp 10 (and so the default --wait of 11 s): h1 (v1) answers any v3 query within 10 s.
        const { doc } = await query('v3 general', ['--max-resp', '10']);
        assertResponders(doc!, [
          answer(h1.address, G1, 1),
          answer(h2.address, G2, 2),
          answer(h3.address, G3, 3, { mode: 'exclude', sources: [] }),
          answer(h3.address, SSM, 3, { mode: 'include', sources: [S1, S2] }),
          answer(h4.address, G3, 3, { mode: 'exclude', sources: [] }),
          answer(h4.address, SSM, 3, { mode: 'include', sources: [S2] }),
        ]);
        assertDelays(doc!, () => 10_000);
        assertOnlyUs(doc!, 3);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('v3 group-specific query: only that group’s members (h3, h4), in v3', async () => {
        const { doc } = await query('v3 group', ['--group', G3, '--max-resp', '2']);
        assertResponders(doc!, [answer(h3.address, G3, 3), answer(h4.address, G3, 3)]);
        assertDelays(doc!, () => 2000);
        assertOnlyUs(doc!, 3);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('v3 group-and-source-specific query: each member answers IS_INCLUDE with the queried sources it joined', async () => {
        // RFC 3376 §6.3: an include-mode member answers with the intersection of the queried
        // sources and its own (Linux: igmp_marksources); 10.9.9.7 was joined by nobody.
        const { doc } = await query('v3 group-and-source', [
          '--group',
          SSM,
          '--source',
          `${S1},${S2},${S7}`,
          '--max-resp',
          '2',
        ]);
        assertResponders(doc!, [
          answer(h3.address, SSM, 3, { mode: 'include', sources: [S1, S2] }),
          answer(h4.address, SSM, 3, { mode: 'include', sources: [S2] }),
        ]);
        assertDelays(doc!, () => 2000);
        assertOnlyUs(doc!, 3);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('--from 0.0.0.0 --repeat 2: two queries, one entry per answering host, no querier listed', async () => {
        const run = await query('v3 group from 0.0.0.0, twice', [
          '--group',
          G3,
          '--from',
          '0.0.0.0',
          '--repeat',
          '2',
          '--interval',
          '0.5',
          '--max-resp',
          '1',
        ]);
        const doc = run.doc!;
        assertResponders(doc, [answer(h3.address, G3, 3), answer(h4.address, G3, 3)]);
        assert.deepEqual(doc.queriers, [], 'a querier with source 0.0.0.0 is nobody (and nobody else queried)');
        const [first, second] = doc.queries.map((query) => Date.parse(query.sentAt));
        assert.ok(
          second! - first! >= 400 && second! - first! <= 1000,
          `--interval 0.5: queries ${second! - first!} ms apart`,
        );
      });

      it('--max-resp 20 on v3 (a floating-point Max Resp Code) and an explicit --wait 1', async () => {
        // Nobody is a member of this group: nobody answers, and the run ends after --wait, not max-resp.
        const { doc } = await query('v3 group, max-resp 20', ['--group', NOBODY, '--max-resp', '20', '--wait', '1']);
        assert.deepEqual(doc!.responders, []);
        assertOnlyUs(doc!, 3);
      });

      it('a v1 host answers a v3 query with a v1 report: the human table shows h1 as v1', async () => {
        // h1 takes the v3 query for its group as a general query and answers within 10 s.
        const run = await query('v3 group for h1, human', ['--group', G1, '--max-resp', '10'], false);
        const found = tables(run.result.stdout);
        const responders = found.find((table) =>
          ['group', 'host', 'version', 'filter', 'delay'].every((name) =>
            (table[0] ?? []).some((cell) => cell.toLowerCase().startsWith(name)),
          ),
        );
        assert.ok(responders, `no table with columns Group, Host, Version, Filter, Delay in:\n${run.result.stdout}`);
        assert.ok(
          !(responders[0] ?? []).some((cell) => /^(port|pod)$/i.test(cell)),
          'no Port or Pod column on an interface',
        );
        const rows = responders.slice(1).filter((row) => row.some((cell) => cell !== ''));
        assert.equal(rows.length, 1, `one answer, h1's:\n${run.result.stdout}`);
        const [row] = rows as [string[]];
        assert.equal(row[column(responders, 'group')], G1);
        assert.equal(row[column(responders, 'host')], h1.address);
        assert.equal(row[column(responders, 'version')], 'v1');
        assert.match(row[column(responders, 'delay')] ?? '', /\d/);
        const rest = run.result.stdout.slice(run.result.stdout.indexOf(h1.address) + h1.address.length);
        assert.match(rest, /querier/i, 'a Queriers table after the answers');
        const queriers = found.slice(found.indexOf(responders) + 1);
        assert.ok(
          queriers.some((table) => table.some((row) => row.some((cell) => cell.includes(q.address)))),
          `our own address in the Queriers table:\n${run.result.stdout}`,
        );
      });

      it('v2 general query: h1 in v1, everybody else in v2 (h3 and h4 fall back to v2)', async () => {
        // Linux: a host in v1 mode still takes a v2 query's Max Resp Time (igmp_heard_query),
        // so h1 answers within 2 s. (RFC 2236 §4 lets a v1 host ignore it: up to 10 s.)
        const { doc } = await query('v2 general', ['--version', '2', '--max-resp', '2']);
        assertResponders(doc!, [
          answer(h1.address, G1, 1),
          answer(h2.address, G2, 2),
          answer(h3.address, G3, 2),
          answer(h3.address, SSM, 2),
          answer(h4.address, G3, 2),
          answer(h4.address, SSM, 2),
        ]);
        assertDelays(doc!, () => 2000);
        assertOnlyUs(doc!, 2);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('v2 group-specific query: only h3 and h4, in v2', async () => {
        const { doc } = await query('v2 group', ['--version', '2', '--group', G3, '--max-resp', '2']);
        assertResponders(doc!, [answer(h3.address, G3, 2), answer(h4.address, G3, 2)]);
        assertDelays(doc!, () => 2000);
        assertOnlyUs(doc!, 2);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('v1 general query (default --wait 11 s): everybody, in v1', async () => {
        const { doc } = await query('v1 general', ['--version', '1']);
        assertResponders(doc!, [
          answer(h1.address, G1, 1),
          answer(h2.address, G2, 1),
          answer(h3.address, G3, 1),
          answer(h3.address, SSM, 1),
          answer(h4.address, G3, 1),
          answer(h4.address, SSM, 1),
        ]);
        assertDelays(doc!, () => 10_000);
        assertOnlyUs(doc!, 1);
        assert.equal(doc!.ignored?.reports, 0);
      });

      it('v3 group-specific query to hosts now in v1 mode: only that group is listed, their other answers are counted as ignored', async () => {
        // h3 and h4 heard a v1 query: they now take any query as a v1 general query, for the
        // Older Version Querier Present Timeout (RFC 3376 §7.2.1, §8.12: QRV × QQIC + 10 s, i.e.
        // 260 s with the QRV 2 and QQIC 125 s of the v3 queries they heard), so they answer
        // within 10 s, in v1, for all their groups: 239.3.3.3 (listed) and 232.1.1.1
        // (ignored). --max-resp 10 makes the wait 11 s.
        const { doc } = await query('v3 group to v1-mode hosts', ['--group', G3, '--max-resp', '10']);
        assertResponders(doc!, [answer(h3.address, G3, 1), answer(h4.address, G3, 1)]);
        assertDelays(doc!, () => 10_000);
        assertOnlyUs(doc!, 3);
        assert.equal(doc!.ignored?.reports, 2, "h3's and h4's reports for 232.1.1.1");
      });

      it('tshark: every frame the querier sent is a well-formed query as asked for, and the delays are those on the wire', async () => {
        await tcpdump?.stop();
        const kinds = new Set(
          runs.flatMap((run) => sentQueries(run.args, q.address).map((query) => `v${query.version} ${query.kind}`)),
        );
        for (const kind of ['v1 general', 'v2 general', 'v2 group', 'v3 general', 'v3 group', 'v3 group-and-source']) {
          assert.ok(kinds.has(kind), `no run sent a ${kind} query (an earlier test failed)`);
        }
        const frames = await readWire(file());
        // Everything IPv4 that left the querier host.
        const sent = frames.filter((frame) => frame.ethSrc === qMac && frame.ipProto !== undefined);
        const wanted = runs.flatMap((run) => sentQueries(run.args, q.address));
        assert.deepEqual(compareQueries(sent, wanted), [], 'the querier’s frames');

        // The check is not vacuous: spoiled copies of the first query are caught.
        const first = sent[0]!;
        const spoiled = lab.file('spoiled.pcap');
        spoiledCopy(file(), spoiled, first.number, (bytes, ip) => {
          bytes[ip + 8] = 2; // TTL 2 (IP checksum now wrong)
          bytes[ip + (bytes[ip]! & 0x0f) * 4 + 2]! ^= 0xff; // IGMP checksum
        });
        const [bad] = (await readWire(spoiled)).filter((frame) => frame.number === first.number);
        const badProblems = queryProblems(bad!, wanted[0]!).join('; ');
        for (const expected of [/TTL 2/, /bad-ip-checksum/, /expert: Bad checksum/])
          assert.match(badProblems, expected);
        spoiledCopy(file(), spoiled, first.number, (bytes, ip) => {
          assert.equal(bytes.readUInt32BE(ip + 20), 0x94040000, 'the Router Alert option follows the fixed IP header');
          bytes.writeUInt32BE(0x01010101, ip + 20); // four NOPs instead
          resealIpHeader(bytes, ip);
        });
        const [noRa] = (await readWire(spoiled)).filter((frame) => frame.number === first.number);
        assert.ok(
          queryProblems(noRa!, wanted[0]!).includes('no Router Alert option'),
          'a query without Router Alert is caught',
        );

        // sentAt and delayMs of each JSON run against the wire's timestamps.
        let index = 0;
        const differences: string[] = [];
        for (const run of runs) {
          const count = sentQueries(run.args, q.address).length;
          const queryFrames = sent.slice(index, index + count);
          index += count;
          if (!run.doc || queryFrames.length !== count) continue;
          for (const [i, query] of run.doc.queries.entries()) {
            const skew = Date.parse(query.sentAt) - queryFrames[i]!.ts * 1000;
            if (Math.abs(skew) > 500)
              differences.push(`${run.label}: sentAt ${query.sentAt} is ${skew} ms from the frame`);
          }
          if (count !== 1) continue;
          const queryTs = queryFrames[0]!.ts;
          for (const responder of run.doc.responders) {
            const report = frames.find(
              (frame) =>
                frame.ts > queryTs &&
                frame.ts * 1000 <= run.endedAt &&
                frame.igmp?.src === responder.host &&
                reportsGroup(frame.igmp, responder.group),
            );
            if (!report) {
              differences.push(`${run.label}: no report from ${responder.host} for ${responder.group} on the wire`);
              continue;
            }
            const wire = (report.ts - queryTs) * 1000;
            if (Math.abs(responder.delayMs - wire) > DELAY_TOLERANCE_MS) {
              differences.push(
                `${run.label}: ${responder.host} for ${responder.group}: delayMs ${responder.delayMs}, on the wire ${wire.toFixed(0)} ms`,
              );
            }
          }
        }
        assert.deepEqual(differences, []);
      });
    });
  });

  describe('another querier on the link (the bridge’s own, IGMPv2, lower address)', { concurrency: 1 }, () => {
    let bridge: LinuxBridge;
    let q2: Host;

    before(async () => {
      const ns = await lab.namespace('sw2');
      await lab.sysctl(ns, 'net.ipv4.igmp_link_local_mcast_reports', 0);
      bridge = await lab.linuxBridge(ns, 'b2', { address: '10.78.0.1/24', snooping: true, querier: false });
      q2 = await lab.host('q2', { bridge, address: '10.78.0.2/24' });
    });

    it('queriers: the bridge (v2, elected) and ourselves (self, not elected)', async () => {
      await bridge.set({
        querier: true,
        igmpVersion: 2,
        queryUseIfaddr: true,
        queryIntervalMs: 1000,
        startupQueryIntervalMs: 500,
        queryResponseIntervalMs: 500,
      });
      await sleep(300);
      const tcpdump = await lab.startTcpdump(q2.ns, q2.iface, lab.file('q2.pcap'), { filter: ['igmp'] });
      let outcome: Run;
      try {
        outcome = await runQuery(
          'v3 general with a v2 querier around',
          ['--iface', q2.iface, '--max-resp', '1', '--wait', '3'],
          { ns: q2.ns },
        );
      } finally {
        await tcpdump.stop();
      }
      const doc = outcome.doc!;
      assertQueries(outcome, q2.address);
      const heard = (await readWire(lab.file('q2.pcap'))).filter(
        (frame) => frame.igmp?.type === 'query' && frame.igmp.src === bridge.address,
      );
      assert.ok(heard.length >= 2, `the bridge sent ${heard.length} queries during the run`);
      const byAddress = new Map(doc.queriers.map((querier) => [querier.address, querier]));
      assert.equal(doc.queriers.length, 2, `queriers: ${JSON.stringify(doc.queriers)}`);
      const theirs = byAddress.get(bridge.address!);
      assert.ok(theirs, `the bridge ${bridge.address} is among the queriers: ${JSON.stringify(doc.queriers)}`);
      assert.deepEqual(
        { ...querierFields(theirs), queries: 0 },
        { address: bridge.address, version: 2, self: false, elected: true, queries: 0 },
      );
      assert.ok(
        theirs.queries >= 2 && theirs.queries <= heard.length,
        `the bridge's queries: ${theirs.queries}; tcpdump saw ${heard.length}`,
      );
      const ours = byAddress.get(q2.address);
      assert.ok(ours, `ourselves (${q2.address}) among the queriers: ${JSON.stringify(doc.queriers)}`);
      assert.deepEqual(querierFields(ours), {
        address: q2.address,
        version: 3,
        self: true,
        elected: false,
        queries: 1,
      });
      assert.deepEqual(doc.responders, [], 'nobody is a member of anything here');
    });
  });

  describe('on an OVS bridge (--bridge): pods, their ports and names', { concurrency: 1 }, () => {
    // p2 is forced to v2: its group is its own (it would suppress its report on hearing another's:
    // the bridge's NORMAL flow floods reports to every pod). p1 and p3 (v3) share one.
    const GROUPS: Record<string, string[]> = {
      p1: ['239.10.1.1', '239.10.9.9'],
      p2: ['239.10.2.2'],
      p3: ['239.10.3.3', '239.10.9.9'],
    };
    let node: OvsNode;
    let pods: OvsPod[];
    const flows = async () =>
      (await node.ofctl('dump-flows', node.bridge))
        .split('\n')
        .filter((line) => line.includes('cookie='))
        .map((line) =>
          line.trim().replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,/g, ''),
        )
        .sort();

    before(async () => {
      const started = Date.now();
      node = await OvsNode.start(lab, 'n1');
      pods = [];
      for (const [i, name] of ['p1', 'p2', 'p3'].entries()) {
        const pod = await node.addPod(name, {
          address: `10.1.0.${11 + i}/24`,
          ...(name === 'p2' ? { igmpVersion: 2 as const } : {}),
        });
        await lab.sysctl(pod.ns, `net.ipv4.conf.${pod.iface}.igmpv2_unsolicited_report_interval`, 100);
        await lab.sysctl(pod.ns, `net.ipv4.conf.${pod.iface}.igmpv3_unsolicited_report_interval`, 100);
        pods.push(pod);
      }
      for (const pod of pods) for (const group of GROUPS[pod.name]!) await pod.listen(group, 5001);
      // The bridge's own (LOCAL) port, up, to see that no query goes out of it.
      await lab.ip(node.ns, 'link', 'set', node.bridge, 'up');
      await sleep(600);
      console.error(`# OVS node and 3 pods up in ${Date.now() - started} ms`);
    });

    it('every pod membership, with the pod’s port and name; queries out of every pod port, none out of LOCAL', async () => {
      const flowsBefore = await flows();
      const local = await lab.startTcpdump(node.ns, node.bridge, lab.file('local.pcap'), { filter: ['igmp'] });
      const atPod = await lab.startTcpdump(pods[0]!.ns, pods[0]!.iface, lab.file('pod1.pcap'), { filter: ['igmp'] });
      let outcome: Run;
      try {
        // As install.test.ts does: from this machine's namespace, OVS found through --ovs-rundir.
        outcome = await runQuery('OVS v3 general', [
          '--bridge',
          node.bridge,
          '--ovs-rundir',
          node.rundir,
          '--max-resp',
          '2',
        ]);
      } finally {
        await Promise.all([local.stop(), atPod.stop()]);
      }
      const doc = outcome.doc!;
      assert.deepEqual(doc.link, { bridge: node.bridge });
      assert.deepEqual(
        doc.queries.map(({ version, kind, group, sources, dst, maxRespMs }) => ({
          version,
          kind,
          group,
          sources,
          dst,
          maxRespMs,
        })),
        [{ version: 3, kind: 'general', group: null, sources: [], dst: ALL_HOSTS, maxRespMs: 2000 }],
      );
      assertElapsed(outcome);
      const expected = pods.flatMap((pod) =>
        GROUPS[pod.name]!.map((group) => ({
          ...answer(pod.address, group, pod.name === 'p2' ? 2 : 3),
          port: pod.port,
          pod: `default/${pod.name}`,
        })),
      );
      assertResponders(doc, expected);
      assertDelays(doc, () => 2000);
      assert.equal(doc.ignored?.reports, 0);

      const queriesAt = async (file: string) =>
        (await readWire(file))
          .filter((frame) => frame.igmp?.type === 'query')
          .map(
            (frame) => `v${frame.igmp!.version} ${frame.igmp!.dst} TTL ${frame.ttl}${frame.routerAlert ? ' RA' : ''}`,
          );
      assert.deepEqual(
        await queriesAt(lab.file('pod1.pcap')),
        [`v3 ${ALL_HOSTS} TTL 1 RA`],
        'the query reached pod p1, once',
      );
      assert.deepEqual(await queriesAt(lab.file('local.pcap')), [], 'no query out of the LOCAL port');
      assert.deepEqual(await flows(), flowsBefore, 'the flow table is as it was before the run');
    });

    it('a port that is no pod is queried only with --all-ports', async () => {
      // A veth pair inside the node: one end on the bridge without external_ids, the other to listen on.
      const [plain, peer] = [lab.ifname('np0'), lab.ifname('np1')];
      await lab.ip(node.ns, 'link', 'add', plain, 'type', 'veth', 'peer', 'name', peer);
      await lab.ip(node.ns, 'link', 'set', plain, 'up');
      await lab.ip(node.ns, 'link', 'set', peer, 'up');
      await node.vsctl('add-port', node.bridge, plain);
      const queriesSeen = async (args: string[]) => {
        const file = lab.file(`plain-${args.length}.pcap`);
        const tcpdump = await lab.startTcpdump(node.ns, peer, file, { filter: ['igmp'] });
        try {
          await runQuery(`OVS ${args.join(' ')}`, [
            '--bridge',
            node.bridge,
            '--ovs-rundir',
            node.rundir,
            '--max-resp',
            '0.5',
            ...args,
          ]);
        } finally {
          await tcpdump.stop();
        }
        return (await readWire(file)).filter((frame) => frame.igmp?.type === 'query').length;
      };
      assert.equal(await queriesSeen([]), 0, 'pod ports only by default');
      assert.equal(await queriesSeen(['--all-ports']), 1, '--all-ports: every port but LOCAL');
    });

    it('a bridge without pod ports: exit 64, nothing sent', async () => {
      await node.vsctl('add-br', `${node.bridge}-e`, '--', 'set', 'bridge', `${node.bridge}-e`, 'datapath_type=netdev');
      const result = await mcastctl(['query', '--bridge', `${node.bridge}-e`, '--ovs-rundir', node.rundir]);
      assert.equal(result.code, 64, result.stderr);
      assert.match(result.stderr, /no pod port/);
      assert.match(result.stderr, /--all-ports/);
    });
  });
});
