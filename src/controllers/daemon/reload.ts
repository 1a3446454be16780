/**
 * What a reload (SIGHUP) may change in a running daemon. The configuration is read again
 * with the same flags; every setting below RUNTIME_SETTINGS takes effect at once, and any
 * other changed setting is reported as waiting for a restart (the running value stays:
 * the bridge, the sockets, the state directory and the pipeline are the daemon's
 * identity, and are fixed for its life).
 */
import type { DaemonConfig } from './config.js';

/** The file keys a reload applies to the running daemon (mcastctl-daemon(1), SIGNALS). */
export const RUNTIME_SETTINGS = [
  'queryInterval',
  'queryResponseInterval',
  'queryVersions',
  'robustness',
  'lastMemberQueryInterval',
  'fastLeave',
  'syncBackoffMin',
  'syncBackoffMax',
  'routeIdleTimeout',
  'logLevel',
] as const;
export type RuntimeSetting = (typeof RUNTIME_SETTINGS)[number];

/** Each file key, read off a configuration. */
const SETTING_VALUES: Readonly<Record<string, (config: DaemonConfig) => unknown>> = {
  bridge: (config) => config.target.bridge,
  db: (config) => config.target.db,
  openflow: (config) => config.target.openflow,
  table: (config) => config.pipeline.table,
  cookiePrefix: (config) => config.pipeline.cookiePrefix,
  groupIdBase: (config) => config.pipeline.groupIdBase,
  gateway: (config) => config.gateway,
  multicastInterfaces: (config) => config.multicastInterfaces,
  queryInterval: (config) => config.queryIntervalMs,
  queryResponseInterval: (config) => config.queryResponseIntervalMs,
  queryVersions: (config) => config.queryVersions,
  robustness: (config) => config.robustness,
  lastMemberQueryInterval: (config) => config.lastMemberQueryIntervalMs,
  fastLeave: (config) => config.fastLeave,
  workers: (config) => config.workers,
  syncBackoffMin: (config) => config.syncBackoffMinMs,
  syncBackoffMax: (config) => config.syncBackoffMaxMs,
  routeIdleTimeout: (config) => config.routeIdleTimeoutMs,
  stateDir: (config) => config.stateDir,
  controlSocket: (config) => config.controlSocket,
  metricsAddress: (config) => config.metricsAddress,
  logFormat: (config) => config.logFormat,
  logLevel: (config) => config.logLevel,
};

export interface ReloadPlan {
  /** The configuration to run with: the running one, with every changed runtime setting taken from the file. */
  config: DaemonConfig;
  /** Runtime settings that changed, with their old and new values. */
  applied: Array<{ key: RuntimeSetting; from: unknown; to: unknown }>;
  /** Settings that changed but wait for a restart. */
  needRestart: string[];
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Compares the running configuration with the one just read. */
export function planReload(running: DaemonConfig, next: DaemonConfig): ReloadPlan {
  const applied: ReloadPlan['applied'] = [];
  const needRestart: string[] = [];
  for (const [key, valueOf] of Object.entries(SETTING_VALUES)) {
    const from = valueOf(running);
    const to = valueOf(next);
    if (same(from, to)) continue;
    if ((RUNTIME_SETTINGS as readonly string[]).includes(key)) applied.push({ key: key as RuntimeSetting, from, to });
    else needRestart.push(key);
  }
  const config: DaemonConfig = {
    ...running,
    queryIntervalMs: next.queryIntervalMs,
    queryResponseIntervalMs: next.queryResponseIntervalMs,
    queryVersions: next.queryVersions,
    robustness: next.robustness,
    lastMemberQueryIntervalMs: next.lastMemberQueryIntervalMs,
    fastLeave: next.fastLeave,
    syncBackoffMinMs: next.syncBackoffMinMs,
    syncBackoffMaxMs: next.syncBackoffMaxMs,
    routeIdleTimeoutMs: next.routeIdleTimeoutMs,
    logLevel: next.logLevel,
  };
  return { config, applied, needRestart };
}
