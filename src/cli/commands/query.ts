/**
 * `mcastctl query`: ask a link who listens. Sends IGMP queries, or MLD queries (--mld),
 * on an interface (--iface) or to the pod ports of an OVS bridge (--bridge), collects the
 * reports for the Max Response Time, and lists every member with its filter and version,
 * plus the queriers heard and which of them wins the election.
 */
import { textFamily } from '../../wire/ip-address.js';
import { type Command, Option } from 'commander';
import { UsageError } from '../../errors.js';
import { BridgeLink, MAX_PROBE_SECONDS } from '../../adapters/query-link/bridge-link.js';
import { InterfaceLink } from '../../adapters/query-link/interface-link.js';
import type { QueryLink } from '../../adapters/query-link/query-link.js';
import { runQuery, type QueryRunResult } from '../../controllers/query/query-run.js';
import { parseQuerySpec, queryKind, type QuerySpec } from '../../controllers/query/query-spec.js';
import {
  checkMldQuerierAddress,
  mldQueryKind,
  parseMldQuerySpec,
  type MldQuerySpec,
} from '../../controllers/query/mld-query-spec.js';
import type { QuerierSeen, Responder, SentQuery } from '../../controllers/query/responder-table.js';
import { describeFilter } from '../render/human-format.js';
import { checkSourceAddress } from '../../domain/declared-state/group-address.js';
import { IPV4_FAMILY } from '../../domain/family/ipv4.js';
import { IPV6_FAMILY } from '../../domain/family/ipv6.js';
import { addOvsOptions, ovsSettings, usesOvsOptions, type OvsFlags } from '../options/ovs-options.js';
import { Output } from '../render/output.js';
import { parseDurationMs, parsePositiveInteger } from '../options/parse.js';
import { StopSignal } from '../stop.js';

interface QueryFlags extends OvsFlags {
  iface?: string;
  mld?: boolean;
  version?: string;
  group?: string;
  source?: string;
  maxResp?: string;
  from?: string;
  repeat: number;
  interval?: number;
  wait?: number;
  allPorts?: boolean;
  json?: boolean;
}

/**
 * Reports still in flight when the Max Response Time ends: a host's timer fires at most then, its report lands just
 * after.
 */
const GRACE_MS = 1_000;
const DEFAULT_INTERVAL_MS = 1_000;
/** The probe flow on a bridge outlives the run by this much, should deleting it fail. */
const PROBE_MARGIN_MS = 10_000;

export function registerQuery(program: Command): void {
  const command = program
    .command('query')
    .summary('send IGMP or MLD queries on an interface or an OVS bridge and list who answers')
    .description(
      'Send IGMP membership queries (v1, v2 or v3; general, group-specific, or group-and-source-specific) on an ' +
        'interface (--iface) or to the pod ports of an OVS bridge (--bridge), or with --mld MLD queries (v1 or v2; ' +
        'general, multicast-address-specific, or multicast-address-and-source-specific) on either, listen for ' +
        'the reports until the Max Response Time ends, and list every member: host, group, the version it answered ' +
        'in, its source filter (IGMPv3, MLDv2), its delay, and on a bridge its port and pod. Also lists the other ' +
        'queriers of the same protocol heard and which one wins the election (lowest address). Needs CAP_NET_RAW on ' +
        'an interface.',
    )
    .addOption(new Option('-i, --iface <name>', 'query on this interface').conflicts('bridge'))
    .option('--mld', 'send MLD (IPv6) queries instead of IGMP')
    .option('--version <n>', 'version of the query: IGMP 1, 2 or 3 (default 3); with --mld, MLD 1 or 2 (default 2)')
    .option(
      '-g, --group <address>',
      'ask about this group only (a group-specific query; default: a general query); IPv6 with --mld',
    )
    .option('-s, --source <list>', 'with --group and IGMPv3 or MLDv2: ask about these sources only, comma-separated')
    .option(
      '--max-resp <seconds>',
      'Max Response Time in seconds (default 10): IGMP to a tenth, 0.1-25.5 (v2), 0.1-3174.4 (v3), v1 has none (10 s); ' +
        'MLD to a millisecond, 0.001-65.535 (v1), 0.001-8387.584 (v2)',
    )
    .option(
      '--from <address>',
      "the queries' source address, or 0.0.0.0 as a snooping switch sends them (default: the link's own IPv4 address, else 0.0.0.0); " +
        "with --mld an IPv6 link-local address or :: (default: the link's link-local address; on a bridge without one, " +
        "the one the bridge's MAC forms, fe80::/64 and its modified EUI-64)",
    )
    .option('--repeat <n>', 'send the query n times', (text) => parsePositiveInteger('--repeat', text), 1)
    .option('--interval <time>', 'time between repeated queries: 2, 2s, 500ms (default 1 s)', (text) =>
      parseDurationMs('--interval', text),
    )
    .option(
      '--wait <time>',
      'listen this long after the last query (default: the Max Response Time plus 1 s)',
      (text) => parseDurationMs('--wait', text),
    )
    .option('--json', 'print one JSON document')
    .option('--all-ports', "with --bridge: query every port but the bridge's own, not only pod ports");
  addOvsOptions(command, { bridgeHelp: 'query the pod ports of this OVS bridge (instead of --iface)' })
    .addHelpText(
      'after',
      `
Examples:
  mcastctl query --iface eth0
  mcastctl query --iface eth0 --version 2 --group 239.1.2.3 --max-resp 2
  mcastctl query --iface eth0 --group 232.1.1.1 --source 10.0.0.5,10.0.0.6
  mcastctl query --bridge br-int --json
  mcastctl query --iface eth0 --mld
  mcastctl query --iface eth0 --mld --version 1 --group ff05::1:3 --max-resp 0.5
  mcastctl query --iface eth0 --mld --group ff3e::8000:1 --source 2001:db8::5
  mcastctl query --bridge br-int --mld --group ff05::1:3 --json

IGMPv1 hosts ignore the Max Response Time and answer within 10 s: use --max-resp 10
(the default) or --wait 11 to hear them. Ctrl-C stops early and lists who answered so far.
See mcastctl-query(1).`,
    )
    .action(async (flags: QueryFlags) => {
      const output = new Output({ json: flags.json === true });
      await query(flags, output);
    });
}

