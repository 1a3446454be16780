/**
 * The shape of one row of the daemon's settings table (settings.ts): what a setting is
 * called in the file and on the command line, how its value is read, its default and
 * whether a reload applies it; and the two ways a row is completed.
 */
import { showMs } from '../../../runtime/values.js';
import type { DaemonConfig, SettingField } from './daemon-config.js';

/** What each row of the table says; fills() and ovs() complete it. */
export interface SettingInput<K extends string, T> {
  /** The configuration file's key, also commander's name of the flag's value. */
  key: K;
  flag: `--${string}`;
  /** The flag's argument, such as `<time>`; none for a switch. */
  argument?: string;
  /** A `--no-` flag that sets the opposite (fastLeave) or turns the setting off (metrics). */
  negation?: { flag: `--no-${string}`; help: string };
  /**
   * The help line, without the default. None for the OVS options, whose help is addOvsOptions', shared by every OVS
   * command.
   */
  help?: string;
  /** What the file takes, as mcastctl-daemon(1), CONFIGURATION FILE, names it. */
  kind: string;
  /** Reads a value of the file or of a flag; throws a ValueProblem. */
  parse(value: unknown): T;
  /** The value when neither the file nor a flag gives one; undefined: none. */
  fallback: T;
  /** The default as contrib/daemon.yaml writes it. */
  fileDefault?: string;
  /** The default as the help and the man page's OPTIONS write it; none for a switch. */
  flagDefault?: string;
  /** Whether a reload applies a changed value to the running daemon (mcastctl-daemon(1), SIGNALS). */
  runtime: boolean;
  /** The value as a reload's log shows it, when not as it is (CIDR blocks as text). */
  show?(value: T): unknown;
}

export interface SettingDefinition<K extends string = string, T = unknown> extends SettingInput<K, T> {
  fileDefault: string;
  /** The DaemonConfig field the value fills, when it fills one alone. */
  field?: SettingField;
  /** The setting's value in a configuration, for comparing two of them. */
  read(config: DaemonConfig): unknown;
}

/** A setting that fills one DaemonConfig field: the types make its parser and default fit that field. */
export function fills<K extends string, F extends SettingField>(
  field: F,
  input: SettingInput<K, DaemonConfig[F]>,
): SettingDefinition<K, DaemonConfig[F]> & { field: F } {
  const shown =
    typeof input.fallback === 'number' && field.endsWith('Ms') ? showMs(input.fallback) : String(input.fallback);
  const flagDefault = input.argument === undefined ? undefined : shown;
  return {
    fileDefault: shown,
    ...(flagDefault === undefined ? {} : { flagDefault }),
    ...input,
    field,
    read: (config) => config[field],
  };
}

/** One of the OVS settings, assembled into DaemonConfig's target or pipeline by config.ts; a restart applies them. */
export function ovs<K extends string, T>(
  input: Omit<SettingInput<K, T>, 'runtime'> & {
    fileDefault: string;
    flagDefault: string;
    read(config: DaemonConfig): unknown;
  },
): SettingDefinition<K, T> {
  return { ...input, runtime: false };
}

/**
 * A setting assembled with others into one DaemonConfig field (the tunnel's, by tunnel-config.ts); a restart applies
 * it.
 */
export function assembled<K extends string, T>(
  input: Omit<SettingInput<K, T>, 'runtime'> & {
    help: string;
    fileDefault: string;
    flagDefault: string;
    read(config: DaemonConfig): unknown;
  },
): SettingDefinition<K, T> {
  return { ...input, runtime: false };
}
