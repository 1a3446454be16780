/**
 * Every setting of the daemon, once: its configuration-file key, its flag, how its value
 * is read, its default, its help, whether a reload (SIGHUP) applies it to the running
 * daemon, and where it goes in DaemonConfig. The file's keys, the commander options
 * (cli/options/daemon-options.ts), the defaults, the reload plan and the names in errors
 * all come from here; test/unit/daemon-settings.test.ts holds contrib/daemon.yaml and
 * mcastctl-daemon(1) to it.
 */
import { QUERIER_ELECTION_MODES } from '../../../domain/membership/querier-election.js';
import { DEFAULT_BRIDGE } from '../../../adapters/ovs/locations.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../../domain/pipeline/config.js';
import { LOG_FORMATS, LOG_LEVELS } from '../../../runtime/logger.js';
import { showMs } from '../../../runtime/values.js';
import { DEFAULT_CONTROL_SOCKET } from '../../../transport/control/control-client.js';
import * as values from './setting-values.js';
import {
  durationFrom,
  MAX_QUERY_INTERVAL_MS,
  MIN_QUERY_INTERVAL_MS,
  MIN_RESP_MS,
  V2_MAX_RESP_MS,
  ValueProblem,
} from './setting-values.js';
import { fills, ovs } from './setting-definition.js';
import { MEMBERSHIP_SETTINGS } from './membership-settings.js';
import { TRAFFIC_SETTINGS } from './traffic-settings.js';
import { TUNNEL_SETTINGS } from './tunnel-settings.js';

const DURATION = 'duration';

const DEFAULT_STATE_DIR = '/var/lib/mcastctl';
const DEFAULT_METRICS_ADDRESS = '127.0.0.1:9815';