async function query(flags: QueryFlags, output: Output): Promise<void> {
  // Every check before the link opens: bad input sends nothing.
  if ((flags.iface === undefined) === (flags.bridge === undefined))
    throw new UsageError('query needs --iface NAME or --bridge NAME (one of them)');
  const mld = flags.mld === true;
  const request = { version: flags.version, group: flags.group, sources: flags.source, maxResp: flags.maxResp };
  if (!mld) checkNoIPv6(request.group, request.sources, flags.from);
  const spec: QuerySpec | MldQuerySpec = mld ? parseMldQuerySpec(request) : parseQuerySpec(request);
  const from =
    flags.from === undefined
      ? undefined
      : mld
        ? checkMldQuerierAddress(flags.from, '--from')
        : checkQuerierAddress(flags.from);
  if (flags.iface !== undefined && (usesOvsOptions(flags) || flags.allPorts === true)) {
    throw new UsageError(
      'the OVS options (--ovs-rundir, --db, --openflow, --table, --all-ports, ...) go with --bridge, not --iface',
    );
  }
  const waitMs = flags.wait ?? spec.maxRespMs + GRACE_MS;
  const intervalMs = flags.interval ?? DEFAULT_INTERVAL_MS;
  const runMs = (flags.repeat - 1) * intervalMs + waitMs;
  const probeSeconds = (runMs + PROBE_MARGIN_MS) / 1000;
  if (flags.bridge !== undefined && probeSeconds > MAX_PROBE_SECONDS) {
    throw new UsageError(
      `--repeat, --interval and --wait make a run of ${seconds(runMs)}: on a bridge at most ${seconds(MAX_PROBE_SECONDS * 1000 - PROBE_MARGIN_MS)} (an OpenFlow hard timeout)`,
    );
  }

  const link: QueryLink =
    flags.iface !== undefined
      ? await InterfaceLink.open(flags.iface)
      : await BridgeLink.open({
          ...ovsSettings(flags),
          family: mld ? IPV6_FAMILY : IPV4_FAMILY,
          probeSeconds,
          allPorts: flags.allPorts === true,
        });
  const where = 'iface' in link.name ? link.name.iface : `bridge ${link.name.bridge}`;
  let src: string;
  if (mld) {
    if (from === undefined && link.ownLinkLocal === undefined) {
      await link.close().catch(() => undefined);
      const fix = 'bridge' in link.name ? 'pass --from with a link-local address' : 'enable IPv6 on it';
      throw new UsageError(
        `${where} has no IPv6 link-local address, and listeners take MLD queries from no other (RFC 3810 §5.1.14): ${fix}, or pass --from :: to send anyway`,
      );
    }
    src = from ?? link.ownLinkLocal!;
    // Said in JSON mode too (on stderr): a run whose queries every listener drops looks like an empty link.
    if (src === '::')
      output.warn(
        'queries from :: are discarded by MLD listeners (RFC 3810 §5.1.14); only snooping switches take note of them',
      );
  } else src = from ?? link.ownAddress ?? '0.0.0.0';
  if (!output.json) {
    const origin =
      !mld && from === undefined && link.ownAddress === undefined
        ? `0.0.0.0 (${where} has no IPv4 address; set --from to take part in the election)`
        : src;
    output.info(`querying ${where} from ${origin}: ${describeSpec(spec)}; listening ${seconds(runMs)} (Ctrl-C stops)`);
  }

  const stop = new StopSignal();
  let result: QueryRunResult;
  try {
    result = await runQuery({ link, spec, src, repeat: flags.repeat, intervalMs, waitMs, signal: stop.signal });
  } catch (error) {
    await link.close().catch(() => undefined); // the first error is the one to report
    throw error;
  } finally {
    stop.dispose();
  }
  // What was heard is printed whatever happens next; a failure to clean up is a warning.
  const closing = link.close().then(
    () => undefined,
    (error: unknown) => error,
  );
  const { table } = result;
  const queries = table.queries;
  const responders = table.responders();
  const queriers = table.queriers();
  if (output.json) {
    output.document({
      link: link.name,
      queries: queries.map(queryJson),
      // Both are plain data already shaped as the contract (port and pod only where known).
      responders,
      queriers,
      ignored: { reports: table.ignoredReports },
      ...(result.stoppedEarly ? { stoppedEarly: true } : {}),
    });
  } else {
    printHuman(output, {
      responders,
      queriers,
      ignored: table.ignoredReports,
      onBridge: 'bridge' in link.name,
      group: spec.group,
    });
  }
  output.flush();
  const closeFailure = await closing;
  if (closeFailure !== undefined)
    output.warn(`closing ${where}: ${closeFailure instanceof Error ? closeFailure.message : String(closeFailure)}`);
  if (result.failure !== undefined) throw result.failure;
}

