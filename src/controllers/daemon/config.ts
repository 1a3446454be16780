/**
 * The daemon's configuration: defaults, then a YAML file (--config), then flags, each
 * layer overriding the one before key by key. Everything is checked before the daemon
 * touches anything; every problem is a UsageError (exit 64) that names the key (with the
 * file and line) or the flag, and says what would be right.
 *
 * File keys are the camelCase names of DaemonConfig, plus the OVS locations and pipeline
 * settings (bridge, ovsRundir, db, openflow, table, cookiePrefix, groupIdBase). See
 * contrib/daemon.yaml (every key with its default) and mcastctl-daemon(1).
 *
 * The file is a regular file of at most MAX_CONFIG_FILE_BYTES (never a FIFO or device),
 * without anchors or aliases, nested at most MAX_YAML_DEPTH levels, of at most
 * MAX_CONFIG_NODES keys, values and list items: all checked by one js-yaml pass
 * (safe-yaml.ts) before the `yaml` package, which gives the lines, reads it.
 */
import { isIPv4 } from 'node:net';
import { resolve as resolvePath } from 'node:path';
import { Option, type Command } from 'commander';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Node } from 'yaml';
import { addOvsOptions, type OvsFlags } from '../../cli/options/ovs-options.js';
import { MAX_DURATION_MS } from '../../cli/options/parse.js';
import { quoteInput, UsageError } from '../../errors.js';
import type { MembershipTiming } from '../../domain/membership/membership-table.js';
import { DEFAULT_BRIDGE, resolveOvsTarget, type OvsTarget } from '../../adapters/ovs/locations.js';
import { DEFAULT_PIPELINE_CONFIG, GROUP_ID_BLOCK, validatePipelineConfig, type PipelineConfig } from '../../domain/pipeline/config.js';
import { FileRefusedError, readRegularFile, showBytes } from '../../runtime/regular-file.js';
import { loadYaml, MAX_YAML_DEPTH, yamlSyntaxError, YamlShapeError } from '../../runtime/safe-yaml.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';
import { parseEndpoint } from '../../wire/endpoint.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../../runtime/logger.js';

export type QueryVersion = 1 | 2 | 3;

export interface DaemonConfig {
  target: OvsTarget;
  pipeline: PipelineConfig;
  /** OVS port name of the node's gateway, also the kernel interface of that name in the daemon's netns. */
  gateway?: string;
  /** Uplinks: kernel interfaces that join groups upstream and route (S,G) traffic. */
  multicastInterfaces: string[];
  /** Query Interval (RFC 3376 §8.2). */
  queryIntervalMs: number;
  /** Max Response Time of general queries (§8.3); below queryIntervalMs. */
  queryResponseIntervalMs: number;
  /** Versions of the general queries sent: distinct, ascending. */
  queryVersions: QueryVersion[];
  /** Robustness Variable (QRV, §8.1), 1 to 7. */
  robustness: number;
  /** Last Member Query Interval (§8.8); the Last Member Query Count is the robustness. */
  lastMemberQueryIntervalMs: number;
  fastLeave: boolean;
  /** Sync workers (OVS and kernel programming in parallel, one group each). */
  workers: number;
  syncBackoffMinMs: number;
  syncBackoffMaxMs: number;
  /** An (S,G) route whose packet counter has not moved for this long is removed. */
  routeIdleTimeoutMs: number;
  stateDir: string;
  controlSocket: string;
  /** HOST:PORT of the Prometheus endpoint; undefined when disabled. */
  metricsAddress?: string;
  logFormat: LogFormat;
  logLevel: LogLevel;
}

/** What commander hands the action (see addDaemonOptions): raw strings, checked by loadDaemonConfig. */
export interface DaemonFlags extends OvsFlags {
  config?: string;
  gateway?: string;
  multicastInterfaces?: string;
  queryInterval?: string;
  queryResponseInterval?: string;
  queryVersions?: string;
  robustness?: string;
  lastMemberQueryInterval?: string;
  /** true: --fast-leave; false: --no-fast-leave; undefined: neither given. */
  fastLeave?: boolean;
  workers?: string;
  syncBackoffMin?: string;
  syncBackoffMax?: string;
  routeIdleTimeout?: string;
  stateDir?: string;
  controlSocket?: string;
  metricsAddress?: string;
  /** false: --no-metrics. Commander sets true when it is not given, which means nothing here. */
  metrics?: boolean;
  logFormat?: string;
  logLevel?: string;
}

export const DEFAULT_STATE_DIR = '/var/lib/mcastctl';
export const DEFAULT_CONTROL_SOCKET = '/run/mcastctl/mcastctl.sock';
export const DEFAULT_METRICS_ADDRESS = '127.0.0.1:9815';

