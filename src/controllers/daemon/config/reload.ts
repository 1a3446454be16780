/**
 * What a reload (SIGHUP) may change in a running daemon. The configuration is read again
 * with the same flags; every setting the table (settings.ts) marks runtime takes effect at
 * once, and any other changed setting is reported as waiting for a restart (the running
 * value stays: the bridge, the sockets, the state directory and the pipeline are the
 * daemon's identity, and are fixed for its life). Tunnel mode's settings are of the
 * latter kind; the peers file and the peer key file they name are read again apart
 * (peers-loader.ts; the peers on SIGHUP and when the file changes, the keys on SIGHUP), as
 * the group policy file is.
 */
import type { DaemonConfig, SettingField } from './daemon-config.js';
import { DAEMON_SETTINGS, type DaemonConfigKey } from './settings.js';

export { RUNTIME_SETTINGS } from './settings.js';

/** The file key of a setting a reload applies (see RUNTIME_SETTINGS). */
type RuntimeSetting = DaemonConfigKey;

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
  const config: DaemonConfig = { ...running };
  for (const setting of DAEMON_SETTINGS) {
    const from = setting.read(running);
    const to = setting.read(next);
    if (same(from, to)) continue;
    if (!setting.runtime || setting.field === undefined) {
      needRestart.push(setting.key);
      continue;
    }
    const show = (value: unknown) => (setting.show === undefined ? value : setting.show(value as never));
    applied.push({ key: setting.key, from: show(from), to: show(to) });
    copyField(config, next, setting.field);
  }
  return { config, applied, needRestart };
}

function copyField<F extends SettingField>(into: DaemonConfig, from: DaemonConfig, field: F): void {
  into[field] = from[field];
}
