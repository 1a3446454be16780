/** `mcastctl uninstall`: stop forwarding multicast groups on an OVS bridge. */
import type { Command } from 'commander';
import { uninstallGroups } from '../../controllers/static/static-groups.js';
import { uninstallRoute } from '../../controllers/static/static-routes.js';
import { UsageError } from '../../errors.js';
import { BridgeSession } from '../../adapters/ovs/bridge-session.js';
import { checkGroupAddress } from '../../domain/declared-state/group-address.js';
import { printGroupResults } from '../render/group-results.js';
import { printRouteResult } from '../render/route-results.js';
import { Output } from '../render/output.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';

interface UninstallFlags extends OvsFlags {
  all?: boolean;
  json?: boolean;
  source?: string;
}

export function registerUninstall(program: Command): void {
  const command = program
    .command('uninstall')
    .summary('stop forwarding multicast groups on an OVS bridge')
    .description(
      'Remove the flow and OVS group(s) of each group. A group that is not installed is reported as absent. ' +
        "Only entries with this tool's cookie prefix and group id range are touched.",
    )
    .argument('[groups...]', 'the multicast groups to remove')
    .option('--all', 'remove everything of ours on the bridge')
    .option('--json', 'print the result as one JSON document')
    .option('--source <address>', 'remove the kernel (S,G) route of GROUP from source S instead');
  addOvsOptions(command).addHelpText(
    'after',
    '\nExamples:\n  mcastctl uninstall 239.1.2.3\n  mcastctl uninstall --all --bridge br-int\n  mcastctl uninstall 239.1.2.3 --source 10.0.0.5   (a kernel route)\n\nSee mcastctl-uninstall(1).',
  );
  command.action(async (groups: string[], flags: UninstallFlags) => {
    const output = new Output({ json: flags.json === true });
    if (flags.source !== undefined) {
      if (groups.length !== 1 || flags.all === true) throw new UsageError('uninstall --source S takes exactly one GROUP');
      const route = { group: groups[0]!, source: flags.source };
      printRouteResult(output, route, await uninstallRoute(route));
      return;
    }
    if (flags.all === true && groups.length > 0) throw new UsageError('give either GROUP... or --all, not both');
    if (flags.all !== true && groups.length === 0) throw new UsageError('uninstall needs GROUP... or --all');
    const targets = flags.all === true ? 'all' : groups.map((group) => checkGroupAddress(group, 'GROUP'));
    const { target, pipeline } = ovsSettings(flags);
    const session = await BridgeSession.open(target, { pipeline });
    try {
      printGroupResults(output, target.bridge, await uninstallGroups(session, targets));
    } finally {
      await session.close();
    }
  });
}