/** Every default but the OVS target (which follows OVS_RUNDIR). */
export const DAEMON_DEFAULTS = Object.freeze({
  multicastInterfaces: [] as readonly string[],
  queryIntervalMs: 125_000,
  queryResponseIntervalMs: 10_000,
  queryVersions: [3] as readonly QueryVersion[],
  robustness: 2,
  lastMemberQueryIntervalMs: 1_000,
  fastLeave: true,
  workers: 4,
  syncBackoffMinMs: 5_000,
  syncBackoffMaxMs: 300_000,
  routeIdleTimeoutMs: 120_000,
  stateDir: DEFAULT_STATE_DIR,
  controlSocket: DEFAULT_CONTROL_SOCKET,
  metricsAddress: DEFAULT_METRICS_ADDRESS,
  logFormat: 'text' as LogFormat,
  logLevel: 'info' as LogLevel,
});

/** The keys of the configuration file, in the order of contrib/daemon.yaml and the man page. */
export const DAEMON_CONFIG_KEYS = [
  'bridge',
  'ovsRundir',
  'db',
  'openflow',
  'table',
  'cookiePrefix',
  'groupIdBase',
  'gateway',
  'multicastInterfaces',
  'queryInterval',
  'queryResponseInterval',
  'queryVersions',
  'robustness',
  'lastMemberQueryInterval',
  'fastLeave',
  'workers',
  'syncBackoffMin',
  'syncBackoffMax',
  'routeIdleTimeout',
  'stateDir',
  'controlSocket',
  'metricsAddress',
  'logFormat',
  'logLevel',
] as const;
export type DaemonConfigKey = (typeof DAEMON_CONFIG_KEYS)[number];

/** The flag of each key (the name errors give when the value came from the command line). */
const FLAG_OF: Readonly<Record<DaemonConfigKey, string>> = {
  bridge: '--bridge',
  ovsRundir: '--ovs-rundir',
  db: '--db',
  openflow: '--openflow',
  table: '--table',
  cookiePrefix: '--cookie-prefix',
  groupIdBase: '--group-id-base',
  gateway: '--gateway',
  multicastInterfaces: '--multicast-interfaces',
  queryInterval: '--query-interval',
  queryResponseInterval: '--query-response-interval',
  queryVersions: '--query-versions',
  robustness: '--robustness',
  lastMemberQueryInterval: '--last-member-query-interval',
  fastLeave: '--fast-leave',
  workers: '--workers',
  syncBackoffMin: '--sync-backoff-min',
  syncBackoffMax: '--sync-backoff-max',
  routeIdleTimeout: '--route-idle-timeout',
  stateDir: '--state-dir',
  controlSocket: '--control-socket',
  metricsAddress: '--metrics-address',
  logFormat: '--log-format',
  logLevel: '--log-level',
};

/** IGMPv2's Max Resp Time is 8 bits of tenths of a second. */
const V2_MAX_RESP_MS = 25_500;
/** IGMPv3's Max Resp Code in its floating-point form holds at most 31744 tenths (RFC 3376 §4.1.1). */
const V3_MAX_RESP_MS = 3_174_400;
/** A Max Resp Code of 0 would turn a v2 query into a v1 one: at least one tenth of a second. */
const MIN_RESP_MS = 100;
/** The v3 QQIC holds at most 31744 s, in whole seconds. */
const MIN_QUERY_INTERVAL_MS = 1_000;
const MAX_QUERY_INTERVAL_MS = 31_744_000;
/** sun_path is 108 bytes, NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;
/** The largest configuration file read: contrib/daemon.yaml, every key with comments, is under 4 KiB. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/**
 * The most keys, values and list items in the file: there are 24 keys, and the kernel has
 * 32 VIFs. (The `yaml` package takes some 4 s for 1 MiB of small nodes, and checks a
 * mapping's keys for duplicates in time quadratic in their number: minutes for 100,000.)
 */
export const MAX_CONFIG_NODES = 10_000;

export function membershipTiming(config: DaemonConfig): MembershipTiming {
  return {
    groupMembershipIntervalMs: config.robustness * config.queryIntervalMs + config.queryResponseIntervalMs,
    // The Last Member Query Count defaults to the Robustness Variable (RFC 3376 §8.9).
    lastMemberQueryTimeMs: config.robustness * config.lastMemberQueryIntervalMs,
  };
}

