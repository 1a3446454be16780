/**
 * The daemon's configuration: defaults, then a YAML file (--config), then flags, each
 * layer overriding the one before key by key. Everything is checked before the daemon
 * touches anything; every problem is a UsageError (exit 64) that names the key (with the
 * file and line) or the flag, and says what would be right.
 *
 * The settings, their keys, flags, parsers and defaults are the table of settings.ts;
 * the file is read by config-file.ts; the rules between settings are config-checks.ts.
 * See contrib/daemon.yaml (every key with its default) and mcastctl-daemon(1).
 */
import { UsageError } from '../../../errors.js';
import { resolveOvsTarget } from '../../../adapters/ovs/locations.js';
import { DEFAULT_PIPELINE_CONFIG, validatePipelineConfig } from '../../../domain/pipeline/config.js';
import { CONFIG_CHECKS, type CheckContext } from './config-checks.js';
import { readConfigFile, type FileSettings, type GivenValue } from './config-file.js';
import { ValueProblem } from './setting-values.js';
import { resolveTunnel, type NodeAddressFinder, type TunnelDraft } from './tunnel-config.js';
import type { DaemonConfig, SettingField } from './daemon-config.js';
import { DAEMON_SETTINGS, settingOf, type DaemonConfigKey, type SettingValue } from './settings.js';

export { MAX_CONFIG_FILE_BYTES } from './config-file.js';
export { membershipTiming, type DaemonConfig, type TunnelConfig } from './daemon-config.js';
export { DAEMON_CONFIG_KEYS } from './settings.js';

/** What commander's OVS options hand over parsed already (see cli/options/ovs-options.ts). */
type FlagValue<K extends DaemonConfigKey> = K extends 'table' | 'cookiePrefix' | 'groupIdBase' | 'meterIdBase'
  ? number
  : K extends 'fastLeave' | 'igmpMeter' | 'trafficCounters'
    ? boolean
    : string;

/**
 * What commander hands the action (see cli/options/daemon-options.ts): one value per
 * setting, named by its file key, raw strings checked by loadDaemonConfig.
 * fastLeave is true for --fast-leave, false for --no-fast-leave, undefined for neither;
 * metrics is false for --no-metrics (commander sets true when it is not given, which
 * means nothing here).
 */
export type DaemonFlags = { [K in DaemonConfigKey]?: FlagValue<K> } & { config?: string; metrics?: boolean };

/**
 * How the configuration is read: the environment (OVS_RUNDIR), and how this node's tunnel address is found when none is
 * given.
 */
export interface DaemonConfigSources {
  env?: NodeJS.ProcessEnv;
  nodeAddressFinder?: NodeAddressFinder;
}