/** The settings, in the order of contrib/daemon.yaml, the man page and the help. */
export const DAEMON_SETTINGS = [
  ovs({
    key: 'bridge',
    flag: '--bridge',
    argument: '<name>',
    kind: 'string',
    parse: values.parseBridge,
    fallback: DEFAULT_BRIDGE,
    fileDefault: DEFAULT_BRIDGE,
    flagDefault: DEFAULT_BRIDGE,
    read: (config) => config.target.bridge,
  }),
  ovs({
    key: 'ovsRundir',
    flag: '--ovs-rundir',
    argument: '<dir>',
    kind: 'path',
    parse: values.parseRundir,
    fallback: undefined,
    fileDefault: '""',
    flagDefault: '$OVS_RUNDIR, else /var/run/openvswitch',
    read: () => undefined,
  }),
  ovs({
    key: 'db',
    flag: '--db',
    argument: '<endpoint>',
    kind: 'endpoint',
    parse: (value) => values.parseServiceEndpoint(value, 'OVSDB'),
    fallback: undefined,
    fileDefault: '""',
    flagDefault: 'unix:<rundir>/db.sock',
    read: (config) => config.target.db,
  }),
  ovs({
    key: 'openflow',
    flag: '--openflow',
    argument: '<endpoint>',
    kind: 'endpoint',
    parse: (value) => values.parseServiceEndpoint(value, 'OpenFlow'),
    fallback: undefined,
    fileDefault: '""',
    flagDefault: 'unix:<rundir>/<bridge>.mgmt',
    read: (config) => config.target.openflow,
  }),
  ovs({
    key: 'table',
    flag: '--table',
    argument: '<n>',
    kind: 'integer 0 to 254',
    parse: (value) => values.parseInteger(value, 0, 254),
    fallback: DEFAULT_PIPELINE_CONFIG.table,
    fileDefault: String(DEFAULT_PIPELINE_CONFIG.table),
    flagDefault: String(DEFAULT_PIPELINE_CONFIG.table),
    read: (config) => config.pipeline.table,
  }),
  ovs({
    key: 'cookiePrefix',
    flag: '--cookie-prefix',
    argument: '<hex>',
    kind: 'hexadecimal',
    parse: values.parseCookiePrefix,
    fallback: DEFAULT_PIPELINE_CONFIG.cookiePrefix,
    fileDefault: `"${DEFAULT_PIPELINE_CONFIG.cookiePrefix.toString(16)}"`,
    flagDefault: DEFAULT_PIPELINE_CONFIG.cookiePrefix.toString(16),
    read: (config) => config.pipeline.cookiePrefix,
  }),
  ovs({
    key: 'groupIdBase',
    flag: '--group-id-base',
    argument: '<hex>',
    kind: 'hexadecimal',
    parse: values.parseGroupIdBase,
    fallback: DEFAULT_PIPELINE_CONFIG.groupIdBase,
    fileDefault: `"${DEFAULT_PIPELINE_CONFIG.groupIdBase.toString(16)}"`,
    flagDefault: DEFAULT_PIPELINE_CONFIG.groupIdBase.toString(16),
    read: (config) => config.pipeline.groupIdBase,
  }),
  ovs({
    key: 'meterIdBase',
    flag: '--meter-id-base',
    argument: '<n>',
    kind: 'integer',
    parse: values.parseMeterIdBase,
    fallback: DEFAULT_PIPELINE_CONFIG.meterIdBase,
    fileDefault: String(DEFAULT_PIPELINE_CONFIG.meterIdBase),
    flagDefault: String(DEFAULT_PIPELINE_CONFIG.meterIdBase),
    read: (config) => config.pipeline.meterIdBase,
  }),
  fills('gateway', {
    key: 'gateway',
    flag: '--gateway',
    argument: '<iface>',
    kind: 'interface name',
    parse: values.parseOptionalInterfaceName,
    fallback: undefined,
    help: "the node's gateway: an OVS port and the kernel interface of the same name",
    fileDefault: '""',
    flagDefault: 'none',
    runtime: false,
  }),
  fills('multicastInterfaces', {
    key: 'multicastInterfaces',
    flag: '--multicast-interfaces',
    argument: '<list>',
    kind: 'list of interface names',
    parse: values.parseInterfaceList,
    fallback: [],
    help: 'uplinks, comma-separated: kernel interfaces that join groups upstream and route (S,G) traffic',
    fileDefault: '[]',
    flagDefault: 'none',
    runtime: false,
  }),
  ...TUNNEL_SETTINGS,
  fills('queryIntervalMs', {
    key: 'queryInterval',
    flag: '--query-interval',
    argument: '<time>',
    kind: DURATION,
    fallback: 125_000,
    runtime: true,
    parse: durationFrom(MIN_QUERY_INTERVAL_MS, MAX_QUERY_INTERVAL_MS, ' (what an IGMPv3 query can carry)'),
    help: 'time between general queries: 125s, 2m',
  }),
  fills('queryResponseIntervalMs', {
    key: 'queryResponseInterval',
    flag: '--query-response-interval',
    argument: '<time>',
    kind: DURATION,
    parse: values.parseDuration,
    fallback: 10_000,
    runtime: true,
    help: 'Max Response Time of general queries, below the query interval',
  }),
  fills('queryVersions', {
    key: 'queryVersions',
    flag: '--query-versions',
    argument: '<list>',
    kind: 'list of 1, 2, 3',
    parse: values.parseQueryVersions,
    fallback: [3],
    runtime: true,
    help: 'IGMP versions of the general queries, comma-separated: 1, 2, 3',
    fileDefault: '[3]',
    flagDefault: '3',
  }),
  fills('mldQueryVersions', {
    key: 'mldQueryVersions',
    flag: '--mld-query-versions',
    argument: '<list>',
    kind: 'list of 1, 2',
    parse: values.parseMldQueryVersions,
    fallback: [2],
    runtime: true,
    help: 'MLD versions of the general queries, comma-separated: 1, 2; none: no MLD queries',
    fileDefault: '[2]',
    flagDefault: '2',
  }),
  fills('querierElection', {
    key: 'querierElection',
    flag: '--querier-election',
    argument: '<mode>',
    kind: 'auto, always or never',
    parse: (value) => values.parseChoice(value, QUERIER_ELECTION_MODES),
    fallback: 'auto',
    runtime: true,
    help: 'auto: no general queries on a pod port while a querier with a lower address queries there; always; never',
  }),
  fills('robustness', {
    key: 'robustness',
    flag: '--robustness',
    argument: '<n>',
    kind: 'integer 1 to 7',
    parse: (value) => values.parseInteger(value, 1, 7),
    fallback: 2,
    runtime: true,
    help: 'Robustness Variable, 1 to 7',
  }),
  fills('lastMemberQueryIntervalMs', {
    key: 'lastMemberQueryInterval',
    flag: '--last-member-query-interval',
    argument: '<time>',
    kind: DURATION,
    fallback: 1_000,
    runtime: true,
    parse: durationFrom(MIN_RESP_MS, V2_MAX_RESP_MS, ' (the Max Response Time of a group-specific query)'),
    help: 'time between group-specific queries after a leave, at most 25.5s',
  }),
  fills('fastLeave', {
    key: 'fastLeave',
    flag: '--fast-leave',
    kind: 'true or false',
    parse: values.parseBoolean,
    fallback: true,
    runtime: true,
    help: 'a leave removes the port at once (default; right for pod ports, one host each)',
    negation: { flag: '--no-fast-leave', help: 'a leave makes the port be asked first (last-member queries)' },
  }),
  fills('workers', {
    key: 'workers',
    flag: '--workers',
    argument: '<n>',
    kind: 'integer 1 to 64',
    parse: (value) => values.parseInteger(value, 1, 64),
    fallback: 4,
    runtime: false,
    help: 'groups programmed in parallel, 1 to 64',
  }),
  fills('syncBackoffMinMs', {
    key: 'syncBackoffMin',
    flag: '--sync-backoff-min',
    argument: '<time>',
    kind: DURATION,
    parse: values.parseDuration,
    fallback: 5_000,
    runtime: true,
    help: 'first retry delay after a failed sync',
  }),
  fills('syncBackoffMaxMs', {
    key: 'syncBackoffMax',
    flag: '--sync-backoff-max',
    argument: '<time>',
    kind: DURATION,
    parse: values.parseDuration,
    fallback: 300_000,
    runtime: true,
    help: 'longest retry delay after repeated failures',
  }),
  fills('routeIdleTimeoutMs', {
    key: 'routeIdleTimeout',
    flag: '--route-idle-timeout',
    argument: '<time>',
    kind: DURATION,
    fallback: 120_000,
    runtime: true,
    parse: (value) => {
      const ms = values.parseDuration(value);
      if (ms < 1_000) throw new ValueProblem(`${showMs(ms)} is below 1s`);
      return ms;
    },
    help: 'remove an (S,G) route whose packet counter has not moved for this long',
  }),
  ...MEMBERSHIP_SETTINGS,
  ...TRAFFIC_SETTINGS,
  fills('groupPolicy', {
    key: 'groupPolicy',
    flag: '--group-policy',
    argument: '<file>',
    kind: 'path',
    parse: values.parseOptionalPath,
    fallback: undefined,
    runtime: true,
    help: 'which pods may join and send to which groups (YAML, see GROUP POLICY); read again on SIGHUP',
    fileDefault: '""',
    flagDefault: 'none',
  }),
  fills('maxSendDenyRanges', {
    key: 'maxSendDenyRanges',
    flag: '--max-send-deny-ranges',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 256,
    runtime: true,
    help: "the group policy's send drops of one pod, one flow a range; a pod past it may send to link-local groups only (logged)",
  }),
  fills('stateDir', {
    key: 'stateDir',
    flag: '--state-dir',
    argument: '<dir>',
    kind: 'path',
    parse: values.parsePath,
    fallback: DEFAULT_STATE_DIR,
    runtime: false,
    help: 'where the state is saved',
  }),
  fills('controlSocket', {
    key: 'controlSocket',
    flag: '--control-socket',
    argument: '<path>',
    kind: 'path',
    fallback: DEFAULT_CONTROL_SOCKET,
    runtime: false,
    parse: values.parseSocketPath,
    help: 'the control socket of status, groups, snoop --daemon',
  }),
  fills('metricsAddress', {
    key: 'metricsAddress',
    flag: '--metrics-address',
    argument: '<host:port>',
    kind: 'HOST:PORT or off',
    parse: values.parseMetricsAddress,
    fallback: DEFAULT_METRICS_ADDRESS,
    runtime: false,
    help: 'Prometheus metrics at http://HOST:PORT/metrics, or "off"',
    negation: { flag: '--no-metrics', help: 'serve no metrics' },
  }),
  fills('logFormat', {
    key: 'logFormat',
    flag: '--log-format',
    argument: '<format>',
    kind: 'text or json',
    parse: (value) => values.parseChoice(value, LOG_FORMATS),
    fallback: 'text',
    runtime: false,
    help: 'log lines on stderr: text (key=value) or json',
  }),
  fills('logLevel', {
    key: 'logLevel',
    flag: '--log-level',
    argument: '<level>',
    kind: 'debug, info, warn or error',
    parse: (value) => values.parseChoice(value, LOG_LEVELS),
    fallback: 'info',
    runtime: true,
    help: 'lowest level logged: debug, info, warn, error',
  }),
] as const;

type DaemonSetting = (typeof DAEMON_SETTINGS)[number];
export type DaemonConfigKey = DaemonSetting['key'];
/** The value a setting's parser gives. */
export type SettingValue<K extends DaemonConfigKey> = ReturnType<Extract<DaemonSetting, { key: K }>['parse']>;

/** The keys of the configuration file, in the order of contrib/daemon.yaml and the man page. */
export const DAEMON_CONFIG_KEYS: readonly DaemonConfigKey[] = DAEMON_SETTINGS.map((setting) => setting.key);

/** The file keys a reload applies to the running daemon (mcastctl-daemon(1), SIGNALS). */
export const RUNTIME_SETTINGS = DAEMON_SETTINGS.filter((setting) => setting.runtime).map((setting) => setting.key);

const BY_KEY: ReadonlyMap<string, DaemonSetting> = new Map(DAEMON_SETTINGS.map((setting) => [setting.key, setting]));

export function settingOf<K extends DaemonConfigKey>(key: K): Extract<DaemonSetting, { key: K }> {
  return BY_KEY.get(key) as Extract<DaemonSetting, { key: K }>;
}

export function isDaemonConfigKey(key: string): key is DaemonConfigKey {
  return BY_KEY.has(key);
}