export function addDaemonOptions(command: Command): Command {
  command
    .option('--config <file>', 'YAML configuration file (see contrib/daemon.yaml); flags override it')
    .option('--gateway <iface>', "the node's gateway: an OVS port and the kernel interface of the same name (default: none)")
    .option('--multicast-interfaces <list>', 'uplinks, comma-separated: kernel interfaces that join groups upstream and route (S,G) traffic (default: none)')
    .option('--query-interval <time>', 'time between general queries: 125s, 2m (default 125s)')
    .option('--query-response-interval <time>', 'Max Response Time of general queries, below the query interval (default 10s)')
    .option('--query-versions <list>', 'IGMP versions of the general queries, comma-separated: 1, 2, 3 (default 3)')
    .option('--robustness <n>', 'Robustness Variable, 1 to 7 (default 2)')
    .option('--last-member-query-interval <time>', 'time between group-specific queries after a leave, at most 25.5s (default 1s)')
    // --fast-leave first: then commander gives fastLeave no default, and a file's value stands unless a flag is given.
    .option('--fast-leave', 'a leave removes the port at once (default; right for pod ports, one host each)')
    .option('--no-fast-leave', 'a leave makes the port be asked first (last-member queries)')
    .option('--workers <n>', 'groups programmed in parallel, 1 to 64 (default 4)')
    .option('--sync-backoff-min <time>', 'first retry delay after a failed sync (default 5s)')
    .option('--sync-backoff-max <time>', 'longest retry delay after repeated failures (default 300s)')
    .option('--route-idle-timeout <time>', 'remove an (S,G) route whose packet counter has not moved for this long (default 120s)')
    .option('--state-dir <dir>', `where the state is saved (default ${DEFAULT_STATE_DIR})`)
    .option('--control-socket <path>', `the control socket of status, groups, snoop --daemon (default ${DEFAULT_CONTROL_SOCKET})`)
    .option('--metrics-address <host:port>', `Prometheus metrics at http://HOST:PORT/metrics, or "off" (default ${DEFAULT_METRICS_ADDRESS})`)
    .option('--no-metrics', 'serve no metrics')
    .addOption(new Option('--log-format <format>', 'log lines on stderr: text (key=value) or json (default text)'))
    .addOption(new Option('--log-level <level>', 'lowest level logged: debug, info, warn, error (default info)'));
  return addOvsOptions(command);
}

/** Where a value came from: its default, a line of the file, or a flag. */
type Origin = { kind: 'default' } | { kind: 'file'; file: string; line: number } | { kind: 'flag'; flag: string };

interface Setting {
  value: unknown;
  origin: Origin;
  /** Lines of a YAML list's items, for errors about one of them. */
  itemLines?: number[];
}

interface FileSettings {
  file: string;
  values: Map<DaemonConfigKey, Setting>;
}

export async function loadDaemonConfig(flags: DaemonFlags, env: NodeJS.ProcessEnv = process.env): Promise<DaemonConfig> {
  const file = flags.config === undefined ? undefined : await readConfigFile(flags.config);
  return buildConfig(flags, file, env);
}

/** Reads and parses the YAML file into settings with lines; values are checked later. */
async function readConfigFile(path: string): Promise<FileSettings> {
  let text: string;
  try {
    text = await readRegularFile(path, { what: 'config', maxBytes: MAX_CONFIG_FILE_BYTES });
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    const hint =
      error.reason === 'too-large'
        ? `a configuration file holds at most ${showBytes(MAX_CONFIG_FILE_BYTES)}: is ${path} the right file? (an example with every key: contrib/daemon.yaml)`
        : 'give --config the path of a readable YAML file (an example with every key: contrib/daemon.yaml)';
    throw new FileRefusedError(error.reason, error.path, error.message, hint);
  }
  return parseConfigText(text, path);
}