/** A querier's source: a unicast host address, or 0.0.0.0 (RFC 4541 §2.1.1: a switch's proxy querier). */
function checkQuerierAddress(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '0.0.0.0') return trimmed;
  return checkSourceAddress(trimmed, '--from');
}

/**
 * Without --mld, an IPv6 address anywhere is a query meant for MLD: say so, rather than
 * "not an IPv4 address". (The family is the flag's, never guessed from the group: a
 * general query names no group.)
 */
function checkNoIPv6(group: string | undefined, sources: string | undefined, from: string | undefined): void {
  for (const [flag, text] of [
    ['--group', group],
    ['--source', sources],
    ['--from', from],
  ] as const) {
    if (text !== undefined && textFamily(text) === 'ipv6')
      throw new UsageError(`${flag} ${text.trim()} is IPv6: MLD queries need --mld (without it, query sends IGMP)`);
  }
}

function describeSpec(spec: QuerySpec | MldQuerySpec): string {
  const mld = 'protocol' in spec;
  const kind = mld ? mldQueryKind(spec) : queryKind(spec);
  const what =
    kind === 'general'
      ? 'general query'
      : kind === 'group'
        ? `query for ${spec.group}`
        : `query for ${spec.group} from ${spec.sources.join(', ')}`;
  return `${mld ? 'MLD' : 'IGMP'}v${spec.version} ${what}, max response ${seconds(spec.maxRespMs)}`;
}

function seconds(ms: number): string {
  const s = ms / 1000;
  if (Number.isInteger(s)) return `${s} s`;
  // MLD times count milliseconds: show what goes on the wire, without trailing zeros.
  return `${Number.isInteger(s * 10) ? s.toFixed(1) : String(Number(s.toFixed(3)))} s`;
}

function queryJson(query: SentQuery): Record<string, unknown> {
  return {
    protocol: query.protocol ?? 'igmp',
    version: query.version,
    kind: query.kind,
    group: query.group,
    sources: query.sources,
    src: query.src,
    dst: query.dst,
    maxRespMs: query.maxRespMs,
    sentAt: new Date(query.at).toISOString(),
  };
}

interface HumanReport {
  responders: Responder[];
  queriers: QuerierSeen[];
  ignored: number;
  onBridge: boolean;
  group: string | undefined;
}

function printHuman(output: Output, report: HumanReport): void {
  if (report.responders.length === 0)
    output.line(report.group === undefined ? 'No member answered.' : `No member of ${report.group} answered.`);
  else {
    output.table({
      head: ['Group', 'Host', 'Version', 'Filter', 'Delay', ...(report.onBridge ? ['Port', 'Pod'] : [])],
      rows: report.responders.map((responder) => [
        responder.group,
        responder.host,
        versionLabel(responder.protocol, responder.version),
        describeFilter(responder),
        `${(responder.delayMs / 1000).toFixed(2)} s`,
        ...(report.onBridge ? [responder.port ?? '', responder.pod ?? ''] : []),
      ]),
      alignRight: [4],
    });
  }
  if (report.ignored > 0)
    output.line(`${report.ignored} report(s) for other groups, or heard before the first query, not counted.`);
  if (report.queriers.length > 0) {
    output.table({
      head: ['Querier', 'Version', 'Queries', 'Election', ...(report.onBridge ? ['Port', 'Pod'] : [])],
      rows: report.queriers.map((querier) => [
        querier.self ? `${querier.address} (this query)` : querier.address,
        versionLabel(querier.protocol, querier.version),
        String(querier.queries),
        querier.elected
          ? 'elected'
          : querier.address === '0.0.0.0' || querier.address === '::'
            ? 'no address: not a candidate'
            : '',
        ...(report.onBridge ? [querier.port ?? '', querier.pod ?? ''] : []),
      ]),
      alignRight: [2],
    });
  }
}

/**
 * IGMP versions as they always read (v3); MLD ones with their name (MLDv2), which keeps MLDv1 from passing for IGMPv1.
 */
function versionLabel(protocol: 'igmp' | 'mld', version: number): string {
  return protocol === 'mld' ? `MLDv${version}` : `v${version}`;
}
