/** `mcastctl uninstall`: stop forwarding multicast groups on an OVS bridge. */
import type { Command } from 'commander';
import { uninstallGroups } from '../../controllers/static/static-groups.js';
import { uninstallRoute } from '../../controllers/static/static-routes.js';
import { UsageError } from '../../errors.js';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import {
  checkGroupAddress,
  checkSourceAddress,
  checkSourceGroupFamily,
} from '../../domain/declared-state/group-address.js';
import type { ForwardingTarget } from '../../domain/pipeline/forwarding-key.js';
import { printGroupResults } from '../render/group-results.js';
import { printRouteResult } from '../render/route-results.js';
import { Output } from '../render/output.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';

interface UninstallFlags extends OvsFlags {
  all?: boolean;
  json?: boolean;
  source?: string;
  ovs?: boolean;
}

export function registerUninstall(program: Command): void {
  const command = program
    .command('uninstall')
    .summary('stop forwarding multicast groups on an OVS bridge')
    .description(
      'Remove the flow and OVS group(s) of each group: its own entry and every per-source (S,G) entry of it. ' +
        'A group that is not installed is reported as absent. ' +
        "Only entries with this tool's cookie prefix and group id range are touched.",
    )
    .argument('[groups...]', 'the multicast groups to remove (IPv4 or IPv6)')
    .option('--all', 'remove everything of ours on the bridge')
    .option('--json', 'print the result as one JSON document')
    .option('--source <address>', 'remove the kernel (S,G) route of GROUP from source S instead')
    .option(
      '--ovs',
      "with --source: remove GROUP's OVS (S,G) entry for S (install GROUP --source S --ports LIST) instead of the kernel route",
    );
  addOvsOptions(command).addHelpText(
    'after',
    [
      '',
      'Examples:',
      '  mcastctl uninstall 239.1.2.3',
      '  mcastctl uninstall --all --bridge br-int',
      '  mcastctl uninstall 232.1.1.1 --source 10.0.0.5 --ovs   (one OVS (S,G) entry)',
      '  mcastctl uninstall ff3e::8000:1',
      '  mcastctl uninstall 239.1.2.3 --source 10.0.0.5   (a kernel route)',
      '',
      'See mcastctl-uninstall(1).',
    ].join('\n'),
  );
  command.action(async (groups: string[], flags: UninstallFlags) => {
    const output = new Output({ json: flags.json === true });
    if (flags.ovs === true && flags.source === undefined)
      throw new UsageError('--ovs goes with --source S (a whole group needs no flag)');
    if (flags.source !== undefined) {
      if (groups.length !== 1 || flags.all === true)
        throw new UsageError('uninstall --source S takes exactly one GROUP');
      if (flags.ovs === true) {
        const entry = {
          group: checkGroupAddress(groups[0]!, 'GROUP'),
          source: checkSourceAddress(flags.source, '--source'),
        };
        checkSourceGroupFamily(entry.source, entry.group, '--source');
        await uninstallSourceEntry(entry, flags, output);
        return;
      }
      const route = { group: groups[0]!, source: flags.source };
      printRouteResult(output, route, await uninstallRoute(route));
      return;
    }
    if (flags.all === true && groups.length > 0) throw new UsageError('give either GROUP... or --all, not both');
    if (flags.all !== true && groups.length === 0) throw new UsageError('uninstall needs GROUP... or --all');
    const targets = flags.all === true ? 'all' : groups.map((group) => checkGroupAddress(group, 'GROUP'));
    const { target, pipeline } = ovsSettings(flags);
    const bridge = await BridgeClient.open(target, { pipeline });
    try {
      printGroupResults(output, target.bridge, await uninstallGroups(bridge, targets));
    } finally {
      await bridge.close();
    }
  });
}

/** `uninstall GROUP --source S --ovs`: the group's OVS (S,G) entry for S alone; its other entries stay. */
async function uninstallSourceEntry(
  entry: Required<ForwardingTarget>,
  flags: UninstallFlags,
  output: Output,
): Promise<void> {
  const { target, pipeline } = ovsSettings(flags);
  const bridge = await BridgeClient.open(target, { pipeline });
  try {
    printGroupResults(output, target.bridge, await uninstallGroups(bridge, [entry]));
  } finally {
    await bridge.close();
  }
}