export async function loadDaemonConfig(
  flags: DaemonFlags,
  env: NodeJS.ProcessEnv = process.env,
  sources: DaemonConfigSources = {},
): Promise<DaemonConfig> {
  const file = flags.config === undefined ? undefined : await readConfigFile(flags.config);
  const { config, tunnel } = buildConfig(flags, file, sources.env ?? env);
  if (tunnel === undefined) return config;
  return { ...config, tunnel: await resolveTunnel(tunnel, config, sources.nodeAddressFinder) };
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

function buildConfig(
  flags: DaemonFlags,
  file: FileSettings | undefined,
  env: NodeJS.ProcessEnv,
): { config: DaemonConfig; tunnel?: TunnelDraft } {
  const given = new Map<DaemonConfigKey, GivenValue>(file?.values ?? []);
  for (const setting of DAEMON_SETTINGS) {
    const value: unknown = flags[setting.key];
    if (value === undefined) continue;
    const flag = value === false && setting.negation !== undefined ? setting.negation.flag : setting.flag;
    given.set(setting.key, { value, origin: { kind: 'flag', flag } });
  }
  if (flags.metrics === false) {
    if (flags.metricsAddress !== undefined)
      throw new UsageError('--no-metrics and --metrics-address contradict each other', { hint: 'give one of them' });
    given.set('metricsAddress', { value: 'off', origin: { kind: 'flag', flag: '--no-metrics' } });
  }

  const where = (key: DaemonConfigKey, item?: number): string => {
    const origin = given.get(key)?.origin ?? { kind: 'default' };
    if (origin.kind === 'flag') return origin.flag;
    if (origin.kind === 'default') return key;
    const line = (item === undefined ? undefined : given.get(key)?.itemLines?.[item]) ?? origin.line;
    return `config ${origin.file} line ${line}: ${key}`;
  };

  try {
    const values = readValues(given);
    const value = <K extends DaemonConfigKey>(key: K): SettingValue<K> => values.get(key) as SettingValue<K>;
    const context: CheckContext = {
      value,
      blame: (...keys) => keys.find((key) => given.has(key)) ?? keys[0]!,
      named: (key, shown) => {
        const origin = given.get(key)?.origin;
        const name = origin?.kind === 'flag' ? origin.flag : key;
        return `${name} (${shown}${origin === undefined ? ', the default' : ''})`;
      },
      fail: (key, reason, item) => {
        throw new Problem(key, reason, item);
      },
      source: (key) => where(key),
      setByUser: (key) => {
        const set = value(key);
        return (
          given.has(key) &&
          set !== undefined &&
          !(Array.isArray(set) && set.length === 0) &&
          !same(set, settingOf(key).fallback)
        );
      },
    };
    for (const rule of CONFIG_CHECKS) rule.check(context);
    const tunnel = tunnelDraftOf(value);
    return { config: assemble(value, env), ...(tunnel === undefined ? {} : { tunnel }) };
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    const origin = given.get(error.key)?.origin;
    const hint =
      origin?.kind === 'file'
        ? `fix the file, or override the key with ${settingOf(error.key).flag} (see mcastctl-daemon(1), CONFIGURATION FILE)`
        : 'see mcastctl-daemon(1), OPTIONS';
    throw new UsageError(`${where(error.key, error.item)}: ${error.message}`, {
      hint,
      ...(origin?.kind === 'file' ? { code: 'bad-file' as const } : {}),
    });
  }
}

/** Every setting's value: the one given, read by its parser, else its default. */
function readValues(given: ReadonlyMap<DaemonConfigKey, GivenValue>): Map<DaemonConfigKey, unknown> {
  const values = new Map<DaemonConfigKey, unknown>();
  for (const setting of DAEMON_SETTINGS) {
    const source = given.get(setting.key);
    if (source === undefined) {
      // A copy: the table's lists are shared by every configuration.
      values.set(
        setting.key,
        Array.isArray(setting.fallback) ? [...(setting.fallback as unknown[])] : setting.fallback,
      );
      continue;
    }
    try {
      values.set(setting.key, setting.parse(source.value));
    } catch (error) {
      if (error instanceof ValueProblem) throw new Problem(setting.key, error.message, error.item);
      throw error;
    }
  }
  return values;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Tunnel mode's settings, when it is on (a tunnel port is given). */
function tunnelDraftOf(value: <K extends DaemonConfigKey>(key: K) => SettingValue<K>): TunnelDraft | undefined {
  const port = value('tunnelPort');
  if (port === undefined) return undefined;
  const optional = <K extends DaemonConfigKey, F extends keyof TunnelDraft>(key: K, field: F) => {
    const set = value(key);
    return set === undefined ? {} : { [field]: set };
  };
  return {
    port,
    listedPeers: value('peers') ?? [],
    clusterCidrs: value('clusterCidrs'),
    refreshIntervalMs: value('peerRefreshInterval'),
    ...optional('peersFile', 'peersFile'),
    ...optional('peerKeyFile', 'peerKeyFile'),
    ...optional('nodeAddress', 'nodeAddress'),
    ...optional('peerTimeout', 'peerTimeoutMs'),
    ...optional('maxGroupsPerPeer', 'maxGroupsPerPeer'),
  };
}

/**
 * The configuration of checked values: the OVS target and pipeline from their settings, every other field from its own.
 */
function assemble(value: <K extends DaemonConfigKey>(key: K) => SettingValue<K>, env: NodeJS.ProcessEnv): DaemonConfig {
  const target = resolveOvsTarget(
    { bridge: value('bridge'), ovsRundir: value('ovsRundir'), db: value('db'), openflow: value('openflow') },
    env,
  );
  const pipeline = validatePipelineConfig({
    ...DEFAULT_PIPELINE_CONFIG,
    table: value('table'),
    cookiePrefix: value('cookiePrefix'),
    groupIdBase: value('groupIdBase'),
    meterIdBase: value('meterIdBase'),
  });
  const fields: Partial<Record<SettingField, unknown>> = {};
  for (const setting of DAEMON_SETTINGS) {
    const fieldValue = value(setting.key);
    // An optional field without a value (no gateway, metrics off) is left out, not set to undefined.
    if (setting.field !== undefined && fieldValue !== undefined) fields[setting.field] = fieldValue;
  }
  return { target, pipeline, ...fields } as DaemonConfig;
}