/** The settings of a configuration file's text. */
function parseConfigText(text: string, file: string): FileSettings {
  // Loaded only when a file is given: `yaml` takes about 40 ms to load, and every command loads this module.
  const { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument, visit } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  const bad = (line: number, message: string, hint = 'see contrib/daemon.yaml and mcastctl-daemon(1), CONFIGURATION FILE') =>
    new UsageError(`config ${file} line ${line}: ${message}`, { code: 'bad-file', hint });
  checkConfigShape(text, bad);
  const lineCounter = new LineCounter();
  let document: Yaml.Document.Parsed;
  try {
    document = parseDocument(text, { lineCounter, uniqueKeys: true });
  } catch (error) {
    // The shape was checked by js-yaml; should `yaml` still read deeper nesting into it, its stack is not the daemon's end.
    if (error instanceof RangeError) throw bad(1, `nested too deeply to be read (at most ${MAX_YAML_DEPTH} levels)`);
    throw error;
  }
  const syntax = document.errors[0];
  if (syntax !== undefined) {
    const line = syntax.linePos?.[0].line ?? lineCounter.linePos(syntax.pos[0]).line;
    const first = (syntax.message.split('\n')[0] ?? syntax.message).replace(/ at line \d+, column \d+:?$/, '');
    // Some messages quote the text at fault: cut short.
    const reason = first.length <= 160 ? first : `${first.slice(0, 160)}…`;
    throw bad(line, `not valid YAML: ${reason}`);
  }
  const lineOf = (node: unknown, fallback: number): number => (isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line : fallback);
  // js-yaml refused anchors already; where the two parsers could disagree, no alias reaches toJS().
  const aliases: Yaml.Alias[] = [];
  visit(document, {
    Alias: (_key, node) => {
      aliases.push(node);
      return visit.BREAK;
    },
  });
  const alias = aliases[0];
  if (alias !== undefined) {
    throw bad(lineOf(alias, 1), `an alias (${quoteInput(`*${alias.source}`)}): anchors and aliases (&name, *name) are not allowed here`, 'write each value out in full');
  }
  const values = new Map<DaemonConfigKey, Setting>();
  const contents = document.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return { file, values };
  if (!isMap(contents)) throw bad(lineOf(contents, 1), 'the file must be a mapping of keys such as "queryInterval: 125s"');
  for (const pair of contents.items) {
    const keyLine = lineOf(pair.key, 1);
    const key = isScalar(pair.key) ? pair.key.value : pair.key;
    if (typeof key !== 'string' || !(DAEMON_CONFIG_KEYS as readonly string[]).includes(key)) {
      const name = typeof key === 'string' ? quoteInput(key) : quoteInput(String(key));
      throw bad(keyLine, `unknown key ${name} (known: ${DAEMON_CONFIG_KEYS.join(', ')})`);
    }
    const valueNode = pair.value as Node | null;
    const value: unknown = isNode(valueNode) ? valueNode.toJS(document) : valueNode;
    // No value (`key:` or `key: null`): as if the key were not there.
    if (value === null || value === undefined) continue;
    const setting: Setting = { value, origin: { kind: 'file', file, line: keyLine } };
    if (isSeq(valueNode)) setting.itemLines = valueNode.items.map((item) => lineOf(item, keyLine));
    values.set(key as DaemonConfigKey, setting);
  }
  return { file, values };
}

/**
 * Refuses, through `bad(line, message, hint)`, a text the `yaml` package should not be
 * given (see MAX_CONFIG_NODES and safe-yaml.ts), and a syntax error js-yaml finds.
 */
function checkConfigShape(text: string, bad: (line: number, message: string, hint?: string) => UsageError): void {
  try {
    loadYaml(text, { maxNodes: MAX_CONFIG_NODES });
  } catch (error) {
    if (error instanceof YamlShapeError) {
      const shape = `at most ${MAX_YAML_DEPTH} levels, ${MAX_CONFIG_NODES} nodes`;
      const hint = error.reason === 'anchor' ? 'write each value out in full' : `the configuration is a mapping of keys to values and short lists (${shape}); see contrib/daemon.yaml`;
      throw bad(error.line, error.message, hint);
    }
    const syntax = yamlSyntaxError(error);
    if (syntax === undefined) throw error;
    throw bad(syntax.line ?? 1, `not valid YAML: ${syntax.reason}`);
  }
}

/** A problem with one key's value, before it is placed. */
class Problem extends Error {
  constructor(
    readonly key: DaemonConfigKey,
    message: string,
    /** Index of the list item at fault, for its line. */
    readonly item?: number,
  ) {
    super(message);
  }
}

