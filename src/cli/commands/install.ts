/** `mcastctl install`: forward multicast groups to member ports on an OVS bridge. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { installGroups, type StaticGroup } from '../../controllers/static-groups.js';
import { isSystemError, UsageError } from '../../errors.js';
import { BridgeSession } from '../../ovs/bridge-session.js';
import { parseDeclaredState } from '../../state/declared-state.js';
import { checkGroupAddress, parsePortRef } from '../../state/group-address.js';
import { printGroupResults } from '../group-results.js';
import { Output } from '../output.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../ovs-options.js';

interface InstallFlags extends OvsFlags {
  ports?: string;
  file?: string;
  json?: boolean;
}

export function registerInstall(program: Command): void {
  const command = program
    .command('install')
    .summary('forward multicast groups to member ports on an OVS bridge')
    .description(
      'Program the bridge so that traffic to each group reaches exactly its member ports: an OVS group ' +
        '(type ALL) with one bucket per member and a flow that sends the group to it. Adds missing groups, ' +
        'updates groups whose members differ, and leaves the rest untouched: installing the same thing twice ' +
        'changes nothing. Everything is checked before anything changes.',
    )
    .argument('[group]', 'the multicast group, e.g. 239.1.2.3')
    .option('--ports <list>', 'member ports, by name or OpenFlow port number: p1,p2,7')
    .option('-f, --file <file>', 'install every group of a declared-state file (YAML or JSON)')
    .option('--json', 'print the result as one JSON document');
  addOvsOptions(command).addHelpText(
    'after',
    `
Examples:
  mcastctl install 239.1.2.3 --ports pod-a,pod-b
  mcastctl install -f groups.yaml --bridge br-int

File format (also what reconcile reads):
  groups:
    - group: 239.1.2.3
      ports: [pod-a, pod-b, 7]

See mcastctl-install(1) for the pipeline and the OVS options.`,
  );
  command.action(async (group: string | undefined, flags: InstallFlags) => {
    const output = new Output({ json: flags.json === true });
    const groups = declaredGroups(group, flags);
    const { target, pipeline } = ovsSettings(flags);
    const session = await BridgeSession.open(target, { pipeline });
    try {
      printGroupResults(output, target.bridge, await installGroups(session, groups));
    } finally {
      await session.close();
    }
  });
}

/** The groups asked for, from the command line or a file: checked before OVS is touched. */
function declaredGroups(group: string | undefined, flags: InstallFlags): StaticGroup[] {
  if (flags.file !== undefined) {
    if (group !== undefined || flags.ports !== undefined) throw new UsageError('give either GROUP --ports LIST or -f FILE, not both');
    let text: string;
    try {
      text = readFileSync(flags.file, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${flags.file}: ${isSystemError(error) ? error.code : String(error)}`, { code: 'bad-file' });
    }
    return parseDeclaredState(text, flags.file).groups;
  }
  if (group === undefined) throw new UsageError('install needs GROUP --ports LIST, or -f FILE');
  if (flags.ports === undefined) throw new UsageError(`install ${group} needs --ports LIST (names or OpenFlow port numbers)`);
  const ports = flags.ports.split(',').map((text) => parsePortRef(text, '--ports'));
  return [{ group: checkGroupAddress(group, 'GROUP'), ports, where: () => '--ports' }];
}
