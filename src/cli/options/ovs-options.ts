/**
 * The options every command that talks to OVS shares: where OVS is, and where the
 * multicast pipeline lives on the bridge (see mcastctl-install(1), OVS OPTIONS).
 */
import { Option, type Command } from 'commander';
import { DEFAULT_BRIDGE, resolveOvsTarget, type OvsTarget } from '../../adapters/ovs/locations.js';
import { DEFAULT_PIPELINE_CONFIG, validatePipelineConfig, type PipelineConfig } from '../../domain/pipeline/config.js';
import { parseDecimal, parseHex } from './parse.js';

export interface OvsFlags {
  bridge?: string;
  ovsRundir?: string;
  db?: string;
  openflow?: string;
  table?: number;
  cookiePrefix?: number;
  groupIdBase?: number;
  meterIdBase?: number;
}

export function addOvsOptions(command: Command, options: { bridgeHelp?: string } = {}): Command {
  return command
    .option('--bridge <name>', options.bridgeHelp ?? `the OVS bridge (default ${DEFAULT_BRIDGE})`)
    .option('--ovs-rundir <dir>', "where OVS's sockets are (default $OVS_RUNDIR, else /var/run/openvswitch)")
    .option('--db <endpoint>', 'OVSDB: unix:PATH or tcp:HOST:PORT (default unix:<rundir>/db.sock)')
    .option('--openflow <endpoint>', "the bridge's OpenFlow socket (default unix:<rundir>/<bridge>.mgmt)")
    .addOption(
      new Option(
        '--table <n>',
        `OpenFlow table of the multicast flows (default ${DEFAULT_PIPELINE_CONFIG.table})`,
      ).argParser((text) => parseDecimal('--table', text, 254)),
    )
    .addOption(
      new Option(
        '--cookie-prefix <hex>',
        `top 16 bits of our flow cookies, hexadecimal (default ${DEFAULT_PIPELINE_CONFIG.cookiePrefix.toString(16)})`,
      ).argParser((text) => parseHex('--cookie-prefix', text, 0xffff)),
    )
    .addOption(
      new Option(
        '--group-id-base <hex>',
        `first OVS group id of our range, hexadecimal (default ${DEFAULT_PIPELINE_CONFIG.groupIdBase.toString(16)})`,
      ).argParser((text) => parseHex('--group-id-base', text, 0xffffffff)),
    )
    .addOption(
      new Option(
        '--meter-id-base <n>',
        `first OpenFlow meter id of our range (default ${DEFAULT_PIPELINE_CONFIG.meterIdBase})`,
      ).argParser((text) => parseDecimal('--meter-id-base', text, 0xffffffff)),
    );
}

/**
 * Whether any OVS option other than --bridge was given (a command that can also work without OVS refuses them then).
 */
export function usesOvsOptions(flags: OvsFlags): boolean {
  return (Object.keys(OVS_OPTION_KEYS) as Array<keyof typeof OVS_OPTION_KEYS>).some((key) => flags[key] !== undefined);
}

/** Every key of OvsFlags but bridge: the type makes a new option impossible to forget here. */
const OVS_OPTION_KEYS: Record<Exclude<keyof OvsFlags, 'bridge'>, true> = {
  ovsRundir: true,
  db: true,
  openflow: true,
  table: true,
  cookiePrefix: true,
  groupIdBase: true,
  meterIdBase: true,
};

export function ovsSettings(flags: OvsFlags): { target: OvsTarget; pipeline: PipelineConfig } {
  const pipeline = validatePipelineConfig({
    ...DEFAULT_PIPELINE_CONFIG,
    table: flags.table ?? DEFAULT_PIPELINE_CONFIG.table,
    cookiePrefix: flags.cookiePrefix ?? DEFAULT_PIPELINE_CONFIG.cookiePrefix,
    groupIdBase: flags.groupIdBase ?? DEFAULT_PIPELINE_CONFIG.groupIdBase,
    meterIdBase: flags.meterIdBase ?? DEFAULT_PIPELINE_CONFIG.meterIdBase,
  });
  return { target: resolveOvsTarget(flags), pipeline };
}