function buildConfig(flags: DaemonFlags, file: FileSettings | undefined, env: NodeJS.ProcessEnv): DaemonConfig {
  const settings = new Map<DaemonConfigKey, Setting>(file?.values ?? []);
  const flagValues: Partial<Record<DaemonConfigKey, unknown>> = {
    bridge: flags.bridge,
    ovsRundir: flags.ovsRundir,
    db: flags.db,
    openflow: flags.openflow,
    table: flags.table,
    cookiePrefix: flags.cookiePrefix,
    groupIdBase: flags.groupIdBase,
    gateway: flags.gateway,
    multicastInterfaces: flags.multicastInterfaces,
    queryInterval: flags.queryInterval,
    queryResponseInterval: flags.queryResponseInterval,
    queryVersions: flags.queryVersions,
    robustness: flags.robustness,
    lastMemberQueryInterval: flags.lastMemberQueryInterval,
    fastLeave: flags.fastLeave,
    workers: flags.workers,
    syncBackoffMin: flags.syncBackoffMin,
    syncBackoffMax: flags.syncBackoffMax,
    routeIdleTimeout: flags.routeIdleTimeout,
    stateDir: flags.stateDir,
    controlSocket: flags.controlSocket,
    metricsAddress: flags.metricsAddress,
    logFormat: flags.logFormat,
    logLevel: flags.logLevel,
  };
  for (const key of DAEMON_CONFIG_KEYS) {
    const value = flagValues[key];
    if (value === undefined) continue;
    const flag = key === 'fastLeave' && value === false ? '--no-fast-leave' : FLAG_OF[key];
    settings.set(key, { value, origin: { kind: 'flag', flag } });
  }
  if (flags.metrics === false) {
    if (flags.metricsAddress !== undefined) throw new UsageError('--no-metrics and --metrics-address contradict each other', { hint: 'give one of them' });
    settings.set('metricsAddress', { value: 'off', origin: { kind: 'flag', flag: '--no-metrics' } });
  }

  const where = (key: DaemonConfigKey, item?: number): string => {
    const origin = settings.get(key)?.origin ?? { kind: 'default' };
    if (origin.kind === 'flag') return origin.flag;
    if (origin.kind === 'default') return key;
    const line = (item === undefined ? undefined : settings.get(key)?.itemLines?.[item]) ?? origin.line;
    return `config ${origin.file} line ${line}: ${key}`;
  };
  const fail = (key: DaemonConfigKey, reason: string, item?: number): never => {
    throw new Problem(key, reason, item);
  };
  /** Of keys that clash, the one to blame: the first the user set. */
  const blame = (...keys: DaemonConfigKey[]): DaemonConfigKey => keys.find((key) => settings.has(key)) ?? keys[0]!;
  /** How a clashing value is named in a message: `queryInterval (125s)`. */
  const named = (key: DaemonConfigKey, shown: string): string => {
    const origin = settings.get(key)?.origin;
    const name = origin?.kind === 'flag' ? origin.flag : key;
    return `${name} (${shown}${origin === undefined ? ', the default' : ''})`;
  };

  try {
    const get = <T>(key: DaemonConfigKey, parse: (value: unknown, key: DaemonConfigKey) => T, fallback: T): T => {
      const setting = settings.get(key);
      return setting === undefined ? fallback : parse(setting.value, key);
    };

    // Where OVS is and the pipeline.
    const bridge = get('bridge', parseBridge, undefined);
    const ovsRundir = get('ovsRundir', parseRundir, undefined);
    const db = get('db', (value, key) => parseServiceEndpoint(value, key, 'OVSDB'), undefined);
    const openflow = get('openflow', (value, key) => parseServiceEndpoint(value, key, 'OpenFlow'), undefined);
    const target = resolveOvsTarget({ bridge: bridge ?? DEFAULT_BRIDGE, ovsRundir, db, openflow }, env);
    const pipeline = validatePipelineConfig({
      ...DEFAULT_PIPELINE_CONFIG,
      table: get('table', (value, key) => parseInteger(value, key, 0, 254), DEFAULT_PIPELINE_CONFIG.table),
      cookiePrefix: get('cookiePrefix', parseCookiePrefix, DEFAULT_PIPELINE_CONFIG.cookiePrefix),
      groupIdBase: get('groupIdBase', parseGroupIdBase, DEFAULT_PIPELINE_CONFIG.groupIdBase),
    });

    // Interfaces.
    const gateway = get('gateway', (value, key) => (value === '' ? undefined : parseInterfaceName(value, key)), undefined);
    const multicastInterfaces = get('multicastInterfaces', parseInterfaceList, [...DAEMON_DEFAULTS.multicastInterfaces]);
    if (gateway !== undefined) {
      const index = multicastInterfaces.indexOf(gateway);
      if (index >= 0) {
        const key = blame('multicastInterfaces', 'gateway');
        fail(key, `${gateway} is both the gateway and a multicast interface: an interface is one or the other`, key === 'multicastInterfaces' ? index : undefined);
      }
    }

    // IGMP.
    const queryIntervalMs = get('queryInterval', parseDuration, DAEMON_DEFAULTS.queryIntervalMs);
    if (queryIntervalMs < MIN_QUERY_INTERVAL_MS || queryIntervalMs > MAX_QUERY_INTERVAL_MS) {
      fail('queryInterval', `${showMs(queryIntervalMs)} is not from 1s to 31744s (what an IGMPv3 query can carry)`);
    }
    const queryResponseIntervalMs = get('queryResponseInterval', parseDuration, DAEMON_DEFAULTS.queryResponseIntervalMs);
    const queryVersions = get('queryVersions', parseQueryVersions, [...DAEMON_DEFAULTS.queryVersions]);
    if (queryResponseIntervalMs >= queryIntervalMs) {
      const key = blame('queryResponseInterval', 'queryInterval');
      const other = key === 'queryInterval' ? 'queryResponseInterval' : 'queryInterval';
      fail(
        key,
        key === 'queryInterval'
          ? `${showMs(queryIntervalMs)} must be longer than ${named(other, showMs(queryResponseIntervalMs))}`
          : `${showMs(queryResponseIntervalMs)} must be shorter than ${named(other, showMs(queryIntervalMs))}`,
      );
    }
    if (queryVersions.some((version) => version !== 1) && queryResponseIntervalMs < MIN_RESP_MS) {
      fail('queryResponseInterval', `${showMs(queryResponseIntervalMs)} is below 100ms, the least an IGMPv2 or v3 query can carry (0 would make it an IGMPv1 query)`);
    }
    const tightest = queryVersions.includes(2) ? { version: 2, max: V2_MAX_RESP_MS } : queryVersions.includes(3) ? { version: 3, max: V3_MAX_RESP_MS } : undefined;
    if (tightest !== undefined && queryResponseIntervalMs > tightest.max) {
      const key = blame('queryResponseInterval', 'queryVersions');
      fail(
        key,
        key === 'queryResponseInterval'
          ? `${showMs(queryResponseIntervalMs)} does not fit an IGMPv${tightest.version} query (at most ${showMs(tightest.max)})`
          : `an IGMPv${tightest.version} query cannot carry ${named('queryResponseInterval', showMs(queryResponseIntervalMs))}: at most ${showMs(tightest.max)}`,
      );
    }
    const robustness = get('robustness', (value, key) => parseInteger(value, key, 1, 7), DAEMON_DEFAULTS.robustness);
    const lastMemberQueryIntervalMs = get('lastMemberQueryInterval', parseDuration, DAEMON_DEFAULTS.lastMemberQueryIntervalMs);
    if (lastMemberQueryIntervalMs < MIN_RESP_MS || lastMemberQueryIntervalMs > V2_MAX_RESP_MS) {
      fail('lastMemberQueryInterval', `${showMs(lastMemberQueryIntervalMs)} is not from 100ms to 25.5s (the Max Response Time of a group-specific query)`);
    }
    const fastLeave = get('fastLeave', parseBoolean, DAEMON_DEFAULTS.fastLeave);

    // Sync.
    const workers = get('workers', (value, key) => parseInteger(value, key, 1, 64), DAEMON_DEFAULTS.workers);
    const syncBackoffMinMs = get('syncBackoffMin', parseDuration, DAEMON_DEFAULTS.syncBackoffMinMs);
    const syncBackoffMaxMs = get('syncBackoffMax', parseDuration, DAEMON_DEFAULTS.syncBackoffMaxMs);
    if (syncBackoffMaxMs < syncBackoffMinMs) {
      const key = blame('syncBackoffMax', 'syncBackoffMin');
      fail(
        key,
        key === 'syncBackoffMax'
          ? `${showMs(syncBackoffMaxMs)} is shorter than ${named('syncBackoffMin', showMs(syncBackoffMinMs))}`
          : `${showMs(syncBackoffMinMs)} is longer than ${named('syncBackoffMax', showMs(syncBackoffMaxMs))}`,
      );
    }
    const routeIdleTimeoutMs = get('routeIdleTimeout', parseDuration, DAEMON_DEFAULTS.routeIdleTimeoutMs);
    if (routeIdleTimeoutMs < 1_000) fail('routeIdleTimeout', `${showMs(routeIdleTimeoutMs)} is below 1s`);

    // Files, sockets, logs.
    const stateDir = get('stateDir', parsePath, DAEMON_DEFAULTS.stateDir);
    const controlSocket = get('controlSocket', parsePath, DAEMON_DEFAULTS.controlSocket);
    if (Buffer.byteLength(controlSocket) > MAX_SOCKET_PATH_BYTES) {
      fail('controlSocket', `${quoteInput(controlSocket)} is longer than a socket path can be (${MAX_SOCKET_PATH_BYTES} bytes)`);
    }
    const metricsAddress = get('metricsAddress', parseMetricsAddress, DAEMON_DEFAULTS.metricsAddress);
    const logFormat = get('logFormat', (value, key) => parseChoice(value, key, LOG_FORMATS), DAEMON_DEFAULTS.logFormat);
    const logLevel = get('logLevel', (value, key) => parseChoice(value, key, LOG_LEVELS), DAEMON_DEFAULTS.logLevel);

    return {
      target,
      pipeline,
      ...(gateway === undefined ? {} : { gateway }),
      multicastInterfaces,
      queryIntervalMs,
      queryResponseIntervalMs,
      queryVersions,
      robustness,
      lastMemberQueryIntervalMs,
      fastLeave,
      workers,
      syncBackoffMinMs,
      syncBackoffMaxMs,
      routeIdleTimeoutMs,
      stateDir,
      controlSocket,
      ...(metricsAddress === undefined ? {} : { metricsAddress }),
      logFormat,
      logLevel,
    };
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    const origin = settings.get(error.key)?.origin;
    const hint =
      origin?.kind === 'file'
        ? `fix the file, or override the key with ${FLAG_OF[error.key]} (see mcastctl-daemon(1), CONFIGURATION FILE)`
        : 'see mcastctl-daemon(1), OPTIONS';
    throw new UsageError(`${where(error.key, error.item)}: ${error.message}`, { hint, ...(origin?.kind === 'file' ? { code: 'bad-file' as const } : {}) });
  }
}

// Parsers of one value: from the file (any YAML type) or a flag (a string, or what addOvsOptions parsed).

function describe(value: unknown): string {
  return typeof value === 'string' ? quoteInput(value) : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'a mapping' : String(value);
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `125s`, `2m`, `500ms`, `1h`, or a bare number of seconds (YAML number or string). */
function parseDuration(value: unknown, key: DaemonConfigKey): number {
  let ms = NaN;
  if (typeof value === 'number') ms = value * 1000;
  else if (typeof value === 'string') {
    const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(value.trim());
    if (match !== null) ms = Number(match[1]) * DURATION_UNITS_MS[match[2] ?? 's']!;
  }
  if (!(ms > 0) || !Number.isFinite(ms)) throw new Problem(key, `${describe(value)} is not a duration such as 125s, 500ms or 2m (a bare number is seconds)`);
  if (ms > MAX_DURATION_MS) throw new Problem(key, `${describe(value)} is too long: at most 24 days (596h)`);
  return Math.max(1, Math.round(ms));
}

/** A duration as the man page and messages write it: 125s, 1.5s, 500ms. */
function showMs(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
}

function parseInteger(value: unknown, key: DaemonConfigKey, min: number, max: number): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' && /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max) throw new Problem(key, `${describe(value)} is not a whole number from ${min} to ${max}`);
  return number;
}

function parseBoolean(value: unknown, key: DaemonConfigKey): boolean {
  if (typeof value === 'boolean') return value;
  throw new Problem(key, `${describe(value)} is not true or false`);
}

function parseChoice<T extends string>(value: unknown, key: DaemonConfigKey, choices: readonly T[]): T {
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
  throw new Problem(key, `${describe(value)} is not one of ${choices.join(', ')}`);
}

/** A cookie prefix or group id base: a hexadecimal string ("4d43", "0x4d43") or a number (YAML 0x4d43). */
function parseHexValue(value: unknown, key: DaemonConfigKey, what: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string') {
    const digits = value.trim().replace(/^0x/i, '');
    if (/^[0-9a-f]{1,8}$/i.test(digits)) return parseInt(digits, 16);
  }
  throw new Problem(key, `${describe(value)} is not ${what} in hexadecimal, such as "4d43" (quoted) or 0x4d43`);
}

function parseCookiePrefix(value: unknown, key: DaemonConfigKey): number {
  const prefix = parseHexValue(value, key, 'a 16-bit cookie prefix');
  if (prefix < 1 || prefix > 0xffff) throw new Problem(key, `0x${prefix.toString(16)} is not a 16-bit value from 0x0001 to 0xffff`);
  return prefix;
}

function parseGroupIdBase(value: unknown, key: DaemonConfigKey): number {
  const base = parseHexValue(value, key, 'a group id');
  if (base % GROUP_ID_BLOCK !== 0 || base < GROUP_ID_BLOCK || base > 0xe0000000) {
    // `groupIdBase: 20000000` is decimal to YAML: say so when the digits would have been right in hexadecimal.
    const quoteHint = typeof value === 'number' && parseInt(String(value), 16) % GROUP_ID_BLOCK === 0 ? ` (a bare YAML number is decimal: write "${value}" in quotes, or 0x${value})` : '';
    throw new Problem(key, `0x${base.toString(16)} is not a multiple of 0x10000000 from 0x10000000 to 0xe0000000${quoteHint}`);
  }
  return base;
}

function parseBridge(value: unknown, key: DaemonConfigKey): string {
  if (typeof value === 'string' && /^[A-Za-z0-9_.:-]{1,15}$/.test(value)) return value;
  throw new Problem(key, `${describe(value)} is not a bridge name (1 to 15 letters, digits, '_', '.', ':', '-')`);
}

/** An empty string means "not set" (OVS_RUNDIR, else /var/run/openvswitch). */
function parseRundir(value: unknown, key: DaemonConfigKey): string | undefined {
  if (value === '') return undefined;
  if (typeof value === 'string' && value.startsWith('/') && !value.includes('\0')) return value;
  throw new Problem(key, `${describe(value)} is not an absolute directory path`);
}

/** An empty string means "not set" (derived from ovsRundir and bridge). */
function parseServiceEndpoint(value: unknown, key: DaemonConfigKey, service: string): string | undefined {
  if (value === '') return undefined;
  if (typeof value !== 'string') throw new Problem(key, `${describe(value)} is not an address such as unix:/var/run/openvswitch/db.sock or tcp:127.0.0.1:6640`);
  try {
    return parseEndpoint(value, service).text;
  } catch (error) {
    if (error instanceof UsageError) throw new Problem(key, `${quoteInput(value)} is not an ${service} address: ${error.message.replace(/^bad .*? address ".*?": /, '')}`);
    throw error;
  }
}

/** An interface name as Linux takes it: 1 to 15 bytes, no '/', ':' or whitespace. */
function checkInterfaceName(name: string): boolean {
  return Buffer.byteLength(name) <= 15 && /^[^/:\s]+$/.test(name) && name !== '.' && name !== '..';
}

function parseInterfaceName(value: unknown, key: DaemonConfigKey, item?: number): string {
  if (typeof value === 'string' && checkInterfaceName(value)) return value;
  throw new Problem(key, `${describe(value)} is not an interface name (1 to 15 characters, no '/', ':' or whitespace)`, item);
}

/** A YAML list, or a comma-separated string (a flag, or the file); empty means none. */
function listItems(value: unknown, key: DaemonConfigKey): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'string') return value.trim() === '' ? [] : value.split(',').map((item) => item.trim());
  if (typeof value === 'number') return [value];
  throw new Problem(key, `${describe(value)} is not a list`);
}

function parseInterfaceList(value: unknown, key: DaemonConfigKey): string[] {
  const names = listItems(value, key).map((item, index) => parseInterfaceName(item, key, Array.isArray(value) ? index : undefined));
  names.forEach((name, index) => {
    if (names.indexOf(name) !== index) throw new Problem(key, `${name} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return names;
}

function parseQueryVersions(value: unknown, key: DaemonConfigKey): QueryVersion[] {
  const items = listItems(value, key);
  if (items.length === 0) throw new Problem(key, 'needs at least one IGMP version (1, 2 or 3)');
  const versions = items.map((item, index): QueryVersion => {
    const version = typeof item === 'number' ? item : typeof item === 'string' && /^[123]$/.test(item) ? Number(item) : NaN;
    if (version !== 1 && version !== 2 && version !== 3) throw new Problem(key, `${describe(item)} is not an IGMP version (1, 2 or 3)`, Array.isArray(value) ? index : undefined);
    return version;
  });
  versions.forEach((version, index) => {
    if (versions.indexOf(version) !== index) throw new Problem(key, `version ${version} is listed twice`, Array.isArray(value) ? index : undefined);
  });
  return versions.sort((a, b) => a - b);
}

/** A path; a relative one is taken from the current directory. */
function parsePath(value: unknown, key: DaemonConfigKey): string {
  if (typeof value !== 'string' || value === '' || value.includes('\0')) throw new Problem(key, `${describe(value)} is not a path`);
  return resolvePath(value);
}

/** HOST:PORT (an IPv4 address or localhost, a port 0 to 65535), or "off" / false: no metrics. */
function parseMetricsAddress(value: unknown, key: DaemonConfigKey): string | undefined {
  if (value === 'off' || value === false) return undefined;
  const match = typeof value === 'string' ? /^([^:]+):([0-9]{1,5})$/.exec(value.trim()) : null;
  if (match === null) throw new Problem(key, `${describe(value)} is not HOST:PORT, such as 127.0.0.1:9815, or "off"`);
  const host = match[1]!;
  const port = Number(match[2]);
  if (!isIPv4(host) && host !== 'localhost') throw new Problem(key, `${quoteInput(host)} is not an IPv4 address or localhost`);
  if (port > 65535) throw new Problem(key, `port ${port} is not 0 to 65535`);
  // Nothing could reach a listener there, though binding may succeed: refused rather than logged as served.
  const address = host === 'localhost' ? undefined : parseIPv4(host);
  const servable = 'metrics are served on a local address (127.0.0.1), a unicast one, or 0.0.0.0';
  if (address !== undefined && address >>> 28 === 0xe) throw new Problem(key, `${host} is a multicast address: ${servable}`);
  if (address === 0xffffffff) throw new Problem(key, `${host} is the broadcast address: ${servable}`);
  return `${host}:${port}`;
}
